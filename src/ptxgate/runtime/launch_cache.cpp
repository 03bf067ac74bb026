// LaunchCache: seqlocked shape and occupancy entries over atomic words; lock-free reads and writes.
#include "ptxgate/runtime/internal/launch_cache.hpp"

#include <algorithm>
#include <bit>

namespace ptxgate::runtime {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr auto kRelease = std::memory_order_release;

/// An occupancy entry's key: threads (16 bits), dynamic shared bytes (24), opt-in (1), and bit 63
/// set (0 is an empty entry's). Inputs that do not fit are not cached.
std::optional<uint64_t> occupancy_key(uint64_t threads, uint64_t dynamic_shared, bool opt_in) {
  if (threads >= (uint64_t{1} << 16) || dynamic_shared >= (uint64_t{1} << 24)) return std::nullopt;
  return threads | dynamic_shared << 16 | uint64_t{opt_in} << 40 | uint64_t{1} << 63;
}

}  // namespace

LaunchCache::LaunchCache(size_t max_arguments)
    : max_arguments_(std::min(max_arguments, validation::LaunchShape::kMaxArguments)),
      stride_(kEntryHeader + validation::LaunchShape::kHeaderWords +
              validation::LaunchShape::kWordsPerArgument * max_arguments_),
      words_(std::make_unique<std::atomic<uint64_t>[]>(kEntries * stride_)) {}

bool LaunchCache::matches(const std::atomic<uint64_t>* e, const validation::LaunchShape& shape,
                          std::optional<uint64_t> tag, std::array<unsigned, 3>& block) const {
  const uint64_t sequence = e[0].load(kAcquire);
  if (sequence == 0 || (sequence & 1) != 0) return false;  // empty, or being written
  if (tag && e[1].load(kAcquire) != *tag) return false;
  // Word 7 holds the argument count, so an entry of another count differs there, before its end.
  // The words are compared without a branch each, two at a time (a shape has an even count).
  static_assert(validation::LaunchShape::kHeaderWords % 2 == 0 && validation::LaunchShape::kWordsPerArgument == 2);
  // The header first: an entry of another geometry (a new grid) differs there, and its arguments'
  // words are not read.
  const size_t n = shape.size();
  const uint64_t* words = shape.words();
  const std::atomic<uint64_t>* stored = e + kEntryHeader;
  uint64_t differ = 0;
  for (size_t i = 0; i < validation::LaunchShape::kHeaderWords; i += 2)
    differ |= (stored[i].load(kAcquire) ^ words[i]) | (stored[i + 1].load(kAcquire) ^ words[i + 1]);
  if (differ != 0) return false;
  for (size_t i = validation::LaunchShape::kHeaderWords; i < n; i += 2)
    differ |= (stored[i].load(kAcquire) ^ words[i]) | (stored[i + 1].load(kAcquire) ^ words[i + 1]);
  if (differ != 0) return false;
  const uint64_t xy = e[2].load(kAcquire), z = e[3].load(kAcquire);
  // Acquire loads above keep this one after them: an unchanged sequence means no insert overlapped.
  if (e[0].load(kRelaxed) != sequence) return false;
  block = {static_cast<unsigned>(xy), static_cast<unsigned>(xy >> 32), static_cast<unsigned>(z)};
  return true;
}

std::optional<std::array<unsigned, 3>> LaunchCache::find(const validation::LaunchShape& shape) const {
  if (!shape.cacheable() || shape.arguments() > max_arguments_) [[unlikely]]
    return std::nullopt;
  std::array<unsigned, 3> block;
  // The entry of the last hit is compared word by word at once (a steady launch hits it); the
  // others only when their tag maps to the shape's slot, tag first: a miss reads one word.
  const uint32_t first = hint_.load(kRelaxed);
  if (matches(entry(first), shape, std::nullopt, block)) [[likely]]
    return block;
  const uint64_t tag = shape.tag();
  uint32_t candidates = slots_[slot_of(tag)].load(kAcquire) & ~(1u << first);
  while (candidates != 0) {
    const uint32_t i = static_cast<uint32_t>(std::countr_zero(candidates));
    candidates &= candidates - 1;
    if (entry(i)[1].load(kRelaxed) != tag || !matches(entry(i), shape, tag, block)) continue;
    hint_.store(i, kRelaxed);
    return block;
  }
  return std::nullopt;
}

