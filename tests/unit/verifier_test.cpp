// Unit tests for the verifier: literal and expression typing, name resolution, each rule, divergence.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/verifier.hpp"

using namespace ptxgate;
using ir::Type;

namespace {

struct Verified {
  std::unique_ptr<diag::SourceFile> file;
  ir::Module module;
  diag::Diagnostics diags;

  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const auto& d : diags) out.emplace_back(diag::info(d.code).name);
    return out;
  }
  bool has(std::string_view code) const {
    auto c = codes();
    return std::find(c.begin(), c.end(), code) != c.end();
  }
  bool clean() const { return diags.empty(); }
  const ir::Kernel& kernel(size_t i = 0) const { return module.kernels.at(i); }
};

Verified verify_text(std::string text, const ir::Limits& limits = {}) {
  Verified v;
  v.file = std::make_unique<diag::SourceFile>("t.pg", std::move(text));
  ir::ParseResult parsed = ir::parse(*v.file, limits);
  INFO(diag::render_text(parsed.diagnostics));
  REQUIRE_FALSE(parsed.diagnostics.has_errors());
  v.module = std::move(parsed.module);
  v.diags = ir::verify(v.module, v.file.get(), limits);
  return v;
}

/// Verifies a kernel body wrapped in a kernel with a few parameters of every kind.
Verified verify_body(const std::string& body, const std::string& attributes = "@workgroup(256)") {
  return verify_text(attributes +
                     "\nkernel k(inout y: f32[], in x: f32[], out o: f32[], inout u: u32[], a: f32, n: u32, "
                     "s: i32, d: f64, flag: bool) {\n" +
                     body + "\n}\n");
}

std::string render(const Verified& v) { return diag::render_text(v.diags); }

void for_each_expr(const ir::Expr& e, const std::function<void(const ir::Expr&)>& f) {
  f(e);
  for (const auto& op : e.operands)
    if (op) for_each_expr(*op, f);
}

void for_each_expr(const std::vector<ir::StmtPtr>& body, const std::function<void(const ir::Expr&)>& f) {
  for (const auto& s : body) {
    for (const ir::Expr* e : {s->target.get(), s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
      if (e) for_each_expr(*e, f);
    for_each_expr(s->body, f);
    for_each_expr(s->else_body, f);
  }
}

/// The statement declaring `name` (let/var/for/shared), searched depth-first.
const ir::Stmt* find_decl(const std::vector<ir::StmtPtr>& body, std::string_view name) {
  for (const auto& s : body) {
    if ((s->kind == ir::StmtKind::let_decl || s->kind == ir::StmtKind::var_decl || s->kind == ir::StmtKind::for_ ||
         s->kind == ir::StmtKind::shared_decl) &&
        s->name == name)
      return s.get();
    if (auto* found = find_decl(s->body, name)) return found;
    if (auto* found = find_decl(s->else_body, name)) return found;
  }
  return nullptr;
}

/// Type of the initial value of `let/var NAME` in a verified body.
Type value_type(const Verified& v, std::string_view name) {
  const ir::Stmt* s = find_decl(v.kernel().body, name);
  REQUIRE(s);
  REQUIRE(s->value);
  return s->value->type;
}

Type symbol_type(const Verified& v, std::string_view name) {
  const ir::Stmt* s = find_decl(v.kernel().body, name);
  REQUIRE(s);
  REQUIRE(s->symbol);
  return s->symbol->type;
}

bool every_type_concrete(const ir::Module& m) {
  bool ok = true;
  for (const auto& k : m.kernels)
    for_each_expr(k.body, [&](const ir::Expr& e) {
      if (e.type == Type::error || e.type == Type::int_literal || e.type == Type::float_literal) {
        MESSAGE("not concrete: " << e.name << " kind " << int(e.kind) << " type " << ir::type_name(e.type));
        ok = false;
      }
    });
  return ok;
}

}  // namespace

TEST_CASE("verifier: saxpy is typed exactly") {
  auto v = verify_text(R"(@workgroup(256)
kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
})");
  INFO(render(v));
  REQUIRE(v.clean());
  const auto& k = v.kernel();
  CHECK(k.workgroup == std::array<uint32_t, 3>{256, 1, 1});
  CHECK_FALSE(k.cooperative);
  CHECK_FALSE(k.uses_barrier);
  CHECK(k.params[0].symbol->kind == ir::SymbolKind::buffer_param);
  CHECK(k.params[3].symbol->param_index == 3);
  CHECK(symbol_type(v, "i") == Type::u32);
  const ir::Stmt& if_stmt = *k.body[1];
  CHECK(if_stmt.value->type == Type::bool_);
  CHECK(if_stmt.value->operands[0]->type == Type::u32);
  CHECK(if_stmt.value->operands[1]->symbol == k.params[3].symbol);
  const ir::Stmt& assign = *if_stmt.body[0];
  CHECK(assign.target->type == Type::f32);
  CHECK(assign.target->symbol == k.params[0].symbol);
  for_each_expr(*assign.value, [](const ir::Expr& e) {
    if (e.kind != ir::ExprKind::name || e.name != "i") CHECK(e.type == Type::f32);
  });
  CHECK(every_type_concrete(v.module));
}

