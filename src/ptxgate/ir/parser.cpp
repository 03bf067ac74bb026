// Recursive-descent parser for the `.pg` text format, with error recovery and input limits.
#include "ptxgate/ir/parser.hpp"

#include <new>

#include <fmt/format.h>

#include "ptxgate/ir/internal/lexer.hpp"

namespace ptxgate::ir {

namespace {

/// Thrown after a syntax error has been reported; caught where the parser resynchronises.
struct SyntaxError {};
/// Thrown when parsing must stop (a fatal limit, or too many diagnostics).
struct Abort {};

std::optional<BinaryOp> binary_op(TokenKind k) {
  switch (k) {
    case TokenKind::plus: return BinaryOp::add;
    case TokenKind::minus: return BinaryOp::sub;
    case TokenKind::star: return BinaryOp::mul;
    case TokenKind::slash: return BinaryOp::div;
    case TokenKind::percent: return BinaryOp::rem;
    case TokenKind::shl: return BinaryOp::shl;
    case TokenKind::shr: return BinaryOp::shr;
    case TokenKind::amp: return BinaryOp::bit_and;
    case TokenKind::pipe: return BinaryOp::bit_or;
    case TokenKind::caret: return BinaryOp::bit_xor;
    case TokenKind::eq: return BinaryOp::eq;
    case TokenKind::ne: return BinaryOp::ne;
    case TokenKind::lt: return BinaryOp::lt;
    case TokenKind::le: return BinaryOp::le;
    case TokenKind::gt: return BinaryOp::gt;
    case TokenKind::ge: return BinaryOp::ge;
    case TokenKind::amp_amp: return BinaryOp::logical_and;
    case TokenKind::pipe_pipe: return BinaryOp::logical_or;
    default: return std::nullopt;
  }
}

/// The longest assert condition text kept for the device's message.
constexpr size_t kMaxAssertText = 160;
constexpr std::string_view kBuiltinList = "thread_id, block_id, block_dim, grid_dim, global_id";

class Parser {
 public:
  Parser(const diag::SourceFile& file, const Limits& limits, diag::Diagnostics& out)
      : file_(file), limits_(limits), sink_(file, out, limits.max_diagnostics), lexer_(file.text(), sink_, limits) {}

  void parse_module(Module& module) {
    advance();
    while (tok_.kind != TokenKind::end_of_file) {
      try {
        if (at(TokenKind::kw_const)) parse_constant(module);
        else if (at(TokenKind::kw_fn)) parse_function(module);
        else parse_kernel(module);
      } catch (const SyntaxError&) {
        sync_top_level();
      }
    }
  }

 private:
  // ---- tokens -------------------------------------------------------------

  void advance() {
    prev_end_ = tok_.offset + tok_.length;
    tok_ = lexer_.next();
    if (sink_.stopped()) throw Abort{};
  }
  bool at(TokenKind k) const { return tok_.kind == k; }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  bool at_word(std::string_view w) const { return tok_.kind == TokenKind::identifier && tok_.text == w; }

  [[noreturn]] void fail(diag::Code code, uint32_t offset, uint32_t length, std::string message, std::string fix) {
    sink_.error(code, offset, length, std::move(message), std::move(fix));
    if (sink_.stopped()) throw Abort{};
    throw SyntaxError{};
  }
  [[noreturn]] void fail_here(diag::Code code, std::string message, std::string fix) {
    fail(code, tok_.offset, tok_.length, std::move(message), std::move(fix));
  }
  /// Reports a limit that stops the parse.
  [[noreturn]] void fatal(diag::Code code, uint32_t offset, uint32_t length, std::string message, std::string fix) {
    sink_.error(code, offset, length, std::move(message), std::move(fix));
    sink_.stop();
    throw Abort{};
  }

  /// Consumes a token of kind `k` or reports "expected K <context>, found T". A missing
  /// `;` is reported just after the previous token, everything else at the found token.
  Token expect(TokenKind k, std::string_view context, std::string_view fix) {
    if (!at(k)) {
      std::string message = fmt::format("expected {} {}, found {}", token_kind_name(k), context, describe(tok_));
      if (k != TokenKind::semicolon) fail_here(diag::Code::expected_token, message, std::string(fix));
      if (!at_statement_keyword() && !at(TokenKind::r_brace))
        fail(diag::Code::expected_token, prev_end_, 1, message, std::string(fix));
      // The statement is complete and the next one starts here: act as if ';' were written.
      sink_.error(diag::Code::expected_token, prev_end_, 1, std::move(message), std::string(fix));
      if (sink_.stopped()) throw Abort{};
      return tok_;
    }
    Token t = tok_;
    advance();
    return t;
  }
  std::string expect_identifier(std::string_view what, SourceRange* range = nullptr) {
    if (!at(TokenKind::identifier))
      fail_here(diag::Code::expected_token, fmt::format("expected {}, found {}", what, describe(tok_)),
                fmt::format("write {} here", what));
    if (range) *range = {tok_.offset, tok_.length};
    std::string name(tok_.text);
    advance();
    return name;
  }
  Type expect_type(std::string_view context) {
    std::optional<Type> t;
    if (at(TokenKind::identifier)) t = type_from_name(tok_.text);
    if (!t)
      fail_here(diag::Code::expected_type, fmt::format("expected a type {}, found {}", context, describe(tok_)),
                fmt::format("use one of {}", spellable_types_text()));
    advance();
    return *t;
  }
  SourceRange range_from(uint32_t start) const { return {start, prev_end_ > start ? prev_end_ - start : 0}; }

