// LaunchCache: one loaded function's validated launch shapes and the driver's occupancy answers.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::runtime {

/// Kernel::launch's steady shape, compact (src/ptxgate/runtime/runtime.cpp): the configuration packed into four
/// words, then the byte sizes of the buffer arguments and the values of the scalars the kernel's
/// memory-safety proof uses (internal/arguments.hpp: each parameter's word). The steady path takes
/// only arguments that match their parameters exactly, whose LaunchShape words are the parameter's
/// own fixed words except a buffer's size (and the bit saying it is known, set when it is not 0)
/// and a proof scalar's value: so, for one function, equal keys stand for equal LaunchShapes and get
/// the same verdict. A kernel whose proof uses no scalar has only its buffers' words.
struct SteadyKey {
  /// Kernels with more words take the launch cache's LaunchShape path only.
  static constexpr size_t kMaxWords = 12;
  std::array<uint64_t, 4> header;
  /// Buffer sizes, then proof values; the first `count` are used. Room for every parameter, so that
  /// binding writes them without a bound; a key of more than kMaxWords is not used.
  std::array<uint64_t, validation::LaunchShape::kMaxArguments> words;
  uint32_t count = 0;  ///< the kernel's key words

  /// Packs grid, block, dynamic shared bytes and the launch's flags (cooperative, block given,
  /// null stream, the context's launch options: 5 bits); false when a value does not fit in 32
  /// bits (such a launch is validated and blocked through its LaunchShape).
  bool pack(const std::array<uint64_t, 3>& grid, const std::array<uint64_t, 3>& block, uint64_t dynamic_shared,
            uint32_t flags) {
    const uint64_t wide = (grid[0] | grid[1] | grid[2] | block[0] | block[1] | block[2] | dynamic_shared) >> 32;
    header = {grid[0] | grid[1] << 32, grid[2] | dynamic_shared << 32, block[0] | block[1] << 32,
              block[2] | uint64_t{flags} << 32};
    return wide == 0;
  }
  std::array<unsigned, 3> grid() const {
    return {static_cast<unsigned>(header[0]), static_cast<unsigned>(header[0] >> 32), static_cast<unsigned>(header[1])};
  }
  unsigned dynamic_shared_bytes() const { return static_cast<unsigned>(header[1] >> 32); }
  /// Whether `other` (of the same function) differs from this key in its grid only.
  bool same_but_grid(const SteadyKey& other) const {
    uint64_t differ = ((header[1] ^ other.header[1]) >> 32) | (header[2] ^ other.header[2]) |
                      (header[3] ^ other.header[3]) | (count ^ other.count);
    if (differ != 0) return false;
    for (size_t i = 0; i < count; ++i) differ |= words[i] ^ other.words[i];
    return differ == 0;
  }
  uint32_t flags() const { return static_cast<uint32_t>(header[3] >> 32); }
  static constexpr uint32_t kCooperative = 1, kBlockGiven = 2, kNullStream = 4;
  /// Context::launch_options() shifted by this many bits: kRequireExplicitStream -> 8, kRequireMemoryProof -> 16.
  static constexpr uint32_t kOptionsShift = 3;
};

/// The launch cache of one LoadedFunction, shared by every thread that launches it:
///  * launchable shapes (validation::LaunchShape) with the block they run with (the plan's, or
///    @workgroup, or the default), kEntries of them, the oldest replaced first;
///  * occupancies (the offline model's factors with the driver's answer) by block size, dynamic
///    shared bytes and opt-in state (a new grid of a known block then needs neither the driver
///    nor the model), kOccupancyEntries of them.
/// Reads take no lock and allocate nothing: each entry is a seqlock over atomic words (acquire
/// loads, which are plain loads on x86-64). A read that races with a write into the same entry
/// misses and validates afresh, which is always correct. A writer takes the entry's sequence with
/// a compare-exchange and skips the write when another thread holds it: every entry is only a
/// shortcut. Blocked shapes are never cached: they are validated every time, so their diagnostics
/// are complete every time.
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

  /// The occupancy of this block size, dynamic shared bytes and opt-in state: the offline model's
  /// factors with the driver's active blocks per SM (what validation's OccupancyProvider answers).
  std::optional<validation::Occupancy> occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in) const;
  void remember_occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in,
                          const validation::Occupancy& occupancy);

  /// The front of the cache for Kernel::launch's steady path: the last steady shape it launched,
  /// as a SteadyKey, compared word for word without building a
  /// LaunchShape (two cache lines where a LaunchShape entry of 16 arguments spans six). A seqlock
  /// like the entries: a read racing a write misses and takes the LaunchShape path.
  bool find_steady(const SteadyKey& key, std::array<unsigned, 3>& block) const {
    const uint64_t sequence = front_.sequence.load(kAcquire);
    uint64_t differ = (sequence & 1) | uint64_t{sequence == 0};  // being written, or empty
    const size_t count = key.count;  // read once: the acquire loads below keep later reads after them
    for (size_t i = 0; i < 4; ++i) differ |= front_.header[i].load(kAcquire) ^ key.header[i];
    for (size_t i = 0; i < count; ++i) differ |= front_.words[i].load(kAcquire) ^ key.words[i];
    const uint64_t xy = front_.block_xy.load(kAcquire), z = front_.block_z.load(kAcquire);
    // The acquire loads above keep this one after them: an unchanged sequence means no write overlapped.
    if (differ != 0 || front_.sequence.load(std::memory_order_relaxed) != sequence) return false;
    block = {static_cast<unsigned>(xy), static_cast<unsigned>(xy >> 32), static_cast<unsigned>(z)};
    return true;
  }
  /// Makes `key` (a shape validated launchable, running with `block`) the front. Skipped while
  /// another thread writes it: the front is only a shortcut.
  void remember_steady(const SteadyKey& key, const std::array<unsigned, 3>& block);

 private:
  static constexpr auto kAcquire = std::memory_order_acquire;
  struct alignas(64) Front {
    std::atomic<uint64_t> sequence{0};  ///< odd while written, 0 while empty
    std::array<std::atomic<uint64_t>, 4> header{};
    std::atomic<uint64_t> block_xy{0}, block_z{0};
    std::array<std::atomic<uint64_t>, SteadyKey::kMaxWords> words{};
  };
  Front front_;
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
  mutable std::atomic<uint32_t> hint_{0};  ///< the entry of the last hit: compared first
  /// The entries by tag: slot `slot_of(tag)` holds a bit for each entry whose tag maps there, so a
  /// miss reads one word instead of every entry's tag. Only a filter: a bit set before or after its
  /// entry's words (an insert racing a read) makes the read compare an entry, or miss, never hit a
  /// wrong one.
  static constexpr size_t kSlots = 64;
  static size_t slot_of(uint64_t tag) { return (tag ^ (tag >> 29)) % kSlots; }
  std::array<std::atomic<uint16_t>, kSlots> slots_{};
  static_assert(kEntries <= 16, "an entry's bit in a slot is one of 16");
  std::atomic<uint32_t> next_{0};          ///< the entry the next insert replaces (modulo kEntries)
  /// One occupancy: its key (occupancy_key), then Occupancy's fields in four words.
  struct OccupancyEntry {
    std::atomic<uint64_t> sequence{0};  ///< odd while written, 0 while empty
    std::atomic<uint64_t> key{0};
    std::array<std::atomic<uint64_t>, 4> words{};
  };
  std::array<OccupancyEntry, kOccupancyEntries> occupancy_{};
  std::atomic<uint32_t> occupancy_next_{0};
};

}  // namespace ptxgate::runtime
