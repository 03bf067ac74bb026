// NCCL communicators and collectives through a fake NCCL and a fake driver: every validation rule
// (before NCCL is called), communicator health and abort, unique ids, group calls, and the
// collectives' place in dependency tracking.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "runtime_fake_nccl.hpp"
#include "runtime_fake_order.hpp"
#include "scoped_env.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
namespace fake = ptxgate::runtime::testing;
using fake::fake_nccl_state;
using fake::fake_state;
using fake::HappensBefore;

namespace {

/// These tests drive every rank from one thread with a fake NCCL that moves no data: checked mode
/// (tests/unit/runtime_nccl_checked_test.cpp simulates ranks for it) stays off whatever the build.
CommunicatorOptions unchecked() {
  CommunicatorOptions o;
  o.checked = false;
  return o;
}

struct Fixture {
  DriverApi api = fake::make_fake_driver();
  NcclApi nccl = fake::make_fake_nccl();
  std::shared_ptr<Context> ctx, ctx1;
  std::vector<std::unique_ptr<Communicator>> comms;  // ranks 0 and 1 (devices 0 and 1)
  Stream stream, stream1;
  Fixture() {
    fake::reset_fake_state();
    fake_nccl_state() = fake::FakeNcclState{};
    ctx = *Context::open(0, &api);
    ctx1 = *Context::open(1, &api);
    const std::shared_ptr<Context> both[] = {ctx, ctx1};
    auto c = Communicator::init_all(both, unchecked(), &nccl);
    if (!c) FAIL(diag::render_text(c.error()));
    comms = std::move(*c);
    stream = *Stream::create(ctx);
    stream1 = *Stream::create(ctx1);
  }
  Communicator& rank0() { return *comms[0]; }
  DeviceBuffer device(size_t bytes, const std::shared_ptr<Context>& on) { return *DeviceBuffer::allocate(on, bytes); }
  DeviceBuffer device(size_t bytes) { return device(bytes, ctx); }
  size_t nccl_calls() const {
    size_t n = 0;
    for (const auto& c : fake_state().calls) n += c.name.starts_with("nccl");
    return n;
  }
};

std::string text_of(const std::expected<void, diag::Diagnostics>& r) {
  REQUIRE_FALSE(r);
  return diag::render_text(r.error());
}
bool has(const std::expected<void, diag::Diagnostics>& r, diag::Code code) {
  REQUIRE_FALSE(r);
  for (const auto& d : r.error().items())
    if (d.code == code) return true;
  return false;
}

}  // namespace

TEST_CASE("nccl: init_all makes one rank per context on its device; destruction destroys each") {
  {
    Fixture f;
    CHECK(f.comms.size() == 2);
    CHECK(f.comms[0]->rank() == 0);
    CHECK(f.comms[1]->rank() == 1);
    CHECK(f.comms[1]->size() == 2);
    CHECK(f.comms[1]->device() == 1);
    CHECK(fake_nccl_state().inits == 2);
  }
  CHECK(fake_nccl_state().destroys == 2);
  CHECK(fake_nccl_state().aborts == 0);
}

TEST_CASE("nccl: two contexts of one device, no contexts, or a bad rank are PG4205 before NCCL") {
  Fixture f;
  const int before = fake_nccl_state().inits;
  const std::shared_ptr<Context> twice[] = {f.ctx, f.ctx};
  auto a = Communicator::init_all(twice, unchecked(), &f.nccl);
  REQUIRE_FALSE(a);
  CHECK(a.error().items().front().code == diag::Code::communicator_setup);
  CHECK(diag::render_text(a.error()).find("both device 0") != std::string::npos);
  CHECK_FALSE(Communicator::init_all({}, unchecked(), &f.nccl));
  UniqueId id;
  auto r = Communicator::init_rank(f.ctx, 2, 2, id, unchecked(), &f.nccl);
  REQUIRE_FALSE(r);
  CHECK(r.error().items().front().code == diag::Code::communicator_setup);
  CHECK(diag::render_text(r.error()).find("rank 2 of 2") != std::string::npos);
  CHECK(fake_nccl_state().inits == before);
  auto ok = Communicator::init_rank(f.ctx, 2, 1, id, unchecked(), &f.nccl);
  REQUIRE(ok);
  CHECK((*ok)->rank() == 1);
  CHECK((*ok)->size() == 2);
}

