// The mismatch suite (ctest label multigpu): one process per GPU, checked mode, and in each case
// the last rank calls something else — another count, element type, reduction or root, the calls
// in another order, one skipped, the communicator finalized early, a receive of another size — or
// exits before the call. Every rank must report it (PG4213; the survivors of an exit PG4214 or,
// when NCCL noticed first, PG4204, naming the rank that did not arrive) within the timeout, with
// no hang and its receive buffer untouched.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "gpu_collectives.hpp"
#include "gpu_support.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;

namespace {

constexpr size_t kMismatchElements = 1 << 14;
constexpr uint8_t kUntouched = 0xAB;  ///< every byte of a receive buffer before the case
constexpr int kWatchdogMs = 8000;

const char* const kCases[] = {"count", "type", "op", "root", "order", "skip", "leave", "p2p", "exit"};

/// The case's first failed call on this rank (or nothing: the case did not fail here).
std::expected<void, diag::Diagnostics> run_case(const std::string& name, runtime::Communicator& comm,
                                                runtime::Stream& s, runtime::DeviceBuffer& send,
                                                runtime::DeviceBuffer& recv) {
  using runtime::DeviceSpan;
  const int rank = comm.rank(), last = comm.size() - 1;
  const bool odd = rank == last;  // the rank that does something else
  const size_t n = kMismatchElements;
  auto all_reduce = [&](size_t count, runtime::ReduceOp op = runtime::ReduceOp::sum) {
    return runtime::all_reduce(comm, s, DeviceSpan<float>(send, 0, count), DeviceSpan<float>(recv, 0, count), op);
  };
  auto broadcast = [&](int root) {
    return runtime::broadcast(comm, s, DeviceSpan<float>(send, 0, n), DeviceSpan<float>(recv, 0, n), root);
  };
  if (name == "count") return all_reduce(odd ? n / 2 : n);
  if (name == "type") {
    if (!odd) return all_reduce(n);
    return runtime::all_reduce(comm, s, DeviceSpan<int32_t>(send, 0, n), DeviceSpan<int32_t>(recv, 0, n));
  }
  if (name == "op") return all_reduce(n, odd ? runtime::ReduceOp::max : runtime::ReduceOp::sum);
  if (name == "root") return broadcast(odd ? 0 : last);
  if (name == "order") {
    auto first = odd ? broadcast(0) : all_reduce(n);
    if (!first) return first;
    return odd ? all_reduce(n) : broadcast(0);
  }
  if (name == "skip") {
    if (!odd)
      if (auto ok = all_reduce(n); !ok) return ok;
    return broadcast(0);
  }
  if (name == "leave") return odd ? comm.finalize() : all_reduce(n);
  if (name == "p2p") {
    const int nranks = comm.size();
    runtime::Group g;
    if (auto ok = g.send(comm, s, DeviceSpan<float>(send, 0, n), (rank + 1) % nranks); !ok) return ok;
    if (auto ok = g.recv(comm, s, DeviceSpan<float>(recv, 0, odd ? n / 2 : n), (rank + nranks - 1) % nranks); !ok)
      return ok;
    return g.end();
  }
  if (name == "exit") {
    if (odd) {
      std::printf("multigpu mismatch exit rank %d: exits now, before the collective\n", rank);
      std::fflush(stdout);
      std::_Exit(0);
    }
    return all_reduce(n);
  }
  diag::Diagnostics d;
  d.add(diag::Code::internal_error, "unknown mismatch case " + name);
  return std::unexpected(d);
}

}  // namespace

