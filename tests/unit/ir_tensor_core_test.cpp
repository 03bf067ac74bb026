// Unit tests for the tensor-core operations (mma.sync, ldmatrix, cp.async, tf32): typing and the
// verifier's codes (PG1330-PG1336, the warp rules PG1318/PG1320), the target rule (PG1331 from code
// generation), printing, the builder API, and the PTX they lower to (accepted by ptxas for sm_80/sm_90).
#include <doctest/doctest.h>

#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "ir_check_support.hpp"
#include "toolkit_test_support.hpp"

using namespace ptxgate;
using diag::Code;

namespace {

testing::Checked check(const std::string& text) { return testing::check_module("tc.pg", text); }

/// A warp-sized kernel with bf16, f16 and f32 buffers, a bf16 and an f32 shared array, around `statements`.
testing::Checked body(const std::string& statements, const std::string& attributes = "@workgroup(64)") {
  return check(attributes +
               "\nkernel k(out d: f32[], in a: bf16[], in h: f16[], in x: f32[], n: u32) {\n"
               "  shared tile: bf16[1024];\n  shared ftile: f32[512];\n  let t = thread_id.x;\n" +
               statements + "\n}\n");
}

/// One complete kernel using every operation (an m16n8k16 bf16 step fed by ldmatrix from tiles that
/// cp_async filled, an f16 and a tf32 step).
constexpr const char* kEveryOperation = R"(const STAGES: u32 = 2;

@workgroup(32)
kernel k(out d: f32[], in a: bf16[], in b: bf16[], in h: f16[], in x: f32[]) {
  shared As: bf16[256];
  shared Bs: bf16[128];
  shared Hs: f16[256];
  shared Fs: f32[128];
  let t = thread_id.x;
  cp_async16(As, t, a, t);
  cp_async16(Bs, t % 16, b, t % 16, 16);
  cp_async_commit();
  cp_async8(Hs, t, h, t);
  cp_async4(Fs, t, x, t, 4 * (t % 2));
  cp_async_commit();
  cp_async_wait(STAGES - 1);
  cp_async_wait(0);
  barrier();
  let fa = ldmatrix_x4(As, (t % 16) * 2 + t / 16);
  let fb = ldmatrix_x2_trans(Bs, t % 16);
  var acc = mma_m16n8k16(fa, fb, f32x4(0.0));
  let ha = ldmatrix_x4_trans(Hs, t);
  let hb = ldmatrix_x2(Hs, t);
  let one = ldmatrix_x1(Hs, t);
  let one_t = ldmatrix_x1_trans(Hs, t);
  acc = mma_m16n8k16(ha, f16x4(one[0], one[1], one_t[0], one_t[1]), acc);
  acc = mma_m16n8k16(ha, hb, acc);
  let ta = f32x4(tf32(Fs[t]), tf32(Fs[t + 32]), tf32(Fs[t + 64]), tf32(Fs[t + 96]));
  acc = mma_m16n8k8(ta, f32x2(tf32(x[t]), 1.0), acc);
  store4(d, t, acc);
}
)";

