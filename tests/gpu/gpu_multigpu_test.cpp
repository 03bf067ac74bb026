// Several GPUs (ctest label multigpu; `ptxgate_gpu_tests --min-gpus 2 -tc='multigpu*'` exits 77 on
// fewer than 2): the DeviceSet on the real topology (peer access as cuDeviceCanAccessPeer says, a
// kernel reading a peer's buffer, peer copies, PG4070 where there is no peer access), and every
// collective against a host reference over all GPUs in one process and with one process per GPU,
// plain and in checked mode (a fingerprint exchange before each collective).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "gpu_collectives.hpp"
#include "gpu_support.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;

namespace {

constexpr size_t kElements = 1 << 16;

}  // namespace

TEST_CASE("multigpu: the device set enables peer access as the topology allows; kernels read peer buffers") {
  auto set = all_gpus_or_skip("device set");
  if (!set) return;
  std::printf("multigpu: %zu GPUs\n%s", set->size(), runtime::format_peer_matrix(set->peers()).c_str());
  auto& rt0 = set->runtime(0);
  auto path = example_path("saxpy");
  auto k = rt0.compile(read_text(path), "saxpy", path.string());
  if (!k) FAIL(diag::render_text(k.error()));
  auto s0 = rt0.create_stream();
  REQUIRE(s0);
  const auto y = random_values<float>(kElements, -1, 1, 5);
  for (size_t j = 1; j < set->size(); ++j) {
    CHECK(set->peer_enabled(0, j) == set->peers().can_access(0, j));
    const auto x = random_values<float>(kElements, -1, 1, 10 + j);
    auto xj = set->runtime(j).upload(std::span<const float>(x));
    auto y0 = rt0.upload(std::span<const float>(y));
    REQUIRE(xj);
    REQUIRE(y0);
    auto launched = (*k)->launch(runtime::LaunchConfig::linear((kElements + 255) / 256, 256),
                                 {*y0, *xj, 2.0f, static_cast<uint32_t>(kElements)}, &*s0);
    if (set->peer_enabled(0, j)) {
      PG_REQUIRE_OK(launched);
      auto got = rt0.download<float>(*y0);  // tracked: waits for the launch
      REQUIRE(got);
      std::vector<float> want(kElements);
      for (size_t i = 0; i < kElements; ++i) want[i] = 2.0f * x[i] + y[i];
      CHECK(mismatches(*got, want, 1e-6, 1e-6, "saxpy reading a peer's x") == 0);
    } else {
      REQUIRE_FALSE(launched);
      CHECK(launched.error().items().front().code == diag::Code::peer_not_accessible);
      std::printf("multigpu: device 0 has no peer access to device %zu: the launch is PG4070, as it should be\n", j);
    }
  }
}

TEST_CASE("multigpu: peer copies between device 0 and every other device carry the data both ways") {
  auto set = all_gpus_or_skip("peer copies");
  if (!set) return;
  const auto data = random_values<double>(kElements, -1e6, 1e6, 77);
  for (size_t j = 1; j < set->size(); ++j) {
    auto a = set->runtime(0).upload(std::span<const double>(data));
    auto b = set->runtime(j).allocate(kElements * sizeof(double));
    auto back = set->runtime(0).allocate(kElements * sizeof(double));
    auto s0 = set->runtime(0).create_stream();
    auto sj = set->runtime(j).create_stream();
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(back);
    REQUIRE(s0);
    REQUIRE(sj);
    // 0 -> j on device 0's stream, then j -> 0 on device j's stream: tracking orders the second after the first.
    PG_REQUIRE_OK(runtime::copy_peer_async(*s0, runtime::DeviceSpan<double>(*b), runtime::DeviceSpan<double>(*a)));
    PG_REQUIRE_OK(runtime::copy_peer_async(*sj, runtime::DeviceSpan<double>(*back), runtime::DeviceSpan<double>(*b)));
    auto got = set->runtime(0).download<double>(*back);
    REQUIRE(got);
    CHECK(*got == data);
    if (set->peer_enabled(0, j)) {  // a plain device-to-device copy through peer access
      PG_REQUIRE_OK(back->fill_bytes(0));
      PG_REQUIRE_OK(runtime::copy_async(*s0, runtime::DeviceSpan<double>(*back), runtime::DeviceSpan<double>(*b)));
      auto again = set->runtime(0).download<double>(*back);
      REQUIRE(again);
      CHECK(*again == data);
    }
  }
}

