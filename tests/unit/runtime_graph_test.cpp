// Validated CUDA graphs through a fake driver: kernel nodes validated exactly as Kernel::launch
// validates them, dependencies from access modes, tracked replays, and every rule of updates.
#include <doctest/doctest.h>

#include "ptxgate/runtime/graph.hpp"
#include "runtime_programs_fixture.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using namespace ptxgate::runtime::testing;

namespace {

Graph new_graph(ProgramFixture& f) {
  auto g = Graph::create(f.rt->shared_context());
  REQUIRE(g);
  return std::move(*g);
}

GraphNode add(Graph& g, Kernel& k, const LaunchConfig& c, std::initializer_list<Arg> args) {
  auto n = g.launch(k, c, args);
  if (!n) FAIL(diag::render_text(n.error()));
  return *n;
}

GraphExec instantiate(const Graph& g) {
  auto e = g.instantiate();
  if (!e) FAIL(diag::render_text(e.error()));
  return std::move(*e);
}

}  // namespace

TEST_CASE("graph: kernel nodes carry the launch's geometry, resolved block and bound arguments") {
  ProgramFixture f;
  auto g = new_graph(f);
  auto a = f.buffer(), b = f.buffer();
  LaunchConfig c = LaunchConfig::linear(3, 128);
  c.dynamic_shared_bytes = 256;
  add(g, *f.copy, c, {a, b, 16u});
  const auto& nodes = fake_programs().nodes;
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].kind == "kernel");
  CHECK(nodes[0].grid[0] == 3);
  CHECK(nodes[0].block[0] == 128);
  CHECK(nodes[0].shared == 256);
  CHECK(nodes[0].params == std::vector<uint64_t>{a.pointer(), b.pointer()});
  // The default block (no @workgroup) is resolved as Kernel::launch resolves it.
  LaunchConfig grid_only;
  grid_only.grid = {2, 1, 1};
  add(g, *f.copy, grid_only, {a, b, 16u});
  CHECK(nodes[1].block[0] == 256);
  CHECK(fake_state().launches == 0);  // nothing ran
}

TEST_CASE("graph: a launch Kernel::launch blocks is blocked with the same diagnostics, before the driver") {
  ProgramFixture f;
  auto g = new_graph(f);
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  const LaunchConfig too_big = LaunchConfig::linear(1, 2048);
  auto direct = f.copy->launch(too_big, {a, b, 16u}, &s);
  auto node = g.launch(*f.copy, too_big, {a, b, 16u});
  REQUIRE_FALSE(direct);
  REQUIRE_FALSE(node);
  CHECK(diag::render_text(node.error()) == diag::render_text(direct.error()));
  // Binding errors too: a float for the u32 count.
  auto direct_bind = f.copy->launch(f.config, {a, b, 2.5f}, &s);
  auto node_bind = g.launch(*f.copy, f.config, {a, b, 2.5f});
  REQUIRE_FALSE(node_bind);
  CHECK(diag::render_text(node_bind.error()) == diag::render_text(direct_bind.error()));
  CHECK(fake_programs().nodes.empty());
  CHECK(g.size() == 0);
}

TEST_CASE("graph: dependencies follow the access modes: RAW, WAR, WAW ordered; independent nodes are not") {
  ProgramFixture f;
  auto g = new_graph(f);
  auto src = f.buffer(), mid = f.buffer(), out = f.buffer(), other = f.buffer();
  auto n0 = add(g, *f.copy, f.config, {mid, src, 16u});   // writes mid, reads src
  auto n1 = add(g, *f.copy, f.config, {out, mid, 16u});   // reads mid: after n0 (read after write)
  auto n2 = add(g, *f.bump, f.config, {src, 16u});        // writes src: after n0's read (write after read)
  auto n3 = add(g, *f.bump, f.config, {other, 16u});      // touches nothing else: no dependency
  auto n4 = add(g, *f.copy, f.config, {mid, other, 16u}); // writes mid: after n1's read and n0's write; reads other after n3
  CHECK(g.dependencies(n0).empty());
  CHECK(g.dependencies(n1) == std::vector<uint32_t>{0});
  CHECK(g.dependencies(n2) == std::vector<uint32_t>{0});
  CHECK(g.dependencies(n3).empty());
  CHECK(g.dependencies(n4) == std::vector<uint32_t>{0, 1, 3});
  // The driver's graph has the same edges.
  CHECK(fake_programs().nodes[4].deps == std::vector<size_t>{0, 1, 3});
}

