// Checked collectives and the watchdog over simulated ranks (one thread each, a fake NCCL that
// pairs the ranks' calls and moves data, and hangs like NCCL when they differ): every matching
// rule is a diagnostic on every rank before NCCL sees the call, a rank that never arrives is named
// within the timeout, and the fingerprint records themselves.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime_fake_cluster.hpp"
#include "ptxgate/runtime/internal/collective_match.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "scoped_env.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
namespace fake = ptxgate::runtime::testing;
using fake::fake_cluster;
using internal::Fingerprint;
using internal::FingerprintKind;

namespace {

constexpr size_t kCount = 16;

/// What one simulated rank saw.
struct RankResult {
  std::vector<diag::Diagnostics> errors;  ///< every failed call, in order
  std::vector<diag::Diagnostics> reports; ///< what reached on_failure
  std::vector<float> data;                ///< its receive buffer at the end
  size_t nccl_collectives = 0;            ///< collectives its communicator handed to (fake) NCCL
  ncclComm_t handle = nullptr;
};

bool has_code(const diag::Diagnostics& d, diag::Code code) {
  for (const auto& item : d.items())
    if (item.code == code) return true;
  return false;
}
std::string text(const diag::Diagnostics& d) { return diag::render_text(d, false); }

/// One rank's view of its communicator for a test body.
struct RankSide {
  int rank;
  Communicator& comm;
  Stream& stream;
  DeviceBuffer& send;  ///< kCount floats: rank + 1 + i
  DeviceBuffer& recv;  ///< kCount × ranks floats, filled with -1
  RankResult& result;
  /// Records a failed call.
  void note(const std::expected<void, diag::Diagnostics>& r) {
    if (!r) result.errors.push_back(r.error());
  }
};

/// `n` simulated ranks, each in its own thread with its own context and an init_rank communicator.
struct Cluster {
  DriverApi driver = fake::make_cluster_driver();
  NcclApi nccl = fake::make_cluster_nccl();
  int n;
  std::vector<std::shared_ptr<Context>> contexts;
  UniqueId id;

  explicit Cluster(int ranks) : n(ranks) {
    fake_cluster().reset();
    fake::reset_fake_state();
    for (int r = 0; r < n; ++r) {
      auto c = Context::open(r, &driver);
      REQUIRE(c);
      contexts.push_back(*c);
    }
    auto made = UniqueId::create(&nccl);
    REQUIRE(made);
    id = *made;
  }
  ~Cluster() { fake_cluster().reset(); }

  static CommunicatorOptions checked(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    CommunicatorOptions o;
    o.checked = true;
    o.timeout = timeout;
    return o;
  }

  /// Runs `body` on every rank (the communicator made and torn down in the rank's thread).
  std::vector<RankResult> run(CommunicatorOptions options, const std::function<void(RankSide&)>& body) {
    std::vector<RankResult> results(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    std::mutex report_mutex;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        RankResult& out = results[static_cast<size_t>(r)];
        CommunicatorOptions o = options;
        o.on_failure = [&](const diag::Diagnostics& d) {
          std::lock_guard lock(report_mutex);
          out.reports.push_back(d);
        };
        auto ctx = contexts[static_cast<size_t>(r)];
        auto comm = Communicator::init_rank(ctx, n, r, id, o, &nccl);
        if (!comm) {
          out.errors.push_back(comm.error());
          return;
        }
        // No REQUIRE on these threads: an exception must not leave a thread.
        auto stream = Stream::create(ctx);
        auto send = DeviceBuffer::allocate(ctx, kCount * sizeof(float));
        auto recv = DeviceBuffer::allocate(ctx, kCount * sizeof(float) * static_cast<size_t>(n));
        std::vector<float> input(kCount), fill(kCount * static_cast<size_t>(n), -1.0f);
        for (size_t i = 0; i < kCount; ++i) input[i] = static_cast<float>(r + 1) + static_cast<float>(i);
        const bool ready = stream && send && recv && send->upload(std::as_bytes(std::span<const float>(input))) &&
                           recv->upload(std::as_bytes(std::span<const float>(fill)));
        CHECK(ready);
        if (!ready) return;
        RankSide side{r, **comm, *stream, *send, *recv, out};
        body(side);
        out.handle = (*comm)->handle();
        if (out.handle != nullptr) out.nccl_collectives = fake_cluster().collectives_posted(out.handle);
        out.data.resize(fill.size());
        CHECK(recv->download(std::as_writable_bytes(std::span<float>(out.data))));
        comm->reset();
      });
    for (auto& t : threads) t.join();
    return results;
  }
};

