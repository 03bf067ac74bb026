// Fuzz target: any bytes as a .pg file -> parse -> verify -> print -> codegen (LLVM IR; in checked
// mode for inputs of odd length, whose KernelInfo must round-trip through its JSON); rejected
// input renders as text with no control characters; each kernel's access facts -> JSON and back ->
// evaluated for a launch made from the input's bytes (the remembered race verdicts, race-free proofs
// and node bounds, each path group's cone-only narrowing and its envelope, compared with fresh ones
// and with the enumeration of every thread).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/ir/sym_eval.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/validation/internal/shared_races.hpp"
#include "ptxgate/validation/memory_safety.hpp"

namespace {

/// The same races: sites, threads, iteration and byte.
bool same_races(const std::vector<ptxgate::validation::SharedRace>& a, const std::vector<ptxgate::validation::SharedRace>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first_site != b[i].first_site || a[i].second_site != b[i].second_site || a[i].byte != b[i].byte ||
        a[i].first_thread != b[i].first_thread || a[i].second_thread != b[i].second_thread || a[i].loops != b[i].loops)
      return false;
  return true;
}

/// The facts survive JSON, and a launch made from `seed` evaluates without a crash; every witness
/// of an out-of-bounds access, evaluated again on its own, takes the access out of bounds.
void check_access_facts(const ptxgate::ir::Kernel& kernel, uint64_t seed) {
  using namespace ptxgate;
  if (!kernel.access_facts) __builtin_trap();
  const ir::AccessFacts& facts = *kernel.access_facts;
  auto back = ir::access_facts_from_json(ir::to_json(facts));
  if (!back || back->nodes != facts.nodes || back->sites.size() != facts.sites.size()) __builtin_trap();
  auto next = [&] { seed = seed * 6364136223846793005ull + 1442695040888963407ull; return seed >> 33; };
  validation::MemoryLaunch launch;
  launch.grid = {1 + next() % 5, 1 + next() % 3, 1};
  launch.block = {1 + next() % 96, 1 + next() % 3, 1};
  launch.dynamic_shared_bytes = next() % 4096;
  for (const ir::Param& p : kernel.params) {
    launch.names.push_back(p.name);
    launch.scalar_bits.push_back(p.is_buffer ? std::nullopt : std::optional<uint64_t>(next() % 300));
    launch.buffer_bytes.push_back(p.is_buffer ? std::optional<uint64_t>(next() % 5000) : std::nullopt);
  }
  validation::MemoryVerdict verdict = validation::evaluate_accesses(facts, launch);
  if (verdict.proven + verdict.unreachable + verdict.out_of_bounds + verdict.unproven != verdict.sites) __builtin_trap();
  // The symbolic race proof only skips what the enumeration of every thread would not find: the
  // same races with it and without it.
  if (!same_races(validation::find_shared_races(facts, launch, nullptr, nullptr, /*prove=*/false), verdict.races))
    __builtin_trap();
  // The race-free proofs remembered by what they read (internal::RacePlan), over launches with other
  // scalars, dynamic shared bytes and (last) block: the races of the enumeration every time.
  validation::internal::RacePlan plan;
  validation::internal::plan_races(facts, plan);
  validation::MemoryLaunch again = launch;
  for (int round = 0; round < 4; ++round) {
    if (round > 0) {
      for (auto& bits : again.scalar_bits)
        if (bits && next() % 2) bits = next() % 300;
      again.dynamic_shared_bytes = next() % 4096;
    }
    if (round == 3) again.block[0] = 1 + next() % 64;
    const auto remembered = validation::internal::search_shared_races(facts, again, plan, true, nullptr, nullptr, true);
    if (!same_races(validation::find_shared_races(facts, again, nullptr, nullptr, /*prove=*/false), remembered))
      __builtin_trap();
  }
  // Each path group narrowed over its node cone (what a kernel's remembered plan does) gives the
  // bounds of the pass over every node, on every node of the cone.
  {
    validation::internal::SitePlan sites;
    validation::internal::plan_sites(facts, ir::leaf_dependencies(facts), sites, true);
    const ir::LeafValues leaves{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits};
    ir::NodeBounds whole(facts, leaves), coned(facts, leaves);
    validation::internal::ConeValues cone_values;
    cone_values.next_launch();
    for (const validation::internal::PathGroup& g : sites.groups) {
      const std::span<const uint32_t> cones(sites.cones);
      const auto cone = cones.subspan(g.cone_first, g.cone_end - g.cone_first);
      const std::vector<ir::Interval> all = whole.under(g.path, g.last);
      const std::vector<ir::Interval>& part = coned.under(g.path, g.last, cones.subspan(g.cone_first, g.cone_rest - g.cone_first),
                                                          cones.subspan(g.cone_rest, g.cone_end - g.cone_rest));
      for (uint32_t id : cone)
        if (all[id] != part[id]) __builtin_trap();
      // The envelope (bounds without the path, and a thread that takes it) rests on two facts,
      // checked for every group where a thread is found: the narrowing finds the path taken and
      // each index not empty, inside its bounds without the path. And where it proves a group, the
      // narrowing proves every site.
      const ir::Interval taken = whole.base()[g.path];
      if (taken == ir::Interval{1, 1} || taken == ir::Interval{0, 0} || taken.empty()) continue;
      if (!validation::internal::envelope_reachable(facts, sites, g, launch, cone_values)) continue;
      if (all[g.path].empty() || all[g.path] == ir::Interval{0, 0}) __builtin_trap();
      for (uint32_t k = g.first; k < g.end; ++k) {
        const ir::Interval narrowed = all[facts.sites[sites.by_path[k]].index];
        const ir::Interval base = whole.base()[facts.sites[sites.by_path[k]].index];
        if (narrowed.empty() || narrowed.lo < base.lo || narrowed.hi > base.hi) __builtin_trap();
      }
      if (!validation::internal::envelope_in_bounds(facts, sites, g, whole.base(), launch)) continue;
      for (uint32_t k = g.first; k < g.end; ++k) {
        const ir::AccessSite& site = facts.sites[sites.by_path[k]];
        const validation::internal::SiteBounds read{all[g.path], all[site.index],
                                                    site.width_limit >= 0 ? all[site.width_limit] : ir::Interval{}};
        if (validation::internal::bounds_outcome(facts, site, read, launch) != validation::SiteOutcome::proven)
          __builtin_trap();
      }
    }
  }
  // The race verdicts check_launch remembers per kernel (keyed by what the search reads): for this
  // launch, one with another grid, and one with other scalars too, the same races as a fresh search.
  // The block changes too in the last round (the remembered bounds then evaluate every node again).
  validation::MemoryLaunch other = launch;
  for (int round = 0; round < 3; ++round) {
    if (round > 0) other.grid[0] = 1 + next() % 5;
    if (round == 2) {
      for (auto& bits : other.scalar_bits)
        if (bits) bits = next() % 300;
      other.block[0] = 1 + next() % 64;
    }
    // The node bounds remembered with them (evaluated again only where an input they read changed):
    // the same outcome per site as a fresh evaluation, with the same witnesses.
    const validation::MemoryVerdict whole = validation::internal::evaluate_accesses_remembered(kernel.access_facts, other);
    const validation::MemoryVerdict anew = validation::evaluate_accesses(facts, other);
    if (whole.proven != anew.proven || whole.unreachable != anew.unreachable ||
        whole.out_of_bounds != anew.out_of_bounds || whole.findings.size() != anew.findings.size())
      __builtin_trap();
    for (size_t i = 0; i < anew.findings.size(); ++i)
      if (whole.findings[i].site != anew.findings[i].site || whole.findings[i].outcome != anew.findings[i].outcome ||
          whole.findings[i].witness.thread != anew.findings[i].witness.thread ||
          whole.findings[i].witness.block != anew.findings[i].witness.block ||
          whole.findings[i].witness.index != anew.findings[i].witness.index)
        __builtin_trap();
    if (!same_races(whole.races, validation::find_shared_races(facts, other))) __builtin_trap();
  }
  ir::ConcreteNodes eval(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits);
  for (const auto& f : verdict.findings) {
    if (f.outcome != validation::SiteOutcome::out_of_bounds) continue;
    const ir::AccessSite& site = facts.sites[f.site];
    eval.reset({f.witness.thread[0], f.witness.thread[1], f.witness.thread[2], f.witness.block[0], f.witness.block[1],
                f.witness.block[2]});
    for (const auto& [loop, value] : f.witness.loops)
      eval.set_loop(loop, ir::bits_of(facts.nodes[facts.loops[loop].variable].type, value));
    auto path = eval.value(site.path);
    auto index = eval.value(site.index);
    if (!path || !(*path & 1) || !index || ir::value_of(facts.nodes[site.index].type, *index) != f.witness.index)
      __builtin_trap();
    const ir::Integer first = f.witness.index * site.stride;
    if (first >= 0 && first + static_cast<ir::Integer>(f.witness.bytes) <= static_cast<ir::Integer>(*f.length_bytes))
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate;
  diag::SourceFile file("fuzz.pg", std::string(reinterpret_cast<const char*>(data), size));
  auto loaded = ir::load_module(file);
  if (!loaded) {
    // Diagnostics quote the source, but never hand a terminal a control character (an escape
    // sequence, a bell, a NUL that would cut the text off): only newlines and tabs of their own.
    for (char c : diag::render_text(loaded.error()))
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == '\x7f') __builtin_trap();
    return 0;
  }
  // A verified module must print to text that parses and verifies again.
  std::string printed = ir::print(loaded->module);
  diag::SourceFile again("printed.pg", printed);
  auto reloaded = ir::load_module(again);
  if (!reloaded) __builtin_trap();
  if (ir::print(reloaded->module) != printed) __builtin_trap();
  uint64_t seed = size;
  for (size_t i = 0; i < size; i += 7) seed = seed * 31 + data[i];
  for (const auto& kernel : loaded->module.kernels) check_access_facts(kernel, seed);
  codegen::CodegenOptions options;
  options.opt_level = 1;
  options.checked = (size & 1) != 0;
  if (options.checked)
    for (const auto& info : codegen::describe(loaded->module, true)) {
      auto back = contract::kernel_info_from_json(contract::to_json(info));
      if (!back || !back->checked || back->checked->sites.size() != info.checked->sites.size()) __builtin_trap();
    }
  auto llvm_ir = codegen::emit_llvm_ir(loaded->module, options);
  if (!llvm_ir) {
    // Code generation of a verified module only fails on an internal error.
    for (const auto& d : llvm_ir.error())
      if (d.code == diag::Code::internal_error) __builtin_trap();
  }
  return 0;
}
