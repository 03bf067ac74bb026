// Unit tests for vector values and vector loads and stores (`f32x4`, `load4`, `store4`, lanes):
// verifier rules, KernelInfo alignment, printing, the builder API, values and the PTX they give.
#include <doctest/doctest.h>

#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"
#include "ir_test_support.hpp"

using namespace ptxgate;
using namespace ptxgate::ir_test;

TEST_CASE("vector types: names, lanes and sizes") {
  CHECK(ir::type_from_name("f32x4") == ir::Type::f32x4);
  CHECK(ir::type_from_name("bf16x8") == ir::Type::bf16x8);
  CHECK(ir::type_name(ir::Type::u8x4) == "u8x4");
  CHECK(ir::vector_element(ir::Type::f16x8) == ir::Type::f16);
  CHECK(ir::vector_lanes(ir::Type::f16x8) == 8);
  CHECK(ir::byte_size(ir::Type::f16x8) == 16);
  CHECK(ir::byte_size(ir::Type::f64x2) == 16);
  CHECK(ir::vector_of(ir::Type::f32, 4) == ir::Type::f32x4);
  CHECK_FALSE(ir::vector_of(ir::Type::f32, 8).has_value());  // 32 bytes: wider than any access
  CHECK_FALSE(ir::vector_of(ir::Type::u8, 2).has_value());   // 2 bytes
  CHECK_FALSE(ir::vector_of(ir::Type::bool_, 4).has_value());
  CHECK_FALSE(ir::is_numeric(ir::Type::f32x4));
  CHECK_FALSE(ir::type_from_name("f32x3").has_value());
}

TEST_CASE("vector access: the alignment each buffer needs is recorded in KernelInfo and its JSON") {
  ir::Module m;
  auto d = verify_text(
      "kernel k(out y: f32[], in x: f32[], inout h: f16[], in s: f32[], n: u32) {\n"
      "  let v = load4(x, n);\n  store2(y, n, f32x2(v[0], v[3]));\n  let w = load8(h, 0);\n"
      "  store4(h, 1, f16x4(w[0]));\n  y[0] = s[n];\n}\n",
      &m);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  auto info = codegen::describe(m);
  REQUIRE(info.at(0).params.size() == 5);
  CHECK(info[0].params[0].alignment == 8);   // y: store2 of f32
  CHECK(info[0].params[1].alignment == 16);  // x: load4 of f32
  CHECK(info[0].params[2].alignment == 16);  // h: the widest of load8 (16) and store4 (8)
  CHECK(info[0].params[3].alignment == 0);   // s: scalar accesses only
  CHECK(info[0].params[4].alignment == 0);   // a scalar
  CHECK(info[0].needs_buffer_alignment());
  auto json = contract::to_json(info[0]);
  CHECK(json.at("params")[1].at("alignment") == 16);
  CHECK_FALSE(json.at("params")[3].contains("alignment"));
  auto back = contract::kernel_info_from_json(json);
  REQUIRE(back.has_value());
  CHECK(back->params[1].alignment == 16);
  CHECK(back->params[3].alignment == 0);
  json["params"][1]["alignment"] = 12;
  CHECK_FALSE(contract::kernel_info_from_json(json).has_value());

  ir::Module plain;
  REQUIRE(verify_text("kernel k(inout y: f32[]) { y[0] = 1.0; }", &plain).empty());
  CHECK_FALSE(codegen::describe(plain).at(0).needs_buffer_alignment());
}

