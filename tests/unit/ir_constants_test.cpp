// Unit tests for module constants (`const NAME: T = EXPR;`): parsing, verification, where a
// constant is required, printing, the builder API and code generation.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"
#include "ir_check_support.hpp"

using namespace ptxgate;

namespace {

using testing::Checked;

Checked check(const std::string& text, const ir::Limits& limits = {}) { return testing::check_module("c.pg", text, limits); }

std::string llvm_ir(const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile("c.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  auto out = codegen::emit_llvm_ir(loaded->module, {});
  if (!out) FAIL(diag::render_text(out.error()));
  return *out;
}

}  // namespace

TEST_CASE("constants: declared at module level, typed, visible in every kernel and later constants") {
  auto c = check(R"(
kernel before(out y: u32[]) { y[0] = N; }
const N: u32 = 256;
const M: u32 = N / 8 + 1;
const BIG: i64 = -(1 << 40);
const HALF: f32 = 0.5;
const WIDE: f64 = f64(N) * 2.0;
const ON: bool = true;
kernel after(out y: u32[], out z: f32[]) { y[0] = M; z[0] = select(ON, HALF, 0.0); }
)");
  INFO(diag::render_text(c.diags));
  REQUIRE(c.diags.empty());
  REQUIRE(c.module.constants.size() == 6);
  REQUIRE(c.module.constant_symbols.size() == 6);
  CHECK(c.module.constant_symbols[0]->constant_bits == 256);
  CHECK(c.module.constant_symbols[1]->constant_bits == 33);
  CHECK(c.module.constant_symbols[2]->constant_bits == static_cast<uint64_t>(-(int64_t{1} << 40)));
  CHECK(c.module.constant_symbols[3]->type == ir::Type::f32);
  CHECK(c.module.constant_symbols[0]->kind == ir::SymbolKind::constant);
}

TEST_CASE("constants: usable where a constant is required") {
  auto c = check(R"(
const BLOCK: u32 = 128;
const TILE: u32 = BLOCK * 2;
const STEP: u32 = 4;
@workgroup(BLOCK, 2)
kernel k(inout y: f32[]) {
  shared t: f32[TILE + 1];
  for i in 0..TILE step STEP { t[i] = 0.0; }
}
)");
  INFO(diag::render_text(c.diags));
  REQUIRE(c.diags.empty());
  const ir::Kernel& k = c.module.kernels.at(0);
  CHECK(k.workgroup == std::array<uint32_t, 3>{128, 2, 1});
  CHECK(k.static_shared_bytes == 257 * 4);
  // A constant step of 0 is still caught through the constant.
  CHECK(check("const Z: u32 = 0; kernel k() { for i in 0..10 step Z { } }").has(diag::Code::invalid_loop_step));
  CHECK(check("const Z: u32 = 0; kernel k() { shared t: f32[Z]; }").has(diag::Code::invalid_shared_size));
  CHECK(check("const Z: u32 = 2000; @workgroup(Z) kernel k() { }").has(diag::Code::workgroup_too_large));
  CHECK(check("const Z: i32 = -4; @workgroup(Z) kernel k() { }").has(diag::Code::invalid_attribute_argument));
  // A parameter in @workgroup is "not a constant", not an undefined name.
  auto p = check("@workgroup(n) kernel k(n: u32) { }");
  CHECK(p.has(diag::Code::invalid_attribute_argument));
  CHECK_FALSE(p.has(diag::Code::undefined_name));
}

TEST_CASE("constants: diagnostics with codes, locations and fixes") {
  struct Case {
    const char* text;
    diag::Code code;
  };
  const Case cases[] = {
      {"const A: u32 = n; kernel k(n: u32) { }", diag::Code::invalid_constant},
      {"const A: u32 = thread_id.x; kernel k() { }", diag::Code::invalid_constant},
      {"const A: f32 = sqrt(2.0); kernel k() { }", diag::Code::invalid_constant},
      {"const A: u32 = B; const B: u32 = 1; kernel k() { }", diag::Code::invalid_constant},
      {"const A: u32 = A + 1; kernel k() { }", diag::Code::invalid_constant},
      {"const A: u32 = 1 / 0; kernel k() { }", diag::Code::invalid_constant},
      {"const A: u32 = 4000000000; const B: u32 = A + A; kernel k() { }", diag::Code::invalid_constant},
      {"const A: u32 = 5000000000; kernel k() { }", diag::Code::literal_out_of_range},
      {"const A: u32 = 1.5; kernel k() { }", diag::Code::type_mismatch},
      {"const A: u32 = 1; const A: u32 = 2; kernel k() { }", diag::Code::redefined_name},
      {"const A: u32 = 1; kernel k(A: u32) { }", diag::Code::redefined_name},
      {"const A: u32 = 1; kernel k() { let A = 2; }", diag::Code::redefined_name},
      {"const A: u32 = 1; kernel k() { A = 2; }", diag::Code::assign_to_immutable},
      {"const A: u32 = 1; kernel k() { let x = A[0]; }", diag::Code::not_indexable},
      {"const A: u32 = 1; kernel k() { let x: i32 = A; }", diag::Code::type_mismatch},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto r = check(c.text);
    INFO(diag::render_text(r.diags));
    REQUIRE(r.has(c.code));
    for (const auto& d : r.diags) {
      CHECK(d.location.line >= 1);
      CHECK_FALSE(d.fix.empty());
    }
  }
  // Only the bad constant is reported; its uses stay silent.
  auto r = check("const A: u32 = n; kernel k(out y: u32[], n: u32) { y[0] = A + 1; shared t: f32[A]; }");
  CHECK(r.diags.size() == 1);
}

TEST_CASE("constants: parse errors and the limit") {
  CHECK(check("const A = 1; kernel k() { }").has(diag::Code::expected_token));
  CHECK(check("const A: u32; kernel k() { }").has(diag::Code::expected_token));
  CHECK(check("const A: u32 = 1 kernel k() { }").has(diag::Code::expected_token));
  // The parser recovers at the next kernel or constant.
  auto r = check("const : u32 = 1; const B: u32 = 2; kernel k() { }");
  CHECK(r.diags.size() == 1);
  ir::Limits limits;
  limits.max_constants = 3;
  CHECK(check("const A: u32 = 1; const B: u32 = 1; const C: u32 = 1; kernel k() { }", limits).diags.empty());
  CHECK(check("const A: u32 = 1; const B: u32 = 1; const C: u32 = 1; const D: u32 = 1; kernel k() { }", limits)
            .has(diag::Code::too_many_constants));
  // 'const' is a keyword now.
  CHECK(check("kernel k() { let const = 1; }").has(diag::Code::expected_token));
}

TEST_CASE("constants: print first and round-trip") {
  const std::string text = "kernel k(out y: u32[]) { y[0] = N; }\nconst N: u32 = 2 * (3 + 4);\nconst F: f32 = 1e-5;\n";
  diag::SourceFile file("c.pg", text);
  auto parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  std::string once = ir::print(parsed.module);
  CHECK(once ==
        "const N: u32 = 2 * (3 + 4);\nconst F: f32 = 1e-5;\n\nkernel k(out y: u32[]) {\n  y[0] = N;\n}\n");
  diag::SourceFile again("c2.pg", once);
  auto reparsed = ir::parse(again);
  REQUIRE(reparsed.diagnostics.empty());
  CHECK(ir::print(reparsed.module) == once);
}

TEST_CASE("constants: builder API") {
  ir::ModuleBuilder mb;
  ir::Ex block = mb.constant("BLOCK", ir::Type::u32, 64);
  ir::Ex scale = mb.constant("SCALE", ir::Type::f32, 2.5);
  auto& k = mb.kernel("k");
  k.attribute("workgroup", {block}).buffer("y", ir::Access::inout, ir::Type::f32);
  k.shared("t", ir::Type::f32, block * 2);
  k.assign(k.index("y", k.global_id()), k.index("y", k.global_id()) * scale);
  ir::Module m = mb.take();
  auto d = ir::verify(m, nullptr);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(m.kernels[0].workgroup[0] == 64);
  CHECK(m.kernels[0].static_shared_bytes == 512);
  CHECK(ir::print(m).starts_with("const BLOCK: u32 = 64;\nconst SCALE: f32 = 2.5;\n\n@workgroup(BLOCK)\n"));
  auto ir_text = codegen::emit_llvm_ir(m, {});
  REQUIRE(ir_text.has_value());
  CHECK(ir_text->find("2.500000e+00") != std::string::npos);
}

TEST_CASE("constants: code generation uses their values") {
  std::string out = llvm_ir(R"(
const N: i32 = -7;
const W: u32 = u32(N);
const F: f32 = 0.25 * 2.0;
const B: bool = N < 0;
kernel k(out a: i32[], out b: u32[], out c: f32[], out d: u32[]) { a[0] = N; b[0] = W; c[0] = F; d[0] = u32(B); }
)");
  CHECK(out.find("store i32 -7, ptr addrspace(1) %a") != std::string::npos);
  CHECK(out.find("store i32 -7, ptr addrspace(1) %b") != std::string::npos);  // 4294967289 prints as -7
  CHECK(out.find("store float 5.000000e-01, ptr addrspace(1) %c") != std::string::npos);
  CHECK(out.find("store i32 1, ptr addrspace(1) %d") != std::string::npos);
}

TEST_CASE("constants: a const inside a kernel is one clear error, and parsing goes on") {
  auto r = check("kernel k(out y: u32[]) { const A: u32 = 1; y[0] = 2; }\nkernel j() { }");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags.items()[0].code == diag::Code::expected_statement);
  CHECK(r.diags.items()[0].message.find("module constant") != std::string::npos);
}

