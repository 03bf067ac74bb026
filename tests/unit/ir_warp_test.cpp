// Unit tests for the warp operations and the lane_id/warp_id builtins: typing, the convergence
// rule at warp scope (PG1318), whole warps (PG1320), printing, the builder API and PTX.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

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

Checked check(const std::string& text) { return testing::check_module("w.pg", text); }

/// A kernel body with buffers and scalars of several types.
Checked body(const std::string& statements, const std::string& attributes = "@workgroup(256)") {
  return check(attributes +
               "\nkernel k(inout y: f32[], inout u: u32[], inout w: i64[], inout d: f64[], n: u32, flag: bool) {\n" +
               statements + "\n}\n");
}

std::string ptx_of(const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile("w.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  auto compiled = codegen::compile(loaded->module, {});
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  return compiled->ptx;
}

size_t occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("warp: builtins and operations type-check") {
  auto c = body(R"(
  let i = global_id.x;
  var v = 0.0;
  if (i < n) { v = y[i]; }
  let s: f32 = warp_sum(v);
  let m: u32 = warp_max(u[0]);
  let l: i64 = warp_min(w[0]);
  let x: f32 = shfl_xor(v, 16);
  let dn: f64 = shfl_down(d[0], 1);
  let up: i64 = shfl_up(w[0], lane_id);
  let ix: u32 = shfl_idx(u[0], 0);
  let b: u32 = ballot(v > 0.0);
  let a: bool = any(flag);
  let e: bool = all(v > 1.0);
  let lane: u32 = lane_id;
  let warp: u32 = warp_id;
  if (i < n) { y[i] = s + x; }
)");
  INFO(diag::render_text(c.diags));
  REQUIRE(c.diags.empty());
  CHECK(c.module.kernels[0].uses_warp_operations);
  CHECK_FALSE(check("kernel k(inout y: f32[]) { y[0] = 1.0; }").module.kernels[0].uses_warp_operations);
}

TEST_CASE("warp: operand errors have codes and fixes") {
  CHECK(body("let s = warp_sum(flag);").has(diag::Code::invalid_warp_operand));
  CHECK(body("let s = shfl_xor(flag, 1);").has(diag::Code::invalid_warp_operand));
  CHECK(body("let s = shfl_xor(1.0, 1.5);").has(diag::Code::type_mismatch));
  CHECK(body("let s = shfl_xor(1.0, -1);").has(diag::Code::literal_out_of_range));
  CHECK(body("let s = ballot(n);").has(diag::Code::condition_not_bool));
  CHECK(body("let s = any(1);").has(diag::Code::condition_not_bool));
  CHECK(body("let s = warp_sum(1.0, 2.0);").has(diag::Code::wrong_argument_count));
  CHECK(body("let s = shfl_down(1.0);").has(diag::Code::wrong_argument_count));
  CHECK(body("let lane_id = 3;").has(diag::Code::redefined_name));
  CHECK(body("let x = lane_id.x;").has(diag::Code::unknown_builtin));
  CHECK(body("let s = wrap_sum(1.0);").has(diag::Code::unknown_function));
  auto d = body("let s = warp_sum(flag);");
  for (const auto& item : d.diags) CHECK_FALSE(item.fix.empty());
}

TEST_CASE("warp: operations under lane-divergent control are PG1318") {
  CHECK(body("if (thread_id.x < 16) { let s = warp_sum(1.0); }").has(diag::Code::divergent_warp_operation));
  CHECK(body("if (lane_id == 0) { let s = ballot(true); }").has(diag::Code::divergent_warp_operation));
  CHECK(body("if (global_id.x >= n) { return; }\nlet s = warp_sum(y[0]);").has(diag::Code::divergent_warp_operation));
  CHECK(body("let v = shfl_xor(y[0], 1); if (v > 0.0) { let s = any(true); }").has(diag::Code::divergent_warp_operation));
  CHECK(body("var k: u32 = 0; while (k < u[lane_id]) { let s = warp_sum(1.0); k = k + 1; }")
            .has(diag::Code::divergent_warp_operation));
  auto r = body("if (thread_id.x < 16) { let s = warp_sum(1.0); }");
  REQUIRE(r.count(diag::Code::divergent_warp_operation) == 1);
  CHECK(r.diags.items()[0].location.line == 3);
  // Warp-uniform control is fine: warp_id, block_id, parameters, votes and reductions.
  CHECK(body("if (warp_id == 0) { let s = warp_sum(y[lane_id]); }").diags.empty());
  CHECK(body("if (block_id.x == 0) { let s = warp_sum(1.0); }").diags.empty());
  CHECK(body("if (n > 4) { let s = ballot(flag); }").diags.empty());
  CHECK(body("if (any(y[global_id.x] > 0.0)) { let s = warp_sum(y[0]); }").diags.empty());
  CHECK(body("for i in 0..n { let s = shfl_down(y[i], 1); }").diags.empty());
  // A warp-uniform condition still diverges the block: barrier() stays PG1305 there.
  CHECK(body("if (warp_id == 0) { barrier(); }").has(diag::Code::divergent_barrier));
  CHECK(body("if (ballot(flag) != 0) { barrier(); }").has(diag::Code::divergent_barrier));
}

TEST_CASE("warp: a @workgroup that is not whole warps is PG1320") {
  CHECK(body("let s = warp_sum(1.0);", "@workgroup(48)").has(diag::Code::partial_warp_block));
  CHECK(body("let s = warp_sum(1.0);", "@workgroup(8, 3)").has(diag::Code::partial_warp_block));
  CHECK(body("let s = warp_sum(1.0);", "@workgroup(16, 2)").diags.empty());
  CHECK(body("let s = warp_sum(1.0);", "").diags.empty());                 // checked at launch
  CHECK(body("y[0] = 1.0;", "@workgroup(48)").diags.empty());               // no warp operations
  auto meta = codegen::describe(body("let s = warp_sum(1.0);").module);
  REQUIRE(meta.size() == 1);
  CHECK(meta[0].block_granule == 32);
  auto json = contract::to_json(meta[0]);
  CHECK(json.at("block_granule") == 32);
  auto back = contract::kernel_info_from_json(json);
  REQUIRE(back.has_value());
  CHECK(back->block_granule == 32);
  // Metadata from before the granule was recorded says whether warp operations are used.
  json.erase("block_granule");
  json["uses_warp_operations"] = true;
  auto old = contract::kernel_info_from_json(json);
  REQUIRE(old.has_value());
  CHECK(old->block_granule == 32);
  json.erase("uses_warp_operations");  // metadata from before warp operations
  auto older = contract::kernel_info_from_json(json);
  REQUIRE(older.has_value());
  CHECK(older->block_granule == 1);
  json["block_granule"] = 64;
  CHECK_FALSE(contract::kernel_info_from_json(json).has_value());
  // The granule is also recorded without @workgroup (the launch holds the block to it).
  CHECK(codegen::describe(body("y[0] = 1.0;").module)[0].block_granule == 1);
}

TEST_CASE("warp: printing round-trips and the builder builds the same") {
  const std::string text =
      "@workgroup(64)\nkernel k(inout y: f32[]) {\n  let s = warp_sum(y[lane_id]);\n"
      "  let t = shfl_xor(s, 1) + f32(warp_id);\n  if (warp_id == 0) {\n    y[0] = s + t;\n  }\n}\n";
  diag::SourceFile file("w.pg", text);
  auto parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  CHECK(ir::print(parsed.module) == text);

  ir::ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.workgroup(64).buffer("y", ir::Access::inout, ir::Type::f32);
  ir::Ex s = k.let_("s", k.warp(ir::Intrinsic::warp_sum, {k.index("y", k.lane_id())}));
  ir::Ex t = k.let_("t", k.warp(ir::Intrinsic::shfl_xor, {s, 1}) + k.cast(ir::Type::f32, k.warp_id()));
  k.if_(k.warp_id() == 0, [&](ir::BlockBuilder& b) { b.assign(b.index("y", 0), s + t); });
  ir::Module m = mb.take();
  auto d = ir::verify(m, nullptr);
  INFO(diag::render_text(d));
  CHECK(d.empty());
  CHECK(ir::print(m) == text);
}

TEST_CASE("warp: PTX uses shfl.sync, vote.sync and the lane id") {
  std::string ptx = ptx_of(R"(
@workgroup(128)
kernel k(inout y: f32[], inout u: u32[], inout d: f64[]) {
  let s = warp_sum(y[global_id.x]);
  let b = ballot(s > 0.0);
  let a = all(s > 0.0);
  let dd = shfl_down(d[global_id.x], 3);
  u[global_id.x] = b + u32(a) + lane_id + warp_id + shfl_idx(u[0], 5);
  y[global_id.x] = s;
  d[global_id.x] = dd;
}
)");
  CHECK(occurrences(ptx, "shfl.sync.bfly.b32") == 5);  // the f32 butterfly
  CHECK(occurrences(ptx, "shfl.sync.down.b32") == 2);  // one f64 as two halves
  CHECK(occurrences(ptx, "shfl.sync.idx.b32") == 1);
  CHECK(ptx.find("vote.sync.ballot.b32") != std::string::npos);
  CHECK(ptx.find("vote.sync.all.pred") != std::string::npos);
  CHECK(ptx.find("%laneid") != std::string::npos);
  CHECK(ptx.find("%warpid") == std::string::npos);  // warp_id is computed from tid, not the hardware slot
  CHECK(ptx.find("-1;") != std::string::npos);      // the full-warp member mask 0xffffffff
}