TEST_CASE("nccl: a failed NCCL init is PG4203 with NCCL's error") {
  Fixture f;
  fake_nccl_state().fail["ncclCommInitRank"] = ncclSystemError;
  auto r = Communicator::init_rank(f.ctx, 1, 0, UniqueId{}, unchecked(), &f.nccl);
  REQUIRE_FALSE(r);
  CHECK(r.error().items().front().code == diag::Code::nccl_call_failed);
  CHECK(diag::render_text(r.error()).find("ncclCommInitRank (rank 0 of 1)") != std::string::npos);
}

TEST_CASE("nccl: unique ids round-trip through hex text, a file and the environment; bad text is PG4205") {
  NcclApi nccl = fake::make_fake_nccl();
  auto id = UniqueId::create(&nccl);
  REQUIRE(id);
  const std::string hex = id->to_hex();
  CHECK(hex.size() == 256);
  auto back = UniqueId::from_hex("  " + hex + "\n");
  REQUIRE(back);
  CHECK(std::memcmp(back->id.internal, id->id.internal, sizeof(id->id.internal)) == 0);
  auto dir = std::filesystem::temp_directory_path() / ("ptxgate-nccl-id-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  REQUIRE(id->write_file(dir / "id"));
  auto from_file = UniqueId::read_file(dir / "id");
  REQUIRE(from_file);
  CHECK(from_file->to_hex() == hex);
  std::filesystem::remove_all(dir);
  {
    ptxgate::testing::ScopedEnv env("PTXGATE_NCCL_ID", hex.c_str());
    auto from_env = UniqueId::from_env();
    REQUIRE(from_env);
    CHECK(from_env->to_hex() == hex);
  }
  {
    ptxgate::testing::ScopedEnv env("PTXGATE_NCCL_ID", nullptr);
    auto none = UniqueId::from_env();
    REQUIRE_FALSE(none);
    CHECK(none.error().items().front().code == diag::Code::communicator_setup);
  }
  auto short_text = UniqueId::from_hex("abc");
  REQUIRE_FALSE(short_text);
  CHECK(diag::render_text(short_text.error()).find("3 characters, expected 256") != std::string::npos);
  std::string bad = hex;
  bad[10] = 'g';
  auto not_hex = UniqueId::from_hex(bad);
  REQUIRE_FALSE(not_hex);
  CHECK(diag::render_text(not_hex.error()).find("character 11 is not a hex digit") != std::string::npos);
  CHECK_FALSE(UniqueId::read_file("/nonexistent-ptxgate/id"));
}

TEST_CASE("nccl: each collective calls NCCL with the spans' addresses, count, type, op and root") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096);
  REQUIRE(all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a, 4, 100), DeviceSpan<float>(b, 0, 100), ReduceOp::max));
  const auto& calls = fake_state().calls;
  HappensBefore hb(calls);
  const auto& ar = calls[hb.find("ncclAllReduce")];
  CHECK(ar.src == a.pointer() + 16);
  CHECK(ar.dst == b.pointer());
  CHECK(ar.bytes == 100);
  CHECK(ar.stream == f.stream.handle());
  CHECK(fake_nccl_state().last_op == ncclMax);
  CHECK(fake_nccl_state().last_type == ncclFloat32);
  REQUIRE(broadcast(f.rank0(), f.stream, DeviceSpan<int64_t>(a, 0, 8), DeviceSpan<int64_t>(a, 0, 8), 1));
  CHECK(fake_nccl_state().last_root == 1);
  CHECK(fake_nccl_state().last_type == ncclInt64);
  REQUIRE(reduce(f.rank0(), f.stream, DeviceSpan<double>(a, 0, 8), DeviceSpan<double>(b, 0, 8), 0, ReduceOp::prod));
  CHECK(fake_nccl_state().last_op == ncclProd);
  // all-gather on rank 0 of 2: 10 elements per rank into 20.
  REQUIRE(all_gather(f.rank0(), f.stream, DeviceSpan<uint32_t>(a, 0, 10), DeviceSpan<uint32_t>(b, 0, 20)));
  CHECK(fake_nccl_state().last_count == 10);
  // reduce-scatter: NCCL's count is the receive count.
  REQUIRE(reduce_scatter(f.rank0(), f.stream, DeviceSpan<int32_t>(a, 0, 20), DeviceSpan<int32_t>(b, 0, 10)));
  CHECK(fake_nccl_state().last_count == 10);
  CHECK(fake_nccl_state().last_type == ncclInt32);
  CHECK(f.nccl_calls() == 5);
}