TEST_CASE("vector access: rules, each with its code, location and fix") {
  check_only("kernel k(inout b: u8[]) {\n  let v = load2(b, 0);\n}", diag::Code::invalid_vector_access);
  check_only("kernel k(inout b: f32[]) {\n  let v = load8(b, 0);\n}", diag::Code::invalid_vector_access);
  check_only("kernel k(v: f32x4) {\n}", diag::Code::invalid_vector_type);
  check_only("kernel k(in x: f32x4[]) {\n}", diag::Code::invalid_vector_type);
  check_only("kernel k() {\n  shared s: f32x4[8];\n}", diag::Code::invalid_vector_type);
  check_only("const V: f32x4 = f32x4(1.0);\nkernel k() {\n}", diag::Code::invalid_vector_type);
  check_only("kernel k(in x: f32[]) {\n  let v = load4(x, 0);\n  let a = v[4];\n}", diag::Code::invalid_vector_lane);
  check_only("kernel k(in x: f32[]) {\n  let v = load4(x, 0);\n  v[0] = 1.0;\n}", diag::Code::assign_to_immutable);
  check_only("kernel k(in x: f32[]) {\n  store4(x, 0, f32x4(1.0));\n}", diag::Code::write_to_in_buffer);
  check_only("kernel k(out y: f32[]) {\n  let v = load4(y, 0);\n}", diag::Code::read_of_out_buffer);
  check_only("kernel k() {\n  let v = f32x4(1.0, 2.0);\n}", diag::Code::wrong_argument_count);
  check_only("kernel k() {\n  let v = u32x4(1);\n  let w = v & v;\n}", diag::Code::invalid_operand);
  check_only("kernel k() {\n  let v = f32x4(1.0);\n  let c = v == v;\n}", diag::Code::invalid_operand);
  check_only("kernel k() {\n  let v = i32x4(1);\n  let w = v / v;\n}", diag::Code::invalid_operand);
  check_only("kernel k() {\n  let v = f32x4(1.0);\n  let w = -v;\n}", diag::Code::invalid_operand);
  check_only("kernel k() {\n  let v = f32x4(1.0);\n  let w = v + 1.0;\n}", diag::Code::type_mismatch);
  check_only("kernel k() {\n  let v: f32x4 = 1.0;\n}", diag::Code::type_mismatch);
  check_only("kernel k() {\n  let v = f32x4(1.0);\n  let a = f32(v);\n}", diag::Code::invalid_cast);
  check_only("kernel k(out y: f32[]) {\n  store4(y, 0, f16x4(1.0));\n}", diag::Code::type_mismatch);
  check_only("kernel k(out y: f32[]) {\n  let v = f32x4(1.0);\n  y[0] = v;\n}", diag::Code::type_mismatch);
  check_only("kernel k() {\n  let v = f32x4(1.0, 2.0, 3.0, true);\n}", diag::Code::type_mismatch);
  check_only("kernel k(in x: f32[]) {\n  let v = store4(x, 0);\n}", diag::Code::wrong_argument_count);
  check_only("kernel k(in x: f32[]) {\n  let v = f32x4(1.0);\n  let a = load4(v, 0);\n}", diag::Code::not_indexable);
  CHECK(verify_text("kernel k(in x: f32[]) { var v = load4(x, 0); v[1] = v[0] * 2.0; v = v + v; }").empty());
  CHECK(verify_text("kernel k(in x: f32[], i: u32) { var v = load4(x, 0); v[i] = v[i + 1]; }").empty());
  CHECK(verify_text("kernel k() { var v: f16x8; let w = select(true, v, f16x8(1.0)); v = w - v; }").empty());
}

TEST_CASE("vector access: device functions take and return vectors; their accesses align the kernel's buffers") {
  ir::Module m;
  auto d = verify_text(
      "fn scaled(v: f32x4, a: f32) -> f32x4 {\n  return v * f32x4(a);\n}\n"
      "fn copy(out y: f32[], in x: f32[], i: u32) {\n  store4(y, i, scaled(load4(x, i), 2.0));\n}\n"
      "fn outer(out y: f32[], in x: f32[], i: u32) {\n  copy(y, x, i);\n}\n"
      "kernel k(out y: f32[], in x: f32[], in s: f32[]) {\n  outer(y, x, global_id.x);\n  y[0] = s[0];\n}\n",
      &m);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  auto info = codegen::describe(m);
  CHECK(info.at(0).params.at(0).alignment == 16);
  CHECK(info[0].params.at(1).alignment == 16);
  CHECK(info[0].params.at(2).alignment == 0);
  std::string ptx = ptx_of(ir::print(m));
  CHECK(contains(ptx, "ld.global.v4.f32"));
  CHECK(contains(ptx, "st.global.v4.f32"));
  check_only("kernel k(v: f32x4) {\n}", diag::Code::invalid_vector_type);
  check_only("fn f(in x: f32x4[]) {\n}\nkernel k() {\n}", diag::Code::invalid_vector_type);
}