  // ---- limits ---------------------------------------------------------------

  /// Enters one level of nesting (blocks, statements and expressions together); the
  /// caller leaves it by decrementing depth_ (see the guards below).
  void enter_level() {
    if (++depth_ > limits_.max_nesting_depth)
      fatal(diag::Code::nesting_too_deep, tok_.offset, tok_.length,
            fmt::format("nesting too deep: more than {} levels of nested blocks and expressions (limit "
                        "max_nesting_depth = {})",
                        limits_.max_nesting_depth, limits_.max_nesting_depth),
            "split the expression or block with intermediate 'let' bindings");
  }

  /// One level of nesting for the lifetime of the guard.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) { p.enter_level(); }
    ~DepthGuard() { --p.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
  };

  /// Levels added one by one (each operator of a binary chain), all left at scope exit.
  struct ChainDepth {
    Parser& p;
    uint32_t levels = 0;
    explicit ChainDepth(Parser& parser) : p(parser) {}
    void add() {
      ++levels;
      p.enter_level();
    }
    ~ChainDepth() { p.depth_ -= levels; }
    ChainDepth(const ChainDepth&) = delete;
    ChainDepth& operator=(const ChainDepth&) = delete;
  };

  void count_statement(uint32_t start) {
    if (++statements_ > limits_.max_statements_per_kernel)
      fatal(diag::Code::too_many_statements, start, tok_.offset > start ? tok_.offset - start : 1,
            fmt::format("{} has more than {} statements (limit max_statements_per_kernel = {})", routine_word_,
                        limits_.max_statements_per_kernel, limits_.max_statements_per_kernel),
            routine_word_ == "kernel" ? "split the kernel into several kernels"
                                      : "split the function into several functions");
  }

  // ---- recovery -------------------------------------------------------------

  /// Skips to the next attribute or kernel (parse_kernel always consumes those).
  void sync_top_level() {
    while (!at(TokenKind::end_of_file) && !at(TokenKind::kw_kernel) && !at(TokenKind::at) && !at(TokenKind::kw_const) &&
           !at(TokenKind::kw_fn))
      advance();
  }

  bool at_item_start() const {
    return at(TokenKind::end_of_file) || at(TokenKind::kw_kernel) || at(TokenKind::at) || at(TokenKind::kw_fn);
  }

  bool at_statement_keyword() const {
    switch (tok_.kind) {
      case TokenKind::kw_let: case TokenKind::kw_var: case TokenKind::kw_if: case TokenKind::kw_while:
      case TokenKind::kw_for: case TokenKind::kw_break: case TokenKind::kw_continue: case TokenKind::kw_return:
      case TokenKind::kw_shared:
        return true;
      default:
        return false;
    }
  }

  /// Skips the rest of a broken statement that began at `start`: past the next `;` or
  /// balanced `{...}` at this level, stopping before a `}` that closes the enclosing block,
  /// a keyword that starts the next statement, or a new kernel.
  void sync_statement(uint32_t start) {
    if (tok_.offset == start && !at_item_start() && !at(TokenKind::r_brace)) advance();
    int braces = 0;
    while (!at_item_start()) {
      if (braces == 0 && at_statement_keyword()) return;
      if (at(TokenKind::l_brace)) {
        ++braces;
      } else if (at(TokenKind::r_brace)) {
        if (braces == 0) return;
        if (--braces == 0) {
          advance();
          return;
        }
      } else if (at(TokenKind::semicolon) && braces == 0) {
        advance();
        return;
      }
      advance();
    }
  }

  // ---- kernels --------------------------------------------------------------

