// commands::check_offline: the offline pipeline goes through the module cache; occupancy_offline
// shares its verdict.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/commands/emit.hpp"
#include "ptxgate/commands/occupancy.hpp"
#include "ptxgate/commands/offline_check.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/toolchain/toolkit.hpp"
#include "capi_test_support.hpp"
#include "cubin_forge.hpp"
#include "scoped_env.hpp"

using namespace ptxgate;

namespace {
std::filesystem::path fresh_dir(const char* tag) {
  auto dir = std::filesystem::temp_directory_path() / ("ptxgate-pipeline-" + std::string(tag) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

commands::OfflineLaunch saxpy(const std::filesystem::path& cache_dir) {
  commands::OfflineLaunch l;
  l.input = PTXGATE_SOURCE_DIR "/examples/saxpy.pg";
  l.kernel = "saxpy";
  l.grid = "132";
  l.profile = "h100-sxm";
  l.cache.directory = cache_dir;
  return l;
}
}  // namespace

TEST_CASE("pipeline: check compiles through the disk cache, and cache list shows the module") {
  auto toolkit = toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message);
    return;
  }
  auto dir = fresh_dir("list");
  auto first = commands::check_offline(saxpy(dir));
  REQUIRE_MESSAGE(first.has_value(), (first ? "" : first.error().diagnostics.items()[0].message));
  CHECK(first->verdict.launchable);
  CHECK(first->cache_outcome == module_cache::CacheOutcome::compiled);
  diag::Diagnostics warnings;
  auto listed = module_cache::DiskCache::open_existing(dir, warnings).list();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].has_cubin);
  CHECK(listed[0].kernel_names == std::vector<std::string>{"saxpy"});
  // A second check (a new process, as far as the cache knows) is a disk hit with the same verdict.
  auto second = commands::check_offline(saxpy(dir));
  REQUIRE(second);
  CHECK(second->cache_outcome == module_cache::CacheOutcome::disk_hit);
  CHECK(second->verdict.launchable == first->verdict.launchable);
  CHECK(second->resources.registers_per_thread == first->resources.registers_per_thread);

  // A missing ptxas is never answered from an entry compiled with one: PG2005.
  {
    testing::ScopedEnv env("PTXGATE_PTXAS", "/nonexistent/bin/ptxas");
    auto missing = commands::check_offline(saxpy(dir));
    REQUIRE_FALSE(missing);
    CHECK(missing.error().diagnostics.items()[0].code == diag::Code::ptxas_missing);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("pipeline: malformed flags are usage stops, before anything is compiled") {
  auto dir = fresh_dir("usage");
  for (auto edit : {+[](commands::OfflineLaunch& l) { l.grid = "0x10"; },
                    +[](commands::OfflineLaunch& l) { l.block = "-1"; },
                    +[](commands::OfflineLaunch& l) { l.shared_bytes = "18446744073709551616"; }}) {
    auto l = saxpy(dir);
    edit(l);
    auto r = commands::check_offline(l);
    REQUIRE_FALSE(r);
    CHECK(r.error().usage);
    CHECK(r.error().diagnostics.items()[0].code == diag::Code::invalid_launch_option);
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("pipeline: emit's PTX comes through the disk cache, the same text a direct build gives") {
  auto dir = fresh_dir("emit");
  auto loaded = ir::load_file(PTXGATE_SOURCE_DIR "/examples/saxpy.pg");
  REQUIRE(loaded);
  commands::EmitRequest request;
  request.codegen.target = ir::Target(90);
  request.cache.directory = dir;
  auto first = commands::emit_ptx(loaded->module, request);
  REQUIRE(first);
  CHECK(first->cache_outcome == module_cache::CacheOutcome::compiled);
  auto second = commands::emit_ptx(loaded->module, request);
  REQUIRE(second);
  CHECK(second->cache_outcome == module_cache::CacheOutcome::disk_hit);
  CHECK(second->ptx == first->ptx);
  auto direct = toolchain::build(loaded->module, request.codegen, toolchain::discover(), /*assemble_cubin=*/false);
  REQUIRE(direct);
  CHECK(direct->ptx == first->ptx);
  diag::Diagnostics warnings;
  auto listed = module_cache::DiskCache::open_existing(dir, warnings).list();
  REQUIRE(listed.size() == 1);
  CHECK_FALSE(listed[0].has_cubin);
  std::filesystem::remove_all(dir);
}

TEST_CASE("pipeline: occupancy gives check's verdict where check blocks every block size (PG3301)") {
  auto toolkit = toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message);
    return;
  }
  // A cubin whose kernel records 300 registers per thread (more than any device allows).
  auto assembled = toolchain::assemble(testing::ptx_fixture("nvcc_block_sum.ptx"), "sm_90", toolkit);
  REQUIRE(assembled);
  std::string cubin = assembled->cubin;
  auto registers = testing::attribute_at(cubin, ".nv.info", 0x04, 0x2f);
  REQUIRE(registers);
  testing::write_le(cubin, *registers + 4, 300, 4);
  auto dir = fresh_dir("occupancy");
  std::filesystem::create_directories(dir);
  const auto path = (dir / "many_registers.cubin").string();
  std::ofstream(path, std::ios::binary) << cubin;

  commands::OfflineLaunch launch;
  launch.input = path;
  launch.kernel = "_Z9block_sumPKfPfm";
  launch.profile = "h100-sxm";
  launch.cache.directory = dir / "cache";
  auto checked = commands::check_offline(launch);
  REQUIRE(checked);
  CHECK_FALSE(checked->verdict.launchable);
  commands::OccupancyRequest request;
  request.input = path;
  request.kernel = launch.kernel;
  request.profile = launch.profile;
  request.cache.directory = launch.cache.directory;
  auto occupancy = commands::occupancy_offline(request);
  REQUIRE_FALSE(occupancy);  // a verdict, not a table
  CHECK_FALSE(occupancy.error().usage);
  const auto& from_check = checked->verdict.diagnostics;
  const auto& from_occupancy = occupancy.error().diagnostics;
  REQUIRE(from_occupancy.error_count() == from_check.error_count());
  std::vector<std::string> a, b;
  for (const auto& d : from_check)
    if (d.severity == diag::Severity::error) a.push_back(d.message);
  for (const auto& d : from_occupancy)
    if (d.severity == diag::Severity::error) b.push_back(d.message);
  CHECK(a == b);
  CHECK(std::any_of(from_occupancy.begin(), from_occupancy.end(),
                    [](const diag::Diagnostic& d) { return d.code == diag::Code::registers_exceeded; }));
  std::filesystem::remove_all(dir);
}

TEST_CASE("pipeline: occupancy offers only the block sizes check accepts (@workgroup, the block granule)") {
  auto toolkit = toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message);
    return;
  }
  auto dir = fresh_dir("occupancy-sizes");
  std::filesystem::create_directories(dir);
  const auto path = (dir / "k.pg").string();
  std::ofstream(path) << "@workgroup(96)\nkernel wg(inout y: f32[]) { y[thread_id.x] = 1.0; }\n"
                         "kernel warp(inout y: f32[]) { y[thread_id.x] = warp_sum(y[thread_id.x]); }\n";
  for (auto [kernel, sizes] : {std::pair{"wg", std::vector<uint32_t>{96}},
                               std::pair{"warp", std::vector<uint32_t>{32, 64, 96, 128}}}) {
    CAPTURE(kernel);
    commands::OccupancyRequest request;
    request.input = path;
    request.kernel = kernel;
    request.profile = "h100-sxm";
    request.cache.directory = dir / "cache";
    auto report = commands::occupancy_offline(request);
    REQUIRE(report);
    std::vector<uint32_t> rows;
    for (const auto& row : report->table.rows) rows.push_back(row.block_threads);
    rows.resize(std::min(rows.size(), sizes.size()));
    CHECK(rows == sizes);
    // Whatever it suggests, check launches.
    commands::OfflineLaunch launch;
    launch.input = path;
    launch.kernel = kernel;
    launch.block = std::to_string(report->table.suggested_block);
    launch.profile = "h100-sxm";
    launch.cache.directory = request.cache.directory;
    auto checked = commands::check_offline(launch);
    REQUIRE(checked);
    CHECK(checked->verdict.launchable);
  }
  std::filesystem::remove_all(dir);
}
