// NCCL on the real device: one rank (ncclCommInitAll over device 0) all-reduce, broadcast,
// all-gather and reduce-scatter equal their host references, and a validated collective
// that NCCL would reject never reaches it; two ranks (devices 0 and 1) when there are two GPUs.
// Each test reports SKIPPED with the reason (never passed) when NCCL or a second GPU is missing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "ptxgate/runtime/device.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "gpu_support.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;

namespace {

/// The NCCL table, or null with the case skipped and why.
const runtime::NcclApi* nccl_or_skip(const char* test) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);  // never NVLink multicast on the lent machines
  auto api = runtime::nccl();
  if (!api) {
    skip_case(std::string(test) + ": no NCCL: " + diag::render_text(api.error(), false));
    return nullptr;
  }
  std::printf("nccl: %s from %s\n", runtime::nccl_version_text((*api)->version).c_str(), (*api)->library.c_str());
  return *api;
}

}  // namespace

TEST_CASE("nccl gpu: one rank: all-reduce, broadcast, all-gather and reduce-scatter equal the host reference") {
  if (nccl_or_skip("one rank") == nullptr) return;
  const std::shared_ptr<runtime::Context> contexts[] = {gpu_runtime().shared_context()};
  auto comms = runtime::Communicator::init_all(contexts);
  if (!comms) FAIL(diag::render_text(comms.error()));
  runtime::Communicator& comm = *(*comms)[0];
  CHECK(comm.size() == 1);
  auto s = gpu_runtime().create_stream();
  REQUIRE(s);

  constexpr size_t n = 1 << 16;
  const auto x = random_values<float>(n, -4, 4, 11);
  std::vector<int64_t> xi(n);
  std::iota(xi.begin(), xi.end(), int64_t{-1000});
  auto send = upload(x), sendi = upload(xi);
  auto recv = *gpu_runtime().allocate(n * sizeof(float)), recvi = *gpu_runtime().allocate(n * sizeof(int64_t));

  // With one rank every reduction of x is x itself; the result goes through NCCL's kernels.
  PG_REQUIRE_OK(runtime::all_reduce(comm, *s, runtime::DeviceSpan<float>(send), runtime::DeviceSpan<float>(recv)));
  PG_REQUIRE_OK(comm.synchronize(*s));
  CHECK(mismatches(download<float>(recv), x, 0, 0, "all-reduce") == 0);

  PG_REQUIRE_OK(recvi.fill_bytes(0));
  PG_REQUIRE_OK(runtime::broadcast(comm, *s, runtime::DeviceSpan<int64_t>(sendi), runtime::DeviceSpan<int64_t>(recvi), 0));
  CHECK(download<int64_t>(recvi) == xi);  // tracked: the download waits for the broadcast

  PG_REQUIRE_OK(recv.fill_bytes(0));
  PG_REQUIRE_OK(runtime::all_gather(comm, *s, runtime::DeviceSpan<float>(send), runtime::DeviceSpan<float>(recv)));
  CHECK(mismatches(download<float>(recv), x, 0, 0, "all-gather") == 0);

  PG_REQUIRE_OK(recvi.fill_bytes(0));
  PG_REQUIRE_OK(runtime::reduce_scatter(comm, *s, runtime::DeviceSpan<int64_t>(sendi),
                                        runtime::DeviceSpan<int64_t>(recvi), runtime::ReduceOp::max));
  CHECK(download<int64_t>(recvi) == xi);

  // In place: all-reduce sum of one buffer onto itself.
  PG_REQUIRE_OK(runtime::all_reduce(comm, *s, runtime::DeviceSpan<int64_t>(sendi), runtime::DeviceSpan<int64_t>(sendi)));
  CHECK(download<int64_t>(sendi) == xi);

  // A count that does not fit is blocked before NCCL; the communicator stays healthy.
  auto bad = runtime::all_gather(comm, *s, runtime::DeviceSpan<float>(send), runtime::DeviceSpan<float>(recv, 0, n / 2));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().items().front().code == diag::Code::collective_count);
  PG_REQUIRE_OK(comm.healthy("after a blocked call"));
  PG_REQUIRE_OK(comm.synchronize(*s));
}

