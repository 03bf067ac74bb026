// LaunchShape: everything a launch verdict depends on, as fixed words; the key of the backend's launch cache.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::validation {

/// The part of a launch a verdict depends on, packed into 64-bit words: the geometry as asked
/// (grid, block, `block_given`), dynamic shared bytes, cooperative mode, the stream's kind and
/// policy, the function's null-ness, whether memory safety must be proven, and every argument's
/// description (kind, slot width, null slot and pointer, scalar type, buffer size, and a scalar's
/// value when the plan carries it: the runtime gives it only for the scalars the kernel's
/// memory-safety proof uses, ParamInfo::value_in_access_proof). Other scalar values and buffer
/// addresses are not part of it: two launches of one kernel with equal shapes get the same
/// verdict. Built without allocation
/// from a LaunchPlan (`of`) or argument by argument (`start`, then `add`) by a caller that has no
/// plan; both encode alike. A plan with `required_elements` or more than kMaxArguments arguments
/// is not cacheable (its verdict is computed every time).
class LaunchShape {
 public:
  static constexpr size_t kMaxArguments = 32;
  static constexpr size_t kHeaderWords = 8;
  static constexpr size_t kWordsPerArgument = 2;
  static constexpr size_t kMaxWords = kHeaderWords + kWordsPerArgument * kMaxArguments;

  /// The flags of the header word.
  struct Flags {
    bool cooperative = false;
    bool block_given = false;
    bool arguments_known = false;
    bool stream_is_null = false;
    contract::StreamPolicy stream_policy = contract::StreamPolicy::allow_legacy_default;
    bool function_is_null = false;
    bool require_memory_proof = false;
  };

  /// The shape of `plan`.
  static LaunchShape of(const contract::LaunchPlan& plan);

  /// Starts a shape with no arguments yet.
  void start(const std::array<uint64_t, 3>& grid, const std::array<uint64_t, 3>& block, uint64_t dynamic_shared_bytes,
             const Flags& flags) {
    words_[0] = grid[0], words_[1] = grid[1], words_[2] = grid[2];
    words_[3] = block[0], words_[4] = block[1], words_[5] = block[2];
    words_[6] = dynamic_shared_bytes;
    words_[7] = uint64_t{flags.cooperative} | uint64_t{flags.block_given} << 1 | uint64_t{flags.arguments_known} << 2 |
                uint64_t{flags.stream_is_null} << 3 |
                uint64_t{flags.stream_policy == contract::StreamPolicy::require_explicit} << 4 |
                uint64_t{flags.function_is_null} << 5 | uint64_t{flags.require_memory_proof} << 6;
    arguments_ = 0;
    cacheable_ = true;
    tag_ = 0, mix_ = 0;
  }
  /// The first of an argument's two words: its description without the buffer size or scalar
  /// value, which is the second word (value_word). A caller that binds arguments itself
  /// precomputes these per parameter and appends them with add_words; the encoding exists only here.
  static uint64_t argument_word(const contract::ArgumentDesc& a) {
    return uint64_t{a.kind == contract::ArgumentDesc::Kind::buffer} | uint64_t{a.slot_is_null} << 1 |
           uint64_t{a.pointer_is_null} << 2 | uint64_t{a.buffer_bytes.has_value()} << 3 |
           uint64_t{a.scalar_type.has_value()} << 4 | uint64_t{a.kind == contract::ArgumentDesc::Kind::tensor_map} << 5 |
           uint64_t{a.kind != contract::ArgumentDesc::Kind::buffer && a.scalar_bits.has_value()} << 6 |
           uint64_t{static_cast<uint8_t>(a.scalar_type.value_or(ir::Type::error))} << 8 |
           uint64_t{a.size_bytes} << 32;
  }
  /// An argument's second word: a buffer's size, or a scalar's value (scalar_bits), 0 when unknown.
  static uint64_t value_word(const contract::ArgumentDesc& a) {
    return a.kind == contract::ArgumentDesc::Kind::buffer ? a.buffer_bytes.value_or(0) : a.scalar_bits.value_or(0);
  }
  /// The bit of argument_word that says the second word holds a buffer size.
  static constexpr uint64_t kBufferBytesKnown = uint64_t{1} << 3;
  /// Appends one argument's description (past kMaxArguments the shape stops being cacheable).
  void add(const contract::ArgumentDesc& a) { add_words(argument_word(a), value_word(a)); }
  /// Appends one argument as its two words (argument_word's, then value_word's).
  void add_words(uint64_t description, uint64_t buffer_bytes) {
    if (arguments_ == kMaxArguments) [[unlikely]] {
      cacheable_ = false;
      return;
    }
    const size_t at = kHeaderWords + kWordsPerArgument * arguments_++;
    words_[at] = description;
    words_[at + 1] = buffer_bytes;
    words_[7] += uint64_t{1} << 32;  // the argument count lives in the flags word's upper half
    tag_ = 0, mix_ = 0;
  }
  /// Appends `n` arguments (n <= kMaxArguments, none added before) whose words the caller writes
  /// into the returned array, two per argument as add_words takes them: for a caller that
  /// describes every argument in one pass.
  uint64_t* argument_words(size_t n) {
    arguments_ = n;
    words_[7] += uint64_t{n} << 32;
    tag_ = 0, mix_ = 0;
    return words_ + kHeaderWords;
  }
  /// Gives argument `index` (a scalar, already added) the value `bits`, as `add` encodes an
  /// ArgumentDesc whose scalar_bits is `bits`: for a caller that reads the value after the shape
  /// was built from a plan without it.
  void set_scalar_value(size_t index, uint64_t bits) {
    const size_t at = kHeaderWords + kWordsPerArgument * index;
    words_[at] |= kScalarValueKnown;
    words_[at + 1] = bits;
    tag_ = 0, mix_ = 0;
  }
  /// The bit of argument_word that says the second word holds a scalar's value.
  static constexpr uint64_t kScalarValueKnown = uint64_t{1} << 6;
  /// Marks the shape as one whose verdict must be computed every time.
  void set_uncacheable() { cacheable_ = false; }

