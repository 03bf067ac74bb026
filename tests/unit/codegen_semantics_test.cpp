// Unit tests of the defined result of every operation (docs/ir.md, "Results of every operation"):
// each case computes its value from constants that the optimiser folds, so the stored constant in
// the emitted LLVM IR is the value the kernel computes; a case that reached LLVM poison stores
// nothing (or anything), and its check fails.
#include <doctest/doctest.h>

#include <optional>
#include <regex>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/build.hpp"

using namespace ptxgate;

namespace {

/// The optimised LLVM IR of `kernel k(out y: T[]) { BODY }`.
std::string llvm_ir_of(const std::string& element, const std::string& body, unsigned opt_level = 3) {
  std::string text = "kernel k(out y: " + element + "[]) {\n" + body + "\n}\n";
  auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options;
  options.opt_level = opt_level;
  auto llvm_ir = codegen::emit_llvm_ir(loaded->module, options);
  if (!llvm_ir) FAIL(diag::render_text(llvm_ir.error()));
  return *llvm_ir;
}

/// The constant the kernel stores into y[0] (`store i32 -1, ptr addrspace(1) %y`), as LLVM prints
/// it; nullopt when the store is not a single constant store to y.
std::optional<std::string> stored_constant(const std::string& element, const std::string& body) {
  std::string llvm_ir = llvm_ir_of(element, body);
  static const std::regex kStore(R"(store (i32|i64|float|double) ([^,]+), ptr addrspace\(1\) %y)");
  std::smatch match;
  if (!std::regex_search(llvm_ir, match, kStore)) return std::nullopt;
  std::string rest = match.suffix();
  if (std::regex_search(rest, kStore)) return std::nullopt;  // one store only
  return match[2].str();
}

std::string value_of(const std::string& element, const std::string& body) {
  auto v = stored_constant(element, body);
  INFO(llvm_ir_of(element, body));
  REQUIRE(v.has_value());
  return *v;
}

}  // namespace

TEST_CASE("semantics: signed division and remainder of MIN by -1 wrap") {
  CHECK(value_of("i32", "let m: i32 = -2147483648; y[0] = m / -1;") == "-2147483648");
  CHECK(value_of("i32", "let m: i32 = -2147483648; y[0] = m % -1;") == "0");
  CHECK(value_of("i64", "let m: i64 = -9223372036854775808; y[0] = m / -1;") == "-9223372036854775808");
  CHECK(value_of("i64", "let m: i64 = -9223372036854775808; y[0] = m % -1;") == "0");
  // Ordinary cases keep C's truncating division.
  CHECK(value_of("i32", "let a: i32 = -7; y[0] = a / 2;") == "-3");
  CHECK(value_of("i32", "let a: i32 = -7; y[0] = a % 2;") == "-1");
  CHECK(value_of("i32", "let a: i32 = 7; y[0] = a % -1;") == "0");
}

TEST_CASE("semantics: division by zero gives all ones, remainder by zero the dividend") {
  CHECK(value_of("i32", "let z: i32 = 0; y[0] = 7 / z;") == "-1");
  CHECK(value_of("i32", "let z: i32 = 0; y[0] = -7 % z;") == "-7");
  CHECK(value_of("u32", "let z: u32 = 0; y[0] = 7 / z;") == "-1");  // LLVM prints 0xFFFFFFFF as -1
  CHECK(value_of("u32", "let z: u32 = 0; y[0] = 7 % z;") == "7");
  CHECK(value_of("i64", "let z: i64 = 0; y[0] = 5 / z;") == "-1");
  CHECK(value_of("u64", "let z: u64 = 0; y[0] = 5 % z;") == "5");
  CHECK(value_of("i32", "let m: i32 = -2147483648; let z: i32 = 0; y[0] = m / z;") == "-1");
}