  void parse_kernel(Module& module) {
    uint32_t start = tok_.offset;
    std::vector<Attribute> attributes;
    while (at(TokenKind::at)) attributes.push_back(parse_attribute());
    if (!at(TokenKind::kw_kernel)) {
      if (attributes.empty())
        fail_here(diag::Code::expected_kernel,
                  fmt::format("expected a kernel, function or constant declaration, found {}", describe(tok_)),
                  "start a kernel with 'kernel NAME(PARAMS) { ... }', optionally after attributes like "
                  "@workgroup(256), a function with 'fn NAME(PARAMS) -> TYPE { ... }', or declare a constant "
                  "with 'const NAME: TYPE = VALUE;'");
      fail_here(diag::Code::expected_kernel,
                fmt::format("expected 'kernel' after the attributes, found {}", describe(tok_)),
                "attributes must be followed by 'kernel NAME(PARAMS) { ... }'");
    }
    if (module.kernels.size() >= limits_.max_kernels)
      fatal(diag::Code::too_many_kernels, tok_.offset, tok_.length,
            fmt::format("module has more than {} kernels (limit max_kernels = {})", limits_.max_kernels,
                        limits_.max_kernels),
            "split the module into several files");
    advance();
    Kernel& kernel = module.kernels.emplace_back();
    kernel.attributes = std::move(attributes);
    statements_ = 0;
    routine_word_ = "kernel";
    try {
      kernel.name = expect_identifier("a kernel name", &kernel.name_range);
      expect(TokenKind::l_paren, "after the kernel name", "write the parameter list in parentheses, e.g. (in x: f32[], n: u32)");
      parse_params(kernel, "kernel", diag::Code::too_many_parameters, "pass fewer parameters, e.g. pack scalars into a buffer");
      expect(TokenKind::r_paren, "after the parameter list", "close the parameter list with ')'");
    } catch (const SyntaxError&) {
      if (!skip_broken_header()) return;
    }
    parse_block_into(kernel.body, "the kernel body");
    kernel.range = range_from(start);
  }

  /// After an error in a kernel's or function's header: skips the rest of it; true when a
  /// body follows (it is still parsed, to report its errors).
  bool skip_broken_header() {
    while (!at_item_start() && !at(TokenKind::l_brace)) advance();
    return at(TokenKind::l_brace);
  }

  /// The parameters between `(` and `)` (not consumed), at most max_parameters kept.
  void parse_params(Routine& routine, std::string_view what, diag::Code too_many, std::string_view fix) {
    if (at(TokenKind::r_paren)) return;
    uint32_t count = 0;
    do {
      Param p = parse_param();
      if (++count == limits_.max_parameters + 1)
        sink_.error(too_many, p.range.offset, p.range.length,
                    fmt::format("{} '{}' has more than {} parameters (limit max_parameters = {})", what, routine.name,
                                limits_.max_parameters, limits_.max_parameters),
                    std::string(fix));
      if (routine.params.size() < limits_.max_parameters) routine.params.push_back(std::move(p));
      else if (sink_.stopped()) throw Abort{};
    } while (accept(TokenKind::comma));
  }

  /// Stops the parse when the module already holds `limit` items of one kind.
  void check_item_count(size_t count, uint32_t limit, diag::Code code, std::string_view items,
                        std::string_view limit_name) {
    if (count < limit) return;
    fatal(code, tok_.offset, tok_.length,
          fmt::format("module has more than {} {} (limit {} = {})", limit, items, limit_name, limit),
          "split the module into several files");
  }

  /// `fn NAME(PARAMS) [-> TYPE] { ... }` at module level.
  void parse_function(Module& module) {
    uint32_t start = tok_.offset;
    check_item_count(module.functions.size(), limits_.max_functions, diag::Code::too_many_functions, "functions",
                     "max_functions");
    advance();
    Function& function = module.functions.emplace_back();
    statements_ = 0;
    routine_word_ = "function";
    try {
      function.name = expect_identifier("a function name after 'fn'", &function.name_range);
      expect(TokenKind::l_paren, "after the function name",
             "write the parameter list in parentheses, e.g. fn scale(x: f32, in w: f32[]) -> f32 { ... }");
      parse_params(function, "function", diag::Code::too_many_function_parameters,
                   "pass fewer parameters, e.g. pass a buffer instead of many scalars");
      expect(TokenKind::r_paren, "after the parameter list", "close the parameter list with ')'");
      if (accept(TokenKind::arrow)) {
        uint32_t type_start = tok_.offset;
        function.result = expect_type(fmt::format("for the result of function '{}'", function.name));
        function.result_range = range_from(type_start);
      }
    } catch (const SyntaxError&) {
      if (!skip_broken_header()) return;
    }
    parse_block_into(function.body, "the function body");
    function.range = range_from(start);
  }

