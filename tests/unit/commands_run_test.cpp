// commands::prepare_run / execute_run: `ptxgate run` as library calls, on a fake driver.
#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

#include "ptxgate/commands/npy.hpp"
#include "ptxgate/commands/run.hpp"
#include "runtime_fake_driver.hpp"

using namespace ptxgate;
using runtime::testing::fake_state;

namespace {

commands::RunRequest saxpy_request() {
  commands::RunRequest r;
  r.input = PTXGATE_SOURCE_DIR "/examples/saxpy.pg";
  r.kernel = "saxpy";
  r.args = {"y=iota:1000", "x=fill:1000:2", "a=3", "n=1000"};
  r.cache.use_disk = false;
  return r;
}

std::unique_ptr<runtime::Runtime> fake_runtime() {
  static runtime::DriverApi api = runtime::testing::make_fake_driver();
  auto ctx = runtime::Context::open(0, &api);
  REQUIRE(ctx);
  runtime::RuntimeOptions options;
  options.cache.use_disk = false;
  return std::make_unique<runtime::Runtime>(*ctx, options);
}

bool has_code(const diag::Diagnostics& d, diag::Code code) {
  for (const auto& item : d)
    if (item.code == code) return true;
  return false;
}

}  // namespace

TEST_CASE("pipeline run: every binding problem is reported together, before any driver call") {
  auto r = saxpy_request();
  r.args = {"y=iota:10", "x=fill:10", "nosuch=1"};  // x malformed, a and n missing, nosuch unknown
  r.prints = {"a", "y:z"};                          // a is a scalar; K is not a number
  r.outs = {"x"};                                   // no '='
  auto prepared = commands::prepare_run(r);
  REQUIRE_FALSE(prepared);
  const auto& d = prepared.error().diagnostics;
  CHECK_FALSE(prepared.error().usage);
  CHECK_FALSE(prepared.error().no_driver);
  std::string text = diag::render_text(d);
  CHECK(text.find("no --arg for parameter 'a'") != std::string::npos);
  CHECK(text.find("no --arg for parameter 'n'") != std::string::npos);
  CHECK(text.find("has no parameter 'nosuch'") != std::string::npos);
  CHECK(text.find("--print a: no buffer parameter named 'a'") != std::string::npos);
  CHECK(text.find("--print 'y:z': K must be a number") != std::string::npos);
  CHECK(text.find("fill:10") != std::string::npos);
  CHECK(d.error_count() == 7);
}

TEST_CASE("pipeline run: a malformed flag alone is a usage stop; an unknown kernel is PG2006") {
  auto r = saxpy_request();
  r.grid = "1,x";
  auto bad_grid = commands::prepare_run(r);
  REQUIRE_FALSE(bad_grid);
  CHECK(bad_grid.error().usage);
  CHECK(has_code(bad_grid.error().diagnostics, diag::Code::invalid_launch_option));
  r = saxpy_request();
  r.kernel = "nope";
  auto unknown = commands::prepare_run(r);
  REQUIRE_FALSE(unknown);
  CHECK_FALSE(unknown.error().usage);
  CHECK(has_code(unknown.error().diagnostics, diag::Code::kernel_not_found));
}

TEST_CASE("pipeline run: the default grid covers the largest buffer; prints and --out read buffers back") {
  runtime::testing::reset_fake_state();
  auto rt = fake_runtime();
  auto out_path = std::filesystem::temp_directory_path() / ("ptxgate-run-" + std::to_string(::getpid()) + ".npy");
  auto r = saxpy_request();
  r.prints = {"y:3", "x"};
  r.outs = {"y=" + out_path.string()};
  auto prepared = commands::prepare_run(r);
  REQUIRE(prepared);
  CHECK(fake_state().launches == 0);
  fake_state().param_sizes = {8, 8, 4, 4};
  auto result = commands::execute_run(*prepared, *rt);
  REQUIRE_MESSAGE(result, (result ? "" : diag::render_text(result.error().diagnostics)));
  CHECK(fake_state().launches == 1);
  CHECK(result->config.grid == std::array<uint64_t, 3>{4, 1, 1});  // ceil(1000 / 256), @workgroup(256)
  CHECK(result->block == std::array<uint64_t, 3>{256, 1, 1});
  CHECK(fake_state().last_grid[0] == 4);
  CHECK(fake_state().last_params[2] == 0x40400000u);  // a = 3.0f
  CHECK(fake_state().last_params[3] == 1000u);
  // The fake driver copies nothing back, so the read-back holds what was uploaded.
  REQUIRE(result->printed.size() == 2);
  CHECK(result->printed[0].name == "y");
  CHECK(result->printed[0].elements == std::vector<std::string>{"0", "1", "2"});
  CHECK(result->printed[1].elements.size() == 10);
  CHECK(result->printed[1].elements[9] == "2");
  CHECK(fake_state().count("cuMemcpyDtoH") == 3);
  REQUIRE(result->written.size() == 1);
  auto written = commands::read_npy(out_path);
  REQUIRE(written);
  CHECK(written->count == 1000);
  CHECK(written->as<float>()[999] == 999.0f);
  std::filesystem::remove(out_path);
}

TEST_CASE("pipeline run: a launch the checks block never reaches the driver") {
  runtime::testing::reset_fake_state();
  auto rt = fake_runtime();
  auto r = saxpy_request();
  r.block = "2048";
  auto prepared = commands::prepare_run(r);
  REQUIRE(prepared);
  auto result = commands::execute_run(*prepared, *rt);
  REQUIRE_FALSE(result);
  CHECK(fake_state().launches == 0);
  CHECK_FALSE(result.error().usage);
  CHECK(result.error().diagnostics.has_errors());
}

TEST_CASE("pipeline run: a missing argument file stops before the launch with a located PG5001") {
  runtime::testing::reset_fake_state();
  auto rt = fake_runtime();
  auto r = saxpy_request();
  r.args[1] = "x=/nonexistent/x.npy";
  auto prepared = commands::prepare_run(r);
  REQUIRE(prepared);  // files are read only once a driver is there
  auto result = commands::execute_run(*prepared, *rt);
  REQUIRE_FALSE(result);
  REQUIRE(has_code(result.error().diagnostics, diag::Code::cannot_read_file));
  CHECK(result.error().diagnostics.items()[0].location.file == "/nonexistent/x.npy");
  CHECK(fake_state().launches == 0);
}
