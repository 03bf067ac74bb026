// Unit tests for the parser: every construct, precedence, recovery and input limits.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ptxgate/ir/parser.hpp"

using namespace ptxgate;
using namespace ptxgate::ir;

namespace {

ParseResult parse_text(std::string text, const Limits& limits = {}) {
  diag::SourceFile file("t.pg", std::move(text));
  return parse(file, limits);
}

std::vector<diag::Code> codes(const ParseResult& r) {
  std::vector<diag::Code> out;
  for (const auto& d : r.diagnostics) out.push_back(d.code);
  return out;
}

bool has_code(const ParseResult& r, diag::Code c) {
  auto all = codes(r);
  return std::find(all.begin(), all.end(), c) != all.end();
}

/// Parses `let r = EXPR;` in a kernel and returns the module (the expression is body[0]->value).
ParseResult parse_expr_text(const std::string& expr) { return parse_text("kernel k() { let r = " + expr + "; }"); }

const Expr& only_expr(const ParseResult& r) {
  REQUIRE(r.diagnostics.empty());
  return *r.module.kernels.at(0).body.at(0)->value;
}

/// A fully parenthesised rendering of an expression tree, to check its shape.
std::string shape(const Expr& e) {
  switch (e.kind) {
    case ExprKind::int_literal: case ExprKind::float_literal: return e.text;
    case ExprKind::bool_literal: return e.bool_value ? "true" : "false";
    case ExprKind::name: return e.name;
    case ExprKind::builtin: return std::string(builtin_name(e.builtin)) + "." + char('x' + e.component);
    case ExprKind::index: return e.name + "[" + shape(*e.operands[0]) + "]";
    case ExprKind::unary: return "(" + std::string(op_spelling(e.unary_op)) + shape(*e.operands[0]) + ")";
    case ExprKind::binary:
      return "(" + shape(*e.operands[0]) + " " + std::string(op_spelling(e.binary_op)) + " " +
             shape(*e.operands[1]) + ")";
    case ExprKind::cast: return std::string(type_name(e.cast_type)) + "<" + shape(*e.operands[0]) + ">";
    case ExprKind::call: {
      std::string s = e.name + "{";
      for (const auto& a : e.operands) s += shape(*a) + ";";
      return s + "}";
    }
  }
  return "?";
}

std::string shape_of(const std::string& expr) {
  ParseResult r = parse_expr_text(expr);
  return shape(only_expr(r));
}

std::string read_example(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("parser accepts every example") {
  size_t examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PTXGATE_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".pg") continue;
    ++examples;
    CAPTURE(entry.path().filename().string());
    ParseResult r = parse_text(read_example(entry.path()));
    CHECK(r.diagnostics.empty());
    CHECK_FALSE(r.module.kernels.empty());
  }
  CHECK(examples >= 3);
}

TEST_CASE("parser builds the saxpy kernel") {
  std::string text =
      "@workgroup(256)\n"
      "kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {\n"
      "  let i = global_id.x;\n"
      "  if (i < n) {\n"
      "    y[i] = a * x[i] + y[i];\n"
      "  }\n"
      "}\n";
  ParseResult r = parse_text(text);
  REQUIRE(r.diagnostics.empty());
  REQUIRE(r.module.kernels.size() == 1);
  const Kernel& k = r.module.kernels[0];
  CHECK(k.name == "saxpy");
  CHECK(text.substr(k.name_range.offset, k.name_range.length) == "saxpy");
  CHECK(k.range.offset == 0);
  CHECK(k.range.length == text.size() - 1);
  REQUIRE(k.attributes.size() == 1);
  CHECK(k.attributes[0].name == "workgroup");
  REQUIRE(k.attributes[0].args.size() == 1);
  CHECK(k.attributes[0].args[0]->int_value == 256);
  REQUIRE(k.params.size() == 4);
  CHECK(k.params[0].is_buffer);
  CHECK(k.params[0].access == Access::inout);
  CHECK(k.params[0].type == Type::f32);
  CHECK(k.params[1].access == Access::in);
  CHECK_FALSE(k.params[2].is_buffer);
  CHECK(k.params[3].type == Type::u32);
  CHECK(text.substr(k.params[0].range.offset, k.params[0].range.length) == "inout y: f32[]");
  REQUIRE(k.body.size() == 2);
  const Stmt& let = *k.body[0];
  CHECK(let.kind == StmtKind::let_decl);
  CHECK(let.name == "i");
  CHECK_FALSE(let.declared_type.has_value());
  CHECK(let.value->kind == ExprKind::builtin);
  CHECK(let.value->builtin == Builtin::global_id);
  CHECK(let.value->component == 0);
  CHECK(text.substr(let.range.offset, let.range.length) == "let i = global_id.x;");
  CHECK(text.substr(let.value->range.offset, let.value->range.length) == "global_id.x");
  const Stmt& iff = *k.body[1];
  CHECK(iff.kind == StmtKind::if_);
  CHECK_FALSE(iff.has_else);
  REQUIRE(iff.body.size() == 1);
  const Stmt& assign = *iff.body[0];
  CHECK(assign.kind == StmtKind::assign);
  CHECK(assign.target->kind == ExprKind::index);
  CHECK(assign.target->name == "y");
  CHECK(shape(*assign.value) == "((a * x[i]) + y[i])");
  CHECK(text.substr(assign.value->range.offset, assign.value->range.length) == "a * x[i] + y[i]");
}