namespace {

/// CPU seconds this process has used (robust against a loaded machine, unlike wall time).
double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

/// `levels` constants, each using the one before twice: `const X1: T = X0 OP X0;` ...
std::string doubling_chain(const std::string& type, const std::string& first, const std::string& op, int levels) {
  std::string text = "const X0: " + type + " = " + first + ";\n";
  for (int i = 1; i <= levels; ++i)
    text += "const X" + std::to_string(i) + ": " + type + " = X" + std::to_string(i - 1) + " " + op + " X" +
            std::to_string(i - 1) + ";\n";
  return text;
}

}  // namespace

TEST_CASE("constants: a chain that uses each constant twice folds once per constant, not 2^n times") {
  // Before, each use lowered the whole expression tree again: 2^30 multiplications for f32, and
  // for bool a branch per && (six million instructions, PG2010). Bounded CPU time, exact values.
  const double start = cpu_seconds();
  std::string f = llvm_ir(doubling_chain("f32", "1.0", "*", 30) + "kernel k(out y: f32[]) { y[0] = X30; }\n");
  CHECK(f.find("store float 1.000000e+00, ptr addrspace(1) %y") != std::string::npos);
  std::string b = llvm_ir(doubling_chain("bool", "true", "&&", 30) +
                          "kernel k(out y: u32[]) { if (X30) { y[0] = 1; } }\n");
  CHECK(b.find("store i32 1, ptr addrspace(1) %y") != std::string::npos);
  CHECK(b.find("br i1") == std::string::npos);  // decided at compile time: no branch is left
  std::string o = llvm_ir(doubling_chain("bool", "false", "||", 30) +
                          "kernel k(out y: u32[]) { if (X30) { y[0] = 1; } }\n");
  CHECK(o.find("store") == std::string::npos);
  CHECK(cpu_seconds() - start < 20.0);
}

