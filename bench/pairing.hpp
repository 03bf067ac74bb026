// The paired host-time measurement of the launch benchmarks (launch_overhead.cpp, programs_bench.cpp): one call
// of each side timed next to the other, the order alternating, so that noise and drift hit both sides alike.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace ptxgate::bench {

/// The median cost of reading std::chrono::steady_clock (2001 back-to-back reads), in nanoseconds:
/// what paired_ratios subtracts from every timed interval.
inline double clock_read_ns() {
  using Clock = std::chrono::steady_clock;
  std::vector<double> d;
  d.reserve(2001);
  for (int i = 0; i < 2001; ++i) {
    const auto a = Clock::now();
    const auto b = Clock::now();
    d.push_back(std::chrono::duration<double, std::nano>(b - a).count());
  }
  std::nth_element(d.begin(), d.begin() + 1000, d.end());
  return d[1000];
}

/// What paired_ratios measured: one ratio per round, and whether a call failed (the rounds stop there).
struct PairedRatios {
  std::vector<double> ratios;
  bool failed = false;
};

/// Paired host-time ratios of `variant` over `raw`: one warm-up round, then `rounds` rounds of `pairs`
/// pairs. Each pair times one call of both sides next to each other, `raw` first in even pairs of even
/// rounds and odd pairs of odd rounds and second otherwise, the clock's cost (`clock_ns`) subtracted
/// from every interval; `after_round` runs untimed after each round (a synchronisation). A round's
/// ratio is the variant's summed time over raw's; pass `raw` as both sides for the A/A control of
/// the method. `raw(i)` and `variant(i)` get the pair's index and, like `after_round()`, return false
/// on failure (the caller keeps the reason).
template <class Raw, class Variant, class AfterRound>
PairedRatios paired_ratios(size_t rounds, size_t pairs, double clock_ns, Raw&& raw, Variant&& variant,
                           AfterRound&& after_round) {
  using Clock = std::chrono::steady_clock;
  const auto ns = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::nano>(b - a).count();
  };
  PairedRatios out;
  for (size_t round = 0; round <= rounds; ++round) {  // round 0: warm-up
    double raw_ns = 0, variant_ns = 0;
    for (size_t i = 0; i < pairs; ++i) {
      const bool raw_first = (i % 2 == 0) == (round % 2 == 0);
      bool ok_first = false, ok_second = false;
      const auto t0 = Clock::now();
      ok_first = raw_first ? raw(i) : variant(i);
      const auto t1 = Clock::now();
      ok_second = raw_first ? variant(i) : raw(i);
      const auto t2 = Clock::now();
      if (!ok_first || !ok_second) {
        out.failed = true;
        return out;
      }
      (raw_first ? raw_ns : variant_ns) += ns(t0, t1) - clock_ns;
      (raw_first ? variant_ns : raw_ns) += ns(t1, t2) - clock_ns;
    }
    if (!after_round()) {
      out.failed = true;
      return out;
    }
    if (round > 0 && raw_ns > 0) out.ratios.push_back(variant_ns / raw_ns);
  }
  return out;
}

}  // namespace ptxgate::bench
