// LaunchCache: one loaded function's validated launch shapes and the driver's occupancy answers.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::backend {

/// The launch cache of one LoadedFunction, shared by every thread that launches it:
///  * launchable shapes (validation::LaunchShape) with the block they run with (the plan's, or
///    @workgroup, or the default), kEntries of them, the oldest replaced first;
///  * the driver's occupancy answers by block size, dynamic shared bytes and opt-in state (a new
///    grid of a known block then needs no driver call), kOccupancyEntries of them.
/// Reads take no lock and allocate nothing: each shape entry is a seqlock over atomic words
/// (acquire loads, which are plain loads on x86-64), each occupancy answer one atomic word.
/// A read that races with an insert into the same entry misses and validates afresh, which is
/// always correct. Inserts serialise on a mutex (validation happened just before, so they are
/// off the steady path). Blocked shapes are never cached: they are validated every time, so
/// their diagnostics are complete every time.
class LaunchCache {
 public:
  static constexpr size_t kEntries = 16;
  static constexpr size_t kOccupancyEntries = 8;

  /// A cache for shapes of at most `max_arguments` arguments (the kernel's parameter count: a
  /// launch with another count is blocked, so never cached).
  explicit LaunchCache(size_t max_arguments);

  /// The block of a shape validated launchable before.
  std::optional<std::array<unsigned, 3>> find(const validation::LaunchShape& shape) const;
  /// Remembers a launchable shape (no-op for a shape already there or one that is not cacheable).
  void insert(const validation::LaunchShape& shape, const std::array<uint64_t, 3>& block);

  /// The driver's active blocks per SM for this block size, dynamic shared bytes and opt-in state.
  std::optional<uint32_t> occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in) const;
  void remember_occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in, uint32_t blocks);

 private:
  // An entry's words: [0] sequence (odd while written, 0 while empty), [1] tag, [2] block x | y << 32,
  // [3] block z, then the shape's words.
  static constexpr size_t kEntryHeader = 4;
  std::atomic<uint64_t>* entry(size_t i) const { return words_.get() + i * stride_; }
  /// Whether entry `e` holds `shape` (its tag compared first when given), and its block.
  bool matches(const std::atomic<uint64_t>* e, const validation::LaunchShape& shape, std::optional<uint64_t> tag,
               std::array<unsigned, 3>& block) const;

  size_t max_arguments_;
  size_t stride_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
  mutable std::atomic<uint32_t> hint_{0};  ///< the entry of the last hit: scanned first
  std::mutex insert_mutex_;
  size_t next_ = 0;  ///< the entry the next insert replaces (under insert_mutex_)
  std::array<std::atomic<uint64_t>, kOccupancyEntries> occupancy_{};
  std::atomic<uint32_t> occupancy_next_{0};
};

}  // namespace ptxgate::backend
