// Unit tests for local arrays (`var a: f32[N];`): verifier rules and limit, zero start, registers
// after unrolling versus local memory, printing, the builder API, and the local-memory warning.
#include <doctest/doctest.h>

#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"
#include "ir_test_support.hpp"
#include "ptxgate/validation/check.hpp"

using namespace ptxgate;
using namespace ptxgate::ir_test;

TEST_CASE("local arrays: declared with a constant size, indexed for reading and writing, counted in bytes") {
  ir::Module m;
  auto d = verify_text(
      "const N: u32 = 4;\nkernel k(out y: f32[], in x: f32[], i: u32) {\n  var a: f32[N * 2];\n  var b: u8[3];\n"
      "  a[i] = x[i];\n  b[0] = u8(i);\n  if (true) {\n    var c: f16[2];\n    c[1] = f16(a[0]);\n  }\n"
      "  y[0] = a[i + 1] + f32(b[0]);\n}\n",
      &m);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(m.kernels[0].local_array_bytes == 8 * 4 + 3 + 2 * 2);
}

TEST_CASE("local arrays: rules, each with its code, location and fix") {
  check_only("kernel k(n: u32) {\n  var a: f32[n];\n}", diag::Code::invalid_local_array_size);
  check_only("kernel k() {\n  var a: f32[0];\n}", diag::Code::invalid_local_array_size);
  check_only("kernel k() {\n  var a: f32[-2];\n}", diag::Code::invalid_local_array_size);
  check_only("kernel k() {\n  var a: f32[];\n}", diag::Code::invalid_local_array_size);
  check_only("kernel k() {\n  var a: f32[2.5];\n}", diag::Code::invalid_local_array_size);
  check_only("kernel k() {\n  var a: bool[4];\n}", diag::Code::invalid_element_type);
  check_only("kernel k() {\n  var a: f32x4[4];\n}", diag::Code::invalid_vector_type);
  check_only("kernel k() {\n  var a: u32[4];\n  let o = atomic_add(a, 0, 1);\n}", diag::Code::not_indexable);
  check_only("kernel k() {\n  var a: f32[8];\n  let v = load4(a, 0);\n}", diag::Code::not_indexable);
  check_only("kernel k(out y: f32[]) {\n  var a: f32[8];\n  y[0] = a;\n}", diag::Code::buffer_as_value);
  check_only("kernel k() {\n  var a: f32[8];\n  a = 1.0;\n}", diag::Code::buffer_as_value);
  check_only("kernel k() {\n  var a: f32[8];\n  a[0] = 1;\n  a[1] = true;\n}", diag::Code::type_mismatch);
  check_only("kernel k() {\n  var a: f32[8];\n  var a: f32[2];\n}", diag::Code::redefined_name);
  check_only("kernel k() {\n  let a: f32[8];\n}", diag::Code::expected_token);
  check_only("kernel k() {\n  var a: f32[8] = 0.0;\n}", diag::Code::expected_token);
  ir::Limits small;
  small.max_local_array_bytes = 64;
  check_only("kernel k() {\n  var a: f32[8];\n  var b: f64[8];\n}", diag::Code::local_arrays_too_large, small);
  check_only("kernel k() {\n  var a: u8[1_000_000];\n}", diag::Code::local_arrays_too_large);
  CHECK(verify_text("kernel k() {\n  var a: f32[16];\n}", nullptr, small).empty());
}