TEST_CASE("nccl: element types must be equal (PG4206), counts must fit (PG4207): nothing reaches NCCL") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096);
  Collective c{CollectiveKind::all_reduce, {&a, 0, 16, ncclFloat32}, {&b, 0, 16, ncclInt32}, ncclSum, 0};
  auto r = run_collective(f.rank0(), f.stream, c);
  CHECK(has(r, diag::Code::collective_type_mismatch));
  CHECK(text_of(r).find("sends f32 elements into a i32 receive buffer") != std::string::npos);
  c.recv.type = ncclFloat16;  // an NCCL type the IR does not have
  CHECK(has(run_collective(f.rank0(), f.stream, c), diag::Code::collective_type_mismatch));
  // counts unequal
  r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a, 0, 16), DeviceSpan<float>(b, 0, 15));
  CHECK(has(r, diag::Code::collective_count));
  CHECK(text_of(r).find("16 send elements into 15 receive elements") != std::string::npos);
  // past the buffer
  r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a, 1000, 100), DeviceSpan<float>(b, 0, 100));
  CHECK(text_of(r).find("elements [1000, 1100) of f32, past the buffer's 1024 elements") != std::string::npos);
  // ×ranks for gather and scatter (2 ranks)
  r = all_gather(f.rank0(), f.stream, DeviceSpan<float>(a, 0, 10), DeviceSpan<float>(b, 0, 10));
  CHECK(text_of(r).find("over 2 ranks needs 20 receive elements, got 10") != std::string::npos);
  r = reduce_scatter(f.rank0(), f.stream, DeviceSpan<float>(a, 0, 10), DeviceSpan<float>(b, 0, 10));
  CHECK(text_of(r).find("over 2 ranks needs 20 send elements, got 10") != std::string::npos);
  CHECK(f.nccl_calls() == 0);
}

TEST_CASE("nccl: buffers and stream on another device than the communicator are PG4208 naming both") {
  Fixture f;
  auto a = f.device(4096), other = f.device(4096, f.ctx1);
  auto r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(other));
  CHECK(has(r, diag::Code::collective_device));
  CHECK(text_of(r).find("receive buffer is on device 1, but communicator rank 0 is on device 0") != std::string::npos);
  r = all_reduce(f.rank0(), f.stream1, DeviceSpan<float>(a), DeviceSpan<float>(a));
  CHECK(text_of(r).find("on a stream of device 1, but communicator rank 0 is on device 0") != std::string::npos);
  CHECK(f.nccl_calls() == 0);
}

TEST_CASE("nccl: in-place forms as NCCL documents them pass; other overlaps are PG4209") {
  Fixture f;
  auto a = f.device(4096);
  // all-reduce: the same range is in place; a shifted overlapping range is not.
  CHECK(all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a, 0, 100), DeviceSpan<float>(a, 0, 100)));
  auto r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a, 0, 100), DeviceSpan<float>(a, 50, 100));
  CHECK(has(r, diag::Code::collective_in_place));
  CHECK(text_of(r).find("must be the same range") != std::string::npos);
  // Disjoint ranges of one buffer are fine.
  CHECK(all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a, 0, 100), DeviceSpan<float>(a, 100, 100)));
  // all-gather on rank 1: in place when send is block 1 of the receive range.
  Communicator& rank1 = *f.comms[1];
  auto b = f.device(4096, f.ctx1);
  CHECK(all_gather(rank1, f.stream1, DeviceSpan<float>(b, 10, 10), DeviceSpan<float>(b, 0, 20)));
  r = all_gather(rank1, f.stream1, DeviceSpan<float>(b, 0, 10), DeviceSpan<float>(b, 0, 20));
  CHECK(text_of(r).find("block of rank 1 (element 10)") != std::string::npos);
  // reduce-scatter on rank 1: in place when receive is block 1 of the send range.
  CHECK(reduce_scatter(rank1, f.stream1, DeviceSpan<float>(b, 0, 20), DeviceSpan<float>(b, 10, 10)));
  r = reduce_scatter(rank1, f.stream1, DeviceSpan<float>(b, 0, 20), DeviceSpan<float>(b, 5, 10));
  CHECK(has(r, diag::Code::collective_in_place));
}