TEST_CASE("verifier: untyped literals take their context's type") {
  auto v = verify_body(R"(
  let a1 = 1;
  let a2 = 1.5;
  let a3: u64 = 7;
  var a4: f32 = 2;
  let a5 = a + 1;
  let a6 = d * 2;
  let a7 = n << 3;
  let a8 = 1 < 2;
  let a9: i32 = -2147483648;
  let b1 = select(flag, 1, 2);
  let b2 = select(flag, s, 3);
  let b3 = min(n, 4);
  let b4 = sqrt(2);
  let b5: f64 = 1 + 2.5;
  let b6 = u64(3000000000);
  let b7 = f32(n) * 0.5;
  let b8 = x[0];)");
  INFO(render(v));
  REQUIRE(v.clean());
  CHECK(symbol_type(v, "a1") == Type::i32);
  CHECK(symbol_type(v, "a2") == Type::f32);
  CHECK(value_type(v, "a3") == Type::u64);
  CHECK(value_type(v, "a4") == Type::f32);
  CHECK(symbol_type(v, "a5") == Type::f32);
  CHECK(symbol_type(v, "a6") == Type::f64);
  CHECK(symbol_type(v, "a7") == Type::u32);
  CHECK(symbol_type(v, "a8") == Type::bool_);
  CHECK(find_decl(v.kernel().body, "a8")->value->operands[0]->type == Type::i32);
  CHECK(symbol_type(v, "a9") == Type::i32);
  CHECK(symbol_type(v, "b1") == Type::i32);
  CHECK(symbol_type(v, "b2") == Type::i32);
  CHECK(symbol_type(v, "b3") == Type::u32);
  CHECK(symbol_type(v, "b4") == Type::f32);
  CHECK(find_decl(v.kernel().body, "b4")->value->operands[0]->type == Type::f32);
  CHECK(symbol_type(v, "b5") == Type::f64);
  CHECK(symbol_type(v, "b6") == Type::u64);
  CHECK(find_decl(v.kernel().body, "b6")->value->operands[0]->type == Type::u64);
  CHECK(symbol_type(v, "b7") == Type::f32);
  CHECK(find_decl(v.kernel().body, "b8")->value->operands[0]->type == Type::u32);
  CHECK(every_type_concrete(v.module));
}

TEST_CASE("verifier: literals that do not fit their type are PG1206") {
  CHECK(verify_body("let x: i32 = 3000000000;").has("PG1206"));
  CHECK(verify_body("let x: u32 = -1;").has("PG1206"));
  CHECK(verify_body("let x: u32 = 0 - 1;").has("PG1206"));
  CHECK(verify_body("let x: i32 = -2147483649;").has("PG1206"));
  CHECK(verify_body("let x: f32 = 1e39;").has("PG1206"));
  CHECK(verify_body("let z: u64 = 18446744073709551615;").clean());
  CHECK(verify_body("let z: i64 = -9223372036854775808;").clean());
  CHECK(verify_body("let z: f64 = 1e39;").clean());
  CHECK(verify_body("let z: u32 = n + 4294967295;").clean());
  CHECK(verify_body("let x: u32 = n + 4294967296;").has("PG1206"));
}

