// Unit tests for the small types i8 u8 i16 u16 f16 bf16: typing, literal ranges, casts (float ->
// half rounds to nearest even), half arithmetic, atomics where the hardware has them, the PTX.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/float_bits.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"

using namespace ptxgate;

namespace {

diag::Diagnostics verify_text(const std::string& text) {
  diag::SourceFile file("s.pg", text);
  auto parsed = ir::parse(file);
  if (parsed.diagnostics.has_errors()) return std::move(parsed.diagnostics);
  return ir::verify(parsed.module, &file);
}

bool has(const diag::Diagnostics& d, diag::Code c) {
  return std::any_of(d.begin(), d.end(), [&](const diag::Diagnostic& x) { return x.code == c; });
}

diag::Diagnostics body(const std::string& statements) {
  return verify_text("kernel k(inout b: u8[], inout s: i16[], inout h: f16[], inout g: bf16[], inout f: f32[], "
                     "n: u32) {\n" + statements + "\n}\n");
}

std::string llvm_ir_of(const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile("s.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  auto out = codegen::emit_llvm_ir(loaded->module, {});
  if (!out) FAIL(diag::render_text(out.error()));
  return *out;
}

std::string ptx_of(const std::string& text, const std::string& target = "sm_90") {
  auto loaded = ir::load_module(diag::SourceFile("s.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options;
  options.target = *ir::Target::parse(target);
  auto out = codegen::compile(loaded->module, options);
  if (!out) FAIL(diag::render_text(out.error()));
  return out->ptx;
}

/// The constant stored into y[0] of `kernel k(out y: T[]) { BODY }`, as LLVM prints it.
std::string stored(const std::string& element, const std::string& statements) {
  std::string text = "kernel k(out y: " + element + "[]) {\n" + statements + "\n}\n";
  std::string out = llvm_ir_of(text);
  std::smatch m;
  static const std::regex kStore(R"(store (i8|i16|half|bfloat|i32|float) ([^,]+), ptr addrspace\(1\) %y)");
  INFO(out);
  REQUIRE(std::regex_search(out, m, kStore));
  return m[2].str();
}

}  // namespace

TEST_CASE("small types: names, sizes and properties") {
  using ir::Type;
  for (auto [name, t, bits] : {std::tuple{"i8", Type::i8, 8u}, {"u8", Type::u8, 8u}, {"i16", Type::i16, 16u},
                               {"u16", Type::u16, 16u}, {"f16", Type::f16, 16u}, {"bf16", Type::bf16, 16u}}) {
    CAPTURE(name);
    CHECK(ir::type_from_name(name) == t);
    CHECK(ir::type_name(t) == name);
    CHECK(ir::bit_width(t) == bits);
    CHECK(ir::byte_size(t) == bits / 8);
    CHECK(ir::is_numeric(t));
  }
  CHECK(ir::is_signed(Type::i8));
  CHECK_FALSE(ir::is_signed(Type::u16));
  CHECK(ir::is_half(Type::bf16));
  CHECK(ir::is_float(Type::f16));
  CHECK_FALSE(ir::is_half(Type::f32));
}

TEST_CASE("small types: buffers, shared arrays, locals and casts verify") {
  auto d = body(R"(
  shared t: u16[64];
  let i = global_id.x;
  let x: u8 = b[i] + 1;
  let y: i16 = s[i] * -3;
  let hh: f16 = h[i] * 2.0 + 0.5;
  let gg: bf16 = g[i] - 1.0;
  t[i % 64] = u16(x) + 300;
  f[i] = f32(hh) + f32(gg) + f32(y);
  h[i] = f16(f[i]);
  g[i] = bf16(hh);
  b[i] = u8(i);
  let m = max(hh, f16(0.0));
  let old = atomic_add(h, 0, hh);
  let old2 = atomic_add(g, 0, gg);
)");
  INFO(diag::render_text(d));
  CHECK(d.empty());
}

TEST_CASE("small types: ranges, operations and parameters are checked") {
  CHECK(has(body("let x: u8 = 256;"), diag::Code::literal_out_of_range));
  CHECK(has(body("let x: i8 = -129;"), diag::Code::literal_out_of_range));
  CHECK(body("let x: i8 = -128;").empty());
  CHECK(has(body("let x: i16 = 40000;"), diag::Code::literal_out_of_range));
  CHECK(has(body("let x: f16 = 70000.0;"), diag::Code::literal_out_of_range));
  CHECK(has(body("let x: f16 = 70000;"), diag::Code::literal_out_of_range));
  CHECK(body("let x: bf16 = 1e38;").empty());
  CHECK(has(body("let x: bf16 = 1e39;"), diag::Code::literal_out_of_range));
  CHECK(has(body("let x = b[0] + s[0];"), diag::Code::type_mismatch));  // no implicit widening
  CHECK(has(body("let x = sqrt(h[0]);"), diag::Code::invalid_operand));
  CHECK(has(body("let x = h[0] & h[0];"), diag::Code::invalid_operand));
  CHECK(has(body("let x = atomic_add(b, 0, 1);"), diag::Code::invalid_atomic_type));
  CHECK(has(body("let x = atomic_exch(h, 0, h[0]);"), diag::Code::invalid_atomic_type));
  CHECK(has(body("let x = warp_sum(h[0]);"), diag::Code::invalid_warp_operand));
  CHECK(has(body("let x = shfl_xor(b[0], 1);"), diag::Code::invalid_warp_operand));
  auto p = verify_text("kernel k(inout y: u8[], a: u8, c: f16) { }");
  CHECK(has(p, diag::Code::unsupported_parameter_type));
  for (const auto& item : p) CHECK_FALSE(item.fix.empty());
  CHECK(verify_text("kernel k(inout y: u8[], in z: bf16[], a: u32) { y[0] = u8(a); }").empty());
}

TEST_CASE("small types: integer arithmetic wraps in the type's width") {
  CHECK(stored("u8", "let a: u8 = 250; y[0] = a + 10;") == "4");
  CHECK(stored("i8", "let a: i8 = 127; y[0] = a + 1;") == "-128");
  CHECK(stored("i8", "let a: i8 = -128; y[0] = a / -1;") == "-128");
  CHECK(stored("u16", "let a: u16 = 1; y[0] = a << 17;") == "2");  // modulo 16
  CHECK(stored("u8", "let a: u32 = 300; y[0] = u8(a);") == "44");
  CHECK(stored("i16", "let a: f32 = 1e9; y[0] = i16(a);") == "32767");  // saturates
}

TEST_CASE("small types: float to half rounds to nearest even") {
  // 1 + 2^-11 is halfway between two f16 values; ties go to the even one (1.0).
  CHECK(stored("f16", "let a: f32 = 1.00048828125; y[0] = f16(a);") == "0xH3C00");
  // 1 + 3 * 2^-11 is halfway too; the even neighbour is above (1 + 2^-9 = 0x3C02).
  CHECK(stored("f16", "let a: f32 = 1.00146484375; y[0] = f16(a);") == "0xH3C02");
  // bf16 has 8 significant bits: 1 + 2^-8 ties to 1.0, 1 + 3 * 2^-8 to 1 + 2^-6.
  CHECK(stored("bf16", "let a: f32 = 1.00390625; y[0] = bf16(a);") == "0xR3F80");
  CHECK(stored("bf16", "let a: f32 = 1.01171875; y[0] = bf16(a);") == "0xR3F82");
  CHECK(stored("f16", "let a: f32 = 100000.0; y[0] = f16(a);") == "0xH7C00");  // beyond the range: inf
  CHECK(stored("bf16", "let a: f16 = 1.5; y[0] = bf16(a);") == "0xR3FC0");     // f16 -> bf16 converts, not bitcasts
  CHECK(stored("f16", "let a: bf16 = 2.0; y[0] = f16(a);") == "0xH4000");
}

TEST_CASE("small types: half arithmetic is rounded to the half type after each operation") {
  // 2048 + 1 is not representable in f16 (11 significant bits): the sum rounds back to 2048.
  CHECK(stored("f16", "let a: f16 = 2048.0; y[0] = a + 1.0;") == "0xH6800");
  CHECK(stored("f16", "let a: f16 = 2048.0; y[0] = a + 2.0;") == "0xH6801");
  CHECK(stored("f32", "let a: f16 = 2048.0; let b = a + 1.0; y[0] = f32(b - a);") == "0.000000e+00");
}

TEST_CASE("small types: PTX loads and stores bytes and halves, with native half arithmetic on sm_90") {
  const std::string text = R"(
kernel k(inout b: u8[], inout s: i16[], inout h: f16[], inout g: bf16[]) {
  let i = global_id.x;
  b[i] = b[i] + 1;
  s[i] = s[i] * 3;
  h[i] = h[i] * h[i + 1] + h[i + 2];
  g[i] = g[i] + g[i + 1];
  let old = atomic_add(h, 0, h[i]);
}
)";
  std::string ptx = ptx_of(text);
  CHECK(ptx.find("ld.global.u8") != std::string::npos);
  CHECK(ptx.find("st.global.u8") != std::string::npos);
  CHECK(ptx.find("ld.global.u16") != std::string::npos);
  CHECK(ptx.find("mul.rn.f16") != std::string::npos);  // native, not contracted into an fma
  CHECK(ptx.find("add.rn.f16") != std::string::npos);
  CHECK(ptx.find("fma.rn.f16") == std::string::npos);
  CHECK(ptx.find("add.rn.bf16") != std::string::npos);
  CHECK(ptx.find("atom.global.add.noftz.f16") != std::string::npos);
  // Older targets compute halves through f32 and still assemble.
  CHECK_FALSE(ptx_of(text, "sm_75").empty());
}

TEST_CASE("small types: printing and the builder") {
  const std::string text = "kernel k(inout y: bf16[], in x: u8[]) {\n  y[0] = bf16(f32(x[0]) * 0.5);\n}\n";
  diag::SourceFile file("s.pg", text);
  auto parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  CHECK(ir::print(parsed.module) == text);
  ir::ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.buffer("y", ir::Access::inout, ir::Type::bf16).buffer("x", ir::Access::in, ir::Type::u8);
  k.assign(k.index("y", 0), k.cast(ir::Type::bf16, k.cast(ir::Type::f32, k.index("x", 0)) * 0.5));
  ir::Module m = mb.take();
  CHECK(ir::verify(m, nullptr).empty());
  CHECK(ir::print(m) == text);
}

TEST_CASE("small types: float_bits of f32 and f64 (the launch's fast conversion) is round_to's rounding") {
  // Doubles of every exponent that reaches f32 (normal, subnormal, beyond the largest finite),
  // random significands, and the ties between neighbouring f32 values.
  uint64_t state = 0x9e3779b97f4a7c15ull;
  const auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int i = 0; i < 200000; ++i) {
    const uint64_t r = next();
    const int exponent = static_cast<int>(r % 320) - 170;  // 2^-170 .. 2^149
    double v = std::ldexp(1.0 + static_cast<double>(r >> 12) * 0x1p-52, exponent);
    if (i % 3 == 0) v = std::ldexp(static_cast<double>(r >> 35) + 0.5, exponent - 24);  // a tie (or exact)
    if (r & 1) v = -v;
    const double rounded = ir::round_to(ir::Type::f32, v);
    const auto bits = ir::float_bits(v, ir::Type::f32);
    if (std::isinf(rounded)) {
      CHECK_MESSAGE(!bits, v);
    } else {
      REQUIRE_MESSAGE(bits, v);
      CHECK_MESSAGE(*bits == std::bit_cast<uint32_t>(static_cast<float>(rounded)), v);
    }
    CHECK_MESSAGE(ir::float_bits(v, ir::Type::f64) == std::bit_cast<uint64_t>(ir::round_to(ir::Type::f64, v)), v);
  }
  const double tie = 3.4028235677973366e38;  // halfway from the largest finite f32 to 2^128
  CHECK(ir::float_bits(std::nextafter(tie, 0.0), ir::Type::f32) == 0x7f7fffffu);
  CHECK_FALSE(ir::float_bits(tie, ir::Type::f32));  // a tie: even, which is infinity
  CHECK(ir::float_bits(-std::numeric_limits<double>::infinity(), ir::Type::f32) == 0xff800000u);
  CHECK(ir::float_bits(std::numeric_limits<double>::denorm_min(), ir::Type::f64) == 1u);
  CHECK((*ir::float_bits(std::numeric_limits<double>::quiet_NaN(), ir::Type::f32) & 0x7fc00000u) == 0x7fc00000u);
}

TEST_CASE("small types: float_bits rounds a double to each float type to nearest, ties to even") {
  CHECK(ir::float_bits(1.0, ir::Type::f16) == 0x3c00u);
  CHECK(ir::float_bits(1.00048828125, ir::Type::f16) == 0x3c00u);  // a tie: even 1.0
  CHECK(ir::float_bits(1.00146484375, ir::Type::f16) == 0x3c02u);  // a tie: even 1.001953125
  CHECK(ir::float_bits(65504.0, ir::Type::f16) == 0x7bffu);
  CHECK(ir::float_bits(65519.0, ir::Type::f16) == 0x7bffu);
  CHECK_FALSE(ir::float_bits(65520.0, ir::Type::f16));  // rounds to infinity: does not fit
  CHECK(ir::float_bits(-0.0, ir::Type::f16) == 0x8000u);
  CHECK(ir::float_bits(5.960464477539063e-08, ir::Type::f16) == 0x0001u);  // the smallest subnormal
  CHECK(ir::float_bits(2.9802322387695312e-08, ir::Type::f16) == 0x0000u);  // half of it: a tie to even 0
  CHECK(ir::float_bits(6.103515625e-05, ir::Type::f16) == 0x0400u);         // the smallest normal
  CHECK(ir::float_bits(std::ldexp(1023.5, -24), ir::Type::f16) == 0x0400u);  // a tie above the largest subnormal
  CHECK(ir::float_bits(std::ldexp(1023.25, -24), ir::Type::f16) == 0x03ffu);
  CHECK(ir::float_bits(1e-300, ir::Type::f16) == 0x0000u);
  CHECK(ir::float_bits(std::numeric_limits<double>::infinity(), ir::Type::f16) == 0x7c00u);
  CHECK((*ir::float_bits(std::numeric_limits<double>::quiet_NaN(), ir::Type::f16) & 0x7c00u) == 0x7c00u);
  CHECK((*ir::float_bits(std::numeric_limits<double>::quiet_NaN(), ir::Type::f16) & 0x3ffu) != 0);
  CHECK(ir::float_bits(1.0, ir::Type::bf16) == 0x3f80u);
  CHECK(ir::float_bits(1.00390625, ir::Type::bf16) == 0x3f80u);  // a tie: even 1.0
  CHECK(ir::float_bits(1.01171875, ir::Type::bf16) == 0x3f82u);  // a tie: even 1.015625
  CHECK(ir::float_bits(-3.0, ir::Type::bf16) == 0xc040u);
  CHECK(ir::float_bits(3.3895313892515355e38, ir::Type::bf16) == 0x7f7fu);  // the largest finite
  CHECK_FALSE(ir::float_bits(3.4e38, ir::Type::bf16));
  CHECK(ir::float_bits(0.1, ir::Type::f32) == 0x3dcccccdu);
  CHECK_FALSE(ir::float_bits(1e39, ir::Type::f32));
  CHECK(ir::float_bits(0.1, ir::Type::f64) == 0x3fb999999999999aull);
  CHECK_FALSE(ir::float_bits(1.0, ir::Type::i32));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half round-trips through its value
    CHECK_MESSAGE(ir::float_bits(ir::half_value(static_cast<uint16_t>(h), ir::Type::f16), ir::Type::f16) == h, h);
    if (h % 97 == 0)
      CHECK(ir::float_bits(ir::half_value(static_cast<uint16_t>(h), ir::Type::bf16), ir::Type::bf16) == h);
  }
}

