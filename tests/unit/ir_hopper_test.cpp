// Unit tests for the Hopper operations (mbarrier, TMA, wgmma) and tensor_map parameters: typing, the
// rules and their codes (PG1350-PG1359), the warpgroup convergence rule, printing, the builder API, the
// PTX for sm_90a, KernelInfo, and the launch check and binding of tensor-map arguments (PG3712).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/runtime/internal/arguments.hpp"
#include "ptxgate/runtime/tensor_map.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/ir/block_granule.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ir_test_support.hpp"
#include "validation_test_support.hpp"

using namespace ptxgate;
using namespace ptxgate::ir_test;

namespace {

/// Every Hopper operation, valid.
const char* kAll = R"(
@workgroup(256)
kernel k(out y: f32[], m: tensor_map, n: u32) {
  shared bars: u64[2];
  shared tile: bf16[];
  var acc: f32[128];
  let base = ((1024 - shared_address(tile, 0) % 1024) % 1024) / 2;
  if (thread_id.x == 0) {
    mbarrier_init(bars, 0, 1);
    mbarrier_init(bars, 1, 4);
    fence_proxy_async();
  }
  barrier();
  if (warpgroup_id == 0) {
    setmaxnreg_dec(40);
    if (thread_id.x == 0) {
      mbarrier_arrive_expect_tx(bars, 0, 16384);
      tma_load(tile, base, m, bars, 0, 0, i32(block_id.x * 128));
    }
  } else {
    setmaxnreg_inc(232);
    mbarrier_wait(bars, 0, 0);
    wgmma_fence();
    wgmma_bf16(acc, wgmma_desc(tile, base), wgmma_desc(tile, base + 4096), false);
    for kk in 1..4 {
      wgmma_f16(acc, wgmma_desc(tile, base + kk * 16), wgmma_desc(tile, base + 4096 + kk * 16), true);
    }
    wgmma_commit();
    wgmma_wait(0);
    if (lane_id == 0) { mbarrier_arrive(bars, 1); }
    y[global_id.x] = acc[0] + acc[127];
    if (thread_id.x == 128) {
      tma_store(m, tile, base, 0, 0);
      tma_store_commit();
      tma_store_wait(0);
    }
  }
  let ready = mbarrier_try_wait(bars, 1, 0);
  if (ready && thread_id.x == 0) { mbarrier_inval(bars, 1); }
}
)";

/// `statements` in a 128-thread kernel with a tensor map, shared barriers and tiles, and an accumulator.
std::string body(const std::string& statements, const std::string& attributes = "@workgroup(128)") {
  return attributes +
         "\nkernel k(inout y: f32[], m: tensor_map, n: u32) {\n  shared bars: u64[2];\n  shared tile: bf16[4096];\n"
         "  var acc: f32[64];\n" +
         statements + "\n}\n";
}

}  // namespace

TEST_CASE("hopper: every operation verifies; the kernel records its Hopper and warpgroup use") {
  ir::Module m;
  auto d = verify_text(kAll, &m);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(m.kernels[0].target_requirement.minimum.name() == "sm_90a");
  CHECK(m.kernels[0].uses_warpgroup_operations);
  ir::Module plain;
  REQUIRE(verify_text("kernel k(inout y: f32[]) { y[0] = 1.0; }", &plain).empty());
  CHECK_FALSE(plain.kernels[0].target_requirement.any());
  CHECK_FALSE(plain.kernels[0].uses_warpgroup_operations);
}

