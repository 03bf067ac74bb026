// LaunchCache: seqlocked shape entries over atomic words, packed occupancy answers; lock-free reads.
#include "ptxgate/runtime/internal/launch_cache.hpp"

#include <algorithm>

namespace ptxgate::runtime {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr auto kRelease = std::memory_order_release;

/// One occupancy answer in one word: threads (16 bits), dynamic shared bytes (24), opt-in (1),
/// blocks (16), and bit 63 set when the entry is used. Inputs that do not fit are not cached.
std::optional<uint64_t> occupancy_key(uint64_t threads, uint64_t dynamic_shared, bool opt_in) {
  if (threads >= (uint64_t{1} << 16) || dynamic_shared >= (uint64_t{1} << 24)) return std::nullopt;
  return threads | dynamic_shared << 16 | uint64_t{opt_in} << 40 | uint64_t{1} << 63;
}
constexpr uint64_t kOccupancyKeyMask = ((uint64_t{1} << 41) - 1) | (uint64_t{1} << 63);

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
  // tag, which makes a miss cost one comparison an entry, only for the others.
  const uint32_t first = hint_.load(kRelaxed);
  if (matches(entry(first), shape, std::nullopt, block)) [[likely]]
    return block;
  const uint64_t tag = shape.tag();
  for (uint32_t i = 0; i < kEntries; ++i) {
    // The tag compared here, without a call: a miss costs one load and compare an entry.
    if (i == first || entry(i)[1].load(kRelaxed) != tag || !matches(entry(i), shape, tag, block)) continue;
    hint_.store(i, kRelaxed);
    return block;
  }
  return std::nullopt;
}

void LaunchCache::insert(const validation::LaunchShape& shape, const std::array<uint64_t, 3>& block) {
  if (!shape.cacheable() || shape.arguments() > max_arguments_) return;
  std::lock_guard lock(insert_mutex_);
  std::array<unsigned, 3> known;
  const uint64_t tag = shape.tag();
  for (size_t i = 0; i < kEntries; ++i)  // another thread may have validated it meanwhile
    if (entry(i)[1].load(kRelaxed) == tag && matches(entry(i), shape, tag, known)) return;
  std::atomic<uint64_t>* e = entry(next_);
  next_ = (next_ + 1) % kEntries;
  // Seqlock write: odd while the words change; release stores keep every word after the odd mark.
  const uint64_t sequence = e[0].load(kRelaxed);
  e[0].store(sequence + 1, kRelaxed);
  e[1].store(tag, kRelease);
  e[2].store((block[0] & 0xFFFFFFFFu) | block[1] << 32, kRelease);
  e[3].store(block[2], kRelease);
  const size_t n = shape.size();
  const uint64_t* words = shape.words();
  for (size_t i = 0; i < n; ++i) e[kEntryHeader + i].store(words[i], kRelease);
  e[0].store(sequence + 2, kRelease);
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

std::optional<uint32_t> LaunchCache::occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in) const {
  const auto key = occupancy_key(threads, dynamic_shared, opt_in);
  if (!key) return std::nullopt;
  for (const auto& slot : occupancy_) {
    const uint64_t v = slot.load(kAcquire);
    if ((v & kOccupancyKeyMask) == *key) return static_cast<uint32_t>((v >> 41) & 0xFFFF);
  }
  return std::nullopt;
}

void LaunchCache::remember_occupancy(uint64_t threads, uint64_t dynamic_shared, bool opt_in, uint32_t blocks) {
  const auto key = occupancy_key(threads, dynamic_shared, opt_in);
  if (!key || blocks >= (1u << 16)) return;
  const uint32_t i = occupancy_next_.fetch_add(1, kRelaxed) % kOccupancyEntries;
  occupancy_[i].store(*key | uint64_t{blocks} << 41, kRelease);
}

}  // namespace ptxgate::runtime