TEST_CASE("local arrays: the limit counts the deepest chain of device functions a kernel calls") {
  ir::Limits small;
  small.max_local_array_bytes = 100;
  // 48 bytes in the kernel and 60 in g, reached through f (8 of its own): 116 > 100.
  const std::string chain = "fn g(i: u32) -> f32 {\n  var c: f32[15];\n  return c[i % 15];\n}\n"
                            "fn f(i: u32) -> f32 {\n  var b: f32[2];\n  return g(i) + b[i % 2];\n}\n"
                            "fn small_one(i: u32) -> f32 {\n  var s: f32[1];\n  return s[0];\n}\n"
                            "kernel k(out y: f32[], i: u32) {\n  var a: f32[12];\n"
                            "  y[0] = small_one(i) + f(i) + a[i % 12];\n}\n";
  ir::Module m;
  auto d = verify_text(chain, &m, small);
  REQUIRE(d.items().size() == 1);
  CHECK(d.items()[0].code == diag::Code::local_arrays_too_large);
  CHECK(d.items()[0].message.find("116 bytes of local arrays per thread: 48 of its own and 68 in 'f'") !=
        std::string::npos);
  CHECK(d.items()[0].location.line == 15);  // at the call of f
  // Each function alone, and the kernel without the deepest call, stay within the limit.
  small.max_local_array_bytes = 116;
  ir::Module ok;
  REQUIRE(verify_text(chain, &ok, small).empty());
  CHECK(ok.kernels[0].stack_local_bytes == 116);
  CHECK(ok.kernels[0].local_array_bytes == 48);
  // CUDA's 512 KiB: 400000 bytes in the kernel and 400000 in its function (issue 25, D14).
  check_only("fn f(i: u32) -> f32 {\n  var a: f32[100000];\n  return a[i % 100000];\n}\n"
             "kernel k(inout y: f32[], n: u32) {\n  var b: f32[100000];\n  y[0] = f(n) + b[n % 100000];\n}\n",
             diag::Code::local_arrays_too_large);
}

TEST_CASE("local arrays: every element starts at zero and keeps what is written") {
  auto ir = llvm_ir_of("kernel k(out y: i32[]) {\n  var a: i32[4];\n  a[1] = 3;\n  y[0] = a[1] * 10 + a[0] + a[3];\n}\n");
  INFO(ir);
  CHECK(contains(ir, "store i32 30, ptr addrspace(1) %y"));
  auto loop = llvm_ir_of("kernel k(out y: i32[]) {\n  for r in 0..2 {\n    var a: i32[2];\n    a[r] = a[r] + 5;\n"
                         "    y[r] = a[0] + a[1];\n  }\n}\n");
  INFO(loop);
  CHECK(contains(loop, "store i32 5, ptr addrspace(1) %y"));  // zeroed again in every iteration
}

TEST_CASE("local arrays: constant indices after unrolling live in registers, run-time indices in local memory") {
  std::string registers = ptx_of(
      "@workgroup(64)\nkernel acc(out y: f32[], in x: f32[]) {\n  var acc: f32[8];\n  for r in 0..4 {\n"
      "    for k in 0..8 {\n      acc[k] = acc[k] + x[global_id.x * 32 + r * 8 + k];\n    }\n  }\n"
      "  for k in 0..8 {\n    y[global_id.x * 8 + k] = acc[k];\n  }\n}\n");
  INFO(registers);
  CHECK_FALSE(contains(registers, ".local"));
  CHECK_FALSE(contains(registers, "st.local"));

  std::string memory = ptx_of(
      "kernel pick(out y: f32[], in x: f32[], n: u32) {\n  var a: f32[64];\n  for k in 0..64 {\n"
      "    a[k] = x[k];\n  }\n  y[0] = a[n % 64];\n}\n");
  INFO(memory);
  CHECK(contains(memory, ".local"));
}

TEST_CASE("local arrays: printing round-trips and the builder makes the same module") {
  const std::string text = "kernel k(out y: f32[], i: u32) {\n  var a: f32[4];\n  a[i] = 1.0;\n  y[i] = a[0];\n}\n";
  diag::SourceFile file("l.pg", text);
  auto parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  CHECK(ir::print(parsed.module) == text);

  ir::ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.buffer("y", ir::Access::out, ir::Type::f32).scalar("i", ir::Type::u32);
  k.local_array("a", ir::Type::f32, 4);
  k.assign(k.index("a", k.name("i")), 1.0);
  k.assign(k.index("y", k.name("i")), k.index("a", 0));
  ir::Module m = mb.take();
  auto d = ir::verify(m, nullptr);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(ir::print(m) == text);
}