  /// `const NAME: TYPE = VALUE;` at module level.
  void parse_constant(Module& module) {
    uint32_t start = tok_.offset;
    check_item_count(module.constants.size(), limits_.max_constants, diag::Code::too_many_constants, "constants",
                     "max_constants");
    advance();
    StmtPtr s = make_stmt(StmtKind::const_decl);
    s->name = expect_identifier("a constant name after 'const'", &s->name_range);
    expect(TokenKind::colon, fmt::format("after constant '{}'", s->name),
           fmt::format("a constant needs a type: 'const {}: u32 = 256;'", s->name));
    s->declared_type = expect_type(fmt::format("for constant '{}'", s->name));
    expect(TokenKind::assign, fmt::format("after the type of constant '{}'", s->name),
           fmt::format("a constant needs a value: 'const {}: {} = ...;'", s->name, type_name(*s->declared_type)));
    s->value = parse_expr();
    expect(TokenKind::semicolon, "after the constant declaration", "add ';'");
    s->range = range_from(start);
    module.constants.push_back(std::move(s));
  }

  Attribute parse_attribute() {
    Attribute a;
    uint32_t start = tok_.offset;
    advance();  // '@'
    a.name = expect_identifier("an attribute name after '@'");
    if (accept(TokenKind::l_paren)) {
      if (!at(TokenKind::r_paren)) {
        do a.args.push_back(parse_expr());
        while (accept(TokenKind::comma));
      }
      expect(TokenKind::r_paren, "after the attribute arguments", "close the argument list with ')'");
    }
    a.range = range_from(start);
    return a;
  }

  Param parse_param() {
    Param p;
    uint32_t start = tok_.offset;
    std::string first = expect_identifier("a parameter name or access mode (in, out, inout)");
    if (at(TokenKind::identifier) && (first == "in" || first == "out" || first == "inout")) {
      p.is_buffer = true;
      p.access = first == "in" ? Access::in : first == "out" ? Access::out : Access::inout;
      p.name = expect_identifier("a buffer parameter name");
      expect(TokenKind::colon, fmt::format("after buffer parameter '{}'", p.name), "write 'NAME: TYPE[]'");
      p.type = expect_type(fmt::format("for buffer parameter '{}'", p.name));
      expect(TokenKind::l_bracket, "after the element type of a buffer parameter", "buffers are written 'T[]'");
      expect(TokenKind::r_bracket, "in a buffer parameter type", "buffers are written 'T[]' with no size");
    } else {
      p.name = std::move(first);
      expect(TokenKind::colon, fmt::format("after parameter '{}'", p.name), "write 'NAME: TYPE'");
      p.type = expect_type(fmt::format("for parameter '{}'", p.name));
      if (at(TokenKind::l_bracket))
        fail_here(diag::Code::expected_token,
                  fmt::format("buffer parameter '{}' needs an access mode", p.name),
                  fmt::format("write 'in {0}: T[]', 'out {0}: T[]' or 'inout {0}: T[]'", p.name));
    }
    p.range = range_from(start);
    return p;
  }

  // ---- statements -----------------------------------------------------------

  /// Parses `{ statements }` into `out`, recovering from errors in each statement.
  void parse_block_into(std::vector<StmtPtr>& out, std::string_view what) {
    DepthGuard guard(*this);
    Token open = expect(TokenKind::l_brace, fmt::format("to start {}", what), "add '{'");
    while (!at(TokenKind::r_brace) && !at_item_start()) {
      uint32_t start = tok_.offset;
      try {
        out.push_back(parse_statement());
      } catch (const SyntaxError&) {
        sync_statement(start);
      }
    }
    if (!at(TokenKind::r_brace)) {
      // Report a missing '}' once even when several nested blocks end here.
      if (unclosed_reported_at_ == tok_.offset) throw SyntaxError{};
      unclosed_reported_at_ = tok_.offset;
      auto [line, col] = file_.line_col(open.offset);
      fail_here(diag::Code::expected_token,
                fmt::format("expected '}}' to close {} opened at line {}, column {}, found {}", what, line, col,
                            describe(tok_)),
                "add the missing '}'");
    }
    advance();
  }

  StmtPtr make_stmt(StmtKind kind) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    return s;
  }

