// Unit tests for code generation: PTX entries, parameters, address spaces, atomics, grid_sync, libdevice, targets.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/toolchain/ptx_entries.hpp"

using namespace ptxgate;

namespace {

std::string read_example(const std::string& name) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ir::Module load(const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile("test.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  return std::move(loaded->module);
}

/// Default options with the toolkit's libdevice, as toolchain::build passes them.
codegen::CodegenOptions with_libdevice() { return toolchain::with_toolkit({}, toolchain::discover()); }

codegen::CompiledModule compile_text(const std::string& text, const std::string& target = "sm_90") {
  auto options = with_libdevice();
  options.target = *ir::Target::parse(target);
  auto compiled = codegen::compile(load(text), options);
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  return std::move(*compiled);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool has_code(const diag::Diagnostics& d, diag::Code code) {
  for (const auto& item : d)
    if (item.code == code) return true;
  return false;
}

const char* kMathKernel = R"(
@workgroup(128)
kernel waves(out y: f32[], in x: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = sin(x[i]) + sqrt(x[i]); }
}
)";

}  // namespace

TEST_CASE("codegen: saxpy becomes a PTX entry with by-value parameters and launch bounds") {
  auto compiled = compile_text(read_example("saxpy.pg"));
  const std::string& ptx = compiled.ptx;
  CHECK(contains(ptx, ".visible .entry saxpy("));
  CHECK(contains(ptx, ".reqntid 256, 1, 1"));
  CHECK(contains(ptx, ".param .u64 saxpy_param_0"));  // y: device pointer by value
  CHECK(contains(ptx, ".param .u64 saxpy_param_1"));  // x
  CHECK(contains(ptx, ".param .f32 saxpy_param_2"));  // a
  CHECK(contains(ptx, ".param .u32 saxpy_param_3"));  // n
  CHECK_FALSE(contains(ptx, "saxpy_param_4"));
  CHECK(contains(ptx, "ld.global"));
  CHECK(contains(ptx, "st.global"));
  CHECK(contains(ptx, "%ctaid.x"));
  CHECK_FALSE(contains(ptx, "%ntid.x"));  // @workgroup(256): global_id is ctaid.x * 256 + tid.x
  CHECK(contains(ptx, "%tid.x"));
  CHECK_FALSE(contains(ptx, "__nv_"));
  CHECK_FALSE(contains(ptx, ".func"));
  CHECK(compiled.target == ir::Target(90));
  CHECK(contains(ptx, ".version 7.8\n"));
  REQUIRE(compiled.kernels.size() == 1);
  CHECK(compiled.kernels[0].name == "saxpy");
  CHECK(compiled.kernels[0].params.size() == 4);
  CHECK_FALSE(compiled.kernels[0].hidden_grid_barrier_param);
}

TEST_CASE("codegen: a required block's sizes are constants, and thread_id along an extent-1 dimension is 0") {
  // @workgroup is the PTX's .reqntid: the driver launches the kernel with no other block. In a
  // kernel without one, and in a device function (which kernels of any block may call), every
  // builtin reads its special register.
  const char* text = R"(
fn where_am_i() -> u32 {
  return thread_id.y * block_dim.x;
}
@workgroup(256)
kernel fixed(out y: u32[]) {
  y[global_id.x] = block_dim.x + block_dim.y + block_dim.z + thread_id.y + thread_id.z + warp_id * 1000;
}
@workgroup(32, 4)
kernel square(out y: u32[]) {
  y[warp_id] = thread_id.y * 100 + block_dim.y;
}
kernel any_block(out y: u32[]) {
  y[global_id.x] = block_dim.x + thread_id.y + warp_id + where_am_i();
}
)";
  auto compiled = compile_text(text);
  const std::string& ptx = compiled.ptx;
  auto body = [&](const std::string& name) {
    const size_t start = ptx.find(".entry " + name + "(");
    REQUIRE(start != std::string::npos);
    const size_t end = ptx.find("\n}\n", start);
    REQUIRE(end != std::string::npos);
    return ptx.substr(start, end - start);
  };
  const std::string fixed = body("fixed"), square = body("square"), any = body("any_block");
  for (const char* reg : {"%ntid", "%tid.y", "%tid.z"}) CHECK_FALSE(contains(fixed, reg));
  CHECK(contains(fixed, "%tid.x"));
  CHECK(contains(square, "%tid.y"));  // extent 4: read; the sizes are constants
  CHECK_FALSE(contains(square, "%tid.z"));
  CHECK_FALSE(contains(square, "%ntid"));
  for (const char* reg : {"%ntid.x", "%ntid.y", "%tid.y", "%tid.z"}) CHECK(contains(any, reg));
}

