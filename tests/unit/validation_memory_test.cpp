// Memory safety of launches: the access analysis and its evaluation for concrete launches.
#include <doctest/doctest.h>

#include <string>

#include "ir_check_support.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/validation/memory_safety.hpp"

using namespace ptxgate;

namespace {

/// A launch of kernel `name` in `text`: buffers by parameter name in bytes, scalars as bits.
struct Case {
  std::string text;
  std::string kernel;
  std::array<uint64_t, 3> grid{1, 1, 1}, block{256, 1, 1};
  uint64_t dynamic_shared = 0;
  std::vector<std::pair<std::string, uint64_t>> buffers;  ///< name, bytes
  std::vector<std::pair<std::string, uint64_t>> scalars;  ///< name, bits
};

struct Outcome {
  /// The checked module: the launch's parameter names are views of its kernel's.
  std::shared_ptr<testing::Checked> checked;
  validation::MemoryVerdict verdict;
  std::shared_ptr<const ir::AccessFacts> facts;
  validation::MemoryLaunch launch;
  diag::Diagnostics report(bool require_proof = false) const {
    diag::Diagnostics d;
    validation::report_memory_safety(d, *facts, verdict, launch, "k", "k.pg", {require_proof, true});
    return d;
  }
};

Outcome evaluate(const Case& c) {
  Outcome o;
  o.checked = std::make_shared<testing::Checked>(testing::check_module("k.pg", c.text));
  const testing::Checked& checked = *o.checked;
  REQUIRE_MESSAGE(!checked.diags.has_errors(), diag::render_text(checked.diags));
  const ir::Kernel* kernel = checked.module.find_kernel(c.kernel);
  REQUIRE(kernel);
  REQUIRE(kernel->access_facts);
  o.facts = kernel->access_facts;
  o.launch.grid = c.grid;
  o.launch.block = c.block;
  o.launch.dynamic_shared_bytes = c.dynamic_shared;
  const size_t n = kernel->params.size();
  o.launch.scalar_bits.resize(n);
  o.launch.buffer_bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Param& p = kernel->params[i];
    o.launch.names.push_back(p.name);
    for (const auto& [name, bytes] : c.buffers)
      if (name == p.name) o.launch.buffer_bytes[i] = bytes;
    for (const auto& [name, bits] : c.scalars)
      if (name == p.name) o.launch.scalar_bits[i] = bits;
  }
  o.verdict = validation::evaluate_accesses(*o.facts, o.launch);
  return o;
}

const char* kScale = R"(
kernel scale(out y: f32[], in x: f32[], n: u32) {
  let i = global_id.x;
  y[i] = x[i] * 2.0;
}
)";

const char* kSaxpy = R"(
@workgroup(256)
kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
)";

}  // namespace

TEST_CASE("memory safety: a missing guard is proven out of bounds with a real thread") {
  Outcome o = evaluate({kScale, "scale", {100, 1, 1}, {256, 1, 1}, 0, {{"y", 4000}, {"x", 4000}}, {{"n", 1000}}});
  CHECK(o.verdict.sites == 2);
  CHECK(o.verdict.out_of_bounds == 2);
  REQUIRE(!o.verdict.findings.empty());
  const auto& w = o.verdict.findings[0].witness;
  // The witness's own index: block * 256 + thread, at or past 1000.
  CHECK(static_cast<uint64_t>(w.index) == w.block[0] * 256 + w.thread[0]);
  CHECK(w.index >= 1000);
  diag::Diagnostics d = o.report();
  REQUIRE(d.has_errors());
  CHECK(d.items()[0].code == diag::Code::access_out_of_bounds);
  CHECK(d.items()[0].location.line == 4);
  CHECK(d.items()[0].message.find("holds 4000 bytes") != std::string::npos);
}