TEST_CASE("nccl: a reduction outside NCCL's built-in ones is PG4210; root and peer out of range are PG4211") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096);
  auto r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b), static_cast<ReduceOp>(7));
  CHECK(has(r, diag::Code::collective_reduction));
  CHECK(text_of(r).find("reduction operation 7") != std::string::npos);
  r = broadcast(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b), 2);
  CHECK(text_of(r).find("root 2, but the communicator has ranks 0 to 1") != std::string::npos);
  r = reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b), -1);
  CHECK(has(r, diag::Code::collective_rank));
  Group g;
  r = g.send(f.rank0(), f.stream, DeviceSpan<float>(a), 5);
  CHECK(text_of(r).find("peer 5") != std::string::npos);
  CHECK(g.size() == 0);
  CHECK(f.nccl_calls() == 0);
}

TEST_CASE("nccl: an asynchronous error aborts the communicator; later calls are PG4204 without NCCL") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096);
  REQUIRE(all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b)));
  fake_nccl_state().async_error = ncclRemoteError;
  auto r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b));
  CHECK(has(r, diag::Code::communicator_failed));
  CHECK(text_of(r).find("remote process exited") != std::string::npos);
  CHECK(text_of(r).find("all-reduce") != std::string::npos);
  CHECK(fake_nccl_state().aborts == 1);
  CHECK(f.rank0().failed());
  const int queries = fake_nccl_state().async_queries;
  r = broadcast(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b), 0);
  CHECK(text_of(r).find("was aborted: NCCL reported") != std::string::npos);
  CHECK(fake_nccl_state().async_queries == queries);  // fails fast: no NCCL call
  CHECK(f.nccl_calls() == 1);
  CHECK(has(f.rank0().synchronize(f.stream), diag::Code::communicator_failed));
  f.comms.clear();  // the aborted one is not destroyed again; the healthy one is
  CHECK(fake_nccl_state().aborts == 1);
  CHECK(fake_nccl_state().destroys == 1);
}

TEST_CASE("nccl: synchronize polls the stream and the communicator's health") {
  Fixture f;
  REQUIRE(f.rank0().synchronize(f.stream));
  CHECK(fake_nccl_state().async_queries >= 2);
  CHECK(has(f.rank0().synchronize(f.stream1), diag::Code::collective_device));
}

TEST_CASE("nccl: a system error from a collective is PG4203 and fails the communicator; a usage error does not") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096);
  fake_nccl_state().fail["ncclAllReduce"] = ncclInvalidUsage;
  auto r = all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b));
  CHECK(has(r, diag::Code::nccl_call_failed));
  CHECK(text_of(r).find("ncclAllReduce for all-reduce of 1024 elements on rank 0 failed") != std::string::npos);
  CHECK_FALSE(f.rank0().failed());
  fake_nccl_state().fail["ncclAllReduce"] = ncclSystemError;
  CHECK(has(all_reduce(f.rank0(), f.stream, DeviceSpan<float>(a), DeviceSpan<float>(b)), diag::Code::nccl_call_failed));
  CHECK(f.rank0().failed());
}

TEST_CASE("nccl: a group issues its sends and receives between one ncclGroupStart and ncclGroupEnd") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096, f.ctx1);
  Group g;
  REQUIRE(g.send(*f.comms[0], f.stream, DeviceSpan<float>(a, 0, 64), 1));
  REQUIRE(g.recv(*f.comms[1], f.stream1, DeviceSpan<float>(b, 0, 64), 0));
  CHECK(f.nccl_calls() == 0);  // nothing issued before end()
  REQUIRE(g.end());
  CHECK(fake_nccl_state().group_starts == 1);
  CHECK(fake_nccl_state().group_ends == 1);
  HappensBefore hb(fake_state().calls);
  CHECK(fake_state().calls[hb.find("ncclSend")].src == a.pointer());
  CHECK(fake_state().calls[hb.find("ncclRecv")].dst == b.pointer());
  CHECK(fake_state().calls[hb.find("ncclRecv")].stream == f.stream1.handle());
  auto again = g.end();
  CHECK(has(again, diag::Code::collective_group));
  CHECK(has(g.send(*f.comms[0], f.stream, DeviceSpan<float>(a), 1), diag::Code::collective_group));
}