  StmtPtr parse_statement() {
    uint32_t start = tok_.offset;
    count_statement(start);
    DepthGuard guard(*this);
    StmtPtr s;
    switch (tok_.kind) {
      case TokenKind::kw_let:
      case TokenKind::kw_var: s = parse_binding(); break;
      case TokenKind::kw_shared: s = parse_shared(); break;
      case TokenKind::kw_const:
        fail_here(diag::Code::expected_statement, "'const' declares a module constant and cannot appear inside a kernel",
                  "move it to module level, before the kernel (const NAME: TYPE = VALUE;), or use 'let' here");
      case TokenKind::kw_if: s = parse_if(); break;
      case TokenKind::kw_while: {
        s = make_stmt(StmtKind::while_);
        advance();
        s->value = parse_condition("'while'");
        parse_block_into(s->body, "the 'while' body");
        break;
      }
      case TokenKind::kw_for: s = parse_for(); break;
      case TokenKind::kw_break:
      case TokenKind::kw_continue: {
        s = make_stmt(at(TokenKind::kw_break) ? StmtKind::break_ : StmtKind::continue_);
        std::string word(tok_.text);
        advance();
        expect(TokenKind::semicolon, fmt::format("after '{}'", word), "add ';'");
        break;
      }
      case TokenKind::kw_return: {
        s = make_stmt(StmtKind::return_);
        advance();
        if (!at(TokenKind::semicolon)) s->value = parse_expr();
        expect(TokenKind::semicolon, "after 'return'", "add ';'");
        break;
      }
      case TokenKind::l_brace: {
        s = make_stmt(StmtKind::block);
        parse_block_into(s->body, "the block");
        break;
      }
      default: {
        if (!starts_expression())
          fail_here(diag::Code::expected_statement, fmt::format("expected a statement, found {}", describe(tok_)),
                    "statements are let, var, shared, assignments, calls, if, while, for, break, continue, "
                    "return and blocks");
        ExprPtr e = parse_expr();
        if (at(TokenKind::assign)) {
          if (e->kind == ExprKind::builtin && e->range.offset == bad_builtin_at_) throw SyntaxError{};  // reported
          if (e->kind != ExprKind::name && e->kind != ExprKind::index)
            fail(diag::Code::expected_token, e->range.offset, e->range.length,
                 "the left side of '=' must be a variable name or an indexed buffer element",
                 "assign to 'NAME' or 'NAME[INDEX]'");
          advance();
          s = make_stmt(StmtKind::assign);
          s->target = std::move(e);
          s->value = parse_expr();
          expect(TokenKind::semicolon, "after assignment", "add ';'");
        } else {
          s = make_stmt(StmtKind::expr);
          s->value = std::move(e);
          expect(TokenKind::semicolon, "after statement", "add ';'");
        }
        break;
      }
    }
    s->range = range_from(start);
    return s;
  }

  ExprPtr parse_condition(std::string_view keyword) {
    expect(TokenKind::l_paren, fmt::format("after {}", keyword), "put the condition in parentheses");
    ExprPtr c = parse_expr();
    expect(TokenKind::r_paren, fmt::format("after the {} condition", keyword), "close the condition with ')'");
    return c;
  }

  StmtPtr parse_binding() {
    bool is_let = at(TokenKind::kw_let);
    StmtPtr s = make_stmt(is_let ? StmtKind::let_decl : StmtKind::var_decl);
    advance();
    s->name = expect_identifier(is_let ? "a name after 'let'" : "a name after 'var'", &s->name_range);
    if (accept(TokenKind::colon)) s->declared_type = expect_type(fmt::format("for '{}'", s->name));
    if (s->declared_type && at(TokenKind::l_bracket)) {
      if (is_let)
        fail_here(diag::Code::expected_token, fmt::format("'let {}' cannot be an array", s->name),
                  fmt::format("declare a local array with var: 'var {}: {}[N];'", s->name,
                              type_name(*s->declared_type)));
      advance();  // var NAME: T[SIZE]; a local array
      s->kind = StmtKind::local_array_decl;
      if (!at(TokenKind::r_bracket)) s->value = parse_expr();  // none: the verifier reports it
      expect(TokenKind::r_bracket, "after the local array size", "close the size with ']'");
      if (at(TokenKind::assign))
        fail_here(diag::Code::expected_token,
                  fmt::format("local array '{}' cannot have an initial value: it starts with every element zero",
                              s->name),
                  fmt::format("write 'var {}: {}[N];' and assign its elements", s->name,
                              type_name(*s->declared_type)));
    } else if (accept(TokenKind::assign)) {
      s->value = parse_expr();
    } else if (is_let || !s->declared_type) {
      fail_here(diag::Code::expected_token,
                fmt::format("expected '=' and an initial value for '{}', found {}", s->name, describe(tok_)),
                is_let ? fmt::format("write 'let {} = VALUE;'", s->name)
                       : fmt::format("write 'var {0} = VALUE;' or 'var {0}: TYPE;'", s->name));
    }
    expect(TokenKind::semicolon, "after declaration", "add ';'");
    return s;
  }

  StmtPtr parse_shared() {
    StmtPtr s = make_stmt(StmtKind::shared_decl);
    advance();
    s->name = expect_identifier("a shared array name", &s->name_range);
    expect(TokenKind::colon, fmt::format("after shared array '{}'", s->name), "write 'shared NAME: T[SIZE];'");
    s->declared_type = expect_type(fmt::format("for shared array '{}'", s->name));
    expect(TokenKind::l_bracket, "after the shared array element type",
           "write 'shared NAME: T[SIZE];', or 'shared NAME: T[];' for dynamic shared memory");
    if (!at(TokenKind::r_bracket)) s->value = parse_expr();  // none: sized by the launch
    expect(TokenKind::r_bracket, "after the shared array size", "close the size with ']'");
    expect(TokenKind::semicolon, "after declaration", "add ';'");
    return s;
  }

