// Every NCCL collective against a host reference, for the ranks this process drives: all ranks of a
// machine in one process (one group per collective), or one rank per process (multigpu tests); and
// what the multi-GPU tests share: skipping without GPUs or NCCL, and starting one process per rank.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "gpu_support.hpp"

namespace ptxgate::gpu_test {

/// The device set of every GPU; the case is skipped with fewer than 2.
inline std::unique_ptr<runtime::DeviceSet> all_gpus_or_skip(const char* test) {
  auto set = runtime::DeviceSet::open();
  if (!set) FAIL(diag::render_text(set.error()));
  if ((*set)->size() < 2) skip_case(std::string(test) + ": needs 2 GPUs, found " + std::to_string((*set)->size()));
  return std::move(*set);
}

/// True when NCCL loads; the case is skipped without it. Keeps NVLink multicast off.
inline bool nccl_or_skip(const char* test) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);  // never NVLink multicast on the lent machines
  auto api = runtime::nccl();
  if (!api) skip_case(std::string(test) + ": no NCCL: " + diag::render_text(api.error(), false));
  return true;
}

/// A fresh NCCL unique id in a temporary file named after `what`, for the rank processes.
inline std::filesystem::path write_id_file(const std::string& what) {
  auto id = runtime::UniqueId::create();
  if (!id) FAIL(diag::render_text(id.error()));
  const auto file = std::filesystem::temp_directory_path() /
                    ("ptxgate-" + what + "-id-" + std::to_string(::getpid()));
  if (auto ok = id->write_file(file); !ok) FAIL(diag::render_text(ok.error()));
  return file;
}

/// Starts this test binary once per rank with `args(rank)` (each under `timeout limit_seconds`),
/// all at once, and returns their exit codes (-1: killed by a signal).
inline std::vector<int> run_rank_processes(int nranks, const std::function<std::string(int)>& args, int limit_seconds) {
  const std::string self = self_command();
  std::vector<int> rc(static_cast<size_t>(nranks), -1);
  std::vector<std::thread> ranks;
  for (int r = 0; r < nranks; ++r)
    ranks.emplace_back([&, r] {
      const std::string cmd =
          "timeout --kill-after=5 " + std::to_string(limit_seconds) + " " + self + " " + args(r);
      const int status = std::system(cmd.c_str());
      rc[static_cast<size_t>(r)] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    });
  for (auto& t : ranks) t.join();
  return rc;
}

/// One rank driven by this process.
struct RankSide {
  runtime::Communicator* comm = nullptr;
  runtime::Runtime* runtime = nullptr;
  runtime::Stream* stream = nullptr;
};

/// Rank r's input element i: small integers, so every sum is exact in every type and order.
template <class T>
T rank_value(int rank, size_t i) {
  return static_cast<T>((rank + 1) * static_cast<int>((i * 7) % 101) + (std::is_unsigned_v<T> ? 0 : -50));
}