TEST_CASE("parser: operator precedence and associativity") {
  CHECK(shape_of("a + b * c") == "(a + (b * c))");
  CHECK(shape_of("a - b - c") == "((a - b) - c)");
  CHECK(shape_of("a / b * c % d") == "(((a / b) * c) % d)");
  CHECK(shape_of("a || b && c") == "(a || (b && c))");
  CHECK(shape_of("a | b ^ c & d") == "(a | (b ^ (c & d)))");
  CHECK(shape_of("a & b == c") == "(a & (b == c))");
  CHECK(shape_of("a == b < c") == "(a == (b < c))");
  CHECK(shape_of("a < b << 1 + 2") == "(a < (b << (1 + 2)))");
  CHECK(shape_of("(a + b) * c") == "((a + b) * c)");
  CHECK(shape_of("-a * b") == "((-a) * b)");
  CHECK(shape_of("!(a < b) && ~c != 0") == "((!(a < b)) && ((~c) != 0))");
  CHECK(shape_of("- -1") == "(-(-1))");
  CHECK(shape_of("a >= b || a <= b && a > b") == "((a >= b) || ((a <= b) && (a > b)))");
  CHECK(shape_of("x >> 2 >> 1") == "((x >> 2) >> 1)");
}

TEST_CASE("parser: literals, casts, calls, builtins and indexing") {
  CHECK(shape_of("0x10 + 1_000 + 2.5e3 + 1e-3") == "(((0x10 + 1_000) + 2.5e3) + 1e-3)");
  ParseResult lit_parsed = parse_expr_text("0x10");
  const Expr& lit = only_expr(lit_parsed);
  CHECK(lit.kind == ExprKind::int_literal);
  CHECK(lit.int_value == 16);
  ParseResult f_parsed = parse_expr_text("2.5e3");
  const Expr& f = only_expr(f_parsed);
  CHECK(f.kind == ExprKind::float_literal);
  CHECK(f.float_value == 2500.0);
  ParseResult t = parse_expr_text("true"), f2 = parse_expr_text("false");
  CHECK(only_expr(t).bool_value);
  CHECK_FALSE(only_expr(f2).bool_value);

  ParseResult cast_parsed = parse_expr_text("f64(n)");
  const Expr& cast = only_expr(cast_parsed);
  CHECK(cast.kind == ExprKind::cast);
  CHECK(cast.cast_type == Type::f64);
  REQUIRE(cast.operands.size() == 1);

  ParseResult call_parsed = parse_expr_text("fma(a, b, c)");
  const Expr& call = only_expr(call_parsed);
  CHECK(call.kind == ExprKind::call);
  CHECK(call.intrinsic == Intrinsic::fma);
  CHECK(call.operands.size() == 3);

  ParseResult unknown_parsed = parse_expr_text("frobnicate(a)");
  const Expr& unknown = only_expr(unknown_parsed);
  CHECK(unknown.kind == ExprKind::call);
  CHECK(unknown.name == "frobnicate");
  CHECK_FALSE(unknown.intrinsic.has_value());

  ParseResult atomic_parsed = parse_expr_text("atomic_cas(buf, i + 1, 0, 7)");
  const Expr& atomic = only_expr(atomic_parsed);
  CHECK(atomic.intrinsic == Intrinsic::atomic_cas);
  REQUIRE(atomic.operands.size() == 4);
  CHECK(atomic.operands[0]->kind == ExprKind::name);
  CHECK(atomic.operands[0]->name == "buf");

  CHECK(shape_of("block_dim.y * grid_dim.z + thread_id.x") == "((block_dim.y * grid_dim.z) + thread_id.x)");
  CHECK(shape_of("x[i * 2 + 1]") == "x[((i * 2) + 1)]");
  CHECK(shape_of("select(a < b, sqrt(a), u32(b))") == "select{(a < b);sqrt{a;};u32<b>;}");
}