TEST_CASE("verifier: no implicit conversions between concrete types") {
  auto v = verify_body("var m: u32 = 0;\n  m = a;");
  CHECK(v.codes() == std::vector<std::string>{"PG1201"});
  CHECK(render(v).find("cannot assign f32 to variable 'm' of type u32") != std::string::npos);
  CHECK(verify_body("let z = a + d;").has("PG1201"));
  CHECK(verify_body("let z = n + s;").has("PG1201"));
  CHECK(verify_body("let z: u32 = 1.5;").has("PG1201"));
  CHECK(verify_body("let z = n + 1.0;").has("PG1201"));
  CHECK(verify_body("let z = a + 1;").clean());
  CHECK(verify_body("let z: i64 = s;").has("PG1201"));
  CHECK(verify_body("let z = n << s;").has("PG1201"));
  CHECK(verify_body("let z = atomic_add(u, 0, s);").has("PG1201"));
  CHECK(verify_body("let z = pow(a, d);").has("PG1201"));
}

TEST_CASE("verifier: operators need suitable operand types") {
  CHECK(verify_body("let z = flag + flag;").has("PG1203"));
  CHECK(verify_body("let z = a & a;").has("PG1203"));
  CHECK(verify_body("let z = 1.5 << 2;").has("PG1203"));
  CHECK(verify_body("let z = n && flag;").has("PG1203"));
  CHECK(verify_body("let z = !n;").has("PG1203"));
  CHECK(verify_body("let z = -n;").has("PG1203"));
  CHECK(verify_body("let z = ~a;").has("PG1203"));
  CHECK(verify_body("let z = flag < flag;").has("PG1203"));
  CHECK(verify_body("let z = sqrt(n);").has("PG1203"));
  CHECK(verify_body("let z: f32 = 1 << 2;").has("PG1203"));
  CHECK(verify_body("let z = flag == true && !flag;").clean());
  CHECK(verify_body("let z = -s + abs(s) + min(s, 2) + max(-1, s);").clean());
  CHECK(verify_body("let z = a % 2.0;").clean());
}

TEST_CASE("verifier: shifts, comparisons, select, atomics and barriers have the documented types") {
  auto v = verify_body(R"(
  shared tile: i64[64];
  let sh = n >> 2;
  let cmp = a <= 1;
  let sel = select(cmp, a, 2);
  let old = atomic_add(u, n, 1);
  let prev = atomic_cas(tile, 0, 5, 6);
  atomic_exch(y, 1, 0.5);
  barrier();)");
  INFO(render(v));
  REQUIRE(v.clean());
  CHECK(symbol_type(v, "sh") == Type::u32);
  auto* cmp = find_decl(v.kernel().body, "cmp");
  CHECK(cmp->value->type == Type::bool_);
  CHECK(cmp->value->operands[1]->type == Type::f32);
  CHECK(symbol_type(v, "sel") == Type::f32);
  CHECK(symbol_type(v, "old") == Type::u32);
  CHECK(symbol_type(v, "prev") == Type::i64);
  auto* prev = find_decl(v.kernel().body, "prev");
  CHECK(prev->value->operands[0]->symbol->kind == ir::SymbolKind::shared_array);
  CHECK(prev->value->operands[2]->type == Type::i64);
  const auto& body = v.kernel().body;
  CHECK(body[body.size() - 2]->value->operands[2]->type == Type::f32);
  CHECK(body.back()->value->type == Type::void_);
  CHECK(v.kernel().uses_barrier);
  CHECK(v.kernel().static_shared_bytes == 512);
  CHECK(every_type_concrete(v.module));
}

TEST_CASE("verifier: for loop variables take the type of their typed bound") {
  auto v = verify_body(R"(
  for i in 0..10 { }
  for j in 0..s step 2 { }
  let big: u64 = 100;
  for q in big..200 step 3 { })");
  INFO(render(v));
  REQUIRE(v.clean());
  CHECK(symbol_type(v, "i") == Type::u32);
  CHECK(symbol_type(v, "j") == Type::i32);
  CHECK(find_decl(v.kernel().body, "j")->step->type == Type::i32);
  CHECK(symbol_type(v, "q") == Type::u64);
  CHECK(find_decl(v.kernel().body, "q")->hi->type == Type::u64);
  CHECK(find_decl(v.kernel().body, "i")->symbol->kind == ir::SymbolKind::loop_var);
  CHECK(verify_body("for i in 0..a { }").has("PG1201"));
  CHECK(verify_body("for i in n..s { }").has("PG1201"));
  CHECK(verify_body("for i in 0..n step s { }").has("PG1201"));
}