TEST_CASE("graph: nodes with untracked memory are ordered with every other node") {
  SUBCASE("a raw device pointer") {
    ProgramFixture f;
    auto g = new_graph(f);
    auto a = f.buffer(), b = f.buffer(), c = f.buffer();
    add(g, *f.bump, f.config, {a, 16u});
    add(g, *f.bump, f.config, {b, 16u});
    auto raw = add(g, *f.copy, f.config, {Arg::device_pointer(c.pointer(), 1024), a, 16u});
    auto after = add(g, *f.bump, f.config, {b, 16u});
    CHECK(g.dependencies(raw) == std::vector<uint32_t>{0, 1});
    CHECK(g.dependencies(after) == std::vector<uint32_t>{2});
  }
  SUBCASE("a runtime without dependency tracking") {
    RuntimeOptions o;
    o.track_dependencies = false;
    ProgramFixture f(o);
    auto g = new_graph(f);
    auto a = f.buffer(), b = f.buffer();
    add(g, *f.bump, f.config, {a, 16u});
    auto n1 = add(g, *f.bump, f.config, {b, 16u});
    auto n2 = add(g, *f.bump, f.config, {a, 16u});
    CHECK(g.dependencies(n1) == std::vector<uint32_t>{0});
    CHECK(g.dependencies(n2) == std::vector<uint32_t>{1});
  }
}

TEST_CASE("graph: a replay is one cuGraphLaunch on its stream, ordered with other streams by its buffers") {
  ProgramFixture f;
  auto producer = f.stream(), replay = f.stream(), consumer = f.stream();
  auto src = f.buffer(), mid = f.buffer(), out = f.buffer(), seen = f.buffer();
  auto g = new_graph(f);
  add(g, *f.copy, f.config, {mid, src, 16u});
  add(g, *f.copy, f.config, {out, mid, 16u});
  auto exec = instantiate(g);
  f.bump_on(producer, src);                  // the graph reads src: the replay waits for this
  REQUIRE(exec.launch(replay));
  f.copy_on(consumer, seen, out);            // reads what the replay wrote: waits for the replay
  f.bump_on(producer, src);                  // writes what the replay read: waits for the replay
  HappensBefore hb(fake_state().calls);
  const size_t launch = hb.find("cuGraphLaunch");
  CHECK(fake_state().calls[launch].stream == replay.handle());
  CHECK(happens_before(launch_writing(src.pointer()), launch));
  CHECK(happens_before(launch, launch_writing(seen.pointer())));
  CHECK(happens_before(launch, launch_writing(src.pointer(), 1)));
  REQUIRE(exec.launch(replay));
  CHECK(exec.replays() == 2);
  CHECK(fake_state().launches == 3);  // the graph's kernels never went through cuLaunchKernel
}

TEST_CASE("graph: a replay after a buffer of the graph was destroyed is PG4030, before the driver") {
  ProgramFixture f;
  auto s = f.stream();
  auto src = f.buffer();
  auto g = new_graph(f);
  GraphExec exec;
  {
    auto gone = f.buffer();
    add(g, *f.copy, f.config, {gone, src, 16u});
    exec = instantiate(g);
  }
  auto r = exec.launch(s);
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::graph_buffer_released);
  CHECK(diag::render_text(r.error()).find("graph node #0 (kernel 'copy'") != std::string::npos);
  CHECK(diag::render_text(r.error()).find("its parameter 'dst'") != std::string::npos);
  CHECK(fake_state().count("cuGraphLaunch") == 0);
}

TEST_CASE("graph: a replay on a stream of another context is PG4008; a kernel of another context too") {
  ProgramFixture f, other;
  auto foreign = other.stream();
  auto a = f.buffer(), b = f.buffer();
  auto g = new_graph(f);
  add(g, *f.copy, f.config, {a, b, 16u});
  auto exec = instantiate(g);
  auto r = exec.launch(foreign);
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::foreign_object);
  auto n = g.launch(*other.copy, f.config, {a, b, 16u});
  REQUIRE_FALSE(n);
  CHECK(first_code(n.error()) == diag::Code::foreign_object);
  CHECK(fake_state().count("cuGraphLaunch") == 0);
}