TEST_CASE("parser: unknown builtins and components are reported at parse time") {
  ParseResult r = parse_text("kernel k() { let a = foo.x; let b = thread_id.w; let c = block_id.y; }");
  REQUIRE(r.diagnostics.size() == 2);
  CHECK(r.diagnostics.items()[0].code == diag::Code::unknown_builtin);
  CHECK(r.diagnostics.items()[0].message.find("'foo'") != std::string::npos);
  CHECK(r.diagnostics.items()[1].code == diag::Code::unknown_builtin);
  CHECK(r.diagnostics.items()[1].message.find("'w'") != std::string::npos);
  REQUIRE(r.module.kernels.at(0).body.size() == 3);  // parsing went on
}

TEST_CASE("parser: every statement form") {
  ParseResult r = parse_text(R"(
@cooperative
@workgroup(16, 16)
kernel k(out o: u64[], inout io: i32[], s: bool) {
  shared tile: f32[16 * 16];
  var a: i32;
  var b = 1;
  let c: f64 = 2.0;
  a = 3;
  io[0] = a;
  if (s) { a = 1; } else if (!s) { a = 2; } else { a = 3; }
  while (a < 10) { a = a + 1; if (a == 5) { continue; } if (a == 7) { break; } }
  for i in 0..10 { }
  for j in 0..10 step 2 { barrier(); }
  { let inner = 1; }
  atomic_add(io, 0, 1);
  grid_sync();
  return;
}
)");
  REQUIRE(r.diagnostics.empty());
  const Kernel& k = r.module.kernels.at(0);
  REQUIRE(k.attributes.size() == 2);
  CHECK(k.attributes[0].name == "cooperative");
  CHECK(k.attributes[0].args.empty());
  CHECK(k.attributes[1].args.size() == 2);
  CHECK(k.params[0].access == Access::out);
  CHECK(k.params[0].type == Type::u64);
  CHECK(k.params[2].type == Type::bool_);
  std::vector<StmtKind> expected = {StmtKind::shared_decl, StmtKind::var_decl, StmtKind::var_decl,
                                    StmtKind::let_decl,    StmtKind::assign,   StmtKind::assign,
                                    StmtKind::if_,         StmtKind::while_,   StmtKind::for_,
                                    StmtKind::for_,        StmtKind::block,    StmtKind::expr,
                                    StmtKind::expr,        StmtKind::return_};
  REQUIRE(k.body.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(k.body[i]->kind == expected[i]);
  CHECK(k.body[0]->declared_type == Type::f32);
  CHECK(shape(*k.body[0]->value) == "(16 * 16)");
  CHECK(k.body[1]->declared_type == Type::i32);
  CHECK(k.body[1]->value == nullptr);
  CHECK(k.body[3]->declared_type == Type::f64);
  const Stmt& iff = *k.body[6];
  CHECK(iff.has_else);
  REQUIRE(iff.else_body.size() == 1);
  CHECK(iff.else_body[0]->kind == StmtKind::if_);
  CHECK(iff.else_body[0]->has_else);
  CHECK(iff.else_body[0]->else_body.size() == 1);
  CHECK(k.body[8]->name == "i");
  CHECK(k.body[8]->step == nullptr);
  REQUIRE(k.body[9]->step != nullptr);
  CHECK(k.body[9]->step->int_value == 2);
  CHECK(k.body[11]->value->intrinsic == Intrinsic::atomic_add);
  CHECK(k.body[12]->value->intrinsic == Intrinsic::grid_sync);
  CHECK(k.body[13]->value == nullptr);
}

TEST_CASE("parser: several kernels and contextual words as names") {
  ParseResult r = parse_text("kernel a() { let step = 1; let in = step; }\nkernel b(out: u32) { }\n");
  REQUIRE(r.diagnostics.empty());
  REQUIRE(r.module.kernels.size() == 2);
  CHECK(r.module.kernels[1].params[0].name == "out");
  CHECK_FALSE(r.module.kernels[1].params[0].is_buffer);
}

TEST_CASE("parser: syntax errors name the token, have a location and a fix") {
  ParseResult r = parse_text("kernel k() {\n  let x = 1\n  let y = 2;\n}\n");
  REQUIRE(r.diagnostics.size() == 1);
  const auto& d = r.diagnostics.items()[0];
  CHECK(d.code == diag::Code::expected_token);
  CHECK(d.message == "expected ';' after declaration, found 'let'");
  CHECK(d.location.file == "t.pg");
  CHECK(d.location.line == 2);
  CHECK(d.location.column == 12);
  CHECK_FALSE(d.fix.empty());
}

TEST_CASE("parser: recovery reports several independent errors") {
  ParseResult r = parse_text(R"(kernel a(in x: f32[]) {
  let p = ;
  let q = 1 +;
  var v;
  x[0] = = 3;
  let ok = 1;
}
kernel b(in y: q32[]) { let z = ) ; }
garbage here
kernel c() { let fine = 1; }
)");
  std::vector<diag::Code> expected = {diag::Code::expected_expression, diag::Code::expected_expression,
                                      diag::Code::expected_token,      diag::Code::expected_expression,
                                      diag::Code::expected_type,       diag::Code::expected_expression,
                                      diag::Code::expected_kernel};
  CHECK(codes(r) == expected);
  REQUIRE(r.module.kernels.size() == 3);
  CHECK(r.module.kernels[0].body.back()->name == "ok");
  CHECK(r.module.kernels[2].name == "c");
  CHECK(r.module.kernels[2].body.size() == 1);
}

