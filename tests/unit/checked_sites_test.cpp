// Checked mode below the runtime: access sites and which need guards, the guarded PTX and its hidden
// parameters, KernelInfo's site table, the violation record's bytes and the PG3804 report.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ir_check_support.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/contract/checked.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/access_sites.hpp"
#include "ptxgate/validation/checked_report.hpp"

using namespace ptxgate;

namespace {

std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

testing::Checked verified(const std::string& text) {
  testing::Checked c = testing::check_module("k.pg", text);
  REQUIRE_MESSAGE(!c.diags.has_errors(), diag::render_text(c.diags));
  REQUIRE(c.module.access_sites);
  return c;
}

/// The site whose operation is `operation`, by number.
uint32_t site_named(const ir::Module& m, const std::string& operation, ir::SiteCheck check = ir::SiteCheck::bounds) {
  const auto& sites = m.access_sites->sites;
  for (uint32_t i = 0; i < sites.size(); ++i)
    if (sites[i].operation == operation && sites[i].check == check) return i;
  FAIL("no site " << operation);
  return 0;
}

codegen::CodegenOptions options(bool checked) {
  codegen::CodegenOptions o;
  o.checked = checked;
  return o;
}

/// The PTX entry's parameter lines.
size_t entry_parameters(const std::string& ptx, const std::string& kernel) {
  const size_t entry = ptx.find(".entry " + kernel + "(");
  REQUIRE(entry != std::string::npos);
  const size_t end = ptx.find(')', entry);
  size_t n = 0;
  for (size_t at = ptx.find(".param", entry); at != std::string::npos && at < end; at = ptx.find(".param", at + 1)) ++n;
  return n;
}

const char* kMixed = R"(@workgroup(256)
kernel mixed(out y: f32[], in idx: u32[], n: u32) {
  shared tile: f32[256];
  var local: f32[4];
  let t = thread_id.x;
  tile[t] = 1.0;
  local[t % 4] = 2.0;
  barrier();
  let i = global_id.x;
  if (i < n) {
    y[i] = tile[idx[i]] + local[3];
  }
}
)";

}  // namespace

TEST_CASE("checked sites: every access as written is numbered once, with its array, kind and position") {
  auto c = verified(kMixed);
  const auto& sites = c.module.access_sites->sites;
  // tile[t], local[t % 4], y[i], tile[idx[i]], idx[i], local[3]
  REQUIRE(sites.size() == 6);
  const ir::SourceAccess& write = sites[site_named(c.module, "tile[t]")];
  CHECK(write.kind == ir::AccessKind::write);
  CHECK(write.space == ir::Space::shared);
  CHECK(write.array == "tile");
  CHECK(write.line == 6);
  CHECK(write.column == 3);
  CHECK(write.routine == "mixed");
  const ir::SourceAccess& gather = sites[site_named(c.module, "tile[idx[i]]")];
  CHECK(gather.kind == ir::AccessKind::read);
  CHECK(gather.index_text == "idx[i]");
  CHECK(gather.index_type == ir::Type::u32);
  // Each fact names the site it comes from.
  for (const ir::AccessSite& s : c.module.kernels[0].access_facts->sites) {
    REQUIRE(s.source < sites.size());
    CHECK(sites[s.source].operation == s.operation);
  }
}

TEST_CASE("checked sites: shared and local accesses in bounds for every launch need no guard; the rest do") {
  auto c = verified(kMixed);
  const std::vector<bool> guards = ir::sites_needing_guards(c.module);
  CHECK_FALSE(guards[site_named(c.module, "tile[t]")]);      // t < 256 = @workgroup
  CHECK_FALSE(guards[site_named(c.module, "local[t % 4]")]);
  CHECK_FALSE(guards[site_named(c.module, "local[3]")]);
  CHECK(guards[site_named(c.module, "tile[idx[i]]")]);       // a loaded index
  CHECK(guards[site_named(c.module, "y[i]")]);               // global: the buffer's length is the launch's
  CHECK(guards[site_named(c.module, "idx[i]")]);
  // Without @workgroup a block of 1024 threads is allowed: tile[t] needs its guard.
  std::string any_block = kMixed;
  any_block.erase(0, any_block.find('\n') + 1);
  auto d = verified(any_block);
  CHECK(ir::sites_needing_guards(d.module)[site_named(d.module, "tile[t]")]);
}