TEST_CASE("graph update: new geometry and arguments reach cuGraphExecKernelNodeSetParams after validation") {
  ProgramFixture f;
  auto a = f.buffer(), b = f.buffer(), c = f.buffer();
  auto g = new_graph(f);
  auto n = add(g, *f.copy, f.config, {a, b, 16u});
  auto exec = instantiate(g);
  REQUIRE(exec.update(n, LaunchConfig::linear(8, 32), {c, b, 16u}));
  const auto& updates = fake_programs().updates;
  REQUIRE(updates.size() == 1);
  CHECK(updates[0].first == 0);
  CHECK(updates[0].second.grid[0] == 8);
  CHECK(updates[0].second.block[0] == 32);
  CHECK(updates[0].second.params == std::vector<uint64_t>{c.pointer(), b.pointer()});
  // The replay now writes c: a reader of c on another stream waits for it.
  auto s = f.stream(), t = f.stream();
  auto seen = f.buffer();
  REQUIRE(exec.launch(s));
  f.copy_on(t, seen, c);
  CHECK(happens_before(HappensBefore(fake_state().calls).find("cuGraphLaunch"), launch_writing(seen.pointer())));
}

TEST_CASE("graph update: an illegal geometry or binding is the direct launch's diagnostic, not a driver error") {
  ProgramFixture f;
  auto a = f.buffer(), b = f.buffer();
  auto g = new_graph(f);
  auto n = add(g, *f.copy, f.config, {a, b, 16u});
  auto exec = instantiate(g);
  const LaunchConfig too_big = LaunchConfig::linear(1, 2048);
  auto direct = f.copy->launch(too_big, {a, b, 16u});
  auto r = exec.update(n, too_big, {a, b, 16u});
  REQUIRE_FALSE(r);
  REQUIRE_FALSE(direct);
  CHECK(first_code(r.error()) == first_code(direct.error()));
  CHECK(diag::render_text(r.error()).find("in the update of graph node #0") != std::string::npos);
  auto bad_grid = exec.update(n, LaunchConfig{{1, 70000, 1}, {32, 1, 1}, 0, false, true}, {a, b, 16u});
  REQUIRE_FALSE(bad_grid);
  auto bad_arg = exec.update(n, f.config, {a, 16u, 16u});
  REQUIRE_FALSE(bad_arg);
  CHECK(first_code(bad_arg.error()) == first_code(f.copy->launch(f.config, {a, 16u, 16u}).error()));
  CHECK(fake_programs().updates.empty());
}

TEST_CASE("graph update: a node of another graph or past the graph is PG4032") {
  ProgramFixture f;
  auto a = f.buffer(), b = f.buffer();
  auto g = new_graph(f), h = new_graph(f);
  auto mine = add(g, *f.copy, f.config, {a, b, 16u});
  auto foreign = add(h, *f.copy, f.config, {a, b, 16u});
  auto exec = instantiate(g);
  auto r = exec.update(foreign, f.config, {a, b, 16u});
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::graph_update_node);
  CHECK(diag::render_text(r.error()).find("a node of another graph") != std::string::npos);
  auto past = exec.update(GraphNode{mine.graph, 5}, f.config, {a, b, 16u});
  REQUIRE_FALSE(past);
  CHECK(first_code(past.error()) == diag::Code::graph_update_node);
  CHECK(diag::render_text(past.error()).find("node #5, past the graph's 1 nodes") != std::string::npos);
  CHECK(fake_programs().updates.empty());
}

TEST_CASE("graph update: turning cooperative mode, or passing a raw pointer for a tracked node, is PG4033") {
  ProgramFixture f;
  auto a = f.buffer(), b = f.buffer();
  auto g = new_graph(f);
  auto n = add(g, *f.copy, f.config, {a, b, 16u});
  auto exec = instantiate(g);
  LaunchConfig coop = f.config;
  coop.cooperative = true;
  auto r = exec.update(n, coop, {a, b, 16u});
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::graph_update_fixed);
  CHECK(diag::render_text(r.error()).find("turns cooperative mode on") != std::string::npos);
  auto raw = exec.update(n, f.config, {Arg::device_pointer(a.pointer(), 1024), b, 16u});
  REQUIRE_FALSE(raw);
  CHECK(first_code(raw.error()) == diag::Code::graph_update_fixed);
  CHECK(fake_programs().updates.empty());
}