TEST_CASE("verifier: names are resolved, undefined and redefined names reported") {
  auto undefined = verify_body("let z = nn + 1;");
  CHECK(undefined.codes() == std::vector<std::string>{"PG1101"});
  CHECK(render(undefined).find("did you mean 'n'?") != std::string::npos);
  CHECK(verify_body("let z = 1;\n  let z = 2;").has("PG1102"));
  CHECK(verify_body("let n = 1;").has("PG1102"));
  CHECK(verify_body("let z = 1;\n  if (flag) { let z = 2; }").has("PG1102"));
  CHECK(verify_body("for n in 0..4 { }").has("PG1102"));
  CHECK(verify_text("kernel k(a: f32, a: u32) { }").has("PG1102"));
  CHECK(verify_body("if (flag) { let z = 1; } else { let z = 2; }\n  for j in 0..4 { }\n  for j in 0..4 { }").clean());
  CHECK(verify_body("if (flag) { let z = 1; }\n  let w = z;").has("PG1101"));
  CHECK(verify_text("kernel k() { }\nkernel k() { }").has("PG1106"));
  CHECK(verify_body("let z = foo(1);").has("PG1103"));
  CHECK(verify_body("let z = thread_id;").has("PG1104"));
  CHECK(verify_body("let z = barrier();").has("PG1107"));
  CHECK(verify_body("let z = n[0];").has("PG1108"));
  CHECK(verify_body("let z = atomic_add(n, 0, 1);").has("PG1108"));
  CHECK(verify_body("let z = x;").has("PG1315"));
  CHECK(verify_body("y = 1.0;").has("PG1315"));
}

TEST_CASE("verifier: an error-typed expression causes no second diagnostic") {
  auto v = verify_body("let p = missing * 2.0;\n  let q = p + a;\n  if (p > 1.0) { y[n] = p; }\n  let r = u32(p) + n;");
  INFO(render(v));
  CHECK(v.codes() == std::vector<std::string>{"PG1101"});
}

TEST_CASE("verifier: several independent errors are reported in one run") {
  auto v = verify_body("let p = missing;\n  let q: u32 = a;\n  x[0] = 1.0;\n  let r = o[0];\n  break;");
  CHECK(v.codes() == std::vector<std::string>{"PG1101", "PG1201", "PG1302", "PG1303", "PG1310"});
}

TEST_CASE("verifier: assignment targets and buffer access modes") {
  CHECK(verify_body("let z = 1;\n  z = 2;").has("PG1301"));
  CHECK(verify_body("for j in 0..4 { j = 1; }").has("PG1301"));
  CHECK(verify_body("n = 1;").has("PG1301"));
  CHECK(verify_body("x[0] = 1.0;").has("PG1302"));
  CHECK(verify_body("atomic_add(x, 0, 1.0);").has("PG1302"));
  CHECK(verify_body("let z = o[0];").has("PG1303"));
  CHECK(verify_body("o[0] = o[1];").has("PG1303"));
  CHECK(verify_body("atomic_add(o, 0, 1.0);").has("PG1303"));
  CHECK(verify_body("o[n] = x[n] + y[n];\n  var z: u32 = 1;\n  z = 2;").clean());
  CHECK(verify_body("y[a] = 1.0;").has("PG1202"));
  CHECK(verify_body("let z = x[1.5];").has("PG1202"));
  CHECK(verify_body("let z = x[flag];").has("PG1202"));
  CHECK(verify_body("let z = x[s] + x[u64(n)];").clean());
}

TEST_CASE("verifier: calls, casts and atomics") {
  CHECK(verify_body("let z = sqrt(a, a);").has("PG1205"));
  CHECK(verify_body("barrier(1);").has("PG1205"));
  CHECK(verify_body("atomic_cas(u, 0, 1);").has("PG1205"));
  CHECK(verify_body("let z = bool(n);").has("PG1207"));
  CHECK(verify_body("let z = f32(flag);").has("PG1207"));
  CHECK(verify_body("let z = u32(flag) + u32(a) + n;\n  let w = f64(s) + d;").clean());
  CHECK(verify_body("atomic_min(y, 0, 1.0);").has("PG1208"));
  CHECK(verify_body("atomic_and(y, 0, 1.0);").has("PG1208"));
  CHECK(verify_body("atomic_cas(y, 0, 1.0, 2.0);").has("PG1208"));
  CHECK(verify_body("atomic_add(y, 0, 1.0);\n  atomic_exch(y, 0, 1.0);\n  atomic_max(u, 0, 3);\n  atomic_xor(u, 0, n);")
            .clean());
  CHECK(verify_body("let z = sqrt(a);").has("PG1314") == false);
  CHECK(verify_body("sqrt(a);").has("PG1314"));
  CHECK(verify_text("kernel k(inout b: bool[]) { }").has("PG1210"));
}