Collective all_reduce_of(RankSide& s, size_t count, ReduceOp op = ReduceOp::sum) {
  return {CollectiveKind::all_reduce, CollectiveEnd::of(DeviceSpan<float>(s.send, 0, count)),
          CollectiveEnd::of(DeviceSpan<float>(s.recv, 0, count)), static_cast<int>(op), 0};
}

/// Every rank failed its first call with PG4213, handed nothing to NCCL, and kept its buffer;
/// rank 0's report holds `expected_text`.
void require_mismatch_everywhere(const std::vector<RankResult>& results, const std::string& expected_text = {}) {
  for (size_t r = 0; r < results.size(); ++r) {
    CAPTURE(r);
    REQUIRE_FALSE(results[r].errors.empty());
    const auto& first = results[r].errors.front();
    CHECK(has_code(first, diag::Code::collective_mismatch));
    if (r == 0 && !expected_text.empty())
      CHECK_MESSAGE(text(first).find(expected_text) != std::string::npos, text(first));
    CHECK(results[r].nccl_collectives == 0);
    for (float v : results[r].data) CHECK(v == -1.0f);
  }
}

}  // namespace

TEST_CASE("checked collectives: matching calls run, with the right data, after one exchange each") {
  Cluster cluster(2);
  auto results = cluster.run(Cluster::checked(), [](RankSide& s) {
    CHECK(s.comm.checked());
    s.note(run_collective(s.comm, s.stream, all_reduce_of(s, kCount)));
    s.note(broadcast(s.comm, s.stream, DeviceSpan<float>(s.send, 0, 4), DeviceSpan<float>(s.recv, kCount, 4), 1));
    s.note(s.comm.synchronize(s.stream));
    CHECK(s.comm.calls() == 2);
  });
  for (const auto& r : results) {
    for (const auto& e : r.errors) FAIL(text(e));
    CHECK(r.nccl_collectives == 2);
    for (size_t i = 0; i < kCount; ++i) CHECK(r.data[i] == 3.0f + 2.0f * static_cast<float>(i));  // (1 + i) + (2 + i)
    for (size_t i = 0; i < 4; ++i) CHECK(r.data[kCount + i] == 2.0f + static_cast<float>(i));      // rank 1's
  }
}

