// ptxgate_nccl_bench: all-reduce bus bandwidth over every GPU of a DeviceSet, ptxgate's validated and
// tracked collective against raw NCCL calls on the same communicators, buffers and streams in the same
// run (nccl-tests' definitions: algBw = bytes / time, busBw = algBw * 2(n-1)/n), checked mode (a
// fingerprint exchange before each collective, and the watchdog) against raw NCCL on its own
// communicators, and the host cost of validating one collective. Prints a table with the ratios;
// --json writes the rows.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_common.hpp"
#include "nccl_exchange_probe.hpp"
#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/nccl.hpp"

namespace be = ptxgate::runtime;
using ptxgate::bench::Clock;
using ptxgate::bench::ns_between;
using ptxgate::bench::summarize;

namespace {

/// One GPU: a communicator of each set (plain, checked, checked without the watchdog), a stream and
/// the buffers all use.
struct Rank {
  be::Communicator* comms[3] = {nullptr, nullptr, nullptr};
  be::Stream stream;
  be::DeviceBuffer send, recv;
};
enum Set { plain = 0, checked = 1, checked_unwatched = 2 };

struct Failure {
  std::string what;
};

template <class T>
T need(std::expected<T, ptxgate::diag::Diagnostics> r, const char* what) {
  if (!r) throw Failure{fmt::format("{}: {}", what, ptxgate::bench::one_line(r.error()))};
  return std::move(*r);
}
void need(std::expected<void, ptxgate::diag::Diagnostics> r, const char* what) {
  if (!r) throw Failure{fmt::format("{}: {}", what, ptxgate::bench::one_line(r.error()))};
}

be::Collective all_reduce_of(Rank& r, size_t count) {
  return {be::CollectiveKind::all_reduce, be::CollectiveEnd::of(be::DeviceSpan<float>(r.send, 0, count)),
          be::CollectiveEnd::of(be::DeviceSpan<float>(r.recv, 0, count)), ncclSum, 0};
}

using Issue = std::function<void(std::vector<Rank>&, size_t)>;

/// One all-reduce over every rank through ptxgate on communicator set `set`: validated,
/// health-checked, tracked, one group (checked set: after one fingerprint exchange of all ranks).
Issue ptxgate_all_reduce(Set set) {
  return [set](std::vector<Rank>& ranks, size_t count) {
    be::Group group;
    for (auto& r : ranks) need(group.add(*r.comms[set], r.stream, all_reduce_of(r, count)), "ptxgate all-reduce");
    need(group.end(), "ptxgate group end");
  };
}

/// The same all-reduce as raw NCCL calls on set `set`'s communicators.
Issue raw_all_reduce(Set set) {
  return [set](std::vector<Rank>& ranks, size_t count) {
    const be::NcclApi& api = ranks.front().comms[set]->api();
    if (api.ncclGroupStart() != ncclSuccess) throw Failure{"ncclGroupStart failed"};
    for (auto& r : ranks)
      if (ncclResult_t e = api.ncclAllReduce(reinterpret_cast<const void*>(r.send.pointer()),
                                             reinterpret_cast<void*>(r.recv.pointer()), count, ncclFloat32, ncclSum,
                                             r.comms[set]->handle(), r.stream.handle());
          e != ncclSuccess)
        throw Failure{fmt::format("ncclAllReduce failed: {}", api.ncclGetErrorString(e))};
    if (ncclResult_t e = api.ncclGroupEnd(); e != ncclSuccess)
      throw Failure{fmt::format("ncclGroupEnd failed: {}", api.ncclGetErrorString(e))};
  };
}

/// Waits until every rank's stream is idle: cuStreamSynchronize first (it returns as the work ends,
/// where Communicator::synchronize polls every 50 us and would add up to ~0.1 ms to a timed round),
/// then Communicator::synchronize, which finds the stream idle and retires its tracked accesses.
void wait_all(std::vector<Rank>& ranks) {
  for (auto& r : ranks) {
    be::Context& ctx = *r.stream.context();
    need(ctx.make_current(), "make current");
    if (CUresult e = ctx.api().cuStreamSynchronize(r.stream.handle()); e != CUDA_SUCCESS)
      throw Failure{fmt::format("cuStreamSynchronize failed: {}", static_cast<int>(e))};
  }
}
void retire_all(std::vector<Rank>& ranks) {
  for (auto& r : ranks) need(r.comms[plain]->synchronize(r.stream), "synchronize");
}

/// Microseconds per all-reduce: `iters` back to back after the streams are idle, wall clock until all are idle again.
double time_us(std::vector<Rank>& ranks, size_t count, int iters, const Issue& issue) {
  wait_all(ranks);
  retire_all(ranks);
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) issue(ranks, count);
  wait_all(ranks);
  const double us = ns_between(start, Clock::now()) / 1000.0 / iters;
  retire_all(ranks);
  return us;
}