TEST_CASE("vector access: lanes follow their vector in the divergence analysis") {
  auto varying = verify_text("kernel k(in x: f32[]) {\n  let v = load4(x, thread_id.x);\n  if (v[0] > 0.0) {\n"
                             "    barrier();\n  }\n}");
  CHECK(has(varying, diag::Code::divergent_barrier));
  CHECK(verify_text("kernel k(in x: f32[]) { let v = f32x4(1.0); if (v[0] > 0.0) { barrier(); } }").empty());
  auto by_lane = verify_text("kernel k(in x: f32[]) {\n  let v = f32x4(1.0);\n  if (v[lane_id] > 0.0) {\n"
                             "    barrier();\n  }\n}");
  CHECK(has(by_lane, diag::Code::divergent_barrier));
  auto written = verify_text("kernel k(in x: f32[]) {\n  var v = f32x4(1.0);\n  v[2] = f32(thread_id.x);\n"
                             "  if (v[0] > 0.0) {\n    barrier();\n  }\n}");
  CHECK(has(written, diag::Code::divergent_barrier));
}

TEST_CASE("vector values: lanes, building and lane-wise operators compute what they say") {
  auto stored = [](const std::string& body) {
    return llvm_ir_of("kernel k(out y: i32[]) {\n" + body + "\n}\n");
  };
  CHECK(contains(stored("let v = i32x4(1, 2, 3, 4); let w = v * i32x4(10) + v; y[0] = w[3];"),
                 "store i32 44, ptr addrspace(1) %y"));
  CHECK(contains(stored("var v: i32x4; v[2] = 5; y[0] = v[2] + v[1];"), "store i32 5, ptr addrspace(1) %y"));
  CHECK(contains(stored("let v = i32x2(7, 9) - i32x2(1); y[0] = v[0] * 100 + v[1];"),
                 "store i32 608, ptr addrspace(1) %y"));
  // A lane computed at run time is taken modulo the lane count: 6 of four lanes is lane 2.
  CHECK(contains(stored("let v = i32x4(1, 2, 3, 4); let k: u32 = 6; y[0] = v[k];"), "store i32 3, ptr addrspace(1) %y"));
  CHECK(contains(stored("var v: i32x4; for l in 0..4 { v[l] = i32(l) * 2; } y[0] = v[3] + v[1];"),
                 "store i32 8, ptr addrspace(1) %y"));
}

TEST_CASE("vector access: PTX has one vector instruction per access") {
  std::string ptx = ptx_of(
      "@workgroup(64)\nkernel k(out y: f32[], in x: f32[]) {\n  shared t: f32[256];\n"
      "  let v = load4(x, global_id.x);\n  store4(t, thread_id.x, v);\n  barrier();\n"
      "  let w = load4(t, 63 - thread_id.x);\n  store4(y, global_id.x, w + v);\n}\n");
  INFO(ptx);
  CHECK(contains(ptx, "ld.global.v4.f32"));
  CHECK(contains(ptx, "st.global.v4.f32"));
  CHECK(contains(ptx, "st.shared.v4.f32"));
  CHECK(contains(ptx, "ld.shared.v4.f32"));
  std::string half = ptx_of("kernel h(out y: f16[], in x: f16[], in z: bf16[], out w: bf16[]) {\n"
                            "  let i = global_id.x;\n  store8(y, i, load8(x, i));\n  store8(w, i, load8(z, i));\n}\n");
  INFO(half);
  CHECK(contains(half, "ld.global.v4.b32"));
  CHECK(contains(half, "st.global.v4.b32"));
  std::string pairs = ptx_of("kernel d(out y: f64[], in x: f64[]) { store2(y, global_id.x, load2(x, global_id.x)); }");
  CHECK(contains(pairs, "ld.global.v2.f64"));
  CHECK(contains(pairs, "st.global.v2.f64"));
}