/// Runs all-reduce (sum f32, max i32, sum i64 in place), broadcast (f64, root last), reduce (sum u32,
/// root 0), all-gather (f32), reduce-scatter (sum i64) and a send/recv ring (u64) over `n` elements
/// per rank for the ranks in `sides` of a communicator of `nranks`, and compares each result with
/// the host reference. Prints "multigpu: <collective> rank R: ..." for each mismatch or error and
/// returns how many there were.
inline int collective_failures(const std::vector<RankSide>& sides, int nranks, size_t n) {
  int failures = 0;
  auto fail = [&](const std::string& what, int rank, const std::string& why) {
    std::printf("multigpu: %s rank %d: %s\n", what.c_str(), rank, why.c_str());
    ++failures;
  };
  auto host = [&](auto tag, size_t count, int rank) {
    using T = decltype(tag);
    std::vector<T> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = rank_value<T>(rank, i);
    return v;
  };
  // Issues one collective for every local rank in one group, waits, and checks each rank's result.
  auto run = [&](auto tag, const std::string& what, size_t send_count, size_t recv_count, bool in_place,
                 const std::function<runtime::Collective(runtime::DeviceBuffer&, runtime::DeviceBuffer&, int)>& make,
                 const std::function<bool(int)>& checked,
                 const std::function<std::vector<decltype(tag)>(int)>& want) {
    using T = decltype(tag);
    std::vector<runtime::DeviceBuffer> send, recv;
    for (const RankSide& s : sides) {
      const auto input = host(T{}, send_count, s.comm->rank());
      auto b = s.runtime->upload(std::span<const T>(input));
      if (!b) return fail(what, s.comm->rank(), diag::render_text(b.error(), false));
      send.push_back(std::move(*b));
      auto r = s.runtime->allocate(recv_count * sizeof(T));
      if (!r) return fail(what, s.comm->rank(), diag::render_text(r.error(), false));
      if (auto ok = r->fill_bytes(0); !ok) return fail(what, s.comm->rank(), diag::render_text(ok.error(), false));
      recv.push_back(std::move(*r));
    }
    runtime::Group group;
    for (size_t k = 0; k < sides.size(); ++k)
      if (auto ok = group.add(*sides[k].comm, *sides[k].stream, make(send[k], in_place ? send[k] : recv[k], sides[k].comm->rank()));
          !ok)
        return fail(what, sides[k].comm->rank(), diag::render_text(ok.error(), false));
    if (auto ok = group.end(); !ok) return fail(what, sides.front().comm->rank(), diag::render_text(ok.error(), false));
    for (size_t k = 0; k < sides.size(); ++k) {
      const int rank = sides[k].comm->rank();
      if (auto ok = sides[k].comm->synchronize(*sides[k].stream); !ok) {
        fail(what, rank, diag::render_text(ok.error(), false));
        continue;
      }
      if (!checked(rank)) continue;
      auto got = sides[k].runtime->download<T>(in_place ? send[k] : recv[k]);
      if (!got) {
        fail(what, rank, diag::render_text(got.error(), false));
        continue;
      }
      const auto expected = want(rank);
      for (size_t i = 0; i < expected.size(); ++i)
        if ((*got)[i] != expected[i]) {
          fail(what, rank,
               "element " + std::to_string(i) + " is " + std::to_string((*got)[i]) + ", the host reference " +
                   std::to_string(expected[i]));
          break;
        }
    }
  };
  using runtime::CollectiveEnd;
  using runtime::CollectiveKind;
  using runtime::DeviceSpan;
  const int last = nranks - 1;
  auto all = [](int) { return true; };

  run(float{}, "all-reduce sum f32", n, n, false,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::all_reduce, CollectiveEnd::of(DeviceSpan<float>(s)), CollectiveEnd::of(DeviceSpan<float>(r)), ncclSum, 0}; },
      all, [&](int) {
        std::vector<float> w(n, 0);
        for (int q = 0; q < nranks; ++q)
          for (size_t i = 0; i < n; ++i) w[i] += rank_value<float>(q, i);
        return w;
      });
  run(int32_t{}, "all-reduce max i32", n, n, false,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::all_reduce, CollectiveEnd::of(DeviceSpan<int32_t>(s)), CollectiveEnd::of(DeviceSpan<int32_t>(r)), ncclMax, 0}; },
      all, [&](int) {
        std::vector<int32_t> w(n);
        for (size_t i = 0; i < n; ++i) {
          w[i] = rank_value<int32_t>(0, i);
          for (int q = 1; q < nranks; ++q) w[i] = std::max(w[i], rank_value<int32_t>(q, i));
        }
        return w;
      });
  run(int64_t{}, "all-reduce sum i64 in place", n, n, true,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::all_reduce, CollectiveEnd::of(DeviceSpan<int64_t>(s)), CollectiveEnd::of(DeviceSpan<int64_t>(r)), ncclSum, 0}; },
      all, [&](int) {
        std::vector<int64_t> w(n, 0);
        for (int q = 0; q < nranks; ++q)
          for (size_t i = 0; i < n; ++i) w[i] += rank_value<int64_t>(q, i);
        return w;
      });
  run(double{}, "broadcast f64 from the last rank", n, n, false,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::broadcast, CollectiveEnd::of(DeviceSpan<double>(s)), CollectiveEnd::of(DeviceSpan<double>(r)), 0, last}; },
      all, [&](int) { return host(double{}, n, last); });
  run(uint32_t{}, "reduce sum u32 to rank 0", n, n, false,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::reduce, CollectiveEnd::of(DeviceSpan<uint32_t>(s)), CollectiveEnd::of(DeviceSpan<uint32_t>(r)), ncclSum, 0}; },
      [](int rank) { return rank == 0; }, [&](int) {
        std::vector<uint32_t> w(n, 0);
        for (int q = 0; q < nranks; ++q)
          for (size_t i = 0; i < n; ++i) w[i] += rank_value<uint32_t>(q, i);
        return w;
      });
  run(float{}, "all-gather f32", n, n * static_cast<size_t>(nranks), false,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::all_gather, CollectiveEnd::of(DeviceSpan<float>(s)), CollectiveEnd::of(DeviceSpan<float>(r)), 0, 0}; },
      all, [&](int) {
        std::vector<float> w;
        for (int q = 0; q < nranks; ++q) {
          auto part = host(float{}, n, q);
          w.insert(w.end(), part.begin(), part.end());
        }
        return w;
      });
  run(int64_t{}, "reduce-scatter sum i64", n * static_cast<size_t>(nranks), n, false,
      [&](auto& s, auto& r, int) { return runtime::Collective{CollectiveKind::reduce_scatter, CollectiveEnd::of(DeviceSpan<int64_t>(s)), CollectiveEnd::of(DeviceSpan<int64_t>(r)), ncclSum, 0}; },
      all, [&](int rank) {
        std::vector<int64_t> w(n, 0);
        for (int q = 0; q < nranks; ++q)
          for (size_t i = 0; i < n; ++i) w[i] += rank_value<int64_t>(q, static_cast<size_t>(rank) * n + i);
        return w;
      });

  // A ring of sends and receives: rank r sends to r + 1 and receives from r - 1, all in one group.
  {
    const std::string what = "send/recv ring u64";
    std::vector<runtime::DeviceBuffer> send, recv;
    runtime::Group group;
    for (const RankSide& s : sides) {
      const int rank = s.comm->rank();
      const auto input = host(uint64_t{}, n, rank);
      auto b = s.runtime->upload(std::span<const uint64_t>(input));
      auto r = s.runtime->allocate(n * sizeof(uint64_t));
      if (!b || !r) {
        fail(what, rank, "allocation failed");
        return failures;
      }
      send.push_back(std::move(*b));
      recv.push_back(std::move(*r));
    }
    for (size_t k = 0; k < sides.size(); ++k) {
      const int rank = sides[k].comm->rank();
      if (auto ok = group.send(*sides[k].comm, *sides[k].stream, DeviceSpan<uint64_t>(send[k]), (rank + 1) % nranks); !ok)
        fail(what, rank, diag::render_text(ok.error(), false));
      if (auto ok = group.recv(*sides[k].comm, *sides[k].stream, DeviceSpan<uint64_t>(recv[k]), (rank + nranks - 1) % nranks);
          !ok)
        fail(what, rank, diag::render_text(ok.error(), false));
    }
    if (auto ok = group.end(); !ok) fail(what, sides.front().comm->rank(), diag::render_text(ok.error(), false));
    for (size_t k = 0; k < sides.size(); ++k) {
      const int rank = sides[k].comm->rank();
      if (auto ok = sides[k].comm->synchronize(*sides[k].stream); !ok) {
        fail(what, rank, diag::render_text(ok.error(), false));
        continue;
      }
      auto got = sides[k].runtime->download<uint64_t>(recv[k]);
      if (!got || *got != host(uint64_t{}, n, (rank + nranks - 1) % nranks)) fail(what, rank, "differs from the sender's data");
    }
  }
  return failures;
}

}  // namespace ptxgate::gpu_test