  bool cacheable() const { return cacheable_; }
  size_t arguments() const { return arguments_; }
  /// The header (with the argument count folded into its flags word) and the arguments' words.
  size_t size() const { return kHeaderWords + kWordsPerArgument * arguments_; }
  /// Word i of the key; word 7 carries the argument count too.
  uint64_t word(size_t i) const { return words_[i]; }
  /// The key's size() words.
  const uint64_t* words() const { return words_; }
  std::array<uint64_t, 3> grid() const { return {words_[0], words_[1], words_[2]}; }
  uint64_t dynamic_shared_bytes() const { return words_[6]; }
  bool cooperative() const { return (words_[7] & 1) != 0; }
  bool stream_is_null() const { return (words_[7] & 8) != 0; }

  /// A cheap mix of every word: compared first, so that most misses cost one comparison. Never 0,
  /// the tag of an empty cache entry. The grid's words are mixed in last, into grid_free_mix().
  uint64_t tag() const {
    if (tag_ != 0) return tag_;  // computed once per shape (a missed lookup and the insert share it)
    uint64_t h = grid_free_mix();
    for (size_t i = 0; i < 3; ++i) h = rotate(h, 13) + words_[i];
    h *= 0x9E3779B97F4A7C15ull;
    tag_ = (h ^ (h >> 32)) | 1;
    return tag_;
  }
  /// The tag's mix of every word but the grid's (rotate and add, two operations a word, in two
  /// lanes over the even and odd words): the same for two shapes that differ in their grid only.
  uint64_t grid_free_mix() const {
    if (mix_ != 0) return mix_;
    static_assert(kHeaderWords % 2 == 0 && kWordsPerArgument == 2, "size() is even");
    uint64_t h = 0x9E3779B97F4A7C15ull, g = 0xC2B2AE3D27D4EB4Full;
    const size_t n = size();
    for (size_t i = 4; i < n; i += 2) {
      h = rotate(h, 13) + words_[i];
      g = rotate(g, 29) + words_[i + 1];
    }
    mix_ = ((rotate(h, 13) + words_[3]) ^ rotate(g, 7)) | 1;
    return mix_;
  }
  /// Gives this shape the grid_free_mix() of a shape known to differ from it in its grid only (a
  /// caller that kept it), so that its tag mixes in only the grid. A mix of another shape gives a
  /// wrong tag, which only makes the launch cache miss: entries are compared word by word.
  void adopt_grid_free_mix(uint64_t mix) {
    mix_ = mix;
    tag_ = 0;
  }

  friend bool operator==(const LaunchShape& a, const LaunchShape& b) {
    if (a.arguments_ != b.arguments_ || a.cacheable_ != b.cacheable_) return false;
    const size_t n = a.size();
    for (size_t i = 0; i < n; ++i)
      if (a.words_[i] != b.words_[i]) return false;
    return true;
  }

 private:
  uint64_t words_[kMaxWords];  // only the first size() are written
  uint32_t arguments_ = 0;
  bool cacheable_ = false;
  mutable uint64_t tag_ = 0;  ///< tag(), once computed (0: not yet)
  mutable uint64_t mix_ = 0;  ///< grid_free_mix(), once computed or adopted (0: not yet)
  static uint64_t rotate(uint64_t v, int bits) { return (v << bits) | (v >> (64 - bits)); }
};

}  // namespace ptxgate::validation