TEST_CASE("codegen: block_sum uses shared memory, bar.sync and a global float atomic") {
  auto compiled = compile_text(read_example("block_sum.pg"));
  const std::string& ptx = compiled.ptx;
  CHECK(contains(ptx, ".entry block_sum("));
  CHECK(contains(ptx, ".shared .align 16 .b8 block_sum_partial[1024]"));
  CHECK(contains(ptx, "st.shared.f32"));
  CHECK(contains(ptx, "ld.shared.f32"));
  CHECK(contains(ptx, "bar.sync \t0"));
  CHECK(contains(ptx, "atom.global.add.f32"));
  CHECK(compiled.kernels.at(0).static_shared_bytes == 1024);
}

TEST_CASE("codegen: normalize gets the hidden grid-barrier parameter and a self-resetting barrier") {
  auto compiled = compile_text(read_example("normalize.pg"));
  const std::string& ptx = compiled.ptx;
  CHECK(contains(ptx, ".entry normalize("));
  CHECK(contains(ptx, ".param .u64 normalize_param_3"));  // hidden trailing barrier word
  CHECK_FALSE(contains(ptx, "normalize_param_4"));
  CHECK(contains(ptx, "atom.global.add.u32"));
  CHECK(contains(ptx, "ld.volatile.global.u32"));
  CHECK(contains(ptx, "membar.gl"));
  CHECK(contains(ptx, "%nctaid.y"));
  CHECK(contains(ptx, "%nctaid.z"));
  REQUIRE(compiled.kernels.size() == 1);
  const auto& info = compiled.kernels[0];
  CHECK(info.uses_grid_sync);
  CHECK(info.hidden_grid_barrier_param);
  CHECK(info.params.size() == 3);
}

TEST_CASE("codegen: libdevice is linked only when a math function is used") {
  codegen::CodegenOptions missing_libdevice;
  missing_libdevice.libdevice_path = "/nonexistent/libdevice.10.bc";

  SUBCASE("a kernel without math never touches libdevice") {
    auto compiled = codegen::compile(load(read_example("saxpy.pg")), missing_libdevice);
    CHECK(compiled.has_value());
  }
  SUBCASE("a math kernel with no libdevice gives PG2002 naming the path") {
    auto compiled = codegen::compile(load(kMathKernel), missing_libdevice);
    REQUIRE_FALSE(compiled.has_value());
    CHECK(has_code(compiled.error(), diag::Code::libdevice_missing));
    CHECK(contains(compiled.error().items().at(0).message, "/nonexistent/libdevice.10.bc"));
  }
  SUBCASE("a math kernel given no libdevice at all gives PG2002 saying so") {
    auto compiled = codegen::compile(load(kMathKernel), codegen::CodegenOptions{});
    REQUIRE_FALSE(compiled.has_value());
    CHECK(has_code(compiled.error(), diag::Code::libdevice_missing));
    CHECK(contains(compiled.error().items().at(0).message, "no libdevice file was given"));
  }
  SUBCASE("a math kernel gets the libdevice bodies inlined, with no external calls left") {
    auto compiled = compile_text(kMathKernel);
    CHECK(contains(compiled.ptx, ".entry waves("));
    CHECK(contains(compiled.ptx, ".reqntid 128, 1, 1"));
    CHECK_FALSE(contains(compiled.ptx, ".extern"));
    CHECK_FALSE(contains(compiled.ptx, "__nv_sinf"));
    CHECK(contains(compiled.ptx, "sqrt.rn.f32"));
  }
}

TEST_CASE("codegen: unknown targets are rejected with PG2001") {
  auto module = load(read_example("saxpy.pg"));
  codegen::CodegenOptions options;
  options.target = ir::Target(50);
  auto compiled = codegen::compile(module, options);
  REQUIRE_FALSE(compiled.has_value());
  CHECK(has_code(compiled.error(), diag::Code::unknown_target));
  CHECK(contains(compiled.error().items().at(0).message, "sm_50"));
  auto llvm_ir = codegen::emit_llvm_ir(module, options);
  REQUIRE_FALSE(llvm_ir.has_value());
  CHECK(has_code(llvm_ir.error(), diag::Code::unknown_target));
}