TEST_CASE("verifier: control flow rules") {
  CHECK(verify_body("if (n) { }").has("PG1204"));
  CHECK(verify_body("while (1) { }").has("PG1204"));
  CHECK(verify_body("let z = select(n, 1, 2);").has("PG1204"));
  CHECK(verify_body("break;").has("PG1310"));
  CHECK(verify_body("if (flag) { continue; }").has("PG1310"));
  CHECK(verify_body("while (flag) { if (flag) { break; } continue; }").clean());
  CHECK(verify_body("return 1;").has("PG1313"));
  CHECK(verify_body("if (flag) { return; }").clean());
  CHECK(verify_body("var z: u32;").clean());
  CHECK(symbol_type(verify_body("var z: u32;"), "z") == Type::u32);
}

TEST_CASE("verifier: attributes and @workgroup limits") {
  CHECK(verify_text("@workgroup(32, 8, 4)\nkernel k() { }").kernel().workgroup == std::array<uint32_t, 3>{32, 8, 4});
  CHECK(verify_text("@workgroup(1024)\nkernel k() { }").clean());
  CHECK(verify_text("@workgroup(1025)\nkernel k() { }").has("PG1308"));
  CHECK(verify_text("@workgroup(64, 32)\nkernel k() { }").has("PG1308"));
  CHECK(verify_text("@workgroup(1, 1, 65)\nkernel k() { }").has("PG1308"));
  CHECK(verify_text("@workgroup(0)\nkernel k() { }").has("PG1309"));
  CHECK(verify_text("@workgroup()\nkernel k() { }").has("PG1309"));
  CHECK(verify_text("@workgroup(1, 2, 3, 4)\nkernel k() { }").has("PG1309"));
  CHECK(verify_text("@workgroup(n)\nkernel k() { }").has("PG1309"));
  CHECK(verify_text("@workgroup(8)\n@workgroup(8)\nkernel k() { }").has("PG1309"));
  CHECK(verify_text("@cooperative(1)\nkernel k() { }").has("PG1309"));
  CHECK(verify_text("@workgroups(8)\nkernel k() { }").has("PG1105"));
  CHECK(verify_text("kernel k() { }").kernel().has_workgroup() == false);
}

TEST_CASE("verifier: grid_sync needs @cooperative") {
  auto v = verify_text("kernel k() { grid_sync(); }");
  CHECK(v.codes() == std::vector<std::string>{"PG1304"});
  auto ok = verify_text("@cooperative\nkernel k() { grid_sync(); }");
  CHECK(ok.clean());
  CHECK(ok.kernel().cooperative);
  CHECK(ok.kernel().uses_grid_sync);
}

TEST_CASE("verifier: shared arrays") {
  auto v = verify_body("shared t1: f32[16 * 16];\n  shared t2: f64[3];\n  shared t3: u32[1];");
  INFO(render(v));
  REQUIRE(v.clean());
  CHECK(find_decl(v.kernel().body, "t1")->symbol->array_size == 256);
  CHECK(v.kernel().static_shared_bytes == 1024 + 24 + 4);
  CHECK(verify_body("shared t: f32[0];").has("PG1306"));
  CHECK(verify_body("shared t: f32[n];").has("PG1306"));
  CHECK(verify_body("shared t: f32[2.5];").has("PG1306"));
  CHECK(verify_body("shared t: f32[-4];").has("PG1306"));
  CHECK(verify_body("shared t: f32[12288];").clean());
  auto big = verify_body("shared t: f32[8192];\n  shared w: f64[2049];");
  CHECK(big.codes() == std::vector<std::string>{"PG1307"});
  CHECK(render(big).find("shared memory of kernel 'k' is 49160 bytes, over the limit of 49152 bytes") !=
        std::string::npos);
  CHECK(verify_body("shared t: f32[8192];\n  shared w: f64[2048];").clean());
  CHECK(verify_body("shared t: f32[12289];").has("PG1307"));
  CHECK(verify_body("if (flag) { shared t: f32[4]; }").has("PG1311"));
  CHECK(verify_body("shared t: bool[4];").has("PG1210"));
}