namespace {

runtime::CommunicatorOptions plain_or_checked(bool checked) {
  runtime::CommunicatorOptions o;
  o.checked = checked;
  if (checked) o.timeout = std::chrono::seconds(60);
  return o;
}

}  // namespace

TEST_CASE("multigpu: every collective over all GPUs in one process equals the host reference, plain and checked") {
  auto set = all_gpus_or_skip("collectives in one process");
  if (!set || !nccl_or_skip("collectives in one process")) return;
  std::vector<runtime::Stream> streams;
  for (size_t i = 0; i < set->size(); ++i) streams.push_back(*set->runtime(i).create_stream());
  for (bool checked : {false, true}) {
    auto comms = runtime::Communicator::init_all(set->contexts(), plain_or_checked(checked));
    if (!comms) FAIL(diag::render_text(comms.error()));
    std::vector<RankSide> sides;
    for (size_t i = 0; i < set->size(); ++i) sides.push_back({(*comms)[i].get(), &set->runtime(i), &streams[i]});
    const int failures = collective_failures(sides, static_cast<int>(set->size()), kElements);
    std::printf("multigpu: 8 collectives on %zu ranks in one process%s: %d failure%s\n", set->size(),
                checked ? ", checked mode" : "", failures, failures == 1 ? "" : "s");
    CHECK(failures == 0);
  }
}

// ---- One process per GPU, one rank each (the path that scales to several hosts). ----

namespace ptxgate::gpu_test {

/// `--nccl-collectives R N ID_FILE [checked]`: rank R of N on device R, every collective against
/// the host reference.
int nccl_collectives_child(int argc, char** argv) {
  if (argc < 5) return 2;
  const int rank = std::atoi(argv[2]), nranks = std::atoi(argv[3]);
  const bool checked = argc >= 6 && std::string(argv[5]) == "checked";
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  auto report = [&](const diag::Diagnostics& d, int code) {
    std::fprintf(stderr, "multigpu child rank %d: %s\n", rank, diag::render_text(d, false).c_str());
    return code;
  };
  auto id = runtime::UniqueId::read_file(argv[4]);
  if (!id) return report(id.error(), 3);
  auto ctx = runtime::Context::open(rank);
  if (!ctx) return report(ctx.error(), 4);
  runtime::Runtime rt(*ctx, runtime::RuntimeOptions{});
  auto comm = runtime::Communicator::init_rank(*ctx, nranks, rank, *id, plain_or_checked(checked));
  if (!comm) return report(comm.error(), 5);
  auto s = rt.create_stream();
  if (!s) return report(s.error(), 6);
  const int failures = collective_failures({{comm->get(), &rt, &*s}}, nranks, kElements);
  std::printf("multigpu child rank %d of %d%s: 8 collectives, %d failure%s\n", rank, nranks,
              checked ? " (checked mode)" : "", failures, failures == 1 ? "" : "s");
  if (checked)
    if (auto ok = (*comm)->finalize(); !ok) return report(ok.error(), 7);
  return failures == 0 ? 0 : 10;
}

}  // namespace ptxgate::gpu_test

TEST_CASE("multigpu: every collective with one process per GPU equals the host reference, plain and checked") {
  auto set = all_gpus_or_skip("collectives in one process per GPU");
  if (!set || !nccl_or_skip("collectives in one process per GPU")) return;
  const int nranks = static_cast<int>(set->size());
  set.reset();  // the children open their own contexts
  for (bool checked : {false, true}) {
    const auto file = write_id_file("multigpu");
    const auto start = std::chrono::steady_clock::now();
    const auto rc = run_rank_processes(
        nranks,
        [&](int r) {
          return "--nccl-collectives " + std::to_string(r) + " " + std::to_string(nranks) + " '" + file.string() + "'" +
                 (checked ? " checked" : "");
        },
        300);
    std::filesystem::remove(file);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("multigpu: %d processes, one rank each%s: exit codes", nranks, checked ? ", checked mode" : "");
    for (int c : rc) std::printf(" %d", c);
    std::printf(" (%.1f s)\n", seconds);
    for (int c : rc) CHECK(c == 0);
  }
}