TEST_CASE("checked collectives: each differing field is PG4213 on every rank, naming both calls, before NCCL") {
  struct Case {
    const char* name;
    std::function<std::expected<void, diag::Diagnostics>(RankSide&)> call;
    const char* expected;  ///< in rank 0's message
  };
  const Case cases[] = {
      {"count",
       [](RankSide& s) { return run_collective(s.comm, s.stream, all_reduce_of(s, s.rank == 1 ? 8 : kCount)); },
       "this rank (0 of 2) called all-reduce of 16 f32 (sum) as call #1, but rank 1 called all-reduce of 8 f32 (sum)"},
      {"type",
       [](RankSide& s) {
         if (s.rank == 0) return run_collective(s.comm, s.stream, all_reduce_of(s, kCount));
         return all_reduce(s.comm, s.stream, DeviceSpan<int32_t>(s.send, 0, kCount), DeviceSpan<int32_t>(s.recv, 0, kCount));
       },
       "rank 1 called all-reduce of 16 i32 (sum)"},
      {"reduction",
       [](RankSide& s) {
         return run_collective(s.comm, s.stream, all_reduce_of(s, kCount, s.rank == 1 ? ReduceOp::max : ReduceOp::sum));
       },
       "rank 1 called all-reduce of 16 f32 (max)"},
      {"root",
       [](RankSide& s) {
         return broadcast(s.comm, s.stream, DeviceSpan<float>(s.send, 0, kCount), DeviceSpan<float>(s.recv, 0, kCount),
                          s.rank == 1 ? 0 : 1);
       },
       "called broadcast of 16 f32 from root 1 as call #1, but rank 1 called broadcast of 16 f32 from root 0"},
      {"order swapped",
       [](RankSide& s) -> std::expected<void, diag::Diagnostics> {
         auto ar = [&] { return run_collective(s.comm, s.stream, all_reduce_of(s, kCount)); };
         auto bc = [&] {
           return broadcast(s.comm, s.stream, DeviceSpan<float>(s.send, 0, kCount), DeviceSpan<float>(s.recv, 0, kCount), 0);
         };
         auto first = s.rank == 0 ? ar() : bc();
         if (!first) return first;
         return s.rank == 0 ? bc() : ar();
       },
       "rank 1 called broadcast of 16 f32 from root 0 as call #1"},
      {"one rank skipping",
       [](RankSide& s) -> std::expected<void, diag::Diagnostics> {
         if (s.rank == 0)
           if (auto ok = run_collective(s.comm, s.stream, all_reduce_of(s, kCount)); !ok) return ok;
         return all_gather(s.comm, s.stream, DeviceSpan<float>(s.send, 0, kCount),
                           DeviceSpan<float>(s.recv, 0, kCount * 2));
       },
       "rank 1 called all-gather of 16 f32 per rank as call #1"},
      {"one rank leaving",
       [](RankSide& s) -> std::expected<void, diag::Diagnostics> {
         if (s.rank == 1) return s.comm.finalize();
         return run_collective(s.comm, s.stream, all_reduce_of(s, kCount));
       },
       "rank 1 finalized the communicator at call #1"},
  };
  for (const Case& c : cases) {
    SUBCASE(c.name) {
      Cluster cluster(2);
      auto results = cluster.run(Cluster::checked(), [&](RankSide& s) {
        s.note(c.call(s));
        // The communicator stopped on every rank: later calls fail at once (PG4204), no NCCL call.
        auto later = run_collective(s.comm, s.stream, all_reduce_of(s, kCount));
        CHECK_FALSE(later);
        if (!later) {
          CHECK(has_code(later.error(), diag::Code::communicator_failed));
          CHECK(text(later.error()).find("stopped") != std::string::npos);
        }
      });
      require_mismatch_everywhere(results, c.expected);
      // Rank 1 names its own call first and rank 0's second.
      CHECK(text(results[1].errors.front()).find("this rank (1 of 2)") != std::string::npos);
      CHECK(fake_cluster().aborts == 0);  // stopped, not aborted: nothing was in flight
    }
  }
}

TEST_CASE("checked collectives: on four ranks, the one rank that differs is named on all four with each rank's call") {
  Cluster cluster(4);
  auto results = cluster.run(Cluster::checked(), [](RankSide& s) {
    s.note(run_collective(s.comm, s.stream, all_reduce_of(s, s.rank == 2 ? 12 : kCount)));
  });
  require_mismatch_everywhere(results);
  CHECK(text(results[0].errors.front()).find("but rank 2 called all-reduce of 12 f32") != std::string::npos);
  CHECK(text(results[2].errors.front()).find("this rank (2 of 4) called all-reduce of 12 f32") != std::string::npos);
  const auto& notes = results[3].errors.front().items().front().notes;
  REQUIRE(notes.size() == 3);
  CHECK(notes[2] == "rank 2 called all-reduce of 12 f32 (sum) as call #1");
}

