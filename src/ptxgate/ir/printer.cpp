// Printer: canonical `.pg` text with 2-space indentation and minimal parentheses.
#include "ptxgate/ir/printer.hpp"

#include <cmath>

#include <fmt/format.h>

namespace ptxgate::ir {

namespace {

/// Binding strength of an expression as printed: binary operators use precedence()
/// (1..10), unary operators bind tighter, primaries tightest.
constexpr int kUnaryStrength = 11;
constexpr int kPrimaryStrength = 12;

int strength(const Expr& e) {
  switch (e.kind) {
    case ExprKind::binary: return precedence(e.binary_op);
    case ExprKind::unary: return kUnaryStrength;
    case ExprKind::float_literal:
      // A negative value (only possible from the builder) prints with a leading '-'.
      return std::signbit(e.float_value) && e.text.empty() ? kUnaryStrength : kPrimaryStrength;
    default: return kPrimaryStrength;
  }
}

/// Shortest text that re-reads as the same double and still lexes as a float literal.
std::string float_text(double v) {
  if (std::isnan(v)) return "(0.0 / 0.0)";
  if (std::isinf(v)) return v > 0 ? "(1.0 / 0.0)" : "(-1.0 / 0.0)";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

class Printer {
 public:
  std::string out;

  /// Constants first (in their order), then the functions and the kernels (each in its
  /// order), a blank line before each function and kernel.
  void module(const Module& m) {
    for (const auto& c : m.constants) statement(*c);
    bool first = m.constants.empty();
    for (const auto& f : m.functions) {
      if (!first) out += '\n';
      first = false;
      function(f);
    }
    for (const auto& k : m.kernels) {
      if (!first) out += '\n';
      first = false;
      kernel(k);
    }
  }

  /// One expression in canonical form.
  void expression(const Expr& e) { expr(e, 0); }

 private:
  int indent_ = 0;

  void line_start() { out.append(static_cast<size_t>(indent_) * 2, ' '); }

  void kernel(const Kernel& k) {
    for (const auto& a : k.attributes) {
      out += '@';
      out += a.name;
      if (!a.args.empty()) {
        out += '(';
        args(a.args);
        out += ')';
      }
      out += '\n';
    }
    out += fmt::format("kernel {}(", k.name);
    params(k.params);
    out += ") ";
    block(k.body);
    out += '\n';
  }

  void function(const Function& f) {
    out += fmt::format("fn {}(", f.name);
    params(f.params);
    out += ") ";
    if (f.result != Type::void_) out += fmt::format("-> {} ", type_name(f.result));
    block(f.body);
    out += '\n';
  }

  void params(const std::vector<Param>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      const Param& p = list[i];
      if (i) out += ", ";
      if (p.is_buffer)
        out += fmt::format("{} {}: {}[]", access_name(p.access), p.name, type_name(p.type));
      else
        out += fmt::format("{}: {}", p.name, type_name(p.type));
    }
  }

  /// Prints `{`, the statements one level deeper, and `}` (no newline after it).
  void block(const std::vector<StmtPtr>& body) {
    out += "{\n";
    ++indent_;
    for (const auto& s : body) statement(*s);
    --indent_;
    line_start();
    out += '}';
  }

  void statement(const Stmt& s) {
    line_start();
    statement_text(s);
    out += '\n';
  }

  void statement_text(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::let_decl:
      case StmtKind::var_decl:
        out += s.kind == StmtKind::let_decl ? "let " : "var ";
        out += s.name;
        if (s.declared_type) out += fmt::format(": {}", type_name(*s.declared_type));
        if (s.value) {
          out += " = ";
          expr(*s.value, 0);
        }
        out += ';';
        break;
      case StmtKind::assign:
        expr(*s.target, 0);
        out += " = ";
        expr(*s.value, 0);
        out += ';';
        break;
      case StmtKind::if_: {
        const Stmt* cur = &s;
        for (;;) {
          out += "if (";
          expr(*cur->value, 0);
          out += ") ";
          block(cur->body);
          if (!cur->has_else) break;
          out += " else ";
          if (cur->else_body.size() == 1 && cur->else_body[0]->kind == StmtKind::if_) {
            cur = cur->else_body[0].get();
            continue;
          }
          block(cur->else_body);
          break;
        }
        break;
      }
      case StmtKind::while_:
        out += "while (";
        expr(*s.value, 0);
        out += ") ";
        block(s.body);
        break;
      case StmtKind::for_:
        out += fmt::format("for {} in ", s.name);
        expr(*s.lo, 0);
        out += "..";
        expr(*s.hi, 0);
        if (s.step) {
          out += " step ";
          expr(*s.step, 0);
        }
        if (s.unroll) {
          out += " unroll";
          if (s.unroll_count) {
            out += '(';
            expr(*s.unroll_count, 0);
            out += ')';
          }
        }
        out += ' ';
        block(s.body);
        break;
      case StmtKind::break_: out += "break;"; break;
      case StmtKind::continue_: out += "continue;"; break;
      case StmtKind::return_:
        out += "return";
        if (s.value) {
          out += ' ';
          expr(*s.value, 0);
        }
        out += ';';
        break;
      case StmtKind::expr:
        expr(*s.value, 0);
        out += ';';
        break;
      case StmtKind::block: block(s.body); break;
      case StmtKind::shared_decl:
        out += fmt::format("shared {}: {}[", s.name, type_name(s.declared_type.value_or(Type::error)));
        if (s.value) expr(*s.value, 0);
        out += "];";
        break;
      case StmtKind::local_array_decl:
        out += fmt::format("var {}: {}[", s.name, type_name(s.declared_type.value_or(Type::error)));
        if (s.value) expr(*s.value, 0);
        out += "];";
        break;
      case StmtKind::const_decl:
        out += fmt::format("const {}: {} = ", s.name, type_name(s.declared_type.value_or(Type::error)));
        expr(*s.value, 0);
        out += ';';
        break;
    }
  }

