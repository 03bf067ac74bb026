// Checked mode's contract between the generated code and the runtime: the sites a checked kernel
// guards (kept with KernelInfo), its hidden parameters, and the device-side record of a violation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/ir/access_sites.hpp"

namespace ptxgate::contract {

/// One site a checked kernel can reach (its own accesses and those of the device functions it calls).
struct CheckedSite {
  uint32_t id = 0;         ///< the module's site number (ir::AccessSiteTable), what the record names
  bool guarded = true;     ///< false: proven in bounds for every launch, so the code has no guard
  ir::SourceAccess access;
};

/// The most buffer parameters a kernel compiled in checked mode may have: the launch carries one
/// length per buffer in a fixed table (more is PG1906 when compiling).
inline constexpr size_t kMaxCheckedBuffers = 32;

/// What KernelInfo keeps of a kernel compiled in checked mode (CodegenOptions::checked). Its PTX
/// entry has hidden parameters after the user's and the grid-barrier word: one u64 per buffer
/// parameter (the buffer's length in bytes, in parameter order; UINT64_MAX when not known), then
/// the u64 address of a CheckedRecord slot the launch owns (CheckedRecord::kSlotBytes, 128-byte
/// aligned: the record, then the sink of stopped global accesses).
struct CheckedInfo {
  std::vector<CheckedSite> sites;  ///< sorted by id
  /// The site with number `id`, or null (a forged record).
  const CheckedSite* find(uint32_t id) const;
  /// Sites with a guard in the code.
  size_t guarded() const;
};

nlohmann::json to_json(const CheckedInfo& info);
[[nodiscard]] std::expected<CheckedInfo, std::string> checked_info_from_json(const nlohmann::json& j);

/// Why a guard stopped an access.
enum class Violation : uint32_t {
  out_of_bounds = 1,       ///< bytes outside the array: `value` the index, `limit` the array's bytes
  tile_coordinate = 2,     ///< a TMA tile's innermost coordinate: `value` it, `limit` the element size
  tile_alignment = 3,      ///< a TMA tile's shared address not 128-byte aligned: `value` it, `limit` 128
};

/// The record a checked launch writes: the number of threads that had an access stopped, and the
/// first violation of the thread that took that count from 0. 64 bytes, little-endian, zero before
/// the launch. The byte offsets are what the generated code stores to. A launch's record slot is
/// kSlotBytes long: after the record, at kSink, 16 bytes where stopped global stores and atomics
/// go, and at kZeros 16 bytes that stay zero, which stopped global loads read.
struct CheckedRecord {
  static constexpr size_t kBytes = 64;
  static constexpr size_t kSlotBytes = 128;
  static constexpr uint32_t kCount = 0, kSite = 8, kReason = 12, kThread = 16, kBlock = 28, kValue = 40, kLimit = 48;
  static constexpr uint32_t kSink = 64, kZeros = 80;
  uint64_t count = 0;
  uint32_t site = 0;
  uint32_t reason = 0;
  std::array<uint32_t, 3> thread{0, 0, 0}, block{0, 0, 0};
  uint64_t value = 0;
  uint64_t limit = 0;

  /// Decodes a record's bytes.
  static CheckedRecord decode(std::span<const std::byte, kBytes> bytes);
  /// The bytes the generated code would write (tests).
  std::array<std::byte, kBytes> encode() const;
};

}  // namespace ptxgate::contract