TEST_CASE("nccl: a group of more calls than it holds in itself issues every one, in the order added, and counts one call per communicator") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096, f.ctx1);
  Group g;
  constexpr size_t kCalls = 11;  // past the 8 calls a group keeps without allocating
  for (size_t i = 0; i < kCalls; ++i) {
    if (i % 2 == 0)
      REQUIRE(g.send(*f.comms[0], f.stream, DeviceSpan<float>(a, i, 1), 1));
    else
      REQUIRE(g.recv(*f.comms[1], f.stream1, DeviceSpan<float>(b, i, 1), 0));
  }
  CHECK(g.size() == kCalls);
  const uint64_t before0 = f.comms[0]->calls(), before1 = f.comms[1]->calls();
  REQUIRE(g.end());
  CHECK(fake_nccl_state().group_starts == 1);
  CHECK(fake_nccl_state().group_ends == 1);
  std::vector<const fake::FakeCall*> issued;
  for (const auto& c : fake_state().calls)
    if (c.name == "ncclSend" || c.name == "ncclRecv") issued.push_back(&c);
  REQUIRE(issued.size() == kCalls);
  for (size_t i = 0; i < kCalls; ++i) {
    CAPTURE(i);
    if (i % 2 == 0) {
      CHECK(issued[i]->name == "ncclSend");
      CHECK(issued[i]->src == a.pointer() + i * sizeof(float));
    } else {
      CHECK(issued[i]->name == "ncclRecv");
      CHECK(issued[i]->dst == b.pointer() + i * sizeof(float));
    }
  }
  CHECK(f.comms[0]->calls() == before0 + 1);  // the group is one call of each communicator
  CHECK(f.comms[1]->calls() == before1 + 1);
}

TEST_CASE("nccl: a group with a failed communicator reports it naming its first call and issues nothing") {
  Fixture f;
  auto a = f.device(4096), b = f.device(4096, f.ctx1);
  f.comms[1]->abort("test");
  Group g;
  REQUIRE(g.send(*f.comms[0], f.stream, DeviceSpan<float>(a, 0, 64), 1));
  REQUIRE(g.recv(*f.comms[1], f.stream1, DeviceSpan<float>(b, 0, 64), 0));
  auto r = g.end();
  CHECK(has(r, diag::Code::communicator_failed));
  CHECK(text_of(r).find("recv on rank 1") != std::string::npos);
  CHECK(f.nccl_calls() == 0);
  CHECK(fake_nccl_state().group_starts == 0);
}

TEST_CASE("nccl: a kernel that reads an all-reduce result on another stream waits for it; a write of its input waits too") {
  DriverApi api = fake::make_fake_driver();
  NcclApi nccl = fake::make_fake_nccl();
  fake::reset_fake_state();
  fake_nccl_state() = fake::FakeNcclState{};
  auto ctx = Context::open(0, &api);
  REQUIRE(ctx);
  RuntimeOptions options;
  options.cache.use_disk = false;
  Runtime rt(*ctx, options);
  constexpr const char* kSource = R"(
kernel scale(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] * 2.0; }
}
)";
  auto scale = rt.compile(kSource, "scale", "scale.pg");
  if (!scale) FAIL(diag::render_text(scale.error()));
  fake_state().param_sizes = {8, 4};
  const std::shared_ptr<Context> one[] = {rt.shared_context()};
  auto comms = Communicator::init_all(one, unchecked(), &nccl);
  REQUIRE(comms);
  auto s1 = *rt.create_stream(), s2 = *rt.create_stream();
  auto grad = *rt.allocate(4096), sum = *rt.allocate(4096);
  REQUIRE(all_reduce(*(*comms)[0], s1, DeviceSpan<float>(grad), DeviceSpan<float>(sum)));
  // On s2: the kernel reads and writes the result (after the all-reduce), then one writes the input.
  auto ok = (*scale)->launch(LaunchConfig::linear(1, 64), {sum, 16u}, &s2);
  if (!ok) FAIL(diag::render_text(ok.error()));
  ok = (*scale)->launch(LaunchConfig::linear(1, 64), {grad, 16u}, &s2);
  if (!ok) FAIL(diag::render_text(ok.error()));
  HappensBefore hb(fake_state().calls);
  const size_t ar = hb.find("ncclAllReduce");
  const size_t reads_result = hb.find([&](const fake::FakeCall& c) {
    return c.name == "cuLaunchKernel" && !c.params.empty() && c.params[0] == sum.pointer();
  });
  const size_t writes_input = hb.find([&](const fake::FakeCall& c) {
    return c.name == "cuLaunchKernel" && !c.params.empty() && c.params[0] == grad.pointer();
  });
  REQUIRE(ar != HappensBefore::npos);
  REQUIRE(reads_result != HappensBefore::npos);
  REQUIRE(writes_input != HappensBefore::npos);
  CHECK(hb.ordered(ar, reads_result));
  CHECK(hb.ordered(ar, writes_input));
  CHECK(fake_state().count("cuStreamWaitEvent") >= 1);
}