TEST_CASE("hopper: each misuse is one diagnostic with its code, a location and a fix") {
  check_only(body("let x = m;"), diag::Code::invalid_tensor_map_use);
  check_only("fn f(m: tensor_map) { }\nkernel k(inout y: f32[]) { y[0] = 1.0; }", diag::Code::invalid_tensor_map_use);
  check_only(body("shared flags: u32[2];\n  mbarrier_init(flags, 0, 1);"), diag::Code::invalid_mbarrier);
  check_only(body("mbarrier_arrive(y, 0);"), diag::Code::invalid_mbarrier);
  check_only(body("tma_load(y, 0, m, bars, 0, 0);"), diag::Code::invalid_tma_operand);
  check_only(body("tma_load(tile, 0, n, bars, 0, 0);"), diag::Code::invalid_tma_operand);
  check_only(body("tma_store(m, tile, 0, 1, 2, 3, 4, 5, 6);"), diag::Code::wrong_argument_count);
  check_only(body("var odd: f32[6];\n  wgmma_bf16(odd, 0, 0, false);"), diag::Code::invalid_wgmma_accumulator);
  check_only(body("wgmma_bf16(tile, 0, 0, false);"), diag::Code::invalid_wgmma_accumulator);
  check_only(body("wgmma_wait(8);"), diag::Code::constant_operand_out_of_range);
  check_only(body("wgmma_wait(n);"), diag::Code::constant_operand_out_of_range);
  check_only(body("setmaxnreg_inc(100);"), diag::Code::constant_operand_out_of_range);
  check_only(body("tma_store_wait(n);"), diag::Code::constant_operand_out_of_range);
  check_only(body("if (warp_id == 0) { wgmma_fence(); }"), diag::Code::divergent_warpgroup_operation);
  check_only(body("if (y[0] > 0.0) { wgmma_commit(); }"), diag::Code::divergent_warpgroup_operation);
  check_only("fn f() { wgmma_commit(); }\n@workgroup(128)\nkernel k(inout y: f32[]) { f(); }",
             diag::Code::warpgroup_operation_in_function);
  check_only(body("wgmma_fence();", "@workgroup(96)"), diag::Code::partial_warpgroup_block);
  check_only(body("shared f: f32[64];\n  let d = wgmma_desc(f, 0);"), diag::Code::invalid_matrix_descriptor);
  check_only(body("let a = shared_address(y, 0);"), diag::Code::invalid_matrix_descriptor);
}

TEST_CASE("hopper: the verifier records a block granule of 128 for warpgroup operations, @workgroup or not") {
  for (const std::string attributes : {"@workgroup(128)", "", "@workgroup(256)"}) {
    CAPTURE(attributes);
    ir::Module m;
    REQUIRE(verify_text(body("wgmma_fence();", attributes), &m).empty());
    CHECK(m.kernels[0].block_granule == 128);
    CHECK(codegen::describe(m)[0].block_granule == 128);
  }
  ir::Module plain;
  REQUIRE(verify_text(body("y[0] = 1.0;", ""), &plain).empty());
  CHECK(plain.kernels[0].block_granule == 1);
  // The one rule for @workgroup and launches names the block, the granule and why.
  auto v = ir::check_block_granule("k", 128, 96, "the block 96x1x1");
  REQUIRE(v);
  CHECK(v->code == diag::Code::partial_warpgroup_block);
  CHECK(v->suggested_threads == 128);
  CHECK(v->message.find("the block 96x1x1 has 96 threads, not a multiple of 128") != std::string::npos);
  CHECK_FALSE(ir::check_block_granule("k", 32, 96, "b"));
  CHECK(ir::check_block_granule("k", 32, 100, "b")->code == diag::Code::partial_warp_block);
  CHECK_FALSE(ir::check_block_granule("k", 1, 7, "b"));
}

TEST_CASE("hopper: warpgroup_id, block_id and uniform values keep wgmma convergent; warp_id does not") {
  CHECK(verify_text(body("if (warpgroup_id == 1) { wgmma_fence(); }\n  if (n > 4) { wgmma_commit(); }")).empty());
  CHECK(verify_text(body("for i in 0..n { wgmma_fence(); }")).empty());
  CHECK(has(verify_text(body("for i in 0..thread_id.x { wgmma_fence(); }")), diag::Code::divergent_warpgroup_operation));
  // mbarrier and TMA operations are per thread: no convergence rule.
  CHECK(verify_text(body("if (thread_id.x == 3) { mbarrier_arrive(bars, 0); tma_store_commit(); }")).empty());
}