  StmtPtr parse_if() {
    StmtPtr s = make_stmt(StmtKind::if_);
    uint32_t start = tok_.offset;
    advance();
    s->value = parse_condition("'if'");
    parse_block_into(s->body, "the 'if' body");
    if (accept(TokenKind::kw_else)) {
      s->has_else = true;
      if (at(TokenKind::kw_if)) {
        DepthGuard guard(*this);
        count_statement(tok_.offset);
        s->else_body.push_back(parse_if());
      } else {
        parse_block_into(s->else_body, "the 'else' body");
      }
    }
    s->range = range_from(start);
    return s;
  }

  StmtPtr parse_for() {
    StmtPtr s = make_stmt(StmtKind::for_);
    advance();
    s->name = expect_identifier("a loop variable name after 'for'", &s->name_range);
    if (!at_word("in"))
      fail_here(diag::Code::expected_token, fmt::format("expected 'in' after the loop variable, found {}", describe(tok_)),
                "write 'for i in LO..HI { ... }'");
    advance();
    s->lo = parse_expr();
    expect(TokenKind::dot_dot, "between the loop bounds", "write 'for i in LO..HI { ... }'");
    s->hi = parse_expr();
    if (at_word("step")) {
      advance();
      s->step = parse_expr();
    }
    if (at_word("unroll")) {
      advance();
      s->unroll = true;
      if (accept(TokenKind::l_paren)) {
        s->unroll_count = parse_expr();
        expect(TokenKind::r_paren, "after the unroll count", "write 'unroll(4)', or 'unroll' to unroll completely");
      }
    }
    parse_block_into(s->body, "the 'for' body");
    return s;
  }

  // ---- expressions ----------------------------------------------------------

  bool starts_expression() const {
    switch (tok_.kind) {
      case TokenKind::identifier: case TokenKind::int_literal: case TokenKind::float_literal:
      case TokenKind::kw_true: case TokenKind::kw_false: case TokenKind::l_paren:
      case TokenKind::minus: case TokenKind::tilde: case TokenKind::bang:
        return true;
      default:
        return false;
    }
  }

  ExprPtr make_expr(ExprKind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    return e;
  }

  ExprPtr parse_expr() { return parse_binary(1); }

  /// Precedence climbing; all binary operators are left-associative. Each operator of a
  /// chain nests the tree one level deeper, so it counts against the nesting limit too.
  ExprPtr parse_binary(int min_precedence) {
    ExprPtr lhs = parse_unary();
    ChainDepth chain(*this);
    for (;;) {
      std::optional<BinaryOp> op = binary_op(tok_.kind);
      if (!op || precedence(*op) < min_precedence) return lhs;
      chain.add();
      advance();
      ExprPtr rhs = parse_binary(precedence(*op) + 1);
      auto e = make_expr(ExprKind::binary);
      e->binary_op = *op;
      e->range = {lhs->range.offset, rhs->range.offset + rhs->range.length - lhs->range.offset};
      e->operands.push_back(std::move(lhs));
      e->operands.push_back(std::move(rhs));
      lhs = std::move(e);
    }
  }

  ExprPtr parse_unary() {
    DepthGuard guard(*this);
    uint32_t start = tok_.offset;
    std::optional<UnaryOp> op;
    if (at(TokenKind::minus)) op = UnaryOp::neg;
    else if (at(TokenKind::tilde)) op = UnaryOp::bit_not;
    else if (at(TokenKind::bang)) op = UnaryOp::logical_not;
    if (!op) return parse_primary();
    advance();
    auto e = make_expr(ExprKind::unary);
    e->unary_op = *op;
    e->operands.push_back(parse_unary());
    e->range = range_from(start);
    return e;
  }