TEST_CASE("checked sites: a device function's access is one site for every call, guarded unless every call is in bounds") {
  auto c = verified(R"(fn put(out s: f32[], at: u32) {
  s[at] = 1.0;
}
@workgroup(64)
kernel k(out y: f32[]) {
  shared a: f32[64];
  var l: f32[64];
  put(y, thread_id.x);
  l[thread_id.x] = 0.0;
  y[0] = l[1];
}
)");
  const uint32_t in_function = site_named(c.module, "s[at]");
  size_t facts_of_it = 0;
  for (const ir::AccessSite& s : c.module.kernels[0].access_facts->sites) facts_of_it += s.source == in_function;
  CHECK(facts_of_it == 1);
  CHECK(c.module.access_sites->sites[in_function].routine == "put");
  CHECK(ir::sites_needing_guards(c.module)[in_function]);  // s is a buffer there
  const std::vector<uint32_t> reach = ir::sites_of_kernel(c.module, 0);
  CHECK(std::find(reach.begin(), reach.end(), in_function) != reach.end());
}

TEST_CASE("checked sites: cp_async and TMA operations take several sites, the tile coordinate its own check") {
  auto c = verified(R"(@workgroup(128)
kernel k(out y: f32[], in x: f32[], m: tensor_map, x0: i32) {
  shared bars: u64[1];
  shared tile: f32[1024];
  cp_async16(tile, thread_id.x, x, thread_id.x);
  tma_load(tile, 0, m, bars, 0, x0, 0);
  y[thread_id.x] = tile[thread_id.x];
}
)");
  const auto& sites = c.module.access_sites->sites;
  const uint32_t dst = site_named(c.module, "cp_async16(tile, thread_id.x, x, thread_id.x)");
  CHECK(sites[dst].space == ir::Space::shared);
  CHECK(sites[dst + 1].space == ir::Space::global);
  CHECK(sites[dst + 1].array == "x");
  const uint32_t tma = site_named(c.module, "tma_load(tile, 0, m, bars, 0, x0, 0)", ir::SiteCheck::tma_shared);
  CHECK(sites[tma + 1].array == "bars");
  CHECK(sites[tma + 2].check == ir::SiteCheck::tma_tile);
  CHECK(sites[tma + 2].index_text == "x0");
  CHECK(sites[tma + 2].index_type == ir::Type::i32);
  const std::vector<bool> guards = ir::sites_needing_guards(c.module);
  CHECK_FALSE(guards[dst]);      // 16-byte chunk t < 128 of 4096 bytes
  CHECK(guards[tma + 2]);        // a TMA tile is always checked
  CHECK_FALSE(guards[tma + 1]);  // bars[0]
}

TEST_CASE("checked codegen: hidden lengths and the record follow the parameters; unchecked code is unchanged") {
  auto c = verified(kMixed);
  auto plain = codegen::compile(c.module, options(false));
  auto checked = codegen::compile(c.module, options(true));
  REQUIRE(plain);
  REQUIRE(checked);
  CHECK(entry_parameters(plain->ptx, "mixed") == 3);
  CHECK(entry_parameters(checked->ptx, "mixed") == 3 + 2 + 1);  // y's and idx's lengths, the record
  // The exit counts a thread that holds a violation in the record; the unchecked code has no atomics.
  CHECK(plain->ptx.find("atom.global.add.u64") == std::string::npos);
  CHECK(checked->ptx.find("atom.global.add.u64") != std::string::npos);
  CHECK_FALSE(plain->kernels[0].checked);
  REQUIRE(checked->kernels[0].checked);
  const contract::CheckedInfo& info = *checked->kernels[0].checked;
  CHECK(info.sites.size() == 6);
  CHECK(info.guarded() == 3);
  const contract::CheckedSite* y = info.find(site_named(c.module, "y[i]"));
  REQUIRE(y);
  CHECK(y->guarded);
  CHECK(y->access.line == 11);
  // The metadata round-trips through the module cache's JSON.
  auto back = contract::kernel_info_from_json(contract::to_json(checked->kernels[0]));
  REQUIRE(back);
  REQUIRE(back->checked);
  CHECK(back->checked->sites.size() == info.sites.size());
  CHECK(back->checked->find(y->id)->access == y->access);
}