TEST_CASE("constants: float and bool constants fold under @fp(fast) and through saturating casts") {
  // A constant's division is exact IEEE even in a fast kernel, and a float -> int cast folds to
  // its saturated value (NaN -> 0), so the constant is a value, never an instruction.
  std::string out = llvm_ir(R"(
const THIRD: f32 = 1.0 / 3.0;
const HUGE: f32 = 1e20;
const SAT: bool = i32(HUGE) == 2147483647;
const NAN_IS_ZERO: bool = i32(0.0 / 0.0) == 0;
@fp(fast)
kernel k(out y: f32[], out b: u32[]) { y[0] = THIRD; b[0] = u32(SAT && NAN_IS_ZERO); }
)");
  CHECK(out.find("store float 0x3FD5555560000000, ptr addrspace(1) %y") != std::string::npos);
  CHECK(out.find("store i32 1, ptr addrspace(1) %b") != std::string::npos);
  CHECK(out.find("fptosi") == std::string::npos);
  CHECK(out.find("div.full") == std::string::npos);
}

TEST_CASE("constants: a float to integer cast is defined as at run time (truncated, saturated, NaN 0)") {
  auto c = check(R"(
const BIG: i32 = i32(1e20);
const SMALL: i32 = i32(-1e20);
const TRUNC: i32 = i32(-3.9);
const NOTNUM: u32 = u32(0.0 / 0.0);
const NEG: u32 = u32(-1.5);
const F: f32 = 16777217.0;
const ROUNDED: i32 = i32(F);
const TRIPLE: i64 = i64(F * 3.0);
const H: f16 = 2049.0;
const HALF: i32 = i32(H);
const HH: f16 = 1000.0;
const OVER: i32 = i32(HH * HH);
const B: i32 = i32(bf16(257.0));
const FROM_INT: i32 = i32(f32(16777217));
const D: u64 = u64(f64(9007199254740993));
const WIDE: u8 = u8(f16(300.0));
kernel k(out y: i32[]) { y[0] = BIG; }
)");
  INFO(diag::render_text(c.diags));
  REQUIRE(c.diags.empty());
  auto value = [&](size_t i) { return c.module.constant_symbols.at(i)->constant_bits; };
  CHECK(value(0) == 2147483647u);                                  // f32(1e20) saturates
  CHECK(value(1) == static_cast<uint32_t>(INT32_MIN));
  CHECK(value(2) == static_cast<uint32_t>(-3));                    // toward zero
  CHECK(value(3) == 0u);                                           // NaN
  CHECK(value(4) == 0u);                                           // below u32's range
  CHECK(c.module.constant_symbols.at(5)->float_value == 16777216.0);  // the literal rounded to f32
  CHECK(value(6) == 16777216u);
  CHECK(value(7) == 50331648u);                                    // 3 * 2^24 in f32
  CHECK(value(9) == 2048u);                                        // f16 rounds 2049 to even
  CHECK(value(11) == 2147483647u);                                 // 1e6 overflows f16 to inf
  CHECK(value(12) == 256u);                                        // bf16 has 8 significant bits
  CHECK(value(13) == 16777216u);                                   // an integer rounds once to f32
  CHECK(value(14) == 9007199254740992u);                           // and to f64
  CHECK(value(15) == 255u);
}

TEST_CASE("constants: a value that cannot be computed exactly says which step and why") {
  for (auto [text, why] : {std::pair{"const A: u32 = 7 / (3 - 3);", "'7 / 0' divides by zero"},
                           std::pair{"const A: i32 = -1 & 3;", "of a negative value"},
                           std::pair{"const A: u64 = 1 << 200;", "'1 << 200' shifts by a negative amount or more than 100"},
                           std::pair{"const A: u64 = (1 << 99) * 4;", "leaves the range of +-2^100"}}) {
    CAPTURE(text);
    auto c = check(std::string(text) + "\nkernel k(out y: u32[]) { y[0] = 1; }\n");
    REQUIRE(c.diags.items().size() == 1);
    CHECK(c.diags.items()[0].code == diag::Code::invalid_constant);
    CHECK(c.diags.items()[0].message.find(why) != std::string::npos);
    CHECK(c.diags.items()[0].message.find("divides by zero, shifts") == std::string::npos);
  }
}