namespace ptxgate::gpu_test {

/// `--nccl-mismatch CASE R N ID_FILE`: rank R of N runs CASE; exit 0 when it reported what it must
/// and its receive buffer is untouched.
int nccl_mismatch_child(int argc, char** argv) {
  if (argc < 6) return 2;
  const std::string name = argv[2];
  const int rank = std::atoi(argv[3]), nranks = std::atoi(argv[4]);
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  auto fail = [&](const char* what, const diag::Diagnostics& d, int code) {
    std::printf("multigpu mismatch %s rank %d: %s: %s\n", name.c_str(), rank, what, diag::render_text(d, false).c_str());
    return code;
  };
  auto id = runtime::UniqueId::read_file(argv[5]);
  if (!id) return fail("unique id", id.error(), 3);
  auto ctx = runtime::Context::open(rank);
  if (!ctx) return fail("context", ctx.error(), 4);
  runtime::Runtime rt(*ctx, runtime::RuntimeOptions{});
  runtime::CommunicatorOptions options;
  options.checked = true;
  options.timeout = std::chrono::milliseconds(kWatchdogMs);
  auto comm = runtime::Communicator::init_rank(*ctx, nranks, rank, *id, options);
  if (!comm) return fail("communicator", comm.error(), 5);
  auto s = rt.create_stream();
  if (!s) return fail("stream", s.error(), 6);
  std::vector<float> input(kMismatchElements);
  for (size_t i = 0; i < input.size(); ++i) input[i] = rank_value<float>(rank, i);
  auto send = rt.upload(std::span<const float>(input));
  auto recv = rt.allocate(kMismatchElements * sizeof(float) * static_cast<size_t>(nranks));
  if (!send) return fail("upload", send.error(), 6);
  if (!recv) return fail("allocate", recv.error(), 6);
  if (auto ok = recv->fill_bytes(kUntouched); !ok) return fail("fill", ok.error(), 6);

  const auto start = std::chrono::steady_clock::now();
  auto result = run_case(name, **comm, *s, *send, *recv);
  if (result) result = (*comm)->synchronize(*s);  // a case that hangs in NCCL would show here
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result) {
    std::printf("multigpu mismatch %s rank %d: NOT REPORTED (the call succeeded, %.2f s)\n", name.c_str(), rank, seconds);
    return 10;
  }
  const auto& first = result.error().items().front();
  std::string message = first.message.substr(0, 600);
  std::printf("multigpu mismatch %s rank %d: %.2f s: [%s] %s\n", name.c_str(), rank, seconds,
              std::string(diag::info(first.code).name).c_str(), message.c_str());
  bool expected = false;
  if (name == "exit") {
    const std::string missing = "rank " + std::to_string(nranks - 1) + " did not arrive";
    expected = (first.code == diag::Code::collective_timeout || first.code == diag::Code::communicator_failed) &&
               first.message.find(missing) != std::string::npos;
  } else {
    expected = first.code == diag::Code::collective_mismatch;
  }
  // Nothing reached NCCL: the receive buffer is as it was.
  auto after = rt.download<uint8_t>(*recv);
  if (!after) return fail("download", after.error(), 12);
  size_t touched = 0;
  for (uint8_t b : *after) touched += b != kUntouched;
  if (touched != 0) std::printf("multigpu mismatch %s rank %d: %zu receive bytes changed\n", name.c_str(), rank, touched);
  std::fflush(stdout);
  if (!expected) return 10;
  return touched == 0 ? 0 : 11;
}

}  // namespace ptxgate::gpu_test

TEST_CASE("multigpu: mismatch suite, one process per GPU: every case is reported on every rank, nothing hangs") {
  auto set = all_gpus_or_skip("mismatch suite");
  if (!set || !nccl_or_skip("mismatch suite")) return;
  const int nranks = static_cast<int>(set->size());
  set.reset();  // the children open their own contexts
  for (const char* name : kCases) {
    const auto file = write_id_file(std::string("mismatch-") + name);
    const auto start = std::chrono::steady_clock::now();
    const auto rc = run_rank_processes(
        nranks,
        [&](int r) {
          return std::string("--nccl-mismatch ") + name + " " + std::to_string(r) + " " + std::to_string(nranks) +
                 " '" + file.string() + "'";
        },
        120);
    std::filesystem::remove(file);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("multigpu mismatch %s: %d processes, exit codes", name, nranks);
    for (int c : rc) std::printf(" %d", c);
    std::printf(" (%.1f s with start-up)\n", seconds);
    std::fflush(stdout);
    CAPTURE(name);
    for (int c : rc) CHECK(c == 0);  // the exiting rank of "exit" exits 0 too
    // Well within the watchdog for a mismatch; the exit case waits for the watchdog.
    CHECK(seconds < (std::string(name) == "exit" ? 60.0 : 40.0));
  }
}