TEST_CASE("checked collectives: sends and receives are matched as a group, pair by pair") {
  SUBCASE("a ring whose sizes agree runs and moves the data") {
    Cluster cluster(3);
    auto results = cluster.run(Cluster::checked(), [](RankSide& s) {
      Group g;
      const int n = s.comm.size();
      s.note(g.send(s.comm, s.stream, DeviceSpan<float>(s.send, 0, kCount), (s.rank + 1) % n));
      s.note(g.recv(s.comm, s.stream, DeviceSpan<float>(s.recv, 0, kCount), (s.rank + n - 1) % n));
      s.note(g.end());
      s.note(s.comm.synchronize(s.stream));
    });
    for (int r = 0; r < 3; ++r) {
      for (const auto& e : results[static_cast<size_t>(r)].errors) FAIL(text(e));
      const int from = (r + 2) % 3;
      CHECK(results[static_cast<size_t>(r)].data[5] == static_cast<float>(from + 1 + 5));
    }
  }
  SUBCASE("a receive of another size is PG4213 on every rank, naming the pair") {
    Cluster cluster(3);
    auto results = cluster.run(Cluster::checked(), [](RankSide& s) {
      Group g;
      const int n = s.comm.size();
      s.note(g.send(s.comm, s.stream, DeviceSpan<float>(s.send, 0, kCount), (s.rank + 1) % n));
      s.note(g.recv(s.comm, s.stream, DeviceSpan<float>(s.recv, 0, s.rank == 1 ? 8 : kCount), (s.rank + n - 1) % n));
      s.note(g.end());
    });
    for (const auto& r : results) {
      REQUIRE(r.errors.size() == 1);
      CHECK(has_code(r.errors.front(), diag::Code::collective_mismatch));
      CHECK(fake_cluster().comm(r.handle)->posted.empty());
    }
    CHECK(text(results[0].errors.front())
              .find("this rank (0) sends rank 1 1 message of 16 f32, but rank 1 receives 1 message of 8 f32 from this "
                    "rank (0)") != std::string::npos);
    CHECK(text(results[2].errors.front()).find("rank 0 sends rank 1 1 message of 16 f32") != std::string::npos);
  }
  SUBCASE("a group whose second collective differs is PG4213 naming the group") {
    Cluster cluster(2);
    auto results = cluster.run(Cluster::checked(), [](RankSide& s) {
      Group g;
      s.note(g.add(s.comm, s.stream, all_reduce_of(s, kCount)));
      s.note(g.add(s.comm, s.stream, all_reduce_of(s, 4, s.rank == 0 ? ReduceOp::min : ReduceOp::max)));
      s.note(g.end());
    });
    require_mismatch_everywhere(results, "group of all-reduce of 16 f32 (sum), all-reduce of 4 f32 (min)");
  }
}