TEST_CASE("hopper: PTX for sm_90a has the instructions, the grid-constant map and registers for acc") {
  const std::string ptx = ptx_of(kAll, "sm_90a");
  CHECK(contains(ptx, ".target sm_90a"));
  CHECK(contains(ptx, ".param .align 64 .b8 k_param_1[128]"));
  CHECK(contains(ptx, "cvta.param.u64"));
  CHECK(contains(ptx, "mbarrier.init.shared"));
  CHECK(contains(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64"));
  CHECK(contains(ptx, "mbarrier.try_wait.parity.shared::cta.b64"));
  CHECK(contains(ptx, "fence.proxy.async.shared::cta"));
  CHECK(contains(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
  CHECK(contains(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  CHECK(contains(ptx, "cp.async.bulk.wait_group.read 0"));
  CHECK(contains(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
  CHECK(contains(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"));
  CHECK(contains(ptx, "wgmma.wait_group.sync.aligned 0"));
  CHECK(contains(ptx, "setmaxnreg.inc.sync.aligned.u32 232"));
  CHECK(contains(ptx, "setmaxnreg.dec.sync.aligned.u32 40"));
  CHECK_FALSE(contains(ptx, ".local"));  // the accumulators stay in registers
}

TEST_CASE("hopper: an accumulator carried through a k loop of run-time length stays registers at every level") {
  // Every wgmma loads and stores its elements by constant index; the epilogue's loop reads them from one
  // vector taken before it (codegen/lower_hopper.cpp snapshot_accumulators), which full unrolling and
  // InstCombine reduce to the elements: no vector of the accumulator and no array is left at -O3.
  const std::string text = body(R"(let base = ((1024 - shared_address(tile, 0) % 1024) % 1024) / 2;
  var d: f32[128];
  wgmma_fence();
  wgmma_bf16(d, wgmma_desc(tile, base), wgmma_desc(tile, base + 4096), false);
  for i in 1..n {
    wgmma_bf16(d, wgmma_desc(tile, base + i * 16), wgmma_desc(tile, base + 4096 + i * 16), true);
    wgmma_commit();
    wgmma_wait(0);
  }
  for j in 0..32 {
    y[global_id.x * 128 + 4 * j] = d[4 * j] + d[4 * j + 3];
  })");
  auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  for (const unsigned level : {1u, 3u})
    for (const bool llvm_pipeline : {false, true}) {
      CAPTURE(level);
      CAPTURE(llvm_pipeline);
      codegen::CodegenOptions options;
      options.target = *ir::Target::parse("sm_90a");
      options.opt_level = level;
      options.llvm_pipeline = llvm_pipeline;
      auto ir_text = codegen::emit_llvm_ir(loaded->module, options);
      if (!ir_text) FAIL(diag::render_text(ir_text.error()));
      CHECK_FALSE(contains(*ir_text, "phi <128 x float>"));
      if (level >= 2) {
        CHECK_FALSE(contains(*ir_text, "<128 x float>"));
        CHECK_FALSE(contains(*ir_text, "[128 x float]"));
      }
      auto compiled = codegen::compile(loaded->module, options);
      if (!compiled) FAIL(diag::render_text(compiled.error()));
      CHECK(contains(compiled->ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
      if (level >= 2) CHECK_FALSE(contains(compiled->ptx, ".local"));
    }
}

TEST_CASE("hopper: an epilogue that writes or indexes the accumulator at run time reads it from the array") {
  // Only a loop of constant length that reads the accumulator and writes none of it takes the vector
  // before it (snapshot_accumulators): here the first loop scales the elements it reads, so it reads
  // what it wrote, and the second runs n times; both compile and keep the wgmma's registers.
  const std::string text = body(R"(let base = ((1024 - shared_address(tile, 0) % 1024) % 1024) / 2;
  var d: f32[128];
  wgmma_fence();
  wgmma_bf16(d, wgmma_desc(tile, base), wgmma_desc(tile, base + 4096), false);
  wgmma_commit();
  wgmma_wait(0);
  for j in 0..32 {
    d[4 * j] = d[4 * j] * 2.0;
    y[global_id.x * 128 + 4 * j] = d[4 * j] + d[(4 * j + 4) % 128];
  }
  for j in 0..n {
    y[j] = d[j % 128];
  })");
  auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options;
  options.target = *ir::Target::parse("sm_90a");
  auto ir_text = codegen::emit_llvm_ir(loaded->module, options);
  if (!ir_text) FAIL(diag::render_text(ir_text.error()));
  CHECK_FALSE(contains(*ir_text, "<128 x float>"));  // no vector taken: the second loop indexes the array
  CHECK(contains(*ir_text, "[128 x float]"));
  auto compiled = codegen::compile(loaded->module, options);
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  CHECK(contains(compiled->ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
}

TEST_CASE("hopper: consecutive wgmmas on one accumulator become one inline-PTX statement, each with its own operands") {
  // codegen/wgmma_fusion.cpp: the four wgmmas before the commit carry d from one to the next with only
  // descriptor arithmetic between them; the one after the commit stays on its own.
  const std::string text = body(R"(let base = ((1024 - shared_address(tile, 0) % 1024) % 1024) / 2;
  var d: f32[128];
  wgmma_fence();
  wgmma_bf16(d, wgmma_desc(tile, base), wgmma_desc(tile, base + 2048), false);
  for kk in 1..4 {
    wgmma_bf16(d, wgmma_desc(tile, base + kk * 16), wgmma_desc(tile, base + 2048 + kk * 16), true);
  }
  wgmma_commit();
  wgmma_bf16(d, wgmma_desc(tile, base + 64), wgmma_desc(tile, base + 2112), true);
  wgmma_commit();
  wgmma_wait(0);
  y[global_id.x] = d[0] + d[127];)");
  for (const unsigned level : {1u, 3u}) {
    CAPTURE(level);
    auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
    if (!loaded) FAIL(diag::render_text(loaded.error()));
    codegen::CodegenOptions options;
    options.target = *ir::Target::parse("sm_90a");
    options.opt_level = level;
    auto compiled = codegen::compile(loaded->module, options);
    if (!compiled) FAIL(diag::render_text(compiled.error()));
    const std::string& ptx = compiled->ptx;
    // The wgmmas of each inline-PTX statement, and the descriptor registers each one names.
    std::vector<size_t> per_statement;
    std::vector<std::string> descriptors;
    for (size_t at = ptx.find("// begin inline asm"); at != std::string::npos; at = ptx.find("// begin inline asm", at + 1)) {
      const size_t end = ptx.find("// end inline asm", at);
      REQUIRE(end != std::string::npos);
      size_t count = 0;
      for (size_t w = ptx.find("wgmma.mma_async", at); w < end; w = ptx.find("wgmma.mma_async", w + 1)) {
        ++count;
        const size_t operands = ptx.find("}, ", w) + 3;
        descriptors.push_back(ptx.substr(operands, ptx.find(", p,", operands) - operands));
      }
      if (count) per_statement.push_back(count);
    }
    CHECK(per_statement == std::vector<size_t>{4, 1});
    REQUIRE(descriptors.size() == 5);
    for (size_t i = 0; i < 4; ++i)
      for (size_t j = i + 1; j < 4; ++j) CHECK(descriptors[i] != descriptors[j]);
  }
}

TEST_CASE("hopper: another target is PG1350 at the first Hopper operation; the target policy picks sm_90a for sm_90") {
  auto loaded = ir::load_module(diag::SourceFile("t.pg", kAll));
  REQUIRE(loaded);
  const ir::Target sm90a(90, ir::Target::Variant::arch_specific);
  for (ir::Target target : {ir::Target(90), ir::Target(80), ir::Target(100)}) {
    CAPTURE(target.name());
    codegen::CodegenOptions options;
    options.target = target;  // asked for as it is: codegen itself applies no policy
    auto compiled = codegen::compile(loaded->module, options);
    REQUIRE_FALSE(compiled);
    REQUIRE(compiled.error().size() == 1);
    const diag::Diagnostic& d = compiled.error().items()[0];
    CHECK(d.code == diag::Code::hopper_needs_sm90a);
    CHECK(contains(d.message, "kernel 'k' uses shared_address, which exists only on the architecture-specific target "
                              "sm_90a; the target is " + target.name()));
    CHECK(d.location.line == 7);  // `let base = ... shared_address(tile, 0) ...`, the first Hopper operation
    CHECK(contains(d.fix, "--target sm_90a"));
  }
  CHECK(ir::target_for_module(loaded->module, ir::Target(90)) == sm90a);
  CHECK(ir::target_for_module(loaded->module, ir::Target(80)) == ir::Target(80));
  CHECK(ir::target_for_module(loaded->module, ir::Target(100)) == ir::Target(100));
  codegen::CodegenOptions options;
  options.target = ir::target_for_module(loaded->module, ir::Target(90));
  CHECK(codegen::compile(loaded->module, options));
  auto plain = ir::load_module(diag::SourceFile("p.pg", "kernel k(inout y: f32[]) { y[0] = 1.0; }"));
  REQUIRE(plain);
  CHECK(ir::target_for_module(plain->module, ir::Target(90)) == ir::Target(90));
}

TEST_CASE("hopper: an architecture-specific need outranks a newer generic one, also through a function") {
  auto loaded = ir::load_module(diag::SourceFile("t.pg", R"(fn step(c: f32x4) -> f32x4 { return mma_m16n8k8(c, f32x2(1.0), c); }
@workgroup(128)
kernel k(out d: f32[]) {
  shared bars: u64[1];
  store4(d, 0, step(f32x4(0.0)));
  if (thread_id.x == 0) { mbarrier_init(bars, 0, 1); }
}
)"));
  REQUIRE(loaded);
  const ir::TargetRequirement& need = loaded->module.kernels[0].target_requirement;
  CHECK(need.minimum.name() == "sm_90a");
  CHECK(need.operation == "mbarrier_init");
  CHECK(need.location.line == 6);
  CHECK(need.met_by(ir::Target(90, ir::Target::Variant::arch_specific)));
  CHECK_FALSE(need.met_by(ir::Target(90)));
  CHECK_FALSE(need.met_by(ir::Target(100)));
  codegen::CodegenOptions options;
  options.target = ir::Target(75);
  auto compiled = codegen::compile(loaded->module, options);
  REQUIRE_FALSE(compiled);
  REQUIRE(compiled.error().size() == 1);  // one requirement, one error: not a second PG1331 for mma
  CHECK(compiled.error().items()[0].code == diag::Code::hopper_needs_sm90a);
}

TEST_CASE("hopper: printing round-trips; the builder makes the same kernel") {
  ir::Module m;
  REQUIRE(verify_text(kAll, &m).empty());
  const std::string once = ir::print(m);
  ir::Module again;
  REQUIRE(verify_text(once, &again).empty());
  CHECK(ir::print(again) == once);
  CHECK(contains(once, "m: tensor_map"));
  CHECK(contains(once, "if (warpgroup_id == 0) {"));

  ir::ModuleBuilder mb;
  auto& k = mb.kernel("b");
  k.workgroup(128).buffer("y", ir::Access::out, ir::Type::f32).tensor_map("m");
  k.shared("bars", ir::Type::u64, 1);
  k.shared("tile", ir::Type::f32, 1024);
  k.if_(k.warpgroup_id() == 0, [&](ir::BlockBuilder& b) {
    b.expr(b.call(ir::Intrinsic::mbarrier_init, {b.name("bars"), 0, 1}));
    b.expr(b.call(ir::Intrinsic::tma_load, {b.name("tile"), 0, b.name("m"), b.name("bars"), 0, 0}));
  });
  ir::Module built = mb.take();
  auto d = ir::verify(built, nullptr);
  INFO(diag::render_text(d));
  CHECK(d.empty());
  CHECK(contains(ir::print(built), "kernel b(out y: f32[], m: tensor_map) {"));
}

TEST_CASE("hopper: KernelInfo lists a tensor_map parameter of 128 bytes, through JSON") {
  ir::Module m;
  REQUIRE(verify_text(kAll, &m).empty());
  auto info = codegen::describe(m);
  const auto& p = info.at(0).params.at(1);
  CHECK(p.type == ir::Type::tensor_map);
  CHECK_FALSE(p.is_buffer);
  CHECK(p.size_bytes == 128);
  auto back = contract::kernel_info_from_json(contract::to_json(info[0]));
  REQUIRE(back);
  CHECK(back->params.at(1).type == ir::Type::tensor_map);
  CHECK(back->params.at(1).size_bytes == 128);
}

TEST_CASE("hopper: a tensor map binds only to a tensor_map parameter (PG3712), by its own 128 bytes") {
  using runtime::Arg;
  contract::ParamInfo map_param{"m", 0, false, ir::Access::inout, ir::Type::tensor_map, 128};
  contract::ParamInfo scalar{"n", 1, false, ir::Access::inout, ir::Type::u32, 4};
  runtime::TensorMap map;
  map.words[0] = 0x1234;
  const Arg a(map);
  CHECK(a.kind() == Arg::Kind::tensor_map);
  CHECK(a.value_address() == map.words.data());
  auto bound = runtime::bind_argument(a, map_param, "k");
  REQUIRE(bound);
  CHECK(bound->size == 128);
  runtime::BoundSlot slot;
  CHECK(runtime::internal::argument_slot(a, slot) == static_cast<void*>(map.words.data()));
  auto wrong = runtime::bind_argument(Arg(7u), map_param, "k");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().items()[0].code == diag::Code::tensor_map_argument_mismatch);
  auto misplaced = runtime::bind_argument(a, scalar, "k");
  REQUIRE_FALSE(misplaced);
  CHECK(misplaced.error().items()[0].code == diag::Code::tensor_map_argument_mismatch);

  // The launch check sees the same from the descriptions alone.
  contract::KernelInfo kernel = validation_test::kernel();
  kernel.params = {map_param, scalar};
  kernel.params[0].index = 0, kernel.params[1].index = 1;
  contract::LaunchPlan plan = validation_test::plan({1, 1, 1}, {128, 1, 1});
  plan.arguments_known = true;
  plan.arguments = {runtime::internal::describe_argument(a), runtime::internal::describe_argument(Arg(7u))};
  const auto caps = validation_test::caps_of("h100-sxm");
  const auto resources = validation_test::resources(32);
  auto fine = validation::check_launch(kernel, resources, plan, caps);
  INFO(diag::render_text(fine.diagnostics));
  CHECK(validation_test::count(fine, diag::Code::tensor_map_argument_mismatch) == 0);
  CHECK(fine.launchable);
  plan.arguments = {runtime::internal::describe_argument(Arg(uint64_t{7})), runtime::internal::describe_argument(a)};
  auto swapped = validation::check_launch(kernel, resources, plan, caps);
  CHECK(validation_test::count(swapped, diag::Code::tensor_map_argument_mismatch) == 2);
  CHECK_FALSE(swapped.launchable);
}
