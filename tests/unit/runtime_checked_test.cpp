// Checked mode in the runtime over the stand-in driver: the hidden parameters on every launch path, a
// record per launch in flight, PG3804 read back at the stream's synchronisation (or at once in
// checked-launch mode), graph nodes' records, the ring drained when full, and the cache key.
#include <doctest/doctest.h>

#include <string>

#include "runtime_programs_fixture.hpp"
#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/internal/checked_records.hpp"
#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/module_cache.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

RuntimeOptions checked_options(bool checked_launches = false) {
  RuntimeOptions o;
  o.checked = true;
  o.checked_launches = checked_launches;
  return o;
}

/// Writes a violation of `site` into the record at `address` (what the kernel would have written).
void violate(uint64_t address, uint32_t site, uint64_t index, uint64_t length, uint64_t count = 1) {
  contract::CheckedRecord r;
  r.count = count;
  r.site = site;
  r.reason = static_cast<uint32_t>(contract::Violation::out_of_bounds);
  r.thread = {3, 0, 0};
  r.block = {1, 0, 0};
  r.value = index;
  r.limit = length;
  const auto bytes = r.encode();
  fake_state().write_memory(address, bytes.data(), bytes.size());
}

/// The site of `copy`'s write `dst[i]`.
uint32_t dst_site(const Kernel& k) {
  for (const auto& s : k.info().checked->sites)
    if (s.access.operation == "dst[i]") return s.id;
  FAIL("no site dst[i]");
  return 0;
}

}  // namespace

TEST_CASE("backend checked: the launch passes each buffer's length and its own record after the parameters") {
  testing::ProgramFixture f(checked_options());
  fake_state().model_memory = true;
  REQUIRE(f.copy->info().checked);
  CHECK(f.copy->entry().ptx.find("atom.global.add.u64") != std::string::npos);  // the exit's count
  auto dst = f.buffer(400), src = f.buffer(1000);
  fake_state().param_sizes = {8, 8, 4, 8, 8, 8};
  // The steady path (a SteadyKey), twice: each launch takes the next record.
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}));
  const auto first = fake_state().last_params;
  CHECK(first[0] == dst.pointer());
  CHECK(first[3] == 400);   // dst's length in bytes
  CHECK(first[4] == 1000);  // src's
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}));
  const auto second = fake_state().last_params;
  CHECK(second[5] == first[5] + contract::CheckedRecord::kSlotBytes);
  // A span passes the span's length; a raw pointer of unknown size passes "unknown" (all ones).
  REQUIRE(f.copy->launch(f.config, {Arg(DeviceSpan<float>(dst, 10, 20)), src, 16u}));
  CHECK(fake_state().last_params[3] == 80);
  REQUIRE(f.copy->launch(f.config, {Arg::device_pointer(dst.pointer(), 0), src, 16u}));
  CHECK(fake_state().last_params[3] == ~uint64_t{0});
  // launch_cuda_function with a plan, then by its ticket: the ticket carries the sizes.
  LoadedFunction& fn = f.copy->function();
  CUdeviceptr d = dst.pointer(), s = src.pointer();
  uint32_t n = 16;
  void* slots[] = {&d, &s, &n};
  contract::LaunchPlan plan;
  plan.grid = {1, 1, 1};
  plan.block = {64, 1, 1};
  plan.block_given = true;
  plan.arguments_known = true;
  plan.stream_is_null = true;
  plan.arguments.resize(3);
  plan.arguments[0].kind = plan.arguments[1].kind = contract::ArgumentDesc::Kind::buffer;
  plan.arguments[0].size_bytes = plan.arguments[1].size_bytes = 8;
  plan.arguments[0].buffer_bytes = 64;  // dst[i] for i < 16: proven in bounds (main blocks a launch proven out)
  plan.arguments[1].buffer_bytes = 96;
  plan.arguments[2].kind = contract::ArgumentDesc::Kind::scalar;
  plan.arguments[2].size_bytes = 4;
  plan.arguments[2].scalar_type = ir::Type::u32;
  LaunchTicket ticket;
  REQUIRE(launch_cuda_function(f.rt->context(), fn, plan, slots, nullptr, nullptr, &ticket));
  CHECK(fake_state().last_params[3] == 64);
  CHECK(fake_state().last_params[4] == 96);
  fake_state().last_params.clear();
  REQUIRE(launch_cuda_function(f.rt->context(), fn, ticket, slots, nullptr));
  CHECK(fake_state().last_params[3] == 64);
  CHECK(fake_state().last_params[4] == 96);
  CHECK(f.rt->context().checked_records().pending() == 6);
  REQUIRE(f.rt->synchronize());  // nothing was violated
  CHECK(f.rt->context().checked_records().pending() == 0);
}

