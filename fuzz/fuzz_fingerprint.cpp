// Fuzz target: checked mode's fingerprint records, which arrive from other ranks. Mode 0: the
// input is a communicator's receive slots (first byte: ranks, 1-8), each decoded and, when all
// read, matched from every rank's side. Mode 1: the input gives the fields of each rank's call
// (kinds, types, counts, reductions, roots, peers), encoded, decoded back, described and matched.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ptxgate/runtime/internal/collective_match.hpp"

namespace {

using namespace ptxgate;
using namespace ptxgate::runtime;

/// Bytes of the input, taken one at a time (zero once it runs out).
struct Reader {
  const uint8_t* data;
  size_t size;
  uint8_t byte() {
    if (size == 0) return 0;
    --size;
    return *data++;
  }
  uint64_t wide() { return uint64_t{byte()} | uint64_t{byte()} << 8 | uint64_t{byte()} << 16; }
};

/// Every rank's verdict: all equal, and a mismatch report is a PG4213 error naming something.
void match_everywhere(const std::vector<internal::Fingerprint>& all) {
  bool any = false, none = false;
  for (int me = 0; me < static_cast<int>(all.size()); ++me) {
    auto d = internal::match_fingerprints(all, me);
    (d.empty() ? none : any) = true;
    for (const auto& item : d)
      if (item.code != diag::Code::collective_mismatch || item.message.empty()) __builtin_trap();
  }
  if (any && none) __builtin_trap();  // ranks would disagree on whether the call runs
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  const uint8_t head = in.byte();
  const int nranks = 1 + head % 8;
  std::vector<internal::Fingerprint> all;
  if ((head & 0x80) == 0) {
    const size_t bytes = internal::fingerprint_bytes(nranks);
    for (int r = 0; r < nranks; ++r) {
      std::vector<std::byte> slot(bytes);
      for (auto& b : slot) b = std::byte{in.byte()};
      auto f = internal::decode_fingerprint(slot, nranks);
      if (!f) return 0;
      (void)internal::describe_fingerprint(*f);
      f->rank = r;
      all.push_back(std::move(*f));
    }
    match_everywhere(all);
    return 0;
  }
  const uint64_t seq = in.byte() % 3;
  for (int r = 0; r < nranks; ++r) {
    std::vector<Collective> calls(in.byte() % 8);
    for (auto& c : calls) {
      c.kind = static_cast<CollectiveKind>(in.byte() % 7);
      c.send.type = c.recv.type = static_cast<ncclDataType_t>(in.byte() % 10);
      c.send.count = c.recv.count = in.wide();
      c.op = in.byte() % 6;
      c.root = static_cast<int>(in.byte() % (nranks + 1));  // one past the last: out of range
    }
    const auto kind = static_cast<internal::FingerprintKind>(1 + in.byte() % 3);
    internal::Fingerprint f = kind == internal::FingerprintKind::call
                                  ? internal::Fingerprint::of_call(r, nranks, seq, calls)
                                  : internal::Fingerprint::of(kind, r, nranks, seq);
    std::vector<std::byte> bytes(internal::fingerprint_bytes(nranks));
    internal::encode_fingerprint(f, bytes);
    auto back = internal::decode_fingerprint(bytes, nranks);
    if (!back) __builtin_trap();  // every record this build writes, it reads
    (void)internal::describe_fingerprint(*back);
    all.push_back(std::move(*back));
  }
  match_everywhere(all);
  return 0;
}