TEST_CASE("vector access: printing round-trips and the builder makes the same module") {
  const std::string text =
      "kernel k(out y: f32[], in x: f32[]) {\n  var v = load4(x, global_id.x);\n  v[3] = v[0] + 1.0;\n"
      "  store4(y, global_id.x, v * f32x4(2.0) + f32x4(1.0, 2.0, 3.0, 4.0));\n}\n";
  diag::SourceFile file("v.pg", text);
  auto parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  CHECK(ir::print(parsed.module) == text);

  ir::ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.buffer("y", ir::Access::out, ir::Type::f32).buffer("x", ir::Access::in, ir::Type::f32);
  k.var_("v", k.load(4, "x", k.global_id()));
  k.assign(k.index("v", 3), k.index("v", 0) + 1.0);
  k.expr(k.store(4, "y", k.global_id(),
                 k.name("v") * k.vector(ir::Type::f32x4, {2.0}) + k.vector(ir::Type::f32x4, {1.0, 2.0, 3.0, 4.0})));
  ir::Module m = mb.take();
  auto d = ir::verify(m, nullptr);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(ir::print(m) == text);
  CHECK(codegen::describe(m).at(0).params.at(1).alignment == 16);
}

TEST_CASE("vector values: two f32 values rounded and packed are one cvt.rn.x2 on sm_80 and later") {
  const std::string bf16 = "kernel k(out y: bf16[], a: f32, b: f32) {\n  store2(y, 0, bf16x2(bf16(a), bf16(b)));\n}\n";
  // Element 0 is `a`, the lower half: the intrinsic's second operand, cvt's second source.
  CHECK(contains(llvm_ir_of(bf16), "call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %b, float %a)"));
  const std::string packed = ptx_of(bf16, "sm_90");
  INFO(packed);
  CHECK(contains(packed, "cvt.rn.bf16x2.f32"));
  CHECK_FALSE(contains(packed, "cvt.rn.bf16.f32"));

  const std::string f16 = "kernel k(out y: f16[], a: f32, b: f32) {\n  store2(y, 0, f16x2(f16(a), f16(b)));\n}\n";
  CHECK(contains(ptx_of(f16, "sm_80"), "cvt.rn.f16x2.f32"));
  const std::string turing = ptx_of(f16, "sm_75");  // no cvt.rn.f16x2.f32 before sm_80
  INFO(turing);
  CHECK_FALSE(contains(turing, "f16x2.f32"));
  CHECK(contains(turing, "cvt.rn.f16.f32"));

  // A rounded value with another use keeps its own cvt; a pair with a constant half stays two moves.
  const std::string mixed =
      "kernel k(out y: bf16[], a: f32, b: f32) {\n  let h = bf16(a);\n  store2(y, 0, bf16x2(h, bf16(b)));\n"
      "  store2(y, 1, bf16x2(bf16(b), bf16(1.0)));\n  y[4] = h;\n}\n";
  const std::string mixed_ptx = ptx_of(mixed, "sm_90");
  INFO(mixed_ptx);
  size_t pairs = 0;
  for (size_t at = mixed_ptx.find("cvt.rn.bf16x2.f32"); at != std::string::npos;
       at = mixed_ptx.find("cvt.rn.bf16x2.f32", at + 1))
    ++pairs;
  CHECK(pairs == 1);
  CHECK(contains(mixed_ptx, "cvt.rn.bf16.f32"));
}
