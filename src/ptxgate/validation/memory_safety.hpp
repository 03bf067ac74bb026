// Memory safety of one launch: each access of the kernel proven in bounds, proven out of bounds
// with a concrete thread, or not provable, from the kernel's access facts and this launch's values.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::validation {

/// What a launch gives the access facts.
struct MemoryLaunch {
  std::array<uint64_t, 3> grid{1, 1, 1};
  std::array<uint64_t, 3> block{1, 1, 1};
  uint64_t dynamic_shared_bytes = 0;
  /// By parameter number: a scalar argument's bits (nullopt: not known, e.g. offline without --arg).
  std::vector<std::optional<uint64_t>> scalar_bits;
  /// By parameter number: a buffer argument's size in bytes (nullopt: not known).
  std::vector<std::optional<uint64_t>> buffer_bytes;
  /// By parameter number: the names, for messages. Views into storage that outlives every use of
  /// this launch (the kernel's parameter names): a launch's check fills them without copying.
  std::vector<std::string_view> names;
};

enum class SiteOutcome : uint8_t {
  proven,         ///< in bounds for every thread of this launch
  unreachable,    ///< no thread of this launch runs it
  out_of_bounds,  ///< a concrete thread of this launch runs it out of bounds (the witness)
  unproven,       ///< neither: data-dependent, unknown sizes or values, or beyond the analysis
};
std::string_view site_outcome_name(SiteOutcome o);

/// The thread that goes out of bounds, and what it computes.
struct Witness {
  std::array<uint64_t, 3> thread{0, 0, 0};
  std::array<uint64_t, 3> block{0, 0, 0};
  std::vector<std::pair<uint32_t, ir::Integer>> loops;  ///< enclosing loops' variables (loop number, value)
  ir::Integer index = 0;                                 ///< the index it computes
  uint64_t bytes = 0;                                    ///< bytes it touches from stride * index
};

/// One site's outcome for this launch.
struct SiteVerdict {
  uint32_t site = 0;                ///< AccessFacts::sites
  SiteOutcome outcome = SiteOutcome::proven;
  std::optional<uint64_t> length_bytes;  ///< the array's size in bytes when known
  ir::Integer index_min = 0, index_max = 0;  ///< the analysis's bounds of the index (reachable sites)
  Witness witness;                  ///< out_of_bounds only
  bool index_varies_by_thread = false;  ///< the index depends on the thread or block (fewer threads may fix it)
  std::string reason;               ///< unproven only: why, in words
};

/// Two threads of one block that touch the same shared-memory byte between the same two barriers,
/// at least one writing (two writes of the same integer value are not counted).
struct SharedRace {
  uint32_t first_site = 0, second_site = 0;   ///< AccessFacts::sites; first_site writes
  std::array<uint64_t, 3> first_thread{}, second_thread{};
  std::array<uint64_t, 3> block{};
  std::vector<std::pair<uint32_t, ir::Integer>> loops;  ///< the iteration both are in (loop, value)
  uint64_t byte = 0;                          ///< the byte both touch, from the array's start
};

/// The memory-safety part of a launch's verdict.
struct MemoryVerdict {
  bool analysed = false;            ///< false: no facts (another compiler's kernel)
  bool complete = true;             ///< the facts cover the whole kernel
  uint32_t sites = 0, proven = 0, unreachable = 0, out_of_bounds = 0, unproven = 0;
  uint32_t unmodelled = 0;          ///< accesses the facts do not model (e.g. TMA tiles)
  std::vector<SiteVerdict> findings;  ///< every site that is not proven or unreachable
  std::vector<SharedRace> races;      ///< proven shared-memory races (at most one per array and epoch)
  /// proven + unreachable over all sites (and unmodelled accesses), in percent; 100 with none.
  double coverage_percent() const;
  nlohmann::json to_json(const ir::AccessFacts& facts) const;
};

/// Evaluates every site of `facts` for `launch`, and looks for shared-memory races.
MemoryVerdict evaluate_accesses(const ir::AccessFacts& facts, const MemoryLaunch& launch);

/// How find_shared_races decided, per group of accesses (one shared array, epoch and loop, with a
/// write) and pass (first or last iteration of the loops around it).
struct SharedRaceSearch {
  uint32_t groups = 0;       ///< groups with a write
  uint32_t no_conflict = 0;  ///< groups with no pair that could count as a race (e.g. only float writes)
  uint32_t proven = 0;       ///< passes proven race-free symbolically (no thread enumerated)
  uint32_t enumerated = 0;   ///< passes decided by evaluating every thread of the block
};

/// Races on shared memory between the threads of one block of `launch` (src/ptxgate/validation/shared_races.cpp):
/// for the accesses of one shared array with the same epoch and loop, each thread of the block
/// evaluated concretely (first and last iteration of the loop), so every race found is real. Only
/// accesses whose path the facts follow exactly, and blocks of at most 1024 threads. Before the
/// enumeration a symbolic step proves a group race-free without it where it can: each index as an
/// exact affine form of the thread coordinates and loop iteration counts (other thread-dependent
/// parts as values within their bounds), and no two different threads' elements can meet. `bounds`:
/// the launch's node bounds (ir::NodeBounds::base) when the caller has them; `search`: what decided;
/// `prove` false: every group enumerated (the reference the fuzz target compares the proof with).
std::vector<SharedRace> find_shared_races(const ir::AccessFacts& facts, const MemoryLaunch& launch,
                                          SharedRaceSearch* search = nullptr,
                                          const std::vector<ir::Interval>* bounds = nullptr, bool prove = true);

/// What report_memory_safety adds.
struct MemoryReportOptions {
  bool require_proof = false;   ///< sites not proven become errors (PG3802 as an error)
  bool list_unproven = false;   ///< PG3802 notes for sites not proven (`-v`)
};

/// PG3801 for each site proven out of bounds (with the witness and a fix), PG3803 for each shared
/// race (both accesses and both threads), PG3802 for sites not
/// proven (errors under require_proof, notes when listed). `file` names the kernel's source file in
/// locations; `kernel` names the kernel.
void report_memory_safety(diag::Diagnostics& out, const ir::AccessFacts& facts, const MemoryVerdict& verdict,
                          const MemoryLaunch& launch, const std::string& kernel, const std::string& file,
                          const MemoryReportOptions& options);

}  // namespace ptxgate::validation