TEST_CASE("backend checked: a violation is reported at its stream's synchronisation, once, and the record is cleared") {
  testing::ProgramFixture f(checked_options());
  fake_state().model_memory = true;
  auto dst = f.buffer(64), src = f.buffer(64);
  auto s1 = f.stream(), s2 = f.stream();
  fake_state().param_sizes = {8, 8, 4, 8, 8, 8};
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}, &s1));
  const uint64_t record = fake_state().last_params[5];
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}, &s2));
  violate(record, dst_site(*f.copy), 40, 64, 2);
  // Another stream's synchronisation does not read it.
  REQUIRE(s2.synchronize());
  auto synced = s1.synchronize();
  REQUIRE_FALSE(synced);
  REQUIRE(synced.error().size() == 1);
  const diag::Diagnostic& d = synced.error().items()[0];
  CHECK(d.code == diag::Code::checked_violation);
  CHECK(d.location.file == "programs.pg");
  CHECK(d.location.line == 4);
  CHECK(d.location.source_line == "  if (i < n) { dst[i] = src[i]; }");
  CHECK(d.message.find("launch #1 of kernel 'copy' grid=(1,1,1) block=(64,1,1)") == 0);
  CHECK(d.message.find("dst[i] would write buffer 'dst' out of bounds: thread (3, 0, 0) of block (1, 0, 0) computed "
                       "i = 40, but 'dst' holds 64 bytes (16 elements); the write was skipped") != std::string::npos);
  CHECK(d.message.find("2 threads of this launch had accesses stopped") != std::string::npos);
  // Read once; the record was zeroed for its next launch; the context is healthy.
  CHECK(fake_state().memory[record] == 0);
  REQUIRE(s1.synchronize());
  CHECK_FALSE(f.rt->context().poisoned());
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}, &s1));
  REQUIRE(f.rt->synchronize());
}

TEST_CASE("backend checked: checked-launch mode reports the violation from the launch itself") {
  testing::ProgramFixture f(checked_options(/*checked_launches=*/true));
  fake_state().model_memory = true;
  auto dst = f.buffer(64), src = f.buffer(64);
  fake_state().param_sizes = {8, 8, 4, 8, 8, 8};
  // The fake driver runs nothing: write the record the next launch will take before it.
  auto& records = f.rt->context().checked_records();
  auto slot = records.reserve();
  REQUIRE(slot);
  records.release(slot->index);
  violate(slot->address + contract::CheckedRecord::kSlotBytes, dst_site(*f.copy), 99, 64);
  auto launched = f.copy->launch(f.config, {dst, src, 16u});
  REQUIRE_FALSE(launched);
  CHECK(launched.error().items()[0].code == diag::Code::checked_violation);
  CHECK(launched.error().items()[0].message.find("i = 99") != std::string::npos);
  CHECK(fake_state().count("cuStreamSynchronize") >= 1);
  REQUIRE(f.rt->synchronize());
}