std::string compile_for(const std::string& text, const std::string& target, diag::Diagnostics* errors = nullptr) {
  auto loaded = ir::load_module(diag::SourceFile("tc.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options;
  options.target = target;
  auto compiled = codegen::compile(loaded->module, options);
  if (!compiled) {
    if (errors) *errors = compiled.error();
    return {};
  }
  return compiled->ptx;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("tensor cores: every operation type-checks, and mma/ldmatrix count as warp operations") {
  auto c = check(kEveryOperation);
  INFO(diag::render_text(c.diags));
  REQUIRE(c.diags.empty());
  const ir::Kernel& k = c.module.kernels[0];
  CHECK(k.uses_warp_operations);
  CHECK(k.min_sm == 80);
  CHECK(k.min_sm_operation == "cp_async16");
  CHECK(k.min_sm_location.line == 10);
  // cp_async16 from a and b, cp_async8 from h and cp_async4 from x: the bases must be aligned to the copy.
  REQUIRE(k.vector_alignment.size() == 5);
  CHECK(k.vector_alignment[1] == 16);
  CHECK(k.vector_alignment[2] == 16);
  CHECK(k.vector_alignment[3] == 8);
  CHECK(k.vector_alignment[4] == 4);
  auto info = codegen::describe(c.module);
  CHECK(info[0].block_granule == 32);
}

TEST_CASE("tensor cores: result types of ldmatrix follow the count and the element") {
  auto c = body(R"(
  let one: bf16x2 = ldmatrix_x1(tile, t);
  let two: bf16x4 = ldmatrix_x2_trans(tile, t);
  let four: bf16x8 = ldmatrix_x4(tile, t);
  let d0: f32x4 = mma_m16n8k16(four, two, f32x4(0.0));
  let r: f32 = tf32(1.5);)");
  INFO(diag::render_text(c.diags));
  CHECK(c.diags.empty());
}

TEST_CASE("tensor cores: a fragment of the wrong type or width is PG1330, naming the operand") {
  auto wrong_a = body("let r = mma_m16n8k16(f32x4(0.0), bf16x4(bf16(1.0)), f32x4(0.0));");
  CHECK(wrong_a.count(Code::invalid_mma_operand) == 1);
  CHECK(contains(wrong_a.message(Code::invalid_mma_operand), "operand A of 'mma_m16n8k16' has type f32x4"));
  auto mixed = body("let r = mma_m16n8k16(bf16x8(bf16(1.0)), f16x4(f16(1.0)), f32x4(0.0));");
  CHECK(mixed.count(Code::invalid_mma_operand) == 1);
  CHECK(contains(mixed.message(Code::invalid_mma_operand), "operand B"));
  CHECK(contains(mixed.message(Code::invalid_mma_operand), "it must be bf16x4"));
  auto narrow_c = body("let r = mma_m16n8k16(bf16x8(bf16(1.0)), bf16x4(bf16(1.0)), f32x2(0.0));");
  CHECK(narrow_c.count(Code::invalid_mma_operand) == 1);
  CHECK(contains(narrow_c.message(Code::invalid_mma_operand), "operand C"));
  auto tf32_b = body("let r = mma_m16n8k8(f32x4(0.0), f32x4(0.0), f32x4(0.0));");
  CHECK(tf32_b.count(Code::invalid_mma_operand) == 1);
  CHECK(contains(tf32_b.message(Code::invalid_mma_operand), "it must be f32x2"));
  auto scalar = body("let r = mma_m16n8k8(1.0, f32x2(0.0), f32x4(0.0));");
  CHECK(scalar.count(Code::invalid_mma_operand) == 1);
  CHECK(body("let r = mma_m16n8k8(f32x4(0.0), f32x2(0.0));").has(Code::wrong_argument_count));
  CHECK(body("let r = tf32(u32(2));").has(Code::type_mismatch));
  CHECK(body("let r = tf32(f64(2.0));").has(Code::type_mismatch));
}

TEST_CASE("tensor cores: ldmatrix reads a shared array of 16-bit elements (PG1332, PG1334)") {
  CHECK(body("let f = ldmatrix_x4(a, t);").has(Code::requires_shared_array));
  CHECK(body("let f = ldmatrix_x2(ftile, t);").has(Code::invalid_matrix_element));
  CHECK(body("let f = ldmatrix_x1(tile, 1.5);").has(Code::non_integer_index));
  CHECK(body("let f = ldmatrix_x1(nothing, t);").has(Code::undefined_name));
  auto local = body("var l: f16[16];\n  let f = ldmatrix_x1(l, t);");
  CHECK(local.has(Code::not_indexable));
  CHECK(body("let f = ldmatrix_x4_trans(tile, t);").diags.empty());
}

TEST_CASE("tensor cores: cp_async copies a buffer into a shared array (PG1332, PG1333, PG1334, PG1336, PG1303)") {
  CHECK(body("cp_async16(d, t, x, t);").has(Code::requires_shared_array));
  CHECK(body("cp_async16(ftile, t, ftile, t);").has(Code::invalid_async_copy_source));
  CHECK(body("cp_async16(ftile, t, x + 1.0, t);").has(Code::invalid_async_copy_source));
  CHECK(body("cp_async16(ftile, t, d, t);").has(Code::read_of_out_buffer));
  CHECK(body("cp_async8(ftile, t, h, t);").has(Code::invalid_matrix_element));
  CHECK(check("kernel k(in w: f64[]) { shared s: f64[64]; cp_async4(s, 0, w, 0); }").has(Code::invalid_matrix_element));
  CHECK(body("cp_async16(ftile, t, x, t, 20);").has(Code::invalid_async_copy_bytes));
  CHECK(body("cp_async16(ftile, t, x, t, 16);").diags.empty());
  CHECK(body("cp_async16(ftile, t, x, t, t * 4);").diags.empty());  // a run-time count is clamped
  CHECK(body("cp_async16(ftile, t, x, t, 2.0);").has(Code::type_mismatch));
  CHECK(body("cp_async4(ftile, t, x);").has(Code::wrong_argument_count));
  CHECK(body("cp_async_commit(1);").has(Code::wrong_argument_count));
  // cp_async is per thread: no convergence rule.
  CHECK(body("if (t < n) { cp_async4(ftile, t, x, t); }\n  cp_async_commit();").diags.empty());
}

TEST_CASE("tensor cores: cp_async_wait takes a constant group count (PG1335)") {
  CHECK(body("cp_async_wait(n);").has(Code::invalid_wait_count));
  CHECK(body("cp_async_wait(t);").has(Code::invalid_wait_count));
  CHECK(body("cp_async_wait(-1);").has(Code::invalid_wait_count));
  CHECK(body("cp_async_wait(4294967295);").has(Code::invalid_wait_count));
  CHECK(body("cp_async_wait(1.0);").has(Code::invalid_wait_count));
  CHECK(body("cp_async_wait(2 * 3 - 1);").diags.empty());
  CHECK(check("const S: u32 = 4;\nkernel k() { cp_async_wait(S - 2); }").diags.empty());
}

TEST_CASE("tensor cores: mma and ldmatrix follow the warp convergence rule (PG1318) and need whole warps (PG1320)") {
  auto divergent = body(R"(
  var acc = f32x4(0.0);
  if (lane_id < 16) {
    acc = mma_m16n8k8(acc, f32x2(1.0), acc);
  }
  if (x[t] > 0.0) {
    let f = ldmatrix_x4(tile, t);
  }
  if (warp_id == 0) {
    acc = mma_m16n8k8(acc, f32x2(1.0), acc);
  }
  store4(d, t, acc);)");
  CHECK(divergent.count(Code::divergent_warp_operation) == 2);
  CHECK(contains(divergent.message(Code::divergent_warp_operation), "mma_m16n8k8() in kernel 'k'"));
  // A branch on a fragment's lane varies by lane.
  auto on_fragment = body(R"(
  let f = ldmatrix_x1(tile, t);
  if (f[0] > bf16(0.0)) {
    let g = ldmatrix_x1(tile, t);
  })");
  CHECK(on_fragment.count(Code::divergent_warp_operation) == 1);
  // Through a device function: reported at the call.
  auto through = check(R"(fn step(c: f32x4) -> f32x4 { return mma_m16n8k8(c, f32x2(1.0), c); }
@workgroup(32)
kernel k(out d: f32[]) {
  var acc = f32x4(0.0);
  if (lane_id == 0) { acc = step(acc); }
  store4(d, 0, acc);
})");
  CHECK(through.count(Code::divergent_warp_operation) == 1);
  CHECK(body("let f = ldmatrix_x4(tile, t);", "@workgroup(48)").has(Code::partial_warp_block));
  CHECK_FALSE(body("cp_async4(ftile, t, x, t);", "@workgroup(48)").has(Code::partial_warp_block));
}

TEST_CASE("tensor cores: a target below sm_80 is PG1331 at the operation, also through a function") {
  const std::string text = R"(fn step(c: f32x4) -> f32x4 { return mma_m16n8k8(c, f32x2(1.0), c); }
@workgroup(32)
kernel through(out d: f32[]) { store4(d, 0, step(f32x4(0.0))); }
@workgroup(32)
kernel plain(out d: f32[]) { d[0] = 1.0; }
)";
  auto c = check(text);
  REQUIRE(c.diags.empty());
  CHECK(c.module.kernels[0].min_sm == 80);
  CHECK(c.module.kernels[0].min_sm_operation == "mma_m16n8k8");
  CHECK(c.module.kernels[0].min_sm_location.line == 1);
  CHECK(c.module.kernels[1].min_sm == 0);
  diag::Diagnostics errors;
  CHECK(compile_for(text, "sm_75", &errors).empty());
  REQUIRE(errors.size() == 1);
  CHECK(errors.items()[0].code == Code::target_too_old);
  CHECK(errors.items()[0].location.line == 1);
  CHECK(contains(errors.items()[0].message, "kernel 'through' uses mma_m16n8k8, which needs sm_80"));
  CHECK_FALSE(errors.items()[0].fix.empty());
  for (const char* target : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120"}) {
    INFO(target);
    CHECK_FALSE(compile_for(text, target).empty());
  }
  // A module without tensor-core operations still compiles for sm_75.
  CHECK_FALSE(compile_for("kernel k(out d: f32[]) { d[0] = 1.0; }", "sm_75").empty());
}

TEST_CASE("tensor cores: the PTX has the instructions, and ptxas accepts it for sm_80 and sm_90") {
  const std::string ptx = compile_for(kEveryOperation, "sm_80");
  REQUIRE_FALSE(ptx.empty());
  CHECK(contains(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  CHECK(contains(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
  CHECK(contains(ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"));
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x2.shared.b16"));
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x1.shared.b16"));
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16"));
  CHECK(contains(ptx, "cp.async.cg.shared.global ["));    // 16 bytes: .cg
  CHECK(contains(ptx, "cp.async.ca.shared.global"));       // 4 and 8 bytes: .ca
  CHECK(contains(ptx, "], 16, 16;"));                      // the zero-filling form with a constant count
  CHECK(contains(ptx, "cp.async.commit_group"));
  CHECK(contains(ptx, "cp.async.wait_group 1"));
  CHECK(contains(ptx, "cp.async.wait_group 0"));
  CHECK(contains(ptx, "cvt.rna.tf32.f32"));
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    auto assembled = toolchain::assemble(compile_for(kEveryOperation, arch), arch, *toolkit);
    CHECK_MESSAGE(assembled.has_value(), (assembled ? "" : diag::render_text(assembled.error())));
  }
}

TEST_CASE("tensor cores: printing round-trips") {
  auto c = check(kEveryOperation);
  REQUIRE(c.diags.empty());
  const std::string printed = ir::print(c.module);
  CHECK(contains(printed, "cp_async16(Bs, t % 16, b, t % 16, 16);"));
  CHECK(contains(printed, "let fb = ldmatrix_x2_trans(Bs, t % 16);"));
  CHECK(contains(printed, "cp_async_wait(STAGES - 1);"));
  auto again = check(printed);
  INFO(diag::render_text(again.diags));
  REQUIRE(again.diags.empty());
  CHECK(ir::print(again.module) == printed);
}

TEST_CASE("tensor cores: the builder API builds the operations") {
  ir::ModuleBuilder mb;
  auto& k = mb.kernel("tile");
  k.workgroup(32).buffer("d", ir::Access::out, ir::Type::f32).buffer("a", ir::Access::in, ir::Type::bf16);
  k.shared("s", ir::Type::bf16, 256);
  ir::Ex t = k.let_("t", k.thread_id());
  k.expr(k.cp_async(16, "s", t, "a", t));
  k.expr(k.cp_async(16, "s", t, "a", t, 8));
  k.expr(k.cp_async_commit());
  k.expr(k.cp_async_wait(0));
  k.barrier();
  ir::Ex fa = k.let_("fa", k.ldmatrix(4, false, "s", t));
  ir::Ex fb = k.let_("fb", k.ldmatrix(2, true, "s", t));
  ir::Ex acc = k.let_("acc", k.mma(16, fa, fb, k.vector(ir::Type::f32x4, {0.0})));
  ir::Ex tf = k.let_("tf", k.mma(8, k.vector(ir::Type::f32x4, {k.tf32(1.0)}), k.vector(ir::Type::f32x2, {1.0}), acc));
  k.expr(k.store(4, "d", t, tf));
  ir::Module m = mb.take();
  auto d = ir::verify(m, nullptr);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(m.kernels[0].min_sm == 80);
  const std::string printed = ir::print(m);
  CHECK(contains(printed, "let acc = mma_m16n8k16(fa, fb, f32x4(0.0));"));
  CHECK(contains(printed, "cp_async16(s, t, a, t, 8);"));
  CHECK(contains(printed, "ldmatrix_x2_trans(s, t)"));
  CHECK(contains(printed, "mma_m16n8k8(f32x4(tf32(1.0)), f32x2(1.0), acc)"));
  // A shape or count that does not exist names no intrinsic: the verifier reports an unknown function.
  ir::ModuleBuilder bad;
  auto& kb = bad.kernel("k");
  kb.buffer("d", ir::Access::out, ir::Type::f32);
  kb.shared("s", ir::Type::bf16, 64);
  kb.let_("x", kb.ldmatrix(3, false, "s", 0));
  kb.let_("y", kb.mma(32, kb.vector(ir::Type::f32x4, {0.0}), kb.vector(ir::Type::f32x2, {0.0}),
                      kb.vector(ir::Type::f32x4, {0.0})));
  kb.expr(kb.cp_async(2, "s", 0, "d", 0));
  ir::Module bm = bad.take();
  auto bd = ir::verify(bm, nullptr);
  size_t unknown = 0;
  for (const auto& item : bd) unknown += item.code == Code::unknown_function ? 1 : 0;
  CHECK(unknown == 3);
}