  void args(const std::vector<ExprPtr>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += ", ";
      expr(*list[i], 0);
    }
  }

  /// Prints `e`, parenthesised if it binds less tightly than `needed`.
  void expr(const Expr& e, int needed) {
    bool parens = strength(e) < needed;
    if (parens) out += '(';
    switch (e.kind) {
      case ExprKind::int_literal:
        out += e.text.empty() ? fmt::format("{}", e.int_value) : e.text;
        break;
      case ExprKind::float_literal: out += e.text.empty() ? float_text(e.float_value) : e.text; break;
      case ExprKind::bool_literal: out += e.bool_value ? "true" : "false"; break;
      case ExprKind::name: out += e.name; break;
      case ExprKind::builtin:
        if (is_scalar_builtin(e.builtin))
          out += builtin_name(e.builtin);
        else
          out += fmt::format("{}.{}", builtin_name(e.builtin), static_cast<char>('x' + (e.component % 3)));
        break;
      case ExprKind::index:
        out += e.name;
        out += '[';
        if (!e.operands.empty()) expr(*e.operands[0], 0);
        out += ']';
        break;
      case ExprKind::unary:
        out += op_spelling(e.unary_op);
        if (strength(*e.operands[0]) == kUnaryStrength) out += ' ';  // "- -x", not "--x"
        expr(*e.operands[0], kUnaryStrength);
        break;
      case ExprKind::binary: {
        int p = precedence(e.binary_op);
        expr(*e.operands[0], p);
        out += fmt::format(" {} ", op_spelling(e.binary_op));
        expr(*e.operands[1], p + 1);  // left-associative: an equal-precedence right operand needs parens
        break;
      }
      case ExprKind::cast:
        out += type_name(e.cast_type);
        out += '(';
        args(e.operands);
        out += ')';
        break;
      case ExprKind::call:
        out += !e.name.empty() ? std::string_view(e.name)
               : e.intrinsic  ? intrinsic_name(*e.intrinsic)
                              : std::string_view("unknown");
        out += '(';
        args(e.operands);
        if (e.intrinsic && is_atomic(*e.intrinsic)) {
          const bool order = e.memory_order != MemoryOrder::relaxed, scope = e.memory_scope != MemoryScope::device;
          if (order) (out += ", ") += memory_order_name(e.memory_order);
          if (scope) (out += ", ") += memory_scope_name(e.memory_scope);
        }
        out += ')';
        break;
    }
    if (parens) out += ')';
  }
};

}  // namespace

std::string print(const Module& module) {
  Printer p;
  p.module(module);
  return std::move(p.out);
}

std::string print(const Expr& e) {
  Printer p;
  p.expression(e);
  return std::move(p.out);
}

namespace {
void collect_asserts(const Expr& e, const std::string& path, std::string& out) {
  for (const auto& operand : e.operands)
    if (operand) collect_asserts(*operand, path, out);
  if (e.kind == ExprKind::call && e.intrinsic == Intrinsic::assert_)
    out += fmt::format("{}:{}: {}\n", path, e.source_line,
                       !e.text.empty() || e.operands.empty() || !e.operands[0] ? e.text : print(*e.operands[0]));
}

void collect_asserts(const std::vector<StmtPtr>& body, const std::string& path, std::string& out) {
  for (const auto& s : body) {
    if (!s) continue;
    for (const Expr* e : {s->target.get(), s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
      if (e) collect_asserts(*e, path, out);
    collect_asserts(s->body, path, out);
    collect_asserts(s->else_body, path, out);
  }
}
}  // namespace

std::string assert_sites(const Module& module) {
  std::string out;
  for (const Function& f : module.functions)
    if (f.uses_assert) collect_asserts(f.body, module.path, out);
  for (const Kernel& k : module.kernels)
    if (k.uses_assert) collect_asserts(k.body, module.path, out);
  return out;
}

}  // namespace ptxgate::ir