TEST_CASE("memory safety: the same kernel launched within its buffers is proven") {
  Outcome o = evaluate({kScale, "scale", {4, 1, 1}, {250, 1, 1}, 0, {{"y", 4000}, {"x", 4000}}, {{"n", 1000}}});
  CHECK(o.verdict.proven == 2);
  CHECK(o.verdict.findings.empty());
}

TEST_CASE("memory safety: a guard on the parameter proves every access, one past it does not") {
  Outcome ok = evaluate({kSaxpy, "saxpy", {100, 1, 1}, {256, 1, 1}, 0, {{"y", 4000}, {"x", 4000}}, {{"n", 1000}}});
  CHECK(ok.verdict.proven == 3);
  CHECK(ok.verdict.coverage_percent() == doctest::Approx(100.0));
  Outcome short_x = evaluate({kSaxpy, "saxpy", {100, 1, 1}, {256, 1, 1}, 0, {{"y", 4000}, {"x", 3996}}, {{"n", 1000}}});
  CHECK(short_x.verdict.out_of_bounds == 1);
  REQUIRE(short_x.verdict.findings.size() == 1);
  CHECK(short_x.verdict.findings[0].witness.index == 999);
}

TEST_CASE("memory safety: an off-by-one guard has the witness at exactly n") {
  Outcome o = evaluate({R"(
kernel k(out y: f32[], n: u32) {
  let i = global_id.x;
  if (i <= n) { y[i] = 1.0; }
}
)", "k", {100, 1, 1}, {256, 1, 1}, 0, {{"y", 4000}}, {{"n", 1000}}});
  REQUIRE(o.verdict.out_of_bounds == 1);
  CHECK(o.verdict.findings[0].witness.index == 1000);
  CHECK(o.verdict.findings[0].witness.block[0] == 3);
  CHECK(o.verdict.findings[0].witness.thread[0] == 232);
}

TEST_CASE("memory safety: two-dimensional guards and an early return are proven") {
  Outcome o = evaluate({R"(
kernel k(inout a: f32[], rows: u32, cols: u32) {
  let r = global_id.y;
  let c = global_id.x;
  if (r >= rows) { return; }
  if (c < cols) { a[r * cols + c] = a[r * cols + c] + 1.0; }
}
)", "k", {8, 8, 1}, {16, 16, 1}, 0, {{"a", 100 * 120 * 4}}, {{"rows", 100}, {"cols", 120}}});
  CHECK(o.verdict.proven == 2);
  CHECK(o.verdict.findings.empty());
}

TEST_CASE("memory safety: a wrong 2-D stride is caught") {
  Outcome o = evaluate({R"(
kernel k(inout a: f32[], rows: u32, cols: u32) {
  let r = global_id.y;
  let c = global_id.x;
  if (r < rows && c < cols) { a[r * rows + c] = 1.0; }
}
)", "k", {8, 8, 1}, {16, 16, 1}, 0, {{"a", 50 * 120 * 4}}, {{"rows", 50}, {"cols", 120}}});
  // r * rows + c reaches 49 * 50 + 119 = 2569 < 6000: in bounds though wrong; with rows > cols it is not.
  CHECK(o.verdict.proven == 1);
  Outcome bad = evaluate({R"(
kernel k(inout a: f32[], rows: u32, cols: u32) {
  let r = global_id.y;
  let c = global_id.x;
  if (r < rows && c < cols) { a[r * rows + c] = 1.0; }
}
)", "k", {8, 8, 1}, {16, 16, 1}, 0, {{"a", 120 * 50 * 4}}, {{"rows", 120}, {"cols", 50}}});
  CHECK(bad.verdict.out_of_bounds == 1);
}

TEST_CASE("memory safety: grid-stride loops and loop bounds one too far") {
  const char* grid_stride = R"(
kernel k(inout y: f32[], n: u32) {
  for i in global_id.x..n step grid_dim.x * block_dim.x { y[i] = 0.0; }
}
)";
  CHECK(evaluate({grid_stride, "k", {132, 1, 1}, {256, 1, 1}, 0, {{"y", 4 * 100000}}, {{"n", 100000}}}).verdict.proven == 1);
  Outcome far = evaluate({R"(
kernel k(inout y: f32[], n: u32) {
  if (global_id.x == 0) { for j in 0..n + 1 { y[j] = 0.0; } }
}
)", "k", {1, 1, 1}, {32, 1, 1}, 0, {{"y", 4 * 64}}, {{"n", 64}}});
  REQUIRE(far.verdict.out_of_bounds == 1);
  CHECK(far.verdict.findings[0].witness.index == 64);
  REQUIRE(far.verdict.findings[0].witness.loops.size() == 1);
}

TEST_CASE("memory safety: shared tiles smaller than the block and dynamic shared arrays") {
  Outcome tile = evaluate({R"(
@workgroup(256)
kernel k(inout y: f32[]) {
  shared t: f32[128];
  t[thread_id.x] = y[global_id.x];
  barrier();
  y[global_id.x] = t[255 - thread_id.x];
}
)", "k", {4, 1, 1}, {256, 1, 1}, 0, {{"y", 4 * 1024}}, {}});
  CHECK(tile.verdict.out_of_bounds == 2);
  CHECK(tile.verdict.proven == 2);
  const char* dynamic = R"(
kernel k(inout y: f32[]) {
  shared row: f32[];
  row[thread_id.x] = y[global_id.x];
}
)";
  CHECK(evaluate({dynamic, "k", {1, 1, 1}, {256, 1, 1}, 1024, {{"y", 1024}}, {}}).verdict.proven == 2);
  Outcome small = evaluate({dynamic, "k", {1, 1, 1}, {256, 1, 1}, 512, {{"y", 1024}}, {}});
  CHECK(small.verdict.out_of_bounds == 1);
  diag::Diagnostics d = small.report();
  CHECK(d.items()[0].fix.find("1024 bytes of dynamic shared memory") != std::string::npos);
}

TEST_CASE("memory safety: vector loads past the end and negative indices") {
  Outcome vec = evaluate({R"(
kernel k(out y: f32[], in x: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { store4(y, i, load4(x, i)); }
}
)", "k", {4, 1, 1}, {256, 1, 1}, 0, {{"y", 4096}, {"x", 4096}}, {{"n", 1024}}});
  CHECK(vec.verdict.out_of_bounds == 2);
  CHECK(vec.verdict.findings[0].witness.index >= 256);
  Outcome neg = evaluate({R"(
kernel k(inout y: f32[], n: u32) {
  let i = i32(global_id.x) - 1;
  if (i < i32(n)) { y[i] = 0.0; }
}
)", "k", {1, 1, 1}, {64, 1, 1}, 0, {{"y", 256}}, {{"n", 64}}});
  REQUIRE(neg.verdict.out_of_bounds == 1);
  CHECK(neg.verdict.findings[0].witness.index == -1);
  CHECK(neg.report().items()[0].fix.find("negative") != std::string::npos);
}

TEST_CASE("memory safety: data-dependent indices and unknown sizes are not provable, never errors") {
  Outcome gather = evaluate({R"(
kernel k(out y: f32[], in x: f32[], in idx: u32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = x[idx[i]]; }
}
)", "k", {4, 1, 1}, {256, 1, 1}, 0, {{"y", 4096}, {"x", 4096}, {"idx", 4096}}, {{"n", 1024}}});
  CHECK(gather.verdict.proven == 2);
  CHECK(gather.verdict.unproven == 1);
  CHECK(gather.verdict.out_of_bounds == 0);
  CHECK(gather.verdict.findings[0].reason.find("does not follow") != std::string::npos);
  CHECK(!gather.report(false).has_errors());
  CHECK(gather.report(true).has_errors());
  Outcome offline = evaluate({kSaxpy, "saxpy", {100, 1, 1}, {256, 1, 1}, 0, {}, {{"n", 1000}}});
  CHECK(offline.verdict.unproven == 3);
  CHECK(offline.verdict.findings[0].reason.find("size of") != std::string::npos);
}

TEST_CASE("memory safety: device functions are followed with the caller's guard") {
  Outcome o = evaluate({R"(
fn put(out y: f32[], i: u32, v: f32) { y[i] = v; }
kernel k(out y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { put(y, i, 1.0); }
  put(y, i + n, 2.0);
}
)", "k", {2, 1, 1}, {256, 1, 1}, 0, {{"y", 4 * 1000}}, {{"n", 512}}});
  CHECK(o.verdict.sites == 2);
  CHECK(o.verdict.proven == 1);
  CHECK(o.verdict.out_of_bounds == 1);
}

TEST_CASE("memory safety: a while loop with an induction variable is bounded by its condition") {
  Outcome o = evaluate({R"(
@workgroup(256)
kernel k(out y: f32[], in x: f32[], cols: u32) {
  let vectors = cols / 4;
  let base = u64(block_id.x) * u64(vectors);
  var j = thread_id.x;
  while (j + 768 < vectors) {
    store4(y, base + u64(j + 768), load4(x, base + u64(j)));
    j = j + 1024;
  }
  while (j < vectors) {
    store4(y, base + u64(j), load4(x, base + u64(j)));
    j = j + 256;
  }
}
)", "k", {64, 1, 1}, {256, 1, 1}, 0, {{"y", 64 * 4096 * 4}, {"x", 64 * 4096 * 4}}, {{"cols", 4096}}});
  CHECK(o.verdict.sites == 4);
  CHECK(o.verdict.proven == 4);
}

TEST_CASE("memory safety: access facts survive JSON and refuse forged input") {
  testing::Checked checked = testing::check_module("k.pg", kSaxpy);
  const auto& facts = *checked.module.kernels[0].access_facts;
  auto back = ir::access_facts_from_json(ir::to_json(facts));
  REQUIRE(back.has_value());
  CHECK(back->nodes == facts.nodes);
  CHECK(back->sites.size() == facts.sites.size());
  nlohmann::json forged = ir::to_json(facts);
  forged["nodes"][0] = {"add", "u32", 5, 0, 0, 0};
  CHECK(!ir::access_facts_from_json(forged).has_value());
  forged = ir::to_json(facts);
  forged["sites"][0]["index"] = 100000;
  CHECK(!ir::access_facts_from_json(forged).has_value());
}

TEST_CASE("memory safety: shared-memory races between barriers are found with two real threads") {
  Outcome waw = evaluate({R"(
@workgroup(64)
kernel k(out y: u32[]) {
  shared t: u32[32];
  t[thread_id.x % 32] = thread_id.x;
  barrier();
  y[thread_id.x] = t[thread_id.x % 32];
}
)", "k", {1, 1, 1}, {64, 1, 1}, 0, {{"y", 256}}, {}});
  REQUIRE(waw.verdict.races.size() == 1);
  const auto& r = waw.verdict.races[0];
  CHECK(r.first_thread[0] % 32 == r.second_thread[0] % 32);
  CHECK(r.first_thread[0] != r.second_thread[0]);
  diag::Diagnostics d = waw.report();
  REQUIRE(d.has_errors());
  CHECK(d.items()[0].code == diag::Code::shared_memory_race);
  // The same value from every thread is no race.
  CHECK(evaluate({R"(
@workgroup(64)
kernel k(out y: u32[]) {
  shared t: u32[32];
  t[thread_id.x % 32] = 7;
  barrier();
  y[thread_id.x] = t[thread_id.x % 32];
}
)", "k", {1, 1, 1}, {64, 1, 1}, 0, {{"y", 256}}, {}}).verdict.races.empty());
  Outcome raw = evaluate({R"(
@workgroup(64)
kernel k(out y: f32[]) {
  shared t: f32[64];
  t[thread_id.x] = f32(thread_id.x);
  y[thread_id.x] = t[(thread_id.x + 1) % 64];
}
)", "k", {1, 1, 1}, {64, 1, 1}, 0, {{"y", 256}}, {}});
  REQUIRE(raw.verdict.races.size() == 1);
  Outcome fenced = evaluate({R"(
@workgroup(64)
kernel k(out y: f32[]) {
  shared t: f32[64];
  t[thread_id.x] = f32(thread_id.x);
  barrier();
  y[thread_id.x] = t[(thread_id.x + 1) % 64];
}
)", "k", {1, 1, 1}, {64, 1, 1}, 0, {{"y", 256}}, {}});
  CHECK(fenced.verdict.races.empty());
  // A tree reduction whose reads come from threads that do not write in that step: no race.
  Outcome tree = evaluate({R"(
@workgroup(256)
kernel k(inout y: f32[]) {
  shared p: f32[256];
  let t = thread_id.x;
  p[t] = y[global_id.x];
  barrier();
  for step in 0..8 {
    let s = u32(128) >> step;
    if (t < s) { p[t] = p[t] + p[t + s]; }
    barrier();
  }
  if (t == 0) { y[block_id.x] = p[0]; }
}
)", "k", {4, 1, 1}, {256, 1, 1}, 0, {{"y", 4096}}, {}});
  CHECK(tree.verdict.races.empty());
  CHECK(tree.verdict.out_of_bounds == 0);
  CHECK(tree.verdict.coverage_percent() == doctest::Approx(100.0));
}

namespace {

/// The race search on kernel `k` of `text` launched as one block of `block` threads, and what decided.
std::pair<std::vector<validation::SharedRace>, validation::SharedRaceSearch> races_of(const std::string& text,
                                                                                       std::array<uint64_t, 3> block) {
  Outcome o = evaluate({text, "k", {1, 1, 1}, block, 0, {{"y", 1 << 20}}, {}});
  validation::SharedRaceSearch search;
  auto races = validation::find_shared_races(*o.facts, o.launch, &search);
  // The verdict's own search agrees with the one here.
  CHECK(races.size() == o.verdict.races.size());
  return {races, search};
}

/// races_of for `text` with its placeholder `key` replaced by `value`.
std::pair<std::vector<validation::SharedRace>, validation::SharedRaceSearch> races_with(
    std::string text, const std::string& key, const std::string& value, std::array<uint64_t, 3> block) {
  text.replace(text.find(key), key.size(), value);
  return races_of(text, block);
}

}  // namespace

TEST_CASE("shared races: a block-stride loop over shared memory is proven race-free without enumerating threads") {
  const char* loop = R"(
@workgroup(128)
kernel k(out y: f32[]) {
  shared s: f32[1024];
  var j = thread_id.x;
  while (j < 1024) { s[j] = s[j] * 2.0; j = j + STEP; }
  barrier();
  y[thread_id.x] = s[thread_id.x];
}
)";
  auto with_step = [&](const char* step) { return races_with(loop, "STEP", step, {128, 1, 1}); };
  // Each thread's elements j = t + 128 m: two threads never meet (for any iterations).
  auto [none, proven] = with_step("128");
  CHECK(none.empty());
  CHECK(proven.proven == 2);  // first and last iterations
  CHECK(proven.enumerated == 0);
  // A step of 64 lets thread t + 64 reach what thread t touched: not provable, and the search
  // finds two real threads.
  auto [racy, searched] = with_step("64");
  REQUIRE(racy.size() == 1);
  CHECK(searched.enumerated > 0);
  CHECK(racy[0].first_thread[0] % 64 == racy[0].second_thread[0] % 64);
  CHECK(racy[0].first_thread[0] != racy[0].second_thread[0]);
}

TEST_CASE("shared races: writes and reads partitioned by an affine map of the thread are proven race-free") {
  // 2-D: element ty * 16 + tx is one thread's own in a 16 x 16 block; ty * 8 + tx is not.
  const char* grid = R"(
@workgroup(16, 16)
kernel k(out y: f32[]) {
  shared s: f32[512];
  let e = thread_id.y * ROW + thread_id.x;
  s[e] = s[e] + 1.0;
  barrier();
  y[thread_id.y * 16 + thread_id.x] = s[e];
}
)";
  auto with_row = [&](const char* row) { return races_with(grid, "ROW", row, {16, 16, 1}); };
  auto [none, proven] = with_row("16");
  CHECK(none.empty());
  CHECK(proven.proven == 1);
  CHECK(proven.enumerated == 0);
  auto [racy, searched] = with_row("8");
  REQUIRE(racy.size() == 1);
  CHECK(searched.enumerated == 1);
  // Two halves: threads write the lower half and read the upper one (race-free), or read their
  // neighbour's element (a race).
  const char* halves = R"(
@workgroup(128)
kernel k(out y: f32[]) {
  shared s: f32[256];
  s[thread_id.x] = 1.0;
  y[thread_id.x] = s[thread_id.x + OFFSET];
}
)";
  auto with_offset = [&](const char* offset) { return races_with(halves, "OFFSET", offset, {128, 1, 1}); };
  auto [apart, disjoint] = with_offset("128");
  CHECK(apart.empty());
  CHECK(disjoint.proven == 1);
  CHECK(disjoint.enumerated == 0);
  auto [neighbour, overlapping] = with_offset("1");
  REQUIRE(neighbour.size() == 1);
  CHECK(overlapping.enumerated == 1);
}

TEST_CASE("shared races: a loop's last pass is proven with its own values, not the first pass's") {
  // The stride 3 - it is the same for every thread but not for every pass: at the first pass
  // (it = 0) each thread writes its own element, at the last (it = 3) every thread writes s[0]. A
  // value computed at the first pass and kept for the last would prove the last pass race-free.
  auto [racy, searched] = races_of(R"(
@workgroup(64)
kernel k(out y: u32[]) {
  shared s: u32[256];
  for it in 0..4 {
    s[thread_id.x * (3 - it)] = thread_id.x;
    barrier();
  }
}
)",
                                   {64, 1, 1});
  CHECK(searched.proven == 1);
  CHECK(searched.enumerated == 1);
  REQUIRE(racy.size() == 1);
  CHECK(racy[0].byte == 0);
  REQUIRE(racy[0].loops.size() == 1);
  CHECK(racy[0].loops[0].second == 3);
}

TEST_CASE("shared races: an index that wraps is not taken as affine") {
  // (t << 31) as u32 is 0 for every even thread: as a mathematical t * 2^31 it would look
  // injective; the symbolic step must decline and the search finds threads 0 and 2.
  auto [racy, searched] = races_of(R"(
@workgroup(64)
kernel k(out y: u32[]) {
  shared s: u32[4];
  s[thread_id.x << 31] = thread_id.x;
}
)", {64, 1, 1});
  CHECK(searched.proven == 0);
  CHECK(searched.enumerated == 1);
  REQUIRE(racy.size() == 1);
  CHECK(racy[0].byte == 0);
  CHECK(racy[0].first_thread[0] % 2 == 0);
  CHECK(racy[0].second_thread[0] % 2 == 0);
  // Only float writes, no read: no pair could count, nothing is searched.
  auto [none, skipped] = races_of(R"(
@workgroup(64)
kernel k(out y: f32[]) {
  shared s: f32[4];
  s[thread_id.x % 4] = 1.0;
}
)", {64, 1, 1});
  CHECK(none.empty());
  CHECK(skipped.no_conflict == 1);
  CHECK(skipped.enumerated == 0);
}
