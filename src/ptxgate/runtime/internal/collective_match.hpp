// Matched collectives (checked mode): the fingerprint of one call of one rank — sequence number,
// operation, element type, count, reduction, root or peer — as a fixed-size record every rank
// exchanges before the call runs, and the rules that compare the records the same way on every rank.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime::internal {

/// What a fingerprint stands for: a call (one collective, or a group of collectives and
/// sends/receives), the communicator's set-up exchange, or its finalisation.
enum class FingerprintKind : uint32_t { call = 1, setup = 2, finalize = 3 };

/// One collective as NCCL sees it: count is NCCL's count (all-gather: per rank, the send
/// count; reduce-scatter: the receive count); op only for reductions, root only for rooted ones.
struct FingerprintCollective {
  uint8_t kind = 0;  ///< CollectiveKind
  uint8_t type = 0;  ///< ncclDataType_t
  uint8_t op = 0;    ///< ncclRedOp_t (reductions), else 0
  uint8_t reserved = 0;
  int32_t root = 0;  ///< broadcast and reduce, else 0
  uint64_t count = 0;
  bool operator==(const FingerprintCollective&) const = default;
};

/// What one rank sends to and receives from one peer in one call, in NCCL's pairing order.
struct FingerprintPeer {
  uint32_t sends = 0, recvs = 0;
  uint64_t first_send_count = 0, first_recv_count = 0;
  uint8_t first_send_type = 0, first_recv_type = 0;
  uint64_t send_digest = 0, recv_digest = 0;  ///< over every (count, type), in order
};

/// The collectives of a call a record holds in full (the digest covers all of them).
inline constexpr size_t kDetailedCollectives = 4;

/// One rank's fingerprint of one call.
struct Fingerprint {
  FingerprintKind kind = FingerprintKind::call;
  int32_t rank = 0, nranks = 0;
  uint64_t seq = 0;        ///< the call's number on this communicator (the set-up exchange is 0)
  uint32_t collectives = 0;
  uint32_t p2p = 0;        ///< sends and receives in the call
  std::array<FingerprintCollective, kDetailedCollectives> detailed{};
  uint64_t collective_digest = 0;
  std::vector<FingerprintPeer> peers;  ///< one per rank of the communicator

  /// The fingerprint of a call of `calls` (validated collectives, sends and receives) on `rank`.
  static Fingerprint of_call(int rank, int nranks, uint64_t seq, std::span<const Collective> calls);
  /// A set-up or finalize fingerprint.
  static Fingerprint of(FingerprintKind kind, int rank, int nranks, uint64_t seq);
};

/// Bytes of one encoded record on a communicator of `nranks` (the same on every rank).
size_t fingerprint_bytes(int nranks);
/// Writes the record (magic, fields, checksum) into `out` (fingerprint_bytes(f.nranks) bytes).
void encode_fingerprint(const Fingerprint& f, std::span<std::byte> out);
/// Reads a record of a communicator of `nranks`; the reason when it is not one (wrong size,
/// magic, checksum or field).
[[nodiscard]] std::expected<Fingerprint, std::string> decode_fingerprint(std::span<const std::byte> in, int nranks);

/// "all-reduce of 1024 f32 (sum)", "group of 2 sends and 2 receives", "finalize (the communicator's end)".
std::string describe_fingerprint(const Fingerprint& f);

/// "called all-reduce of 8 f32 (sum) as call #3", "finalized the communicator at call #3".
std::string what_rank_did(const Fingerprint& f);

/// Compares every rank's fingerprint of one exchange (indexed by rank, all present). Empty when
/// they match; otherwise the PG4213 error rank `me` reports, naming its own call and the other
/// ranks'. The verdict is the same on every rank, which sees the same records.
diag::Diagnostics match_fingerprints(std::span<const Fingerprint> all, int me);

}  // namespace ptxgate::runtime::internal