TEST_CASE("local memory: PG3503 names the kernel and its bytes; none without local memory") {
  diag::Location where;
  where.file = "k.pg";
  contract::KernelResources none;
  diag::Diagnostics quiet;
  validation::report_local_memory(quiet, "k", none, where);
  CHECK(quiet.empty());
  contract::KernelResources spills;
  spills.local_bytes = 256;
  spills.spill_store_bytes = 16;
  diag::Diagnostics loud;
  validation::report_local_memory(loud, "pick", spills, where);
  REQUIRE(loud.size() == 1);
  CHECK(loud.items()[0].code == diag::Code::local_memory_used);
  CHECK(loud.items()[0].severity == diag::Severity::warning);
  CHECK(loud.items()[0].message.find("'pick'") != std::string::npos);
  CHECK(loud.items()[0].message.find("256 bytes") != std::string::npos);
}

TEST_CASE("local arrays: a register-tile loop gives the PTX of its body written out, with the right constants") {
  // The optimising levels lower a loop of a few constant iterations that indexes a local array with
  // its variable unrolled (src/ptxgate/codegen/lower_statements.cpp register_tile_trips); the kernel
  // must be the one its written-out twin gives.
  const std::string head = "@workgroup(64)\nkernel tile(out c: f32[], in a: f32[], in b: f32[], n: u32) {\n"
                           "  var acc: f32[16];\n  for k in 0..n {\n    let t = thread_id.x;\n";
  const std::string tail = "  }\n  for q in 0..16 {\n    c[thread_id.x * 16 + q] = acc[q];\n  }\n}\n";
  std::string looped = head + "    for i in 0..4 {\n      for j in 0..4 {\n"
                              "        acc[4 * i + j] = fma(a[t * 4 + i], b[k * 4 + j], acc[4 * i + j]);\n"
                              "      }\n    }\n" + tail;
  std::string written_out = head;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      written_out += "    acc[" + std::to_string(4 * i + j) + "] = fma(a[t * 4 + " + std::to_string(i) + "], b[k * 4 + " +
                     std::to_string(j) + "], acc[" + std::to_string(4 * i + j) + "]);\n";
  written_out += tail;
  const std::string ptx = ptx_of(looped);
  INFO(ptx);
  CHECK(ptx == ptx_of(written_out));
  CHECK_FALSE(contains(ptx, ".local"));

  // Each copy sees its own value of the variable, with a step, signed and from a non-zero start.
  auto stepped = llvm_ir_of("kernel k(out y: i32[]) {\n  var a: i32[4];\n  for i in 1..11 step 3 {\n"
                            "    a[i / 3] = i32(i) * 10;\n  }\n  y[0] = a[0] + a[1] * 100 + a[2] * 10000 + a[3] * 1000000;\n}\n");
  INFO(stepped);
  CHECK(contains(stepped, "store i32 100704010, ptr addrspace(1) %y"));  // 10 + 4000 + 700000 + 100000000
  auto negative = llvm_ir_of("kernel k(out y: i32[]) {\n  var a: i32[4];\n  for i in i32(-2)..2 {\n    a[i + 2] = i;\n  }\n"
                             "  y[0] = a[0] * 1000 + a[1] * 100 + a[2] * 10 + a[3];\n}\n");
  INFO(negative);
  CHECK(contains(negative, "store i32 -2099, ptr addrspace(1) %y"));  // -2000 - 100 + 0 + 1
  // A loop that leaves early is not copied; its result is the same.
  auto early = llvm_ir_of("kernel k(out y: i32[]) {\n  var a: i32[4];\n  for i in 0..4 {\n    if (i == 3) {\n"
                          "      break;\n    }\n    a[i] = i32(i) + 1;\n  }\n  y[0] = a[0] + a[1] * 10 + a[2] * 100 + a[3] * 1000;\n}\n");
  INFO(early);
  CHECK(contains(early, "store i32 321, ptr addrspace(1) %y"));
}
