// A shipped kernel (bench/shipped_launches.hpp) checked from the source tree, its documented launch as
// the memory verdict's input and launches varied from it, and the comparison of the remembered
// verdict with a fresh one, shared by the memory-safety unit tests.
#pragma once

#include <algorithm>
#include <fstream>
#include <memory>
#include <random>
#include <optional>
#include <sstream>
#include <string>

#include "ptxgate/ir/ast.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/validation/memory_safety.hpp"
#include "ir_check_support.hpp"
#include "shipped_launches.hpp"

namespace ptxgate::testing {

/// The text of a file of the source tree (PTXGATE_SOURCE_DIR), by its relative path.
inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Kernel `name` of `text` (the file `file`), its module checked into `checked` (which owns it)
/// without errors, with access facts.
inline const ir::Kernel& checked_kernel(Checked& checked, const std::string& file, const std::string& text,
                                        const std::string& name) {
  checked = check_module(file, text);
  REQUIRE_MESSAGE(!checked.diags.has_errors(), file, ": ", diag::render_text(checked.diags));
  const ir::Kernel* k = checked.module.find_kernel(name);
  REQUIRE_MESSAGE(k, name);
  REQUIRE(k->access_facts);
  return *k;
}

/// `l`'s kernel, its module checked into `checked` (which owns it) without errors, with access facts.
inline const ir::Kernel& shipped_kernel(const shipped::Launch& l, Checked& checked) {
  return checked_kernel(checked, l.file, source_file(l.file), l.kernel);
}

/// `l`'s grid, block, dynamic shared bytes, and each of `k`'s parameters by name: a buffer's bytes or
/// a scalar's bits (absent where `l` does not name it). Its names are views of `k`'s: `k` outlives it.
inline validation::MemoryLaunch memory_launch_of(const ir::Kernel& k, const shipped::Launch& l) {
  validation::MemoryLaunch launch;
  launch.grid = l.grid;
  launch.block = l.block;
  launch.dynamic_shared_bytes = l.dynamic_shared;
  launch.scalar_bits.assign(k.params.size(), std::nullopt);
  launch.buffer_bytes.assign(k.params.size(), std::nullopt);
  for (size_t i = 0; i < k.params.size(); ++i) {
    launch.names.push_back(k.params[i].name);
    for (const auto& [name, value] : l.arguments)
      if (name == k.params[i].name) (k.params[i].is_buffer ? launch.buffer_bytes[i] : launch.scalar_bits[i]) = value;
  }
  return launch;
}

/// Calls `visit(kernel, documented launch)` for every shipped kernel, its name captured.
template <class Visit>
void each_shipped_kernel(Visit visit) {
  for (const shipped::Launch& l : shipped::shipped_launches()) {
    const std::string where = std::string(l.file) + " " + l.kernel;
    CAPTURE(where);
    Checked checked;
    const ir::Kernel& k = shipped_kernel(l, checked);
    visit(k, memory_launch_of(k, l));
  }
}

/// The remembered verdict (the kernel's memo: remembered bounds, cones, envelopes, race verdicts)
/// against a fresh one of the same launch, field by field; returns it.
inline validation::MemoryVerdict same_as_fresh(const std::shared_ptr<const ir::AccessFacts>& facts,
                                               const validation::MemoryLaunch& launch) {
  const validation::MemoryVerdict fresh = validation::evaluate_accesses(*facts, launch);
  validation::MemoryVerdict remembered = validation::internal::evaluate_accesses_remembered(facts, launch);
  CHECK(remembered.proven == fresh.proven);
  CHECK(remembered.unreachable == fresh.unreachable);
  CHECK(remembered.out_of_bounds == fresh.out_of_bounds);
  CHECK(remembered.unproven == fresh.unproven);
  REQUIRE(remembered.findings.size() == fresh.findings.size());
  for (size_t i = 0; i < fresh.findings.size(); ++i) {
    const validation::SiteVerdict &r = remembered.findings[i], &f = fresh.findings[i];
    CHECK(r.site == f.site);
    CHECK(r.outcome == f.outcome);
    CHECK(r.length_bytes == f.length_bytes);
    CHECK((r.index_min == f.index_min && r.index_max == f.index_max));
    CHECK(r.witness.thread == f.witness.thread);
    CHECK(r.witness.block == f.witness.block);
    CHECK(r.witness.index == f.witness.index);
    CHECK(r.reason == f.reason);
  }
  REQUIRE(remembered.races.size() == fresh.races.size());
  for (size_t i = 0; i < fresh.races.size(); ++i) {
    CHECK(remembered.races[i].first_thread == fresh.races[i].first_thread);
    CHECK(remembered.races[i].second_thread == fresh.races[i].second_thread);
    CHECK(remembered.races[i].byte == fresh.races[i].byte);
  }
  return remembered;
}

/// A launch new in every input (bench/new_shapes.hpp's kind of change, larger and in both
/// directions): grid components, block, dynamic shared bytes, every scalar and every buffer length
/// moved at once, often far enough that accesses go out of bounds.
inline validation::MemoryLaunch varied(const validation::MemoryLaunch& documented, std::mt19937& rng) {
  validation::MemoryLaunch l = documented;
  auto move = [&](uint64_t v) -> uint64_t {
    switch (rng() % 6) {
      case 0: return v + 1 + rng() % 64;
      case 1: return v > 64 ? v - rng() % 64 : v;
      case 2: return v / 2;
      case 3: return v * 2;
      case 4: return v > 1 ? v - 1 : v;
      default: return v;
    }
  };
  for (unsigned c = 0; c < 3; ++c) l.grid[c] = std::max<uint64_t>(move(l.grid[c]), 1);
  if (rng() % 2) {
    const uint64_t b = std::max<uint64_t>(move(l.block[0]), 1);
    if (b * l.block[1] * l.block[2] <= 1024) l.block[0] = b;
  }
  l.dynamic_shared_bytes = move(l.dynamic_shared_bytes);
  for (auto& bits : l.scalar_bits)
    if (bits) bits = move(*bits);
  for (auto& bytes : l.buffer_bytes)
    if (bytes) bytes = move(*bytes);
  return l;
}

/// The launch of a forged kernel `(y: buffer, n: scalar)` in one dimension: `grid` blocks of
/// `block` threads, `n` as the scalar and `bytes` of `y`.
inline validation::MemoryLaunch y_n_launch(uint64_t grid, uint64_t block, uint64_t n, uint64_t bytes) {
  validation::MemoryLaunch l;
  l.grid = {grid, 1, 1};
  l.block = {block, 1, 1};
  l.scalar_bits = {std::nullopt, n};
  l.buffer_bytes = {bytes, std::nullopt};
  l.names = {"y", "n"};
  return l;
}

}  // namespace ptxgate::testing
