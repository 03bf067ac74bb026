// Fingerprints of collective calls: building, the fixed record layout, and the matching rules.
#include "ptxgate/runtime/internal/collective_match.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <xxhash.h>

namespace ptxgate::runtime::internal {
namespace {

// The record: a 64-byte header, kDetailedCollectives collectives of 16 bytes, one 48-byte entry
// per rank. Fixed-width fields at fixed offsets; every rank of a communicator runs the same build
// on the same byte order, so the fields are copied as they are.
constexpr uint32_t kMagic = 0x31465047;  // "GPF1"
constexpr size_t kHeaderBytes = 64, kCollectiveBytes = 16, kPeerBytes = 48;
constexpr size_t kChecksumOffset = 40;

bool is_reduction(CollectiveKind k) {
  return k == CollectiveKind::all_reduce || k == CollectiveKind::reduce || k == CollectiveKind::reduce_scatter;
}
bool is_rooted(CollectiveKind k) { return k == CollectiveKind::broadcast || k == CollectiveKind::reduce; }

template <class T>
void put(std::span<std::byte> out, size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}
template <class T>
T get(std::span<const std::byte> in, size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

std::array<std::byte, kCollectiveBytes> collective_bytes(const FingerprintCollective& c) {
  std::array<std::byte, kCollectiveBytes> b{};
  put(std::span<std::byte>(b), 0, c.kind);
  put(std::span<std::byte>(b), 1, c.type);
  put(std::span<std::byte>(b), 2, c.op);
  put(std::span<std::byte>(b), 4, c.root);
  put(std::span<std::byte>(b), 8, c.count);
  return b;
}

uint64_t chain(uint64_t digest, uint64_t count, uint8_t type) {
  std::array<std::byte, 9> b{};
  put(std::span<std::byte>(b), 0, count);
  put(std::span<std::byte>(b), 8, type);
  return XXH3_64bits_withSeed(b.data(), b.size(), digest);
}

std::string_view op_name(int op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "?";
  }
}

std::string describe_collective(const FingerprintCollective& c) {
  const auto kind = static_cast<CollectiveKind>(c.kind);
  const auto type = nccl_type_name(static_cast<ncclDataType_t>(c.type));
  switch (kind) {
    case CollectiveKind::all_reduce: return fmt::format("all-reduce of {} {} ({})", c.count, type, op_name(c.op));
    case CollectiveKind::broadcast: return fmt::format("broadcast of {} {} from root {}", c.count, type, c.root);
    case CollectiveKind::reduce: return fmt::format("reduce of {} {} ({}) to root {}", c.count, type, op_name(c.op), c.root);
    case CollectiveKind::all_gather: return fmt::format("all-gather of {} {} per rank", c.count, type);
    case CollectiveKind::reduce_scatter:
      return fmt::format("reduce-scatter of {} {} per rank ({})", c.count, type, op_name(c.op));
    default: return fmt::format("{} of {} {}", collective_name(kind), c.count, type);
  }
}

std::string messages(uint32_t n, uint64_t first_count, uint8_t first_type) {
  const auto type = nccl_type_name(static_cast<ncclDataType_t>(first_type));
  if (n == 1) return fmt::format("1 message of {} {}", first_count, type);
  return fmt::format("{} messages (the first of {} {})", n, first_count, type);
}

/// Equal calls as far as the call itself goes: kind, number, and the collectives (sends and
/// receives are matched pairwise).
bool same_call(const Fingerprint& a, const Fingerprint& b) {
  if (a.kind != b.kind || a.seq != b.seq || a.collectives != b.collectives || a.collective_digest != b.collective_digest)
    return false;
  const size_t n = std::min<size_t>(a.collectives, kDetailedCollectives);
  return std::equal(a.detailed.begin(), a.detailed.begin() + static_cast<std::ptrdiff_t>(n), b.detailed.begin());
}

std::string rank_name(int rank, int me) {
  return rank == me ? fmt::format("this rank ({})", rank) : fmt::format("rank {}", rank);
}

constexpr const char* kFix =
    "make every rank call the same collectives in the same order, with the same element type, count, "
    "reduction and root, and matching sends and receives; nothing of this call reached NCCL, and the "
    "communicator was stopped on every rank: create a new one";

}  // namespace

Fingerprint Fingerprint::of(FingerprintKind kind, int rank, int nranks, uint64_t seq) {
  Fingerprint f;
  f.kind = kind;
  f.rank = rank;
  f.nranks = nranks;
  f.seq = seq;
  f.peers.resize(static_cast<size_t>(std::max(nranks, 0)));
  return f;
}

Fingerprint Fingerprint::of_call(int rank, int nranks, uint64_t seq, std::span<const Collective> calls) {
  Fingerprint f = of(FingerprintKind::call, rank, nranks, seq);
  for (const Collective& c : calls) {
    if (c.kind == CollectiveKind::send || c.kind == CollectiveKind::recv) {
      if (c.root < 0 || c.root >= nranks) continue;  // validate_collective rejected it already
      FingerprintPeer& p = f.peers[static_cast<size_t>(c.root)];
      ++f.p2p;
      if (c.kind == CollectiveKind::send) {
        if (p.sends++ == 0) p.first_send_count = c.send.count, p.first_send_type = static_cast<uint8_t>(c.send.type);
        p.send_digest = chain(p.send_digest, c.send.count, static_cast<uint8_t>(c.send.type));
      } else {
        if (p.recvs++ == 0) p.first_recv_count = c.recv.count, p.first_recv_type = static_cast<uint8_t>(c.recv.type);
        p.recv_digest = chain(p.recv_digest, c.recv.count, static_cast<uint8_t>(c.recv.type));
      }
      continue;
    }
    FingerprintCollective e;
    e.kind = static_cast<uint8_t>(c.kind);
    e.type = static_cast<uint8_t>(c.send.type);
    e.op = is_reduction(c.kind) ? static_cast<uint8_t>(c.op) : 0;
    e.root = is_rooted(c.kind) ? c.root : 0;
    e.count = c.kind == CollectiveKind::reduce_scatter ? c.recv.count : c.send.count;
    if (f.collectives < kDetailedCollectives) f.detailed[f.collectives] = e;
    ++f.collectives;
    const auto bytes = collective_bytes(e);
    f.collective_digest = XXH3_64bits_withSeed(bytes.data(), bytes.size(), f.collective_digest);
  }
  return f;
}

size_t fingerprint_bytes(int nranks) {
  return kHeaderBytes + kDetailedCollectives * kCollectiveBytes + static_cast<size_t>(std::max(nranks, 0)) * kPeerBytes;
}

void encode_fingerprint(const Fingerprint& f, std::span<std::byte> out) {
  std::fill(out.begin(), out.end(), std::byte{0});
  put(out, 0, kMagic);
  put(out, 4, static_cast<uint32_t>(f.kind));
  put(out, 8, f.rank);
  put(out, 12, f.nranks);
  put(out, 16, f.seq);
  put(out, 24, f.collectives);
  put(out, 28, f.p2p);
  put(out, 32, f.collective_digest);
  size_t at = kHeaderBytes;
  for (const auto& c : f.detailed) {
    const auto b = collective_bytes(c);
    std::memcpy(out.data() + at, b.data(), b.size());
    at += kCollectiveBytes;
  }
  for (const auto& p : f.peers) {
    put(out, at, p.sends);
    put(out, at + 4, p.recvs);
    put(out, at + 8, p.first_send_count);
    put(out, at + 16, p.first_recv_count);
    put(out, at + 24, p.first_send_type);
    put(out, at + 25, p.first_recv_type);
    put(out, at + 32, p.send_digest);
    put(out, at + 40, p.recv_digest);
    at += kPeerBytes;
  }
  put(out, kChecksumOffset, XXH3_64bits(out.data(), out.size()));
}

std::expected<Fingerprint, std::string> decode_fingerprint(std::span<const std::byte> in, int nranks) {
  const size_t want = fingerprint_bytes(nranks);
  if (in.size() != want) return std::unexpected(fmt::format("{} bytes, expected {}", in.size(), want));
  if (get<uint32_t>(in, 0) != kMagic) return std::unexpected(std::string("no fingerprint (wrong magic number)"));
  std::vector<std::byte> zeroed(in.begin(), in.end());
  const uint64_t checksum = get<uint64_t>(in, kChecksumOffset);
  put(std::span<std::byte>(zeroed), kChecksumOffset, uint64_t{0});
  if (XXH3_64bits(zeroed.data(), zeroed.size()) != checksum)
    return std::unexpected(std::string("the checksum does not match (a torn or damaged record)"));
  Fingerprint f;
  const uint32_t kind = get<uint32_t>(in, 4);
  if (kind < 1 || kind > 3) return std::unexpected(fmt::format("unknown kind {}", kind));
  f.kind = static_cast<FingerprintKind>(kind);
  f.rank = get<int32_t>(in, 8);
  f.nranks = get<int32_t>(in, 12);
  if (f.nranks != nranks) return std::unexpected(fmt::format("made for {} ranks, not {}", f.nranks, nranks));
  if (f.rank < 0 || f.rank >= nranks) return std::unexpected(fmt::format("rank {} out of range", f.rank));
  f.seq = get<uint64_t>(in, 16);
  f.collectives = get<uint32_t>(in, 24);
  f.p2p = get<uint32_t>(in, 28);
  f.collective_digest = get<uint64_t>(in, 32);
  size_t at = kHeaderBytes;
  for (size_t i = 0; i < kDetailedCollectives; ++i, at += kCollectiveBytes) {
    FingerprintCollective& c = f.detailed[i];
    c.kind = get<uint8_t>(in, at);
    c.type = get<uint8_t>(in, at + 1);
    c.op = get<uint8_t>(in, at + 2);
    c.root = get<int32_t>(in, at + 4);
    c.count = get<uint64_t>(in, at + 8);
    if (i < f.collectives && c.kind > static_cast<uint8_t>(CollectiveKind::reduce_scatter))
      return std::unexpected(fmt::format("collective {} has unknown kind {}", i, c.kind));
  }
  f.peers.resize(static_cast<size_t>(nranks));
  uint64_t p2p = 0;
  for (auto& p : f.peers) {
    p.sends = get<uint32_t>(in, at);
    p.recvs = get<uint32_t>(in, at + 4);
    p.first_send_count = get<uint64_t>(in, at + 8);
    p.first_recv_count = get<uint64_t>(in, at + 16);
    p.first_send_type = get<uint8_t>(in, at + 24);
    p.first_recv_type = get<uint8_t>(in, at + 25);
    p.send_digest = get<uint64_t>(in, at + 32);
    p.recv_digest = get<uint64_t>(in, at + 40);
    p2p += uint64_t{p.sends} + p.recvs;
    at += kPeerBytes;
  }
  if (p2p != f.p2p) return std::unexpected(fmt::format("{} sends and receives listed, {} counted", f.p2p, p2p));
  return f;
}

std::string describe_fingerprint(const Fingerprint& f) {
  if (f.kind == FingerprintKind::finalize) return "finalize (the end of the communicator)";
  if (f.kind == FingerprintKind::setup) return "the communicator's set-up";
  if (f.collectives == 1 && f.p2p == 0) return describe_collective(f.detailed[0]);
  std::vector<std::string> parts;
  for (uint32_t i = 0; i < std::min<uint32_t>(f.collectives, kDetailedCollectives); ++i)
    parts.push_back(describe_collective(f.detailed[i]));
  if (f.collectives > kDetailedCollectives)
    parts.push_back(fmt::format("{} more collectives", f.collectives - kDetailedCollectives));
  size_t listed = 0, peer_items = 0;
  for (size_t q = 0; q < f.peers.size(); ++q) {
    const FingerprintPeer& p = f.peers[q];
    for (int dir = 0; dir < 2; ++dir) {
      const uint32_t n = dir == 0 ? p.sends : p.recvs;
      if (n == 0) continue;
      ++peer_items;
      if (listed == 4) continue;
      ++listed;
      parts.push_back(dir == 0 ? fmt::format("send to rank {}: {}", q, messages(n, p.first_send_count, p.first_send_type))
                               : fmt::format("receive from rank {}: {}", q,
                                             messages(n, p.first_recv_count, p.first_recv_type)));
    }
  }
  if (peer_items > listed) parts.push_back(fmt::format("{} more peers' sends or receives", peer_items - listed));
  if (parts.empty()) return "an empty group";
  return fmt::format("group of {}", fmt::join(parts, ", "));
}

std::string what_rank_did(const Fingerprint& f) {
  switch (f.kind) {
    case FingerprintKind::finalize: return fmt::format("finalized the communicator at call #{}", f.seq);
    case FingerprintKind::setup: return fmt::format("was setting the communicator up (call #{})", f.seq);
    case FingerprintKind::call: break;
  }
  return fmt::format("called {} as call #{}", describe_fingerprint(f), f.seq);
}

diag::Diagnostics match_fingerprints(std::span<const Fingerprint> all, int me) {
  diag::Diagnostics d;
  const int n = static_cast<int>(all.size());
  if (me < 0 || me >= n) return d;
  const Fingerprint& mine = all[static_cast<size_t>(me)];
  // The call itself: every rank's must equal this rank's (equality is transitive, so when any two
  // ranks differ this rank differs from one of them and reports it).
  int first_other = -1;
  for (int q = 0; q < n; ++q)
    if (q != me && !same_call(mine, all[static_cast<size_t>(q)])) {
      first_other = q;
      break;
    }
  if (first_other >= 0) {
    const Fingerprint& other = all[static_cast<size_t>(first_other)];
    auto& e = d.add(diag::Code::collective_mismatch,
                    fmt::format("ranks called different collectives: this rank ({} of {}) {}, but rank {} {}", me, n,
                                what_rank_did(mine), first_other, what_rank_did(other)),
                    {}, kFix);
    for (int q = 0; q < n; ++q)
      if (q != me) e.notes.push_back(fmt::format("rank {} {}", q, what_rank_did(all[static_cast<size_t>(q)])));
    return d;
  }
  // Sends and receives: rank a's sends to b pair, in order, with b's receives from a.
  std::vector<std::string> problems;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      const FingerprintPeer& s = all[static_cast<size_t>(a)].peers[static_cast<size_t>(b)];
      const FingerprintPeer& r = all[static_cast<size_t>(b)].peers[static_cast<size_t>(a)];
      if (s.sends == r.recvs && s.send_digest == r.recv_digest) continue;
      std::string sent = s.sends == 0 ? "nothing" : messages(s.sends, s.first_send_count, s.first_send_type);
      std::string received = r.recvs == 0 ? "nothing" : messages(r.recvs, r.first_recv_count, r.first_recv_type);
      std::string text = fmt::format("{} sends {} {}, but {} receives {} from {}", rank_name(a, me),
                                     a == b ? "itself" : rank_name(b, me), sent, rank_name(b, me), received,
                                     a == b ? "itself" : rank_name(a, me));
      // Problems this rank takes part in come first.
      if (a == me || b == me) problems.insert(problems.begin(), std::move(text));
      else problems.push_back(std::move(text));
    }
  if (problems.empty()) return d;
  auto& e = d.add(diag::Code::collective_mismatch,
                  fmt::format("sends and receives of call #{} do not pair up across ranks (this rank: {} of {}): {}",
                              mine.seq, me, n, problems.front()),
                  {}, kFix);
  for (size_t i = 1; i < problems.size() && i < 8; ++i) e.notes.push_back(problems[i]);
  if (problems.size() > 8) e.notes.push_back(fmt::format("and {} more pairs", problems.size() - 8));
  return d;
}

}  // namespace ptxgate::runtime::internal