TEST_CASE("checked collectives: ranks of one process in one group exchange together; a mismatch names both") {
  DriverApi driver = fake::make_cluster_driver();
  NcclApi nccl = fake::make_cluster_nccl();
  fake_cluster().reset();
  fake::reset_fake_state();
  std::vector<std::shared_ptr<Context>> contexts = {*Context::open(0, &driver), *Context::open(1, &driver)};
  // With the watchdog: it records an event after each rank's part, in that rank's context.
  auto comms = Communicator::init_all(contexts, Cluster::checked(std::chrono::milliseconds(30000)), &nccl);
  REQUIRE_MESSAGE(comms, text(comms.error()));
  std::vector<Stream> streams;
  std::vector<DeviceBuffer> buffers;
  for (auto& c : contexts) {
    streams.push_back(*Stream::create(c));
    buffers.push_back(*DeviceBuffer::allocate(c, 64 * sizeof(float)));
  }
  auto group_of = [&](size_t count1) {
    Group g;
    REQUIRE(g.add(*(*comms)[0], streams[0],
                  {CollectiveKind::all_reduce, CollectiveEnd::of(DeviceSpan<float>(buffers[0], 0, 16)),
                   CollectiveEnd::of(DeviceSpan<float>(buffers[0], 0, 16)), ncclSum, 0}));
    REQUIRE(g.add(*(*comms)[1], streams[1],
                  {CollectiveKind::all_reduce, CollectiveEnd::of(DeviceSpan<float>(buffers[1], 0, count1)),
                   CollectiveEnd::of(DeviceSpan<float>(buffers[1], 0, count1)), ncclSum, 0}));
    return g.end();
  };
  REQUIRE(group_of(16));
  CHECK(fake_cluster().collectives_posted((*comms)[0]->handle()) == 1);
  auto bad = group_of(8);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().error_count() == 2);  // rank 0's report and rank 1's
  CHECK(text(bad.error()).find("this rank (0 of 2) called all-reduce of 16 f32 (sum) as call #2, but rank 1 called "
                               "all-reduce of 8 f32 (sum) as call #2") != std::string::npos);
  CHECK(text(bad.error()).find("this rank (1 of 2) called all-reduce of 8 f32") != std::string::npos);
  CHECK(fake_cluster().collectives_posted((*comms)[1]->handle()) == 1);
  comms->clear();
}