TEST_CASE("verifier: divergence analysis for barrier() and grid_sync()") {
  SUBCASE("barrier under thread-dependent if is rejected") {
    auto v = verify_body("if (thread_id.x < 4) { barrier(); }");
    CHECK(v.codes() == std::vector<std::string>{"PG1305"});
    CHECK(render(v).find("thread_id.x") != std::string::npos);
  }
  SUBCASE("barrier under a uniform condition is accepted") {
    CHECK(verify_body("if (n > 4) { barrier(); }").clean());
    CHECK(verify_body("if (block_dim.x > 4 && flag) { barrier(); }").clean());
    CHECK(verify_body("for i in 0..n { barrier(); }").clean());
  }
  SUBCASE("block_id, global_id, loads and atomics are divergent") {
    CHECK(verify_body("if (block_id.x == 0) { barrier(); }").has("PG1305"));
    CHECK(verify_body("if (global_id.y == 0) { barrier(); }").has("PG1305"));
    CHECK(verify_body("if (u[0] == 0) { barrier(); }").has("PG1305"));
    CHECK(verify_body("if (atomic_add(u, 0, 1) == 0) { barrier(); }").has("PG1305"));
  }
  SUBCASE("divergence flows through let and var") {
    CHECK(verify_body("let t = thread_id.x;\n  let w = t * 2;\n  if (w < n) { barrier(); }").has("PG1305"));
    CHECK(verify_body("var m: u32 = 0;\n  m = thread_id.x;\n  if (m < n) { barrier(); }").has("PG1305"));
    CHECK(verify_body("var m: u32 = 0;\n  if (thread_id.x < 4) { m = 1; }\n  if (m == 1) { barrier(); }").has("PG1305"));
    CHECK(verify_body("var m: u32 = 0;\n  if (n < 4) { m = 1; }\n  if (m == 1) { barrier(); }").clean());
  }
  SUBCASE("loop-carried divergence reaches the loop condition") {
    auto v = verify_body("var m: u32 = 0;\n  while (m < n) {\n    barrier();\n    m = m + thread_id.x;\n  }");
    CHECK(v.has("PG1305"));
    CHECK(verify_body("for i in thread_id.x..n { barrier(); }").has("PG1305"));
  }
  SUBCASE("break, continue and return under divergent control") {
    CHECK(verify_body("while (flag) {\n    barrier();\n    if (thread_id.x == 0) { break; }\n  }").has("PG1305"));
    CHECK(verify_body("for i in 0..n {\n    if (thread_id.x == 0) { continue; }\n    barrier();\n  }").has("PG1305"));
    CHECK(verify_body("for i in 0..n {\n    barrier();\n    if (thread_id.x == 0) { continue; }\n  }").clean());
    CHECK(verify_body("if (thread_id.x == 0) { return; }\n  barrier();").has("PG1305"));
    CHECK(verify_body("if (n == 0) { return; }\n  barrier();").clean());
    CHECK(verify_body("while (flag) { if (thread_id.x == 0) { break; } }\n  barrier();").clean());
  }
  SUBCASE("grid_sync under divergent control is PG1312") {
    auto v = verify_text("@cooperative\nkernel k(n: u32) { if (global_id.x < n) { grid_sync(); } }");
    CHECK(v.codes() == std::vector<std::string>{"PG1312"});
  }
}

TEST_CASE("verifier: modules without a source file get path-only locations") {
  auto v = verify_body("let z = missing;");
  REQUIRE(v.has("PG1101"));
  CHECK(v.diags.items()[0].location.line == 3);
  ir::Module m = std::move(v.module);
  m.path = "<builder>";
  diag::Diagnostics d = ir::verify(m, nullptr);
  REQUIRE(d.size() == 1);
  CHECK(d.items()[0].location.file == "<builder>");
  CHECK(d.items()[0].location.line == 0);
  CHECK_FALSE(d.items()[0].fix.empty());
}

TEST_CASE("verifier: a var with neither type nor value is PG1209 (builder modules)") {
  diag::SourceFile file("t.pg", "kernel k() { var z: u32; }");
  ir::ParseResult parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  parsed.module.kernels[0].body[0]->declared_type.reset();
  diag::Diagnostics d = ir::verify(parsed.module, &file);
  REQUIRE(d.size() == 1);
  CHECK(d.items()[0].code == diag::Code::cannot_infer_type);
}