/// Every rank's receive buffer holds the sum over ranks of their send buffers (all zero but the
/// first element, which is rank + 1): checks the timed all-reduce at the timed size.
void check_result(std::vector<Rank>& ranks, size_t count) {
  const float want = static_cast<float>(ranks.size() * (ranks.size() + 1) / 2);
  for (auto& r : ranks) {
    float got[2] = {0, 0};
    need(r.recv.download(std::as_writable_bytes(std::span<float>(got, 1))), "download");
    if (got[0] != want) throw Failure{fmt::format("all-reduce of {} floats: element 0 is {}, want {}", count, got[0], want)};
  }
}

}  // namespace

int main(int argc, char** argv) {
  int gpus = 0, repeats = 7;
  size_t min_bytes = size_t{1} << 20, max_bytes = size_t{1} << 30;
  std::string json_path;
  CLI::App app("All-reduce bus bandwidth, ptxgate vs raw NCCL, and validation cost per collective");
  app.add_option("--gpus", gpus, "GPUs (0: all)");
  app.add_option("--min-bytes", min_bytes, "Smallest message")->capture_default_str();
  app.add_option("--max-bytes", max_bytes, "Largest message")->capture_default_str();
  app.add_option("--repeats", repeats, "Alternating timed rounds per size (median reported)")->capture_default_str();
  app.add_option("--json", json_path, "Write the rows as JSON here");
  CLI11_PARSE(app, argc, argv);
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);  // never NVLink multicast
  ptxgate::bench::ResultFile results(json_path, "nccl");
  try {
    auto api = be::driver();
    if (!api) {
      std::printf("SKIPPED: nccl bench: %s", ptxgate::diag::render_text(api.error(), false).c_str());
      return 3;
    }
    be::DeviceSetOptions so;
    for (int i = 0; i < gpus; ++i) so.devices.push_back(i);
    auto set = need(be::DeviceSet::open(so), "device set");
    be::CommunicatorOptions plain_options, checked_options;
    plain_options.checked = false;
    checked_options.checked = true;
    checked_options.timeout = std::chrono::seconds(120);  // the watchdog too, as a checked program runs
    auto comms = need(be::Communicator::init_all(set->contexts(), plain_options), "ncclCommInitAll");
    auto checked_comms = need(be::Communicator::init_all(set->contexts(), checked_options), "ncclCommInitAll (checked)");
    be::CommunicatorOptions unwatched_options = checked_options;
    unwatched_options.timeout = std::chrono::milliseconds(0);
    auto unwatched_comms =
        need(be::Communicator::init_all(set->contexts(), unwatched_options), "ncclCommInitAll (checked, no watchdog)");
    const size_t n = set->size();
    std::vector<Rank> ranks(n);
    for (size_t i = 0; i < n; ++i) {
      ranks[i].comms[plain] = comms[i].get();
      ranks[i].comms[checked] = checked_comms[i].get();
      ranks[i].comms[checked_unwatched] = unwatched_comms[i].get();
      ranks[i].stream = need(set->runtime(i).create_stream(), "stream");
      ranks[i].send = need(set->runtime(i).allocate(max_bytes), "send buffer");
      ranks[i].recv = need(set->runtime(i).allocate(max_bytes), "recv buffer");
      need(ranks[i].send.fill_bytes(0), "fill");
      const float first = static_cast<float>(i + 1);
      need(ranks[i].send.upload(std::as_bytes(std::span<const float>(&first, 1))), "upload");
    }
    const double bus_factor = n > 1 ? 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) : 0.0;
    std::printf("nccl bench: %zu GPU%s (%s), NCCL %s, busBw factor 2(n-1)/n = %.3f\n%s", n, n == 1 ? "" : "s",
                set->context(0).caps().name.c_str(), be::nccl_version_text(comms[0]->api().version).c_str(), bus_factor,
                be::format_peer_matrix(set->peers()).c_str());
    if (n < 2) std::printf("(one GPU: checked mode has nothing to match; its rows equal raw NCCL's)\n");
    results.info("gpus", n);
    results.info("device", set->context(0).caps().name);
    results.info("nccl", be::nccl_version_text(comms[0]->api().version));

    // Validation cost: validate_collective alone, on the host, for one rank (no NCCL call).
    {
      const auto c = all_reduce_of(ranks[0], 1024);
      std::vector<double> per_call;
      constexpr int kCalls = 20000;
      for (int round = 0; round < 15; ++round) {
        const auto start = Clock::now();
        for (int i = 0; i < kCalls; ++i) need(be::validate_collective(*ranks[0].comms[plain], ranks[0].stream, c), "validate");
        per_call.push_back(ns_between(start, Clock::now()) / kCalls);
      }
      const auto s = summarize(per_call);
      results.add("nccl.validate_collective", "ns", s);
      std::printf("validation cost per collective (validate_collective, host): median %.0f ns (target <= 2000 ns): %s\n",
                  s.median, s.median <= 2000 ? "within" : "OVER");
    }
    // Host cost of issuing one small all-reduce over all ranks (no waiting): ptxgate vs raw, and
    // raw with one piece of ptxgate's work added each (leave-one-in), so the difference says what
    // that piece costs where no host profiler runs. Alternating order, median of rounds.
    {
      const be::NcclApi& api = ranks.front().comms[plain]->api();
      auto with_async_error = [&api](std::vector<Rank>& rs, size_t count) {
        for (auto& r : rs) {
          ncclResult_t async = ncclSuccess;
          (void)api.ncclCommGetAsyncError(r.comms[plain]->handle(), &async);
        }
        raw_all_reduce(plain)(rs, count);
      };
      auto with_context_switch = [](std::vector<Rank>& rs, size_t count) {
        for (auto& r : rs) {
          be::Context& ctx = *r.stream.context();
          (void)ctx.api().cuCtxSetCurrent(ctx.handle());
        }
        raw_all_reduce(plain)(rs, count);
      };
      const std::pair<const char*, Issue> variants[] = {
          {"raw NCCL", raw_all_reduce(plain)},
          {"ptxgate", ptxgate_all_reduce(plain)},
          {"raw + ncclCommGetAsyncError per rank", with_async_error},
          {"raw + cuCtxSetCurrent per rank", with_context_switch},
      };
      constexpr int kVariants = 4;
      std::vector<double> ns[kVariants];
      constexpr int kIssues = 200;
      for (int round = 0; round < 15; ++round)
        for (int k = 0; k < kVariants; ++k) {
          const int which = round % 2 == 0 ? k : kVariants - 1 - k;
          wait_all(ranks);
          retire_all(ranks);
          const auto start = Clock::now();
          for (int i = 0; i < kIssues; ++i) variants[which].second(ranks, 256);
          ns[which].push_back(ns_between(start, Clock::now()) / kIssues);
        }
      wait_all(ranks);
      retire_all(ranks);
      const auto sr = summarize(ns[0]), sp = summarize(ns[1]);
      results.add("nccl.issue.ptxgate", "ns", sp, {{"ranks", n}});
      results.add("nccl.issue.raw", "ns", sr, {{"ranks", n}});
      std::printf("host time to issue one 1 KiB all-reduce over %zu ranks: ptxgate %.0f ns, raw NCCL %.0f ns, "
                  "added %.0f ns (%.0f ns per rank)\n",
                  n, sp.median, sr.median, sp.median - sr.median, (sp.median - sr.median) / static_cast<double>(n));
      for (int k = 2; k < kVariants; ++k) {
        const auto sv = summarize(ns[k]);
        results.add(fmt::format("nccl.issue.variant{}", k), "ns", sv, {{"ranks", n}, {"variant", variants[k].first}});
        std::printf("  %s: %.0f ns, %+.0f ns over raw\n", variants[k].first, sv.median, sv.median - sr.median);
      }
    }

    // Small collectives, GPU-bound (back to back, then wait): the time per collective of each path,
    // so checked mode's cost per collective is checked - raw on its own communicators. Alternating.
    {
      constexpr int kBack = 400;
      constexpr int kPaths = 5;
      const std::pair<const char*, Issue> paths[kPaths] = {{"raw", raw_all_reduce(plain)},
                                                           {"ptxgate", ptxgate_all_reduce(plain)},
                                                           {"raw (checked set)", raw_all_reduce(checked)},
                                                           {"ptxgate checked", ptxgate_all_reduce(checked)},
                                                           {"ptxgate checked, no watchdog",
                                                            ptxgate_all_reduce(checked_unwatched)}};
      std::printf("\nsmall all-reduces, %d back to back (median of 7 alternating rounds), microseconds per collective:\n", kBack);
      std::printf("| floats | raw | ptxgate | raw (checked set) | ptxgate checked | checked cost | checked without "
                  "watchdog | its cost |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (size_t count : {size_t{1}, size_t{256}, size_t{16384}}) {
        std::vector<double> us[kPaths];
        for (auto& p : paths) p.second(ranks, count);  // warm-up
        for (int round = 0; round < 7; ++round)
          for (int k = 0; k < kPaths; ++k) {
            const int which = round % 2 == 0 ? k : kPaths - 1 - k;
            us[which].push_back(time_us(ranks, count, kBack, paths[which].second));
          }
        check_result(ranks, count);
        double med[kPaths];
        for (int k = 0; k < kPaths; ++k) {
          const auto sm = summarize(us[k]);
          med[k] = sm.median;
          results.add(fmt::format("nccl.small.{}.{}", k, count), "us", sm, {{"floats", count}, {"path", paths[k].first}});
        }
        std::printf("| %zu | %.2f | %.2f | %.2f | %.2f | %+.2f | %.2f | %+.2f |\n", count, med[0], med[1], med[2], med[3],
                    med[3] - med[2], med[4], med[4] - med[2]);
      }
    }

    // Where the exchange's time goes: checked mode's NCCL calls, copies and waits without ptxgate.
    if (n > 1) {
      namespace probe = ptxgate::bench::exchange_probe;
      const be::NcclApi& api = comms[0]->api();
      std::vector<be::Communicator*> parents;
      for (auto& r : ranks) parents.push_back(r.comms[checked]);
      const size_t record = 128 + 48 * n;  // checked mode's record on n ranks
      probe::Probe split(*set, api, parents, true, record);
      probe::Probe own(*set, api, parents, false, record);
      if (!split.ok() || !own.ok()) {
        std::printf("exchange probe: its communicators or buffers could not be made; skipped\n");
      } else {
        const Issue raw = raw_all_reduce(plain);
        auto after = [&](probe::Probe& p, probe::Options o, size_t count) {
          return [&ranks, &p, o, count, raw] {
            if (!p.exchange(o)) return false;
            if (count > 0) raw(ranks, count);
            return true;
          };
        };
        const std::vector<probe::Variant> variants = {
            {"raw all-reduce of 1 float alone", [&] { raw(ranks, 1); return true; }},
            {"exchange alone", after(split, {}, 0)},
            {"exchange, then all-reduce of 1 float", after(split, {}, 1)},
            {"exchange, then all-reduce of 16384 floats", after(split, {}, 16384)},
            {"exchange without its two copies, then all-reduce of 1 float", after(split, {false, false}, 1)},
            {"exchange on a communicator of its own (not split), then all-reduce of 1 float", after(own, {}, 1)},
            {"exchange waiting with the product's back-off, then all-reduce of 1 float", after(split, {true, true}, 1)},
            {"exchange, its events queried with the other device's context current, then all-reduce of 1 float",
             after(split, {true, false, true}, 1)},
            {"all-reduce of 1 float, wait for it, then exchange",
             [&] {
               raw(ranks, 1);
               wait_all(ranks);
               return split.exchange({});
             }},
        };
        probe::run(variants, 400, 5, results, [&] { wait_all(ranks); });
      }
    }

    std::vector<std::string> table;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      const size_t count = bytes / sizeof(float);
      // At least ~10 ms per timed round: the wall clock of a round then hides the wait's granularity.
      const int iters = static_cast<int>(std::clamp<size_t>((size_t{1} << 33) / bytes, 20, 400));
      const Issue raw = raw_all_reduce(plain), ptx = ptxgate_all_reduce(plain);
      const Issue raw_c = raw_all_reduce(checked), ptx_c = ptxgate_all_reduce(checked);
      // Warm up every path at this size, then alternate timed rounds so drift hits them alike.
      for (const Issue* p : {&raw, &ptx, &raw_c, &ptx_c}) (*p)(ranks, count);
      std::vector<double> raw_us, ptx_us, raw_c_us, ptx_c_us;
      for (int round = 0; round < repeats; ++round) {
        if (round % 2 == 0) {
          raw_us.push_back(time_us(ranks, count, iters, raw));
          ptx_us.push_back(time_us(ranks, count, iters, ptx));
          raw_c_us.push_back(time_us(ranks, count, iters, raw_c));
          ptx_c_us.push_back(time_us(ranks, count, iters, ptx_c));
        } else {
          ptx_c_us.push_back(time_us(ranks, count, iters, ptx_c));
          raw_c_us.push_back(time_us(ranks, count, iters, raw_c));
          ptx_us.push_back(time_us(ranks, count, iters, ptx));
          raw_us.push_back(time_us(ranks, count, iters, raw));
        }
      }
      check_result(ranks, count);
      const auto sr = summarize(raw_us), sp = summarize(ptx_us), src = summarize(raw_c_us), spc = summarize(ptx_c_us);
      const double raw_bus = static_cast<double>(bytes) / (sr.median * 1e3) * bus_factor;
      const double ptx_bus = static_cast<double>(bytes) / (sp.median * 1e3) * bus_factor;
      const double ratio = sr.median / sp.median;         // bandwidth ratio ptxgate/raw
      const double checked_ratio = src.median / spc.median;  // checked/raw on the checked set
      const double aa = sr.median / src.median;              // A/A: raw on one set vs raw on the other
      const std::string size = bytes >= (size_t{1} << 30) ? fmt::format("{} GiB", bytes >> 30)
                                                           : fmt::format("{} MiB", bytes >> 20);
      table.push_back(fmt::format("| {} | {:.1f} | {:.2f} | {:.1f} | {:.2f} | {:.3f} | {:.1f} | {:.1f} | {:.3f} | {:.3f} |",
                                  size, sr.median, raw_bus, sp.median, ptx_bus, ratio, src.median, spc.median,
                                  checked_ratio, aa));
      results.add(fmt::format("nccl.all_reduce.raw.{}", bytes), "us", sr,
                  {{"bytes", bytes}, {"bus_gbps", raw_bus}, {"ranks", n}});
      results.add(fmt::format("nccl.all_reduce.ptxgate.{}", bytes), "us", sp,
                  {{"bytes", bytes}, {"bus_gbps", ptx_bus}, {"ranks", n}, {"ratio_to_raw", ratio}});
      results.add(fmt::format("nccl.all_reduce.checked.{}", bytes), "us", spc,
                  {{"bytes", bytes}, {"ranks", n}, {"ratio_to_raw", checked_ratio}, {"raw_us", src.median}, {"aa", aa}});
    }
    std::printf("\nall-reduce f32 sum over %zu GPUs (median of %d alternating rounds; results checked):\n", n, repeats);
    std::printf("| size | raw time (us) | raw busBw (GB/s) | ptxgate time (us) | ptxgate busBw (GB/s) | ptxgate/raw "
                "| raw time, checked set (us) | checked time (us) | checked/raw | A/A raw/raw |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& row : table) std::printf("%s\n", row.c_str());
    std::printf("(ratio = raw time / ptxgate time = ptxgate busBw / raw busBw; targets: >= 0.97 from 64 MiB, >= 0.95 "
                "at 1-4 MiB; checked mode's cost <= 2%% from 64 MiB; A/A: raw NCCL on the plain set / raw NCCL on the "
                "checked set, the noise of a ratio)\n");
  } catch (const Failure& f) {
    std::fprintf(stderr, "nccl bench: %s\n", f.what.c_str());
    results.error("nccl", f.what);
    return 1;
  }
  return 0;
}