  /// `atomic_op(a, i, v[, ORDER][, SCOPE])`: the trailing order and scope names become the call's
  /// memory_order / memory_scope (they are not values). Only arguments past the atomic's own count
  /// are taken, so a variable that happens to be named `device` stays a value.
  void take_memory_order(Expr& e) {
    const size_t own = e.intrinsic == Intrinsic::atomic_cas ? 4 : 3;
    bool saw_order = false, saw_scope = false;
    while (e.operands.size() > own) {
      Expr& last = *e.operands.back();
      if (last.kind != ExprKind::name) break;
      std::optional<MemoryOrder> order = memory_order_from_name(last.name);
      std::optional<MemoryScope> scope = memory_scope_from_name(last.name);
      const bool first_of_kind = order ? !saw_order : scope ? !saw_scope : false;
      if ((!order && !scope) || !first_of_kind) {
        sink_.error(diag::Code::invalid_memory_order, last.range.offset, last.range.length,
                    (order || scope)
                        ? fmt::format("the {} of this atomic is given twice", order ? "memory order" : "scope")
                        : fmt::format("'{}' is neither a memory order nor a scope", last.name),
                    "write at most one order (relaxed, acquire, release, acq_rel) and one scope (block, device, "
                    "system) after the atomic's operands, e.g. atomic_add(a, i, v, acq_rel, device)");
        e.operands.pop_back();
        continue;
      }
      // They are read right to left: the order must stand before the scope.
      if (order && saw_scope == false && e.operands.size() - 1 > own) {
        const Expr& before = *e.operands[e.operands.size() - 2];
        if (before.kind == ExprKind::name && memory_scope_from_name(before.name)) {
          sink_.error(diag::Code::invalid_memory_order, before.range.offset, before.range.length,
                      "the scope of this atomic stands before its memory order",
                      "write the order first, then the scope: atomic_add(a, i, v, acq_rel, device)");
        }
      }
      if (order) {
        e.memory_order = *order;
        saw_order = true;
      } else {
        e.memory_scope = *scope;
        saw_scope = true;
      }
      e.operands.pop_back();
    }
  }

  /// assert(condition): the line and the condition's text as written, for the device's message.
  void note_assert(Expr& e, uint32_t offset) {
    e.source_line = file_.line_col(offset).first;
    if (e.operands.size() != 1 || !e.operands[0]) return;
    const SourceRange r = e.operands[0]->range;
    std::string_view text = std::string_view(file_.text()).substr(r.offset, r.length);
    std::string condition;
    bool space = false;
    for (char c : text) {  // one line, single spaces: the message is printed on one line
      if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
        space = !condition.empty();
        continue;
      }
      if (space) condition.push_back(' ');
      space = false;
      condition.push_back(c);
      if (condition.size() >= kMaxAssertText) {
        condition += "...";
        break;
      }
    }
    e.text = std::move(condition);
  }

  std::vector<ExprPtr> parse_arguments(std::string_view callee) {
    std::vector<ExprPtr> args;
    advance();  // '('
    if (!at(TokenKind::r_paren)) {
      do args.push_back(parse_expr());
      while (accept(TokenKind::comma));
    }
    expect(TokenKind::r_paren, fmt::format("after the arguments of '{}'", callee), "close the argument list with ')'");
    return args;
  }

  ExprPtr parse_primary() {
    uint32_t start = tok_.offset;
    ExprPtr e;
    switch (tok_.kind) {
      case TokenKind::int_literal:
        e = make_expr(ExprKind::int_literal);
        e->int_value = tok_.int_value;
        e->text = std::string(tok_.text);
        advance();
        break;
      case TokenKind::float_literal:
        e = make_expr(ExprKind::float_literal);
        e->float_value = tok_.float_value;
        e->text = std::string(tok_.text);
        advance();
        break;
      case TokenKind::kw_true:
      case TokenKind::kw_false:
        e = make_expr(ExprKind::bool_literal);
        e->bool_value = at(TokenKind::kw_true);
        advance();
        break;
      case TokenKind::l_paren: {
        advance();
        e = parse_expr();
        expect(TokenKind::r_paren, "to close the parenthesis", "add ')'");
        return e;  // keeps the inner expression's range
      }
      case TokenKind::identifier: {
        Token name_tok = tok_;
        std::string name(tok_.text);
        advance();
        if (at(TokenKind::l_paren)) {
          if (std::optional<Type> vector = type_from_name(name); vector && is_vector(*vector)) {
            e = make_expr(ExprKind::cast);  // f32x4(a, b, c, d): a vector from its lanes
            e->cast_type = *vector;
            e->operands = parse_arguments(name);
            e->name = std::move(name);
          } else if (std::optional<Type> cast = type_from_name(name)) {
            advance();
            e = make_expr(ExprKind::cast);
            e->cast_type = *cast;
            e->name = std::move(name);
            e->operands.push_back(parse_expr());
            expect(TokenKind::r_paren, fmt::format("after the operand of the cast to {}", type_name(*cast)),
                   "a cast takes exactly one operand: T(value)");
          } else {
            e = make_expr(ExprKind::call);
            e->intrinsic = intrinsic_from_name(name);
            e->operands = parse_arguments(name);
            if (e->intrinsic && is_atomic(*e->intrinsic)) take_memory_order(*e);
            if (e->intrinsic == Intrinsic::assert_) note_assert(*e, name_tok.offset);
            e->name = std::move(name);
          }
        } else if (at(TokenKind::dot)) {
          e = parse_builtin(name_tok);
        } else if (at(TokenKind::l_bracket)) {
          advance();
          e = make_expr(ExprKind::index);
          e->name = std::move(name);
          e->operands.push_back(parse_expr());
          expect(TokenKind::r_bracket, fmt::format("after the index into '{}'", e->name), "close the index with ']'");
        } else if (std::optional<Builtin> b = builtin_from_name(name); b && is_scalar_builtin(*b)) {
          e = make_expr(ExprKind::builtin);  // lane_id, warp_id
          e->builtin = *b;
          e->name = std::move(name);
        } else {
          e = make_expr(ExprKind::name);
          e->name = std::move(name);
        }
        break;
      }
      default:
        fail_here(diag::Code::expected_expression, fmt::format("expected an expression, found {}", describe(tok_)),
                  "write a value, a name, a call or a parenthesised expression here");
    }
    e->range = range_from(start);
    return e;
  }