TEST_CASE("codegen: the PTX ISA version and .target follow the target") {
  struct Expectation {
    const char* target;
    unsigned isa;
  };
  for (auto [target, isa] : {Expectation{"sm_80", 70}, Expectation{"sm_86", 71}, Expectation{"sm_90", 78},
                             Expectation{"sm_90a", 80}}) {
    CAPTURE(target);
    auto compiled = compile_text(read_example("saxpy.pg"), target);
    auto header = toolchain::read_ptx_header(diag::SourceFile("t.ptx", compiled.ptx));
    REQUIRE(header);
    CHECK(header->isa_major * 10 + header->isa_minor == isa);
    CHECK(header->target == target);
    CHECK(contains(compiled.ptx, std::string(".target ") + target + "\n"));
  }
}

TEST_CASE("codegen: Blackwell targets are generated as sm_90 PTX; targets CUDA 13 dropped are unknown") {
  for (const char* target : {"sm_100", "sm_120"}) {
    CAPTURE(target);
    auto compiled = compile_text(read_example("saxpy.pg"), target);
    CHECK(compiled.target.name() == target);
    CHECK(contains(compiled.ptx, ".target sm_90\n"));
    CHECK(codegen::llvm_target_for(*ir::Target::parse(target)) == ir::Target(90));
  }
  CHECK(codegen::llvm_target_for(ir::Target(90, ir::Target::Variant::arch_specific)).name() == "sm_90a");
  for (const char* dropped : {"sm_70", "sm_72"}) {
    CAPTURE(dropped);
    codegen::CodegenOptions options;
    options.target = *ir::Target::parse(dropped);
    auto compiled = codegen::compile(load(read_example("saxpy.pg")), options);
    REQUIRE_FALSE(compiled.has_value());
    CHECK(has_code(compiled.error(), diag::Code::unknown_target));
  }
}

TEST_CASE("codegen: LLVM IR output marks kernels and annotates launch bounds") {
  auto llvm_ir = codegen::emit_llvm_ir(load(read_example("saxpy.pg")), {});
  REQUIRE(llvm_ir.has_value());
  CHECK(contains(*llvm_ir, "define ptx_kernel void @saxpy(ptr addrspace(1)"));
  CHECK(contains(*llvm_ir, "!\"reqntidx\", i32 256"));
  CHECK(contains(*llvm_ir, "!\"kernel\", i32 1"));
  CHECK_FALSE(contains(*llvm_ir, "noalias"));
  CHECK(contains(*llvm_ir, "nvvm-reflect-ftz"));
}

TEST_CASE("codegen: signedness of the operand type picks the instruction") {
  auto compiled = compile_text(R"(
kernel ops(out r: i32[], out q: u32[], a: i32, b: i32, c: u32, d: u32) {
  r[0] = a / b;
  r[1] = a >> b;
  r[2] = select(a < b, 1, 0);
  q[0] = c / d;
  q[1] = c >> d;
  q[2] = select(c < d, 1, 0);
}
)");
  const std::string& ptx = compiled.ptx;
  CHECK(contains(ptx, "div.s32"));
  CHECK(contains(ptx, "div.u32"));
  CHECK(contains(ptx, "shr.s32"));
  CHECK(contains(ptx, "shr.u32"));
  CHECK(contains(ptx, "setp.lt.s32"));
  CHECK(contains(ptx, "setp.lt.u32"));
  CHECK_FALSE(contains(ptx, ".reqntid"));
}

TEST_CASE("codegen: atomics on global and shared memory return the old value") {
  auto compiled = compile_text(R"(
@workgroup(64)
kernel atomics(inout counts: u32[], inout best: i32[], inout olds: u32[], v: i32) {
  shared local: u32[64];
  local[thread_id.x] = 0;
  barrier();
  let a = atomic_add(local, 0, 1);
  let b = atomic_cas(counts, 1, 0, 7);
  let c = atomic_max(best, 0, v);
  olds[global_id.x] = a + b + u32(c);
}
)");
  const std::string& ptx = compiled.ptx;
  CHECK(contains(ptx, "atom.shared.add.u32"));
  CHECK(contains(ptx, "atom.global.cas.b32"));
  CHECK(contains(ptx, "atom.global.max.s32"));
}

TEST_CASE("codegen: control flow with loops, break, continue and return assembles into one entry") {
  auto compiled = compile_text(R"(
kernel flow(inout x: f64[], n: i32, flag: bool) {
  if (!flag) { return; }
  var acc: f64 = 0.0;
  for k in 0..n {
    if (k % 2 == 0) { continue; }
    if (k > 100 && flag) { break; }
    acc = acc + f64(k);
  }
  var j: i32 = n;
  while (j > 0) { j = j - 3; }
  x[0] = acc + f64(j);
}
)");
  const std::string& ptx = compiled.ptx;
  CHECK(contains(ptx, ".entry flow("));
  CHECK(contains(ptx, ".param .u32 flow_param_2"));  // bool scalar travels as a 4-byte integer
  CHECK(contains(ptx, "st.global.f64"));
  REQUIRE(compiled.kernels.size() == 1);
  CHECK(compiled.kernels[0].params.at(2).size_bytes == 4);
}