TEST_CASE("semantics: division by a run-time value is guarded, never a bare udiv/sdiv of an unknown divisor") {
  std::string text = "kernel k(out y: i32[], a: i32, b: i32) { y[0] = a / b; y[1] = a % b; }";
  auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
  REQUIRE(loaded.has_value());
  codegen::CodegenOptions options;
  options.opt_level = 0;
  auto llvm_ir = codegen::emit_llvm_ir(loaded->module, options);
  REQUIRE(llvm_ir.has_value());
  // The divisor of every sdiv/srem is the guarded select, not the parameter itself.
  CHECK(llvm_ir->find("sdiv i32 %a, %b") == std::string::npos);
  CHECK(llvm_ir->find("srem i32 %a, %b") == std::string::npos);
  CHECK(llvm_ir->find("%divisor = select i1") != std::string::npos);
  // It still compiles to PTX with the hardware division.
  auto compiled = codegen::compile(loaded->module, toolchain::with_toolkit({}, toolchain::discover()));
  REQUIRE(compiled.has_value());
  CHECK(compiled->ptx.find("div.s32") != std::string::npos);
}

TEST_CASE("semantics: shift amounts are taken modulo the bit width") {
  CHECK(value_of("u32", "let s: u32 = 33; y[0] = 1 << s;") == "2");
  CHECK(value_of("u32", "let s: u32 = 32; y[0] = 5 >> s;") == "5");
  CHECK(value_of("i32", "let s: i32 = -1; let v: i32 = -8; y[0] = v >> s;") == "-1");  // -1 & 31 = 31
  CHECK(value_of("u64", "let s: u64 = 65; y[0] = 3 << s;") == "6");
  CHECK(value_of("i64", "let s: i64 = 64; let v: i64 = -4; y[0] = v >> s;") == "-4");
}

TEST_CASE("semantics: float to integer saturates, NaN becomes 0") {
  CHECK(value_of("i32", "let f: f32 = 3.0e9; y[0] = i32(f);") == "2147483647");
  CHECK(value_of("i32", "let f: f32 = -3.0e9; y[0] = i32(f);") == "-2147483648");
  CHECK(value_of("u32", "let f: f32 = -1.5; y[0] = u32(f);") == "0");
  CHECK(value_of("u32", "let f: f64 = 1.0e10; y[0] = u32(f);") == "-1");
  CHECK(value_of("i64", "let f: f64 = 1.0e300; y[0] = i64(f);") == "9223372036854775807");
  CHECK(value_of("i32", "let z: f32 = 0.0; y[0] = i32(z / z);") == "0");
  CHECK(value_of("u64", "let z: f64 = 0.0; y[0] = u64(z / z);") == "0");
  CHECK(value_of("i32", "let f: f32 = -2.75; y[0] = i32(f);") == "-2");  // truncates toward zero
}

TEST_CASE("semantics: wrapping integer arithmetic and abs of MIN") {
  CHECK(value_of("i32", "let m: i32 = 2147483647; y[0] = m + 1;") == "-2147483648");
  CHECK(value_of("u32", "let m: u32 = 0; y[0] = m - 1;") == "-1");
  CHECK(value_of("i32", "let m: i32 = -2147483648; y[0] = -m;") == "-2147483648");
  CHECK(value_of("i32", "let m: i32 = -2147483648; y[0] = abs(m);") == "-2147483648");
  CHECK(value_of("i64", "let m: i64 = 4294967296; y[0] = m * m;") == "0");
}

TEST_CASE("semantics: a for loop whose step is 0 at run time runs its body once") {
  // The step is a let (not a constant expression for the verifier), so only the optimiser sees 0.
  CHECK(value_of("u32", "var c: u32 = 0; let s: u32 = 0; for i in 0..10 step s { c = c + 1; } y[0] = c;") == "1");
  CHECK(value_of("u32", "var c: u32 = 0; let s: u32 = 0; for i in 5..5 step s { c = c + 1; } y[0] = c;") == "0");
  CHECK(value_of("u32", "var c: u32 = 0; let s: u32 = 3; for i in 0..10 step s { c = c + 1; } y[0] = c;") == "4");
  // A negative signed step is a huge unsigned one: the body runs once.
  CHECK(value_of("i32", "var c: i32 = 0; let s: i32 = -2; let lo: i32 = 0; for i in lo..10 step s { c = c + 1; } y[0] = c;") == "1");
}

TEST_CASE("semantics: & | ^ on bool evaluate both sides") {
  CHECK(value_of("u32", "let t = true; let f = false; y[0] = u32(t & f) + 2 * u32(t | f) + 4 * u32(t ^ t);") == "2");
}