void LaunchCache::insert(const validation::LaunchShape& shape, const std::array<uint64_t, 3>& block) {
  if (!shape.cacheable() || shape.arguments() > max_arguments_) return;
  // The caller validated after a miss: the shape is not searched for again. Two threads that
  // validate one shape at once may both insert it, which wastes an entry and never gives a wrong
  // verdict.
  const uint32_t index = next_.fetch_add(1, kRelaxed) % kEntries;
  std::atomic<uint64_t>* e = entry(index);
  // Seqlock write, taken with a compare-exchange (odd while the words change): a writer that finds
  // the entry taken skips its insert. Release stores keep every word after the odd mark.
  uint64_t sequence = e[0].load(kRelaxed);
  if ((sequence & 1) != 0 || !e[0].compare_exchange_strong(sequence, sequence + 1, std::memory_order_acquire, kRelaxed))
    return;
  // The entry leaves the slot of the shape it held (tag 0: never written) and joins its new one.
  const uint16_t bit = static_cast<uint16_t>(1u << index);
  if (const uint64_t old = e[1].load(kRelaxed); old != 0)
    slots_[slot_of(old)].fetch_and(static_cast<uint16_t>(~bit), kRelaxed);
  const uint64_t tag = shape.tag();
  e[1].store(tag, kRelease);
  e[2].store((block[0] & 0xFFFFFFFFu) | block[1] << 32, kRelease);
  e[3].store(block[2], kRelease);
  const size_t n = shape.size();
  const uint64_t* words = shape.words();
  for (size_t i = 0; i < n; ++i) e[kEntryHeader + i].store(words[i], kRelease);
  e[0].store(sequence + 2, kRelease);
  slots_[slot_of(tag)].fetch_or(bit, kRelease);
}

void LaunchCache::remember_steady(const SteadyKey& key, const std::array<unsigned, 3>& block) {
  if (key.count > SteadyKey::kMaxWords) return;
  uint64_t sequence = front_.sequence.load(kRelaxed);
  // Seqlock write, as insert's, but taken with a compare-exchange: writers do not wait for each other.
  if ((sequence & 1) != 0 || !front_.sequence.compare_exchange_strong(sequence, sequence + 1, kAcquire, kRelaxed))
    return;
  for (size_t i = 0; i < 4; ++i) front_.header[i].store(key.header[i], kRelease);
  for (size_t i = 0; i < key.count; ++i) front_.words[i].store(key.words[i], kRelease);
  front_.block_xy.store(block[0] | uint64_t{block[1]} << 32, kRelease);
  front_.block_z.store(block[2], kRelease);
  front_.sequence.store(sequence + 2, kRelease);
}

std::optional<validation::Occupancy> LaunchCache::occupancy(uint64_t threads, uint64_t dynamic_shared,
                                                            bool opt_in) const {
  const auto key = occupancy_key(threads, dynamic_shared, opt_in);
  if (!key) return std::nullopt;
  for (const OccupancyEntry& e : occupancy_) {
    const uint64_t sequence = e.sequence.load(kAcquire);
    if (sequence == 0 || (sequence & 1) != 0 || e.key.load(kAcquire) != *key) continue;
    const uint64_t w0 = e.words[0].load(kAcquire), w1 = e.words[1].load(kAcquire), w2 = e.words[2].load(kAcquire),
                   w3 = e.words[3].load(kAcquire);
    // The acquire loads above keep this one after them: an unchanged sequence means no write overlapped.
    if (e.sequence.load(kRelaxed) != sequence) return std::nullopt;
    const auto low = [](uint64_t w) { return static_cast<uint32_t>(w); };
    const auto high = [](uint64_t w) { return static_cast<uint32_t>(w >> 32); };
    validation::Occupancy o;
    o.active_blocks_per_sm = low(w0);
    o.allocated_registers_per_block = high(w0);
    o.by_threads = low(w1), o.by_blocks = high(w1);
    o.by_registers = low(w2), o.by_shared = high(w2);
    o.allocated_shared_per_block = w3 >> 9;
    o.limiter = static_cast<validation::OccupancyLimiter>(w3 & 0xFF);
    o.computed = (w3 & 0x100) != 0;
    return o;
  }
  return std::nullopt;
}

void LaunchCache::remember_occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in,
                                     const validation::Occupancy& o) {
  const auto key = occupancy_key(threads, dynamic_shared, opt_in);
  // Shared bytes per block are far below 2^55 on any device: a value that is not is not kept.
  if (!key || o.allocated_shared_per_block >= (uint64_t{1} << 55)) return;
  OccupancyEntry& e = occupancy_[occupancy_next_.fetch_add(1, kRelaxed) % kOccupancyEntries];
  uint64_t sequence = e.sequence.load(kRelaxed);
  // Seqlock write, as insert's: a writer that finds the entry taken skips it.
  if ((sequence & 1) != 0 || !e.sequence.compare_exchange_strong(sequence, sequence + 1, kAcquire, kRelaxed)) return;
  const auto pair = [](uint32_t low, uint32_t high) { return uint64_t{low} | uint64_t{high} << 32; };
  e.key.store(*key, kRelease);
  e.words[0].store(pair(o.active_blocks_per_sm, o.allocated_registers_per_block), kRelease);
  e.words[1].store(pair(o.by_threads, o.by_blocks), kRelease);
  e.words[2].store(pair(o.by_registers, o.by_shared), kRelease);
  e.words[3].store(o.allocated_shared_per_block << 9 | uint64_t{o.computed} << 8 | static_cast<uint8_t>(o.limiter),
                   kRelease);
  e.sequence.store(sequence + 2, kRelease);
}

}  // namespace ptxgate::runtime