TEST_CASE("graph update: a new buffer that would race with a node the graph does not order is PG4034") {
  ProgramFixture f;
  auto src = f.buffer(), a = f.buffer(), b = f.buffer(), c = f.buffer();
  auto g = new_graph(f);
  add(g, *f.copy, f.config, {a, src, 16u});            // #0 writes a
  auto n1 = add(g, *f.copy, f.config, {b, src, 16u});  // #1 writes b: independent of #0
  auto n2 = add(g, *f.copy, f.config, {c, a, 16u});    // #2 reads a: after #0
  auto exec = instantiate(g);
  // #1 reading a would race with #0 writing it.
  auto race = exec.update(n1, f.config, {b, a, 16u});
  REQUIRE_FALSE(race);
  CHECK(first_code(race.error()) == diag::Code::graph_update_race);
  const std::string text = diag::render_text(race.error());
  CHECK(text.find("node #0 (kernel 'copy'") != std::string::npos);
  CHECK(text.find("writes through its parameter 'dst'") != std::string::npos);
  // #1 writing c would race with #2 writing it.
  CHECK(first_code(exec.update(n1, f.config, {c, src, 16u}).error()) == diag::Code::graph_update_race);
  // #2 writing b, which #1 writes, is unordered too; keeping its buffers with a new geometry is fine.
  CHECK(first_code(exec.update(n2, f.config, {b, a, 16u}).error()) == diag::Code::graph_update_race);
  REQUIRE(exec.update(n2, LaunchConfig::linear(2, 64), {c, a, 16u}));
  CHECK(fake_programs().updates.size() == 1);
}

TEST_CASE("graph: copies and fills become memcpy and memset nodes, ordered with kernels by their buffers") {
  ProgramFixture f;
  auto d = f.buffer(), e = f.buffer();
  auto h = HostBuffer::allocate(f.rt->shared_context(), 1024);
  REQUIRE(h);
  auto g = new_graph(f);
  auto n0 = g.fill(DeviceSpan<float>(e), 0.0f);                                   // writes e
  auto n1 = g.copy(DeviceSpan<float>(d, 0, 16), HostSpan<float>(*h, 0, 16));     // writes d, reads h
  REQUIRE(n0);
  REQUIRE(n1);
  auto n2 = add(g, *f.copy, f.config, {e, d, 16u});                               // writes e, reads d
  auto n3 = g.copy(HostSpan<float>(*h, 16, 16), DeviceSpan<float>(e, 0, 16));     // writes h, reads e
  REQUIRE(n3);
  CHECK(g.dependencies(n2) == std::vector<uint32_t>{0, 1});
  CHECK(g.dependencies(*n3) == std::vector<uint32_t>{1, 2});  // after n1's read of h, n2's write of e
  const auto& nodes = fake_programs().nodes;
  REQUIRE(nodes.size() == 4);
  CHECK(nodes[0].kind == "memset");
  CHECK(nodes[0].dst == e.pointer());
  CHECK(nodes[0].element_size == 4);
  CHECK(nodes[0].bytes == 1024);
  CHECK(nodes[1].kind == "memcpy");
  CHECK(nodes[1].dst == d.pointer());
  CHECK(nodes[1].src == reinterpret_cast<uint64_t>(h->data()));
  CHECK(nodes[1].bytes == 64);
  CHECK(nodes[3].dst == reinterpret_cast<uint64_t>(h->data()) + 64);
  CHECK(nodes[3].src == e.pointer());
  // The host reads the pinned buffer after a replay only once the replay is complete.
  auto exec = instantiate(g);
  auto s = f.stream();
  REQUIRE(exec.launch(s));
  REQUIRE(h->read<float>());
  HappensBefore hb(fake_state().calls);
  CHECK(hb.ordered(hb.find("cuGraphLaunch"), hb.find("cuEventSynchronize")));
}

TEST_CASE("graph: a copy with pageable host memory is PG4031; ranges and sizes are checked as copy_async does") {
  ProgramFixture f;
  auto d = f.buffer();
  auto h = HostBuffer::allocate(f.rt->shared_context(), 64);
  REQUIRE(h);
  auto g = new_graph(f);
  std::vector<float> pageable(16);
  auto r = g.copy(CopyEnd::of(DeviceSpan<float>(d, 0, 16)), CopyEnd::of(std::span<const float>(pageable)));
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::graph_pageable_memory);
  CHECK(diag::render_text(r.error()).find("ordinary host memory as its source") != std::string::npos);
  auto past = g.copy(DeviceSpan<float>(d, 250, 16), HostSpan<float>(*h));
  REQUIRE_FALSE(past);
  CHECK(first_code(past.error()) == diag::Code::copy_out_of_range);
  auto sizes = g.copy(DeviceSpan<float>(d, 0, 8), HostSpan<float>(*h));
  REQUIRE_FALSE(sizes);
  CHECK(first_code(sizes.error()) == diag::Code::copy_size_mismatch);
  auto odd = g.fill(CopyEnd::of(DeviceSpan<std::byte>(d, 1, 6)), 0u, 4);
  REQUIRE_FALSE(odd);
  CHECK(first_code(odd.error()) == diag::Code::copy_size_mismatch);
  CHECK(fake_programs().nodes.empty());
}
