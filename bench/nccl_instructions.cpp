// Host instructions ptxgate adds to issuing one all-reduce over every rank of a process, profiled on
// a CPU machine: the loops of ptxgate_nccl_bench's timed rounds (one group over all ranks, raw and
// through ptxgate's Group; one rank alone, raw and through run_collective) in loops of N, over the
// stand-in libcuda (PTXGATE_CUDA_DRIVER) and libnccl (PTXGATE_NCCL_LIBRARY) of the test build.
// bench/nccl_callgrind.sh runs it under callgrind and prints each loop's instructions per
// iteration minus its raw loop's. Each loop is its own never-inlined function so callgrind can
// attribute it.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/runtime.hpp"

using namespace ptxgate;
namespace be = ptxgate::runtime;

namespace {

/// One rank: its communicator, a stream and the buffers of the all-reduce.
struct Rank {
  be::Communicator* comm = nullptr;
  be::Stream stream;
  be::DeviceBuffer send, recv;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "nccl_instructions: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T need(std::expected<T, diag::Diagnostics> r, const char* what) {
  if (!r) die(fmt::format("{}: {}", what, diag::render_text(r.error())));
  return std::move(*r);
}
void need(std::expected<void, diag::Diagnostics> r, const char* what) {
  if (!r) die(fmt::format("{}: {}", what, diag::render_text(r.error())));
}

constexpr size_t kCount = 256;  // floats: the benchmark's host-issue measurement (1 KiB)

be::Collective all_reduce_of(Rank& r) {
  return {be::CollectiveKind::all_reduce, be::CollectiveEnd::of(be::DeviceSpan<float>(r.send, 0, kCount)),
          be::CollectiveEnd::of(be::DeviceSpan<float>(r.recv, 0, kCount)), ncclSum, 0};
}

// The loops callgrind attributes (names matched by bench/callgrind_loops.py).
extern "C" [[gnu::noinline]] int loop_raw_group(std::vector<Rank>* ranks, size_t n) {
  const be::NcclApi& api = ranks->front().comm->api();
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    bad += api.ncclGroupStart() != ncclSuccess;
    for (Rank& r : *ranks)
      bad += api.ncclAllReduce(reinterpret_cast<const void*>(r.send.pointer()), reinterpret_cast<void*>(r.recv.pointer()),
                               kCount, ncclFloat32, ncclSum, r.comm->handle(), r.stream.handle()) != ncclSuccess;
    bad += api.ncclGroupEnd() != ncclSuccess;
  }
  return bad;
}

extern "C" [[gnu::noinline]] int loop_ptxgate_group(std::vector<Rank>* ranks, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    be::Group group;
    for (Rank& r : *ranks) bad += !group.add(*r.comm, r.stream, all_reduce_of(r)).has_value();
    bad += !group.end().has_value();
  }
  return bad;
}

extern "C" [[gnu::noinline]] int loop_raw_single(Rank* r, size_t n) {
  const be::NcclApi& api = r->comm->api();
  int bad = 0;
  for (size_t i = 0; i < n; ++i)
    bad += api.ncclAllReduce(reinterpret_cast<const void*>(r->send.pointer()), reinterpret_cast<void*>(r->recv.pointer()),
                             kCount, ncclFloat32, ncclSum, r->comm->handle(), r->stream.handle()) != ncclSuccess;
  return bad;
}

extern "C" [[gnu::noinline]] int loop_ptxgate_single(Rank* r, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !be::run_collective(*r->comm, r->stream, all_reduce_of(*r)).has_value();
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  const int nranks = argc > 2 ? std::atoi(argv[2]) : 2;
  // "fresh": buffers never written by the host, so every earlier use is on the collective's stream.
  const bool host_writes = !(argc > 3 && std::string(argv[3]) == "fresh");
  if (nranks < 1) die("ranks must be at least 1");
  std::vector<std::shared_ptr<be::Context>> contexts;
  for (int i = 0; i < nranks; ++i) contexts.push_back(need(be::Context::open(i), "context"));
  be::CommunicatorOptions options;
  options.checked = false;  // the plain set of ptxgate_nccl_bench's timed rounds
  auto comms = need(be::Communicator::init_all(contexts, options), "ncclCommInitAll");
  std::vector<Rank> ranks(static_cast<size_t>(nranks));
  for (size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].comm = comms[i].get();
    ranks[i].stream = need(be::Stream::create(contexts[i]), "stream");
    ranks[i].send = need(be::DeviceBuffer::allocate(contexts[i], kCount * sizeof(float)), "send buffer");
    ranks[i].recv = need(be::DeviceBuffer::allocate(contexts[i], kCount * sizeof(float)), "receive buffer");
  }
  // As ptxgate_nccl_bench: the send buffers filled and uploaded on the legacy stream, then one of
  // each loop and a download of each result (the tracker knows the streams and has waited once for
  // the uploads, every lazy set-up is done).
  for (size_t i = 0; i < ranks.size() && host_writes; ++i) {
    need(ranks[i].send.fill_bytes(0), "fill");
    const float first = static_cast<float>(i + 1);
    need(ranks[i].send.upload(std::as_bytes(std::span<const float>(&first, 1))), "upload");
  }
  int bad = loop_raw_group(&ranks, 1) + loop_ptxgate_group(&ranks, 1) + loop_ptxgate_single(&ranks[0], 1);
  for (Rank& r : ranks) {
    if (!host_writes) break;
    float got = 0;
    need(r.recv.download(std::as_writable_bytes(std::span<float>(&got, 1))), "download");
  }
  bad += loop_raw_group(&ranks, 1) + loop_ptxgate_group(&ranks, 1) + loop_ptxgate_single(&ranks[0], 1);
  bad += loop_raw_group(&ranks, n);
  bad += loop_ptxgate_group(&ranks, n);
  bad += loop_raw_single(&ranks[0], n);
  bad += loop_ptxgate_single(&ranks[0], n);
  if (bad) die(fmt::format("{} calls failed", bad));
  for (Rank& r : ranks) need(r.comm->synchronize(r.stream), "synchronize");
  std::printf("nccl_instructions: %zu all-reduces of %zu floats per loop over %d ranks%s\n", n, kCount, nranks,
              host_writes ? "" : " (fresh buffers)");
  return 0;
}