TEST_CASE("checked codegen: every return of a kernel goes through one exit that knows every latched site's length") {
  // The return is lowered before the access it follows at run time (the loop's next iteration).
  auto c = verified(R"(kernel early(out y: f32[], in idx: u32[], n: u32) {
  let i = global_id.x;
  for j in 0..4 {
    if (j == 2 || i >= n) {
      return;
    }
    y[idx[i * 2 + j]] = f32(j);
  }
}
)");
  codegen::CodegenOptions o = options(true);
  o.opt_level = 0;
  auto ir = codegen::emit_llvm_ir(c.module, o);
  REQUIRE(ir);
  size_t returns = 0;
  for (size_t at = ir->find("ret void"); at != std::string::npos; at = ir->find("ret void", at + 1)) ++returns;
  CHECK(returns == 1);
  // The exit picks y's length (the hidden parameter) for a violation latched at y's site.
  const size_t exit = ir->find("checked.return:");
  REQUIRE(exit != std::string::npos);
  CHECK(ir->find("%y.bytes", exit) != std::string::npos);
  auto plain = codegen::emit_llvm_ir(c.module, [] {
    codegen::CodegenOptions p = options(false);
    p.opt_level = 0;
    return p;
  }());
  REQUIRE(plain);
  CHECK(plain->find("checked.return") == std::string::npos);
}

TEST_CASE("checked codegen: the dynamic shared array's length is the launch's %dynamic_smem_size") {
  auto c = verified(R"(kernel k(out y: f32[], in at: u32[]) {
  shared s: f32[];
  s[at[thread_id.x]] = 1.0;
  barrier();
  y[thread_id.x] = s[thread_id.x];
}
)");
  auto checked = codegen::compile(c.module, options(true));
  REQUIRE(checked);
  CHECK(checked->ptx.find("%dynamic_smem_size") != std::string::npos);
  CHECK(ir::sites_needing_guards(c.module)[site_named(c.module, "s[thread_id.x]")]);
}

TEST_CASE("checked codegen: SGEMM's shared tiles are proven for every launch; only its global accesses are guarded") {
  auto c = verified(source_file("bench/kernels/sgemm.pg"));
  auto checked = codegen::compile(c.module, options(true));
  REQUIRE(checked);
  const contract::CheckedInfo& info = *checked->kernels[0].checked;
  for (const contract::CheckedSite& s : info.sites) {
    INFO(s.access.operation);
    CHECK(s.guarded == (s.access.space == ir::Space::global));
  }
}

TEST_CASE("checked record: the bytes the code writes decode to the fields; a JSON site table is checked") {
  contract::CheckedRecord r;
  r.count = 3;
  r.site = 7;
  r.reason = static_cast<uint32_t>(contract::Violation::out_of_bounds);
  r.thread = {5, 1, 0};
  r.block = {9, 0, 2};
  r.value = static_cast<uint64_t>(-4);
  r.limit = 4096;
  const auto bytes = r.encode();
  CHECK(bytes[contract::CheckedRecord::kSite] == std::byte{7});
  const contract::CheckedRecord back = contract::CheckedRecord::decode(bytes);
  CHECK(back.count == 3);
  CHECK(back.thread == r.thread);
  CHECK(back.block == r.block);
  CHECK(back.value == r.value);
  CHECK(back.limit == 4096);
  auto unordered = contract::checked_info_from_json(nlohmann::json::parse(
      R"({"sites": [{"id": 2, "guarded": true, "kind": "read", "space": "global", "check": "bounds", "routine": "k",
      "array": "x", "element_bytes": 4, "stride": 4, "width": 4, "operation": "x[i]", "index_text": "i",
      "index_type": "u32", "line": 1, "column": 1, "length": 4, "source_line": "x[i]"},
      {"id": 1, "guarded": true, "kind": "read", "space": "global", "check": "bounds", "routine": "k",
      "array": "x", "element_bytes": 4, "stride": 4, "width": 4, "operation": "x[i]", "index_text": "i",
      "index_type": "u32", "line": 1, "column": 1, "length": 4, "source_line": "x[i]"}]})"));
  REQUIRE_FALSE(unordered);
  CHECK(unordered.error().find("increasing id") != std::string::npos);
  auto bad_type = contract::checked_info_from_json(nlohmann::json::parse(
      R"({"sites": [{"id": 2, "guarded": true, "kind": "read", "space": "global", "check": "bounds", "routine": "k",
      "array": "x", "element_bytes": 0, "stride": 4, "width": 4, "operation": "x[i]", "index_text": "i",
      "index_type": "f32", "line": 1, "column": 1, "length": 4, "source_line": "x[i]"}]})"));
  CHECK_FALSE(bad_type);
}