TEST_CASE("nccl gpu: two ranks in one process: all-reduce and all-gather across devices 0 and 1") {
  auto devices = runtime::list_live_devices();
  REQUIRE(devices);
  if (devices->size() < 2) {
    skip_case("needs 2 GPUs, found " + std::to_string(devices->size()));
    return;
  }
  if (nccl_or_skip("two ranks") == nullptr) return;
  auto ctx1 = runtime::Context::open(1);
  if (!ctx1) FAIL(diag::render_text(ctx1.error()));
  runtime::RuntimeOptions options;
  runtime::Runtime rt1(*ctx1, options);
  const std::shared_ptr<runtime::Context> contexts[] = {gpu_runtime().shared_context(), *ctx1};
  auto comms = runtime::Communicator::init_all(contexts);
  if (!comms) FAIL(diag::render_text(comms.error()));
  runtime::Runtime* rts[] = {&gpu_runtime(), &rt1};

  constexpr size_t n = 4096;
  std::vector<std::vector<float>> x;
  std::vector<runtime::DeviceBuffer> send, sum, gathered;
  std::vector<runtime::Stream> streams;
  for (int r = 0; r < 2; ++r) {
    x.push_back(random_values<float>(n, -1, 1, 100 + static_cast<uint64_t>(r)));
    send.push_back(*rts[r]->upload(std::span<const float>(x.back())));
    sum.push_back(*rts[r]->allocate(n * sizeof(float)));
    gathered.push_back(*rts[r]->allocate(2 * n * sizeof(float)));
    streams.push_back(*rts[r]->create_stream());
  }
  // Both ranks' calls of one collective in one group (one thread drives both devices).
  runtime::Group reduce_group;
  for (int r = 0; r < 2; ++r)
    PG_REQUIRE_OK(reduce_group.add(*(*comms)[static_cast<size_t>(r)], streams[static_cast<size_t>(r)],
                                   {runtime::CollectiveKind::all_reduce, runtime::CollectiveEnd::of(runtime::DeviceSpan<float>(send[static_cast<size_t>(r)])),
                                    runtime::CollectiveEnd::of(runtime::DeviceSpan<float>(sum[static_cast<size_t>(r)])), ncclSum, 0}));
  PG_REQUIRE_OK(reduce_group.end());
  runtime::Group gather_group;
  for (int r = 0; r < 2; ++r)
    PG_REQUIRE_OK(gather_group.add(*(*comms)[static_cast<size_t>(r)], streams[static_cast<size_t>(r)],
                                   {runtime::CollectiveKind::all_gather, runtime::CollectiveEnd::of(runtime::DeviceSpan<float>(send[static_cast<size_t>(r)])),
                                    runtime::CollectiveEnd::of(runtime::DeviceSpan<float>(gathered[static_cast<size_t>(r)])), ncclSum, 0}));
  PG_REQUIRE_OK(gather_group.end());
  std::vector<float> want_sum(n), want_gather;
  for (size_t i = 0; i < n; ++i) want_sum[i] = x[0][i] + x[1][i];
  want_gather = x[0];
  want_gather.insert(want_gather.end(), x[1].begin(), x[1].end());
  for (size_t r = 0; r < 2; ++r) {
    PG_REQUIRE_OK((*comms)[r]->synchronize(streams[r]));
    auto got = rts[r]->download<float>(sum[r]);
    REQUIRE(got);
    CHECK(mismatches(*got, want_sum, 1e-6, 1e-6, "two-rank all-reduce") == 0);
    auto all = rts[r]->download<float>(gathered[r]);
    REQUIRE(all);
    CHECK(mismatches(*all, want_gather, 0, 0, "two-rank all-gather") == 0);
  }
}

// ---- Two processes, one rank each: the documented one-process-per-GPU path (docs/nccl.md). ----

namespace ptxgate::gpu_test {

/// `--nccl-rank R ID_FILE`: rank R of 2 on device R, the unique id read from ID_FILE; all-reduces
/// (in place) x_r[i] = (r + 1) * (i % 97) and checks the sum 3 * (i % 97). Exit 0 when equal.
int nccl_rank_child(int argc, char** argv) {
  if (argc < 4) return 2;
  const int rank = std::atoi(argv[2]);
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  auto report = [&](const diag::Diagnostics& d, int code) {
    std::fprintf(stderr, "nccl child rank %d: %s\n", rank, diag::render_text(d, false).c_str());
    return code;
  };
  auto id = runtime::UniqueId::read_file(argv[3]);
  if (!id) return report(id.error(), 3);
  auto ctx = runtime::Context::open(rank);
  if (!ctx) return report(ctx.error(), 4);
  runtime::Runtime rt(*ctx, runtime::RuntimeOptions{});
  auto comm = runtime::Communicator::init_rank(*ctx, 2, rank, *id);
  if (!comm) return report(comm.error(), 5);
  constexpr size_t n = 1 << 14;
  std::vector<float> x(n), want(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 97));
    want[i] = static_cast<float>(3 * static_cast<int>(i % 97));
  }
  auto buf = rt.upload(std::span<const float>(x));
  if (!buf) return report(buf.error(), 6);
  auto s = rt.create_stream();
  if (!s) return report(s.error(), 6);
  if (auto ok = runtime::all_reduce(**comm, *s, runtime::DeviceSpan<float>(*buf), runtime::DeviceSpan<float>(*buf)); !ok)
    return report(ok.error(), 7);
  if (auto ok = (*comm)->synchronize(*s); !ok) return report(ok.error(), 8);
  auto got = rt.download<float>(*buf);
  if (!got) return report(got.error(), 9);
  if (*got != want) {
    std::fprintf(stderr, "nccl child rank %d: all-reduce result differs from 3 * (i %% 97)\n", rank);
    return 10;
  }
  std::printf("nccl child rank %d: all-reduce of %zu floats ok\n", rank, n);
  return 0;
}

}  // namespace ptxgate::gpu_test

TEST_CASE("nccl gpu: two processes, one rank each, the unique id passed through a file") {
  auto devices = runtime::list_live_devices();
  REQUIRE(devices);
  if (devices->size() < 2) {
    skip_case("needs 2 GPUs, found " + std::to_string(devices->size()));
    return;
  }
  if (nccl_or_skip("two processes") == nullptr) return;
  auto id = runtime::UniqueId::create();
  if (!id) FAIL(diag::render_text(id.error()));
  const auto file = std::filesystem::temp_directory_path() / ("ptxgate-nccl-id-" + std::to_string(::getpid()));
  PG_REQUIRE_OK(id->write_file(file));
  const std::string self = self_command();
  // Both ranks must run at once (ncclCommInitRank waits for every rank); a hung rank is killed.
  int rc[2] = {-1, -1};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      const std::string cmd = "timeout 300 " + self + " --nccl-rank " + std::to_string(r) + " '" + file.string() + "'";
      rc[r] = std::system(cmd.c_str());
    });
  for (auto& t : ranks) t.join();
  std::filesystem::remove(file);
  CHECK(rc[0] == 0);
  CHECK(rc[1] == 0);
}