TEST_CASE("parser: a missing ';' before the next statement does not hide that statement's errors") {
  ParseResult r = parse_text("kernel k() {\n  let x = 1\n  let y = (2 + ;\n  foo.x = 3;\n  let z = 4\n}\n");
  CHECK(codes(r) == std::vector<diag::Code>{diag::Code::expected_token, diag::Code::expected_expression,
                                            diag::Code::unknown_builtin, diag::Code::expected_token});
  REQUIRE(r.module.kernels.size() == 1);
  const auto& body = r.module.kernels[0].body;
  REQUIRE(body.size() == 2);
  CHECK(body[0]->name == "x");
  CHECK(body[1]->name == "z");
}

TEST_CASE("parser: a missing closing brace is reported once") {
  ParseResult r = parse_text("kernel a() { if (x) { while (y) { let z = 1;\nkernel b() { }\n");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics.items()[0].message.find("expected '}'") == 0);
  CHECK(r.module.kernels.size() == 2);
}

TEST_CASE("parser: structural errors") {
  CHECK(has_code(parse_text("kernel k(x: f32[]) { }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("kernel k(in x: f32) { let y = x[0]; }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("@workgroup(1) let"), diag::Code::expected_kernel));
  CHECK(has_code(parse_text("kernel k() { f(1) = 2; }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("kernel k() { let x; }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("kernel k() { ; }"), diag::Code::expected_statement));
  CHECK(has_code(parse_text("kernel k() { for i 0..3 { } }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("kernel k() { let c = f32(1, 2); }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("kernel k() { shared s: f32; }"), diag::Code::expected_token));
  CHECK(has_code(parse_text("kernel k() { let a: vec4 = 1; }"), diag::Code::expected_type));
  CHECK(parse_text("").diagnostics.empty());
  CHECK(parse_text("// only a comment\n").diagnostics.empty());
}

TEST_CASE("parser limits: nesting depth") {
  for (std::string open : {"(", "-", "!", "{"}) {
    CAPTURE(open);
    std::string text = "kernel k() { let x = ";
    if (open == "{") text = "kernel k() ";
    for (int i = 0; i < (1 << 20); ++i) text += open;
    ParseResult r = parse_text(text);
    CHECK(has_code(r, diag::Code::nesting_too_deep));
    CHECK(r.diagnostics.size() == 1);
  }
  std::string chain = "kernel k() { let x = a";
  for (int i = 0; i < 100000; ++i) chain += " + a";
  ParseResult chained = parse_text(chain + "; }");
  CHECK(codes(chained) == std::vector<diag::Code>{diag::Code::nesting_too_deep});  // the tree would be 100000 deep

  std::string ifs = "kernel k() { ";
  for (int i = 0; i < 5000; ++i) ifs += "if (a) { } else ";
  ifs += "{ } }";
  CHECK(has_code(parse_text(ifs), diag::Code::nesting_too_deep));

  Limits limits;
  limits.max_nesting_depth = 10;
  CHECK(parse_text("kernel k() { let x = ((((1)))); }", limits).diagnostics.empty());
  CHECK(has_code(parse_text("kernel k() { let x = ((((((((((1)))))))))); }", limits), diag::Code::nesting_too_deep));
}

TEST_CASE("parser limits: identifiers, literals, kernels, parameters, statements, diagnostics, size") {
  CHECK(has_code(parse_text("kernel " + std::string(300, 'k') + "() { }"), diag::Code::identifier_too_long));
  CHECK(has_code(parse_expr_text("99999999999999999999999"), diag::Code::malformed_number));

  Limits limits;
  limits.max_kernels = 2;
  ParseResult kernels = parse_text("kernel a() {} kernel b() {} kernel c() {} kernel d() {}", limits);
  CHECK(codes(kernels) == std::vector<diag::Code>{diag::Code::too_many_kernels});

  limits = {};
  limits.max_parameters = 2;
  ParseResult params = parse_text("kernel a(x: u32, y: u32, z: u32, w: u32) {}", limits);
  CHECK(codes(params) == std::vector<diag::Code>{diag::Code::too_many_parameters});
  CHECK(params.module.kernels.at(0).params.size() == 2);

  limits = {};
  limits.max_statements_per_kernel = 3;
  CHECK(parse_text("kernel a() { let x = 1; let y = 2; let z = 3; }", limits).diagnostics.empty());
  CHECK(has_code(parse_text("kernel a() { let x = 1; if (x) { let y = 2; let z = 3; } }", limits),
                 diag::Code::too_many_statements));

  limits = {};
  limits.max_diagnostics = 5;
  std::string many = "kernel a() {";
  for (int i = 0; i < 50; ++i) many += " let = 1;";
  many += " }";
  ParseResult diags = parse_text(many, limits);
  REQUIRE(diags.diagnostics.size() == 6);
  CHECK(diags.diagnostics.items()[5].code == diag::Code::too_many_diagnostics);

  limits = {};
  limits.max_file_bytes = 10;
  CHECK(codes(parse_text("kernel a() { }", limits)) == std::vector<diag::Code>{diag::Code::input_too_large});
}

TEST_CASE("parser: garbage and random bytes never crash and give bounded diagnostics") {
  Limits limits;
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 300; ++round) {
    std::string text(static_cast<size_t>(rng() % 400), '\0');
    for (auto& c : text) c = static_cast<char>(byte(rng));
    ParseResult r = parse_text(text, limits);
    CHECK(r.diagnostics.size() <= limits.max_diagnostics + 1);
    if (!text.empty()) CHECK_FALSE(r.diagnostics.empty());
  }
  // Token soup: syntactically plausible fragments in random order.
  const std::vector<std::string> pieces = {"kernel", "k", "(", ")", "{", "}", "[", "]", "let", "var", "x", "=",
                                           ";", "if", "else", "while", "for", "in", "..", "step", "1", "2.5",
                                           "+", "*", "<", "&&", "@workgroup", "thread_id", ".", "x", ",", ":",
                                           "f32", "inout", "shared", "return", "break", "-", "!", "0x"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    size_t n = rng() % 200;
    for (size_t i = 0; i < n; ++i) text += pieces[rng() % pieces.size()] + " ";
    ParseResult r = parse_text(text, limits);
    CHECK(r.diagnostics.size() <= limits.max_diagnostics + 1);
  }
  ParseResult big = parse_text(std::string(1 << 20, '\xFF'));
  CHECK(codes(big) == std::vector<diag::Code>{diag::Code::invalid_utf8});
  ParseResult braces = parse_text(std::string(1 << 20, '}'));
  CHECK(codes(braces) == std::vector<diag::Code>{diag::Code::expected_kernel});
}

TEST_CASE("the fix of an unknown type names every type a program can spell") {
  auto r = parse_text("kernel k(a: float) { }");
  REQUIRE(has_code(r, diag::Code::expected_type));
  const std::string& fix = r.diagnostics.items().front().fix;
  size_t named = 0;
  for (unsigned i = 0; i <= static_cast<unsigned>(Type::tensor_map); ++i) {
    const Type t = static_cast<Type>(i);
    const std::string name(type_name(t));
    if (type_from_name(name) != t) continue;  // literals, void, error: not spellable
    ++named;
    CAPTURE(name);
    // As a word of the list, not a prefix of a longer name ("i8" in "i8x4").
    const std::string text = " " + fix + ",";
    CHECK((text.find(" " + name + ",") != std::string::npos || text.find(" " + name + " ") != std::string::npos));
  }
  CHECK(named > 30);
}