TEST_CASE("checked report: PG3804 names the launch, the site with its source line, the thread, the index and the length") {
  auto c = verified(kMixed);
  auto checked = codegen::compile(c.module, options(true));
  REQUIRE(checked);
  const contract::CheckedInfo& info = *checked->kernels[0].checked;
  contract::CheckedRecord r;
  r.count = 1;
  r.site = site_named(c.module, "tile[idx[i]]");
  r.reason = static_cast<uint32_t>(contract::Violation::out_of_bounds);
  r.thread = {17, 0, 0};
  r.block = {2, 0, 0};
  r.value = 300;
  r.limit = 1024;
  diag::Diagnostics d;
  CHECK(validation::report_checked_violation(d, info, r, "mixed", "launch #4 of kernel 'mixed'", "k.pg"));
  REQUIRE(d.size() == 1);
  const diag::Diagnostic& v = d.items()[0];
  CHECK(v.code == diag::Code::checked_violation);
  CHECK(v.severity == diag::Severity::error);
  CHECK(v.location.file == "k.pg");
  CHECK(v.location.line == 11);
  CHECK(v.location.source_line == "    y[i] = tile[idx[i]] + local[3];");
  CHECK(v.message ==
        "launch #4 of kernel 'mixed' (checked): tile[idx[i]] would read shared array 'tile' out of bounds: thread "
        "(17, 0, 0) of block (2, 0, 0) computed idx[i] = 300, but 'tile' holds 1024 bytes (256 elements); the read "
        "gave 0 and the kernel went on");
  // More than one: counted; none: nothing reported; a site the kernel does not have: still reported.
  r.count = 12;
  diag::Diagnostics more;
  validation::report_checked_violation(more, info, r, "mixed", "launch #4 of kernel 'mixed'", "k.pg");
  CHECK(more.items()[0].message.find("12 threads of this launch had accesses stopped") != std::string::npos);
  r.count = 0;
  diag::Diagnostics none;
  CHECK_FALSE(validation::report_checked_violation(none, info, r, "mixed", "launch", "k.pg"));
  CHECK(none.empty());
  r.count = 1;
  r.site = 999;
  diag::Diagnostics forged;
  CHECK(validation::report_checked_violation(forged, info, r, "mixed", "launch", "k.pg"));
  CHECK(forged.items()[0].location.line == 0);
  // A TMA tile's coordinate.
  auto t = verified(R"(@workgroup(128)
kernel k(out y: f32[], m: tensor_map, x0: i32) {
  shared bars: u64[1];
  shared tile: f32[1024];
  tma_load(tile, 0, m, bars, 0, x0, 0);
  y[thread_id.x] = tile[thread_id.x];
}
)");
  auto tc = codegen::compile(t.module, [] {
    auto o = options(true);
    o.target = "sm_90a";
    return o;
  }());
  REQUIRE(tc);
  contract::CheckedRecord tile;
  tile.count = 1;
  tile.site = site_named(t.module, "tma_load(tile, 0, m, bars, 0, x0, 0)", ir::SiteCheck::tma_tile);
  tile.reason = static_cast<uint32_t>(contract::Violation::tile_coordinate);
  tile.value = 38;
  tile.limit = 4;
  diag::Diagnostics td;
  validation::report_checked_violation(td, *tc->kernels[0].checked, tile, "k", "launch #1 of kernel 'k'", "k.pg");
  CHECK(td.items()[0].message.find("innermost coordinate x0 = 38, 152 bytes into the row") != std::string::npos);
  CHECK(td.items()[0].fix == "start tiles at coordinates that are multiples of 4 elements (4-byte elements)");
}
