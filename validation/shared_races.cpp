// Shared-memory races of one launch: two threads of a block touching the same shared byte between
// the same barriers, at least one writing, found by evaluating every thread of the block exactly.
#include <map>
#include <tuple>
#include <unordered_map>

#include "ptxgate/ir/sym_eval.hpp"
#include "ptxgate/validation/memory_safety.hpp"

namespace ptxgate::validation {
namespace {

/// Who touched a byte first in this epoch: the thread, the site, and for a write its value.
struct Touch {
  uint32_t thread = 0;
  uint32_t site = 0;
  bool write = false;
  std::optional<uint64_t> value;
};

/// The loops around `innermost`, outermost first.
std::vector<uint32_t> chain_of(const ir::AccessFacts& facts, int32_t innermost) {
  std::vector<uint32_t> chain;
  for (int32_t l = innermost; l >= 0 && chain.size() < facts.loops.size(); l = facts.loops[l].parent)
    chain.insert(chain.begin(), static_cast<uint32_t>(l));
  return chain;
}

/// Enters every loop of `chain` at the current thread's first (or last) iteration; false when
/// the thread does not enter one.
bool enter_all(ir::ConcreteNodes& eval, const std::vector<uint32_t>& chain, bool last,
               std::vector<std::pair<uint32_t, ir::Integer>>& values) {
  values.clear();
  for (uint32_t loop : chain) {
    auto v = eval.enter_loop(loop, last);
    if (!v) return false;
    values.emplace_back(loop, *v);
  }
  return true;
}

}  // namespace

std::vector<SharedRace> find_shared_races(const ir::AccessFacts& facts, const MemoryLaunch& launch) {
  std::vector<SharedRace> races;
  const uint64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  if (threads < 2 || threads > 1024) return races;
  // The accesses that can race, by array, epoch and loop: plain reads and writes of shared arrays
  // whose path the facts follow exactly.
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, std::vector<uint32_t>> groups;
  for (uint32_t i = 0; i < facts.sites.size(); ++i) {
    const ir::AccessSite& s = facts.sites[i];
    if (s.space == ir::Space::shared && s.kind != ir::AccessKind::atomic && s.witness_exact)
      groups[{s.array, s.epoch, s.loop}].push_back(i);
  }
  ir::ConcreteNodes eval(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits);
  std::vector<std::pair<uint32_t, ir::Integer>> loop_values;
  for (const auto& [key, sites] : groups) {
    bool writes = false;
    for (uint32_t s : sites) writes |= facts.sites[s].kind == ir::AccessKind::write;
    if (!writes) continue;
    const std::vector<uint32_t> chain = chain_of(facts, std::get<2>(key));
    bool found = false;
    for (int last = 0; last < (chain.empty() ? 1 : 2) && !found; ++last) {
      std::unordered_map<uint64_t, Touch> touched;
      for (uint32_t t = 0; t < threads && !found; ++t) {
        const std::array<uint64_t, 6> at{t % launch.block[0], t / launch.block[0] % launch.block[1],
                                         t / (launch.block[0] * launch.block[1]), 0, 0, 0};
        eval.reset(at);
        if (!enter_all(eval, chain, last != 0, loop_values)) continue;
        for (uint32_t s : sites) {
          const ir::AccessSite& site = facts.sites[s];
          auto path = eval.value(site.path);
          auto index = eval.value(site.index);
          if (!path || !(*path & 1) || !index) continue;
          uint64_t width = site.width;
          if (site.width_limit >= 0) {
            auto limit = eval.value(static_cast<uint32_t>(site.width_limit));
            if (!limit) continue;
            width = std::min<uint64_t>(width, *limit);
          }
          const ir::Integer first = ir::value_of(facts.nodes[site.index].type, *index) * site.stride;
          if (first < 0) continue;  // out of bounds: PG3801's to report
          const bool write = site.kind == ir::AccessKind::write;
          std::optional<uint64_t> value = write && site.value >= 0 ? eval.value(static_cast<uint32_t>(site.value)) : std::nullopt;
          for (uint64_t b = static_cast<uint64_t>(first); b < static_cast<uint64_t>(first) + width; b += site.element_bytes) {
            auto [it, inserted] = touched.try_emplace(b, Touch{t, s, write, value});
            if (inserted) continue;
            Touch& other = it->second;
            if (other.thread == t) {
              if (write && !other.write) other = Touch{t, s, write, value};
              continue;
            }
            if (!write && !other.write) continue;
            // Two writes race when they may store different values: only known, different integers count.
            if (write && other.write && !(value && other.value && *value != *other.value)) continue;
            SharedRace r;
            const bool this_first = write && !other.write;
            r.first_site = this_first ? s : other.site;
            r.second_site = this_first ? other.site : s;
            auto coords = [&](uint32_t linear) {
              return std::array<uint64_t, 3>{linear % launch.block[0], linear / launch.block[0] % launch.block[1],
                                             linear / (launch.block[0] * launch.block[1])};
            };
            r.first_thread = coords(this_first ? t : other.thread);
            r.second_thread = coords(this_first ? other.thread : t);
            r.loops = loop_values;
            r.byte = b;
            races.push_back(std::move(r));
            found = true;
            break;
          }
          if (found) break;
        }
      }
    }
  }
  return races;
}

}  // namespace ptxgate::validation