TEST_CASE("verifier: verifying twice gives the same annotations") {
  auto v = verify_body("shared t: f32[4];\n  barrier();");
  REQUIRE(v.clean());
  CHECK(ir::verify(v.module, v.file.get()).empty());
  CHECK(v.kernel().static_shared_bytes == 16);
  CHECK(v.kernel().symbols.size() == 10);
}

TEST_CASE("verifier: the diagnostic limit stops the run") {
  std::string body;
  for (int i = 0; i < 30; ++i) body += "let z" + std::to_string(i) + " = missing;\n";
  ir::Limits limits;
  limits.max_diagnostics = 10;
  auto v = verify_text("kernel k() {\n" + body + "}\n", limits);
  CHECK(v.diags.size() == 11);
  CHECK(v.codes().back() == "PG1905");
}

TEST_CASE("verifier: past the diagnostic limit no did-you-mean is computed (it compares every visible name)") {
  // 30000 lets, each using an undefined name: the hint for each compared it with all the names
  // declared before (4.5e8 comparisons) though only the first 100 are reported.
  std::string body;
  for (int i = 0; i < 30000; ++i) body += "let a" + std::to_string(i) + " = zz + 1; let b" + std::to_string(i) + " = f" + std::to_string(i) + "(1);\n";
  const std::clock_t start = std::clock();
  auto v = verify_text("kernel k() {\n" + body + "}\n");
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  CHECK(v.diags.size() == ir::Limits{}.max_diagnostics + 1);
  CHECK(v.codes().back() == "PG1905");
  CHECK(seconds < 10.0);
}

TEST_CASE("verifier: every example verifies clean and fully typed") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(PTXGATE_SOURCE_DIR) / "examples";
  size_t count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".pg") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    CAPTURE(entry.path().filename().string());
    auto v = verify_text(text.str());
    INFO(render(v));
    CHECK(v.clean());
    CHECK(every_type_concrete(v.module));
    ++count;
  }
  CHECK(count >= 3);
}

TEST_CASE("verifier: a constant for-loop step must be positive (PG1316)") {
  CHECK(verify_body("for i in 0..10 step 0 { }").has("PG1316"));
  CHECK(verify_body("for i in 0..s step -1 { }").has("PG1316"));
  CHECK(verify_body("for i in 0..10 step 3 - 3 { }").has("PG1316"));
  CHECK(verify_body("for i in 0..n step 0 { }").has("PG1316"));
  auto v = verify_body("for i in 0..10 step 0 { }");
  REQUIRE(v.diags.size() == 1);
  CHECK(v.diags.items()[0].location.line == 3);
  CHECK(v.diags.items()[0].message.find("'i' is 0") != std::string::npos);
  CHECK_FALSE(v.diags.items()[0].fix.empty());
  // Positive constants and run-time steps are accepted.
  CHECK(verify_body("for i in 0..10 step 2 { }").clean());
  CHECK(verify_body("for i in 0..n step n { }").clean());
  CHECK(verify_body("for i in 0..s step s { }").clean());
  // A negative literal for an unsigned loop stays a range error.
  CHECK(verify_body("for i in 0..n step -1 { }").has("PG1206"));
}

TEST_CASE("verifier: a module without kernels is PG1317") {
  for (std::string text : {"", "// only a comment\n", "  \n\n/* block */\n"}) {
    CAPTURE(text);
    auto v = verify_text(text);
    REQUIRE(v.diags.size() == 1);
    CHECK(v.has("PG1317"));
    CHECK(v.diags.items()[0].message.find("'t.pg' has no kernels") != std::string::npos);
  }
  ir::Module built;
  built.path = "<builder>";
  auto d = ir::verify(built, nullptr);
  CHECK(d.has_errors());
  CHECK(d.items().at(0).code == diag::Code::module_without_kernels);
}

TEST_CASE("verifier: & | ^ accept bool operands; shifts do not") {
  auto v = verify_body("let z = flag & (n < 3); let w = flag | flag; let q = flag ^ true; y[0] = select(z ^ w | q, a, 0.0);");
  INFO(render(v));
  CHECK(v.clean());
  for (const auto& s : v.kernel().body)
    if (s->kind == ir::StmtKind::let_decl) CHECK(s->symbol->type == Type::bool_);
  CHECK(verify_body("let z = flag << flag;").has("PG1203"));
  CHECK(verify_body("let z = flag & n;").has("PG1201"));
  CHECK(verify_body("let z = flag & 1;").has("PG1201"));
}