TEST_CASE("codegen: compiles concurrently with identical results") {
  const std::string text = read_example("block_sum.pg") + "\n" + kMathKernel;
  const std::string expected = compile_text(text).ptx;
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      auto loaded = ir::load_module(diag::SourceFile("test.pg", text));
      if (!loaded) return;
      auto compiled = codegen::compile(loaded->module, with_libdevice());
      if (compiled) results[t] = compiled->ptx;
    });
  for (auto& thread : threads) thread.join();
  for (const auto& ptx : results) CHECK(ptx == expected);
}

TEST_CASE("codegen: reused target machines and pipelines carry nothing from one module to the next") {
  const std::string saxpy = read_example("saxpy.pg");
  const std::string first = compile_text(saxpy).ptx;
  const std::string other = compile_text(read_example("normalize.pg") + "\n" + kMathKernel).ptx;
  CHECK(first != other);
  CHECK(compile_text(saxpy).ptx == first);
  auto unbounded = compile_text(R"(
kernel fill(out y: u32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = i; }
}
)");
  CHECK(contains(unbounded.ptx, ".entry fill("));
  CHECK_FALSE(contains(unbounded.ptx, ".reqntid"));
  CHECK_FALSE(contains(unbounded.ptx, "saxpy"));
}

TEST_CASE("codegen: many sequential compiles of modules with shared arrays give the same PTX each time") {
  const std::string block_sum = read_example("block_sum.pg");
  const std::string transpose = read_example("transpose.pg");
  const std::string expected_sum = compile_text(block_sum).ptx;
  const std::string expected_transpose = compile_text(transpose).ptx;
  int mismatches = 0;
  for (int i = 0; i < 40; ++i) {
    mismatches += compile_text(block_sum).ptx != expected_sum;
    mismatches += compile_text(transpose).ptx != expected_transpose;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("codegen: the kernel pipeline keeps what kernels need from O3, for every example") {
  // Full unrolling of the matmul tile loop, and alignment inference that lets the NVPTX
  // vectoriser merge four shared-memory loads: both come from O3 passes the kernel pipeline keeps.
  auto count = [](const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  auto kernel_pipeline = with_libdevice(), llvm_o3 = with_libdevice();
  llvm_o3.llvm_pipeline = true;
  auto matmul = load(read_example("matmul.pg"));
  auto ours = codegen::compile(matmul, kernel_pipeline);
  auto theirs = codegen::compile(matmul, llvm_o3);
  REQUIRE(ours);
  REQUIRE(theirs);
  CHECK(count(ours->ptx, "fma.rn.f32") == 16);
  CHECK(count(ours->ptx, "ld.shared.v4.f32") == 4);
  CHECK(count(ours->ptx, "fma.rn.f32") == count(theirs->ptx, "fma.rn.f32"));
  CHECK(count(ours->ptx, "ld.shared.v4.f32") == count(theirs->ptx, "ld.shared.v4.f32"));

  // libdevice is inlined and its unused functions dropped: one entry, no .func left.
  auto math = compile_text(kMathKernel);
  CHECK(count(math.ptx, ".entry") == 1);
  CHECK(count(math.ptx, ".func") == 0);

  // Every example compiles with both pipelines; the instruction counts stay close.
  for (const char* name : {"saxpy.pg", "block_sum.pg", "grid_stride.pg", "histogram.pg", "math.pg", "matmul.pg",
                           "normalize.pg", "stencil.pg", "transpose.pg"}) {
    CAPTURE(name);
    auto m = load(read_example(name));
    auto a = codegen::compile(m, kernel_pipeline);
    auto b = codegen::compile(m, llvm_o3);
    REQUIRE(a);
    REQUIRE(b);
    const double ia = double(count(a->ptx, ";\n")), ib = double(count(b->ptx, ";\n"));
    CHECK(ia <= ib * 1.05 + 2);
  }
}

TEST_CASE("codegen: shared memory is addressed with 32-bit registers; local memory keeps 64-bit pointers") {
  // At -O2/-O3 pointers to shared memory are 32-bit, as in nvcc's PTX: one register per address,
  // and `base + constant` in the instruction.
  auto shared_addresses = [](const std::string& ptx) {
    std::vector<std::string> out;
    std::istringstream lines(ptx);
    for (std::string line; std::getline(lines, line);)
      if ((contains(line, "ld.shared.") || contains(line, "st.shared.")) && contains(line, "[%"))
        out.push_back(line.substr(line.find('[')));  // a register address, not a symbol's
    return out;
  };
  auto sum = shared_addresses(compile_text(read_example("block_sum.pg")).ptx);
  REQUIRE_FALSE(sum.empty());
  for (const auto& address : sum) {
    const bool register32 = address.starts_with("[%r") && !address.starts_with("[%rd");
    CHECK_MESSAGE(register32, address);
  }
  // A module that keeps a stack frame after optimisation (libdevice's sinf slow path) is built with
  // 64-bit pointers: a 32-bit frame is reached through cvta.to.local, which keeps ptxas from
  // promoting it to registers.
  auto waves = compile_text(kMathKernel);
  CHECK(contains(waves.ptx, "__local_depot"));
  CHECK_FALSE(contains(waves.ptx, "cvta.to.local"));
  // Below -O2 nothing is promoted: every pointer is 64-bit.
  auto options = with_libdevice();
  options.opt_level = 1;
  auto o1 = codegen::compile(load(read_example("block_sum.pg")), options);
  REQUIRE(o1);
  auto unoptimised = shared_addresses(o1->ptx);
  REQUIRE_FALSE(unoptimised.empty());
  for (const auto& address : unoptimised) CHECK_MESSAGE(address.starts_with("[%rd"), address);
}

TEST_CASE("codegen: unroll copies a loop body, unroll(N) by a factor, unroll(1) tells ptxas not to") {
  auto count = [](const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  // 16 steps of 8 fmas each (too large for the optimiser's own threshold to unroll completely).
  auto source = [](const std::string& annotation) {
    return "@workgroup(64)\nkernel k(inout y: f32[], in x: f32[]) {\n  var acc: f32[8];\n"
           "  for s in 0..16 " + annotation + " {\n"
           "    let v = x[thread_id.x * 16 + s];\n"
           "    for j in 0..8 { acc[j] = fma(v, x[s * 8 + j], acc[j]); }\n  }\n"
           "  for j in 0..8 { y[thread_id.x * 8 + j] = acc[j]; }\n}\n";
  };
  const auto plain = compile_text(source("")).ptx;
  const auto full = compile_text(source("unroll")).ptx;
  const auto by_two = compile_text(source("unroll(2)")).ptx;
  const auto none = compile_text(source("unroll(1)")).ptx;
  CHECK(count(full, "fma.rn.f32") == 16 * 8);
  CHECK(count(by_two, "fma.rn.f32") == 2 * 8);
  CHECK(count(plain, "fma.rn.f32") < 16 * 8);
  CHECK_FALSE(contains(full, "bra"));  // no loop left
  CHECK(count(none, "fma.rn.f32") == 8);
  CHECK(contains(none, ".pragma \"nounroll\""));
  CHECK_FALSE(contains(plain, ".pragma \"nounroll\""));
}

TEST_CASE("codegen: machine sinking runs in ordinary kernels and not in kernels of more than 1000 blocks") {
  // Each sin or cos inlines libdevice's reduction slow path, eight blocks; machine sinking's store search
  // walks every block after a load, quadratic in such a kernel's length, so above 1000 blocks it is left out.
  // Visible in the PTX: with machine sinking the output pointer's parameter load sinks past the bounds
  // branch to the store at the end; without it, it stays in the entry block.
  auto chain = [](int statements) {
    static const char* const functions[] = {"sin", "exp", "cos"};
    std::string text = "@workgroup(128)\nkernel k(out r: f32[], in a: f32[], n: u32) {\n  let i = global_id.x;\n"
                       "  if (i < n) {\n    let v0 = a[i];\n    let v1 = v0 * 0.5;\n";
    for (int s = 2; s < statements; ++s)
      text += "    let v" + std::to_string(s) + " = " + functions[s % 3] + "(abs(v" + std::to_string(s - 1) +
              ")) + v" + std::to_string(s - 2) + ";\n";
    return text + "    r[i] = v" + std::to_string(statements - 1) + ";\n  }\n}\n";
  };
  auto output_pointer_before_branch = [](const std::string& ptx) {
    const size_t load = ptx.find("[k_param_0]"), branch = ptx.find(" bra");
    REQUIRE(load != std::string::npos);
    REQUIRE(branch != std::string::npos);
    return load < branch;
  };
  CHECK_FALSE(output_pointer_before_branch(compile_text(chain(12)).ptx));  // two of three calls trigonometric: about 60 blocks
  CHECK(output_pointer_before_branch(compile_text(chain(200)).ptx));       // about 1060 blocks
}