TEST_CASE("backend checked: a graph's checked node has its own record, read when a replay's stream synchronises") {
  testing::ProgramFixture f(checked_options());
  fake_state().model_memory = true;
  auto dst = f.buffer(64), src = f.buffer(64);
  fake_state().param_sizes = {8, 8, 4, 8, 8, 8};
  auto graph = Graph::create(f.rt->shared_context());
  REQUIRE(graph);
  auto added = graph->launch(*f.copy, f.config, {dst, src, 16u});
  REQUIRE(added);
  const auto node = testing::fake_programs().nodes.back();
  CHECK(node.params[3] == 64);
  const uint64_t record = node.params[5];
  CHECK(record != 0);
  auto exec = graph->instantiate();
  REQUIRE(exec);
  auto s = f.stream();
  REQUIRE(exec->launch(s));
  REQUIRE(exec->launch(s));
  violate(record, dst_site(*f.copy), 17, 64);
  auto synced = s.synchronize();
  REQUIRE_FALSE(synced);
  REQUIRE(synced.error().size() == 1);  // two replays before the synchronisation: one record, one report
  CHECK(synced.error().items()[0].message.find("graph node #0 (kernel 'copy'") == 0);
  CHECK(synced.error().items()[0].message.find("replay 2") != std::string::npos);
  REQUIRE(s.synchronize());
  // An update keeps the node's record and passes the new lengths.
  auto small = f.buffer(32);
  auto updated = exec->update(*added, f.config, {small, src, 8u});
  if (!updated) FAIL(diag::render_text(updated.error()));
  const auto& params = testing::fake_programs().updates.back().second.params;
  CHECK(params[3] == 32);
  CHECK(params[5] == record);
}

TEST_CASE("backend checked: a full ring completes and reads the launches in flight, keeping their reports") {
  testing::ProgramFixture f(checked_options());
  fake_state().model_memory = true;
  auto dst = f.buffer(64), src = f.buffer(64);
  auto s = f.stream();
  fake_state().param_sizes = {8, 8, 4, 8, 8, 8};
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}, &s));
  violate(fake_state().last_params[5], dst_site(*f.copy), 70, 64);
  for (uint32_t i = 1; i < CheckedRecords::kSlots; ++i) REQUIRE(f.copy->launch(f.config, {dst, src, 16u}, &s));
  CHECK(f.rt->context().checked_records().pending() == CheckedRecords::kSlots);
  const size_t syncs = fake_state().count("cuStreamSynchronize");
  REQUIRE(f.copy->launch(f.config, {dst, src, 16u}, &s));  // the ring wraps: the first launch's slot again
  CHECK(fake_state().count("cuStreamSynchronize") == syncs + 1);
  CHECK(f.rt->context().checked_records().pending() == 1);
  auto synced = s.synchronize();
  REQUIRE_FALSE(synced);
  CHECK(synced.error().items()[0].message.find("launch #1 of kernel 'copy'") == 0);
  CHECK(synced.error().items()[0].message.find("i = 70") != std::string::npos);
}

TEST_CASE("backend checked: checked mode is part of the module-cache key; the unchecked kernel has no hidden parameters") {
  testing::ProgramFixture plain;
  CHECK_FALSE(plain.copy->info().checked);
  CHECK(plain.copy->entry().ptx.find("atom.global.add.u64") == std::string::npos);
  auto dst = plain.buffer(64), src = plain.buffer(64);
  fake_state().param_sizes = {8, 8, 4};
  REQUIRE(plain.copy->launch(plain.config, {dst, src, 16u}));
  CHECK(fake_state().last_params.size() == 3);
  CHECK(plain.rt->context().checked_records_if_made() == nullptr);

  ir::Module module;
  module_cache::CompileRequest request;
  request.produce_cubin = false;
  const auto unchecked = module_cache::derive_key(module_cache::key_inputs_for(module, request, request.toolkit()));
  request.codegen.checked = true;
  CHECK(module_cache::codegen_options_text(request.codegen) == "opt_level=3;pipeline=kernel-1;checked=1");
  CHECK(module_cache::derive_key(module_cache::key_inputs_for(module, request, request.toolkit())) != unchecked);
}