TEST_CASE("checked collectives: a rank that never arrives is named on the others within the timeout") {
  Cluster cluster(3);
  std::latch reported(2);
  const auto start = std::chrono::steady_clock::now();
  auto results = cluster.run(Cluster::checked(std::chrono::milliseconds(300)), [&](RankSide& s) {
    if (s.rank == 1) {  // stuck elsewhere until the others gave up
      reported.wait();
      return;
    }
    s.note(run_collective(s.comm, s.stream, all_reduce_of(s, kCount)));
    reported.count_down();
    auto later = s.comm.synchronize(s.stream);
    CHECK_FALSE(later);
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  for (int r : {0, 2}) {
    const auto& res = results[static_cast<size_t>(r)];
    REQUIRE(res.errors.size() >= 1);
    const auto& first = res.errors.front();
    CHECK(has_code(first, diag::Code::collective_timeout));
    CHECK_MESSAGE(text(first).find("did not complete within 300 ms: rank 1 did not arrive (no fingerprint came from it)") !=
                      std::string::npos,
                  text(first));
    CHECK(text(first).find(fmt::format("all-reduce of 16 f32 (sum)) on rank {} of 3", r)) != std::string::npos);
    CHECK(res.nccl_collectives == 0);
    for (float v : res.data) CHECK(v == -1.0f);
  }
  CHECK(fake_cluster().aborts >= 4);  // ranks 0 and 2: their communicator and its fingerprint communicator
  // Rank 1 finalized when its communicator went; the others had aborted, so that timed out too.
  REQUIRE(results[1].reports.size() == 1);
  CHECK(has_code(results[1].reports.front(), diag::Code::collective_timeout));
  CHECK(text(results[1].reports.front()).find("finalize") != std::string::npos);
}

TEST_CASE("collective watchdog: a collective that never completes is PG4214 and the communicator is aborted") {
  SUBCASE("unchecked: ranks that called different counts hang in NCCL; the watchdog ends it") {
    Cluster cluster(2);
    CommunicatorOptions o;
    o.checked = false;
    o.timeout = std::chrono::milliseconds(200);
    auto results = cluster.run(o, [](RankSide& s) {
      CHECK_FALSE(s.comm.checked());
      s.note(run_collective(s.comm, s.stream, all_reduce_of(s, s.rank == 1 ? 8 : kCount)));
      s.note(s.comm.synchronize(s.stream));
    });
    for (const auto& r : results) {
      REQUIRE(r.errors.size() == 1);
      CHECK(has_code(r.errors.front(), diag::Code::collective_timeout));
      CHECK(text(r.errors.front()).find("(call #1) on rank") != std::string::npos);
      CHECK(text(r.errors.front()).find("unknown without checked mode") != std::string::npos);
      REQUIRE(r.reports.size() == 1);  // the watchdog's report, on its thread
      CHECK(has_code(r.reports.front(), diag::Code::collective_timeout));
      CHECK(r.handle == nullptr);  // aborted
    }
    CHECK(fake_cluster().aborts == 2);
  }
  SUBCASE("checked: the ranks matched, so the report says every rank arrived") {
    Cluster cluster(2);
    fake_cluster().stall_collectives = true;
    auto results = cluster.run(Cluster::checked(std::chrono::milliseconds(200)), [](RankSide& s) {
      s.note(run_collective(s.comm, s.stream, all_reduce_of(s, kCount)));
      s.note(s.comm.synchronize(s.stream));
    });
    for (const auto& r : results) {
      REQUIRE(r.errors.size() == 1);
      CHECK(has_code(r.errors.front(), diag::Code::collective_timeout));
      CHECK(text(r.errors.front()).find("all-reduce of 16 f32 (sum) (call #1)") != std::string::npos);
      CHECK(text(r.errors.front()).find("every rank arrived at it") != std::string::npos);
    }
  }
}

TEST_CASE("checked collectives: every rank finalizing together is fine; later calls are PG4204") {
  Cluster cluster(2);
  auto results = cluster.run(Cluster::checked(std::chrono::milliseconds(2000)), [](RankSide& s) {
    s.note(run_collective(s.comm, s.stream, all_reduce_of(s, kCount)));
    s.note(s.comm.finalize());
    auto later = run_collective(s.comm, s.stream, all_reduce_of(s, kCount));
    CHECK_FALSE(later);
    if (!later) CHECK(text(later.error()).find("finalized it") != std::string::npos);
  });
  for (const auto& r : results) {
    for (const auto& e : r.errors) FAIL(text(e));
    CHECK(r.reports.empty());
  }
  CHECK(fake_cluster().aborts == 0);
}

TEST_CASE("checked collectives: the environment overrides the options; bad values are PG4205") {
  CHECK_FALSE(CommunicatorOptions{}.checked);  // off unless asked for (docs/nccl.md: its cost)
  CHECK(CommunicatorOptions{}.timeout.count() == 0);
  Cluster cluster(1);
  auto make = [&](CommunicatorOptions o) { return Communicator::init_rank(cluster.contexts[0], 1, 0, cluster.id, o, &cluster.nccl); };
  {
    ptxgate::testing::ScopedEnv env("PTXGATE_NCCL_CHECKED", "0");
    auto c = make(Cluster::checked());
    REQUIRE(c);
    CHECK_FALSE((*c)->checked());
  }
  {
    ptxgate::testing::ScopedEnv env("PTXGATE_NCCL_CHECKED", "yes");
    auto c = make({});
    REQUIRE_FALSE(c);
    CHECK(has_code(c.error(), diag::Code::communicator_setup));
    CHECK(text(c.error()).find("PTXGATE_NCCL_CHECKED=yes is neither 0 nor 1") != std::string::npos);
  }
  {
    ptxgate::testing::ScopedEnv env("PTXGATE_NCCL_TIMEOUT_MS", "5s");
    auto c = make({});
    REQUIRE_FALSE(c);
    CHECK(text(c.error()).find("PTXGATE_NCCL_TIMEOUT_MS=5s is not a number") != std::string::npos);
  }
  {
    ptxgate::testing::ScopedEnv env("PTXGATE_NCCL_TIMEOUT_MS", "1500");
    ptxgate::testing::ScopedEnv checked("PTXGATE_NCCL_CHECKED", "1");
    auto c = make({});
    REQUIRE(c);
    CHECK((*c)->checked());
    CHECK((*c)->timeout() == std::chrono::milliseconds(1500));
  }
  // One rank has nothing to match: no fingerprint communicator is split off.
  CHECK(fake_cluster().aborts == 0);
}

TEST_CASE("fingerprints: records round-trip; damage, another size or another communicator is refused") {
  const Collective calls[] = {
      {CollectiveKind::reduce, {nullptr, 0, 100, ncclFloat64}, {nullptr, 0, 100, ncclFloat64}, ncclProd, 2},
      {CollectiveKind::send, {nullptr, 0, 7, ncclInt32}, {}, 0, 1},
      {CollectiveKind::recv, {}, {nullptr, 0, 9, ncclUint64}, 0, 3},
  };
  const Fingerprint f = Fingerprint::of_call(0, 4, 42, calls);
  CHECK(f.collectives == 1);
  CHECK(f.p2p == 2);
  std::vector<std::byte> bytes(internal::fingerprint_bytes(4));
  internal::encode_fingerprint(f, bytes);
  auto back = internal::decode_fingerprint(bytes, 4);
  REQUIRE_MESSAGE(back, back.error());
  CHECK(back->seq == 42);
  CHECK(back->detailed[0] == f.detailed[0]);
  CHECK(back->peers[1].sends == 1);
  CHECK(back->peers[3].first_recv_count == 9);
  CHECK(internal::describe_fingerprint(*back) ==
        "group of reduce of 100 f64 (prod) to root 2, send to rank 1: 1 message of 7 i32, receive from rank 3: 1 "
        "message of 9 u64");
  auto damaged = bytes;
  damaged[70] ^= std::byte{1};
  auto d = internal::decode_fingerprint(damaged, 4);
  REQUIRE_FALSE(d);
  CHECK(d.error().find("checksum") != std::string::npos);
  CHECK_FALSE(internal::decode_fingerprint(std::span<const std::byte>(bytes).first(bytes.size() - 1), 4));
  std::vector<std::byte> zeros(bytes.size());
  CHECK(internal::decode_fingerprint(zeros, 4).error().find("magic") != std::string::npos);
  std::vector<std::byte> other(internal::fingerprint_bytes(2));
  internal::encode_fingerprint(Fingerprint::of_call(0, 2, 1, calls), other);
  CHECK_FALSE(internal::decode_fingerprint(other, 4));
}

TEST_CASE("fingerprints: matching is the same verdict on every rank, and more than four collectives compare by digest") {
  std::vector<Collective> many;
  for (int i = 0; i < 6; ++i)
    many.push_back({CollectiveKind::all_reduce, {nullptr, 0, 10, ncclFloat32}, {nullptr, 0, 10, ncclFloat32}, ncclSum, 0});
  auto other = many;
  other[5].send.count = other[5].recv.count = 11;  // only the digest sees the sixth
  const std::vector<Fingerprint> same = {Fingerprint::of_call(0, 2, 3, many), Fingerprint::of_call(1, 2, 3, many)};
  CHECK(internal::match_fingerprints(same, 0).empty());
  CHECK(internal::match_fingerprints(same, 1).empty());
  const std::vector<Fingerprint> differ = {Fingerprint::of_call(0, 2, 3, many), Fingerprint::of_call(1, 2, 3, other)};
  for (int me : {0, 1}) {
    auto d = internal::match_fingerprints(differ, me);
    REQUIRE(d.size() == 1);
    CHECK(d.items().front().code == diag::Code::collective_mismatch);
    CHECK(d.items().front().message.find("2 more collectives") != std::string::npos);
  }
  // A rank at another call number differs even with the same call.
  const std::vector<Fingerprint> numbers = {Fingerprint::of_call(0, 2, 3, many), Fingerprint::of_call(1, 2, 4, many)};
  CHECK(internal::match_fingerprints(numbers, 0).items().front().message.find("as call #4") != std::string::npos);
}