  /// `builtin.x|y|z`. An unknown builtin or component is reported here (PG1104) and
  /// parsing continues with a placeholder `thread_id.x`.
  ExprPtr parse_builtin(const Token& name_tok) {
    advance();  // '.'
    auto e = make_expr(ExprKind::builtin);
    e->name = std::string(name_tok.text);
    std::optional<Builtin> b = builtin_from_name(name_tok.text);
    if (b && is_scalar_builtin(*b)) {
      bad_builtin_at_ = name_tok.offset;
      sink_.error(diag::Code::unknown_builtin, name_tok.offset, name_tok.length,
                  fmt::format("builtin '{}' is a single u32 and has no components", name_tok.text),
                  fmt::format("write '{}' without '.x'", name_tok.text));
      if (sink_.stopped()) throw Abort{};
      b.reset();
      advance();  // the component
      auto placeholder = make_expr(ExprKind::builtin);
      placeholder->name = std::string(name_tok.text);
      placeholder->builtin = Builtin::lane_id;
      return placeholder;
    }
    if (!b) {
      bad_builtin_at_ = name_tok.offset;
      sink_.error(diag::Code::unknown_builtin, name_tok.offset, name_tok.length,
                  fmt::format("'{}' is not a builtin; only builtins have components like '.x'", name_tok.text),
                  fmt::format("use one of {}", kBuiltinList));
      if (sink_.stopped()) throw Abort{};
    }
    e->builtin = b.value_or(Builtin::thread_id);
    Token comp = tok_;
    expect_identifier(fmt::format("a component x, y or z after '{}.'", name_tok.text));
    if (comp.text == "x" || comp.text == "y" || comp.text == "z") {
      e->component = static_cast<uint8_t>(comp.text[0] - 'x');
    } else if (b) {
      sink_.error(diag::Code::unknown_builtin, comp.offset, comp.length,
                  fmt::format("builtin '{}' has no component '{}'", name_tok.text, comp.text), "use .x, .y or .z");
      if (sink_.stopped()) throw Abort{};
    }
    return e;
  }

  const diag::SourceFile& file_;
  const Limits& limits_;
  DiagnosticSink sink_;
  Lexer lexer_;
  Token tok_;
  uint32_t prev_end_ = 0;
  uint32_t depth_ = 0;
  uint32_t statements_ = 0;
  std::string_view routine_word_ = "kernel";  ///< what the statements being counted belong to
  uint32_t unclosed_reported_at_ = UINT32_MAX;
  uint32_t bad_builtin_at_ = UINT32_MAX;  ///< offset of the last unknown builtin reported
};

}  // namespace

ParseResult parse(const diag::SourceFile& file, const Limits& limits) {
  ParseResult result;
  result.module.path = file.path();
  if (file.text().size() > limits.max_file_bytes || file.text().size() >= UINT32_MAX) {
    diag::Location loc;
    loc.file = file.path();
    result.diagnostics.add(diag::Code::input_too_large,
                           fmt::format("input is {} bytes, larger than the limit of {} bytes", file.text().size(),
                                       limits.max_file_bytes),
                           loc, "split the module into several files");
    return result;
  }
  try {
    Parser parser(file, limits, result.diagnostics);
    parser.parse_module(result.module);
  } catch (const Abort&) {
    // Already reported: a fatal limit or too many diagnostics.
  } catch (const SyntaxError&) {
    result.diagnostics.add(diag::Code::internal_error, "parser error escaped recovery", {}, "report this bug");
  } catch (const std::bad_alloc&) {
    result.diagnostics.add(diag::Code::internal_error, "out of memory while parsing", {}, "report this bug");
  }
  return result;
}

}  // namespace ptxgate::ir
