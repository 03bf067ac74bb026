// Unit tests for device profiles: shipped values, lookup, listing and every parse error.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"

using namespace ptxgate;
using namespace ptxgate::validation;
namespace fs = std::filesystem;

namespace {

DeviceCaps profile(std::string_view name) {
  auto caps = load_profile(name);
  REQUIRE_MESSAGE(caps.has_value(), "profile ", name, " did not load");
  return *caps;
}

// A scratch file removed at scope exit.
struct ScratchFile {
  fs::path path;
  explicit ScratchFile(const std::string& text, const std::string& name = "profile.json") {
    path = fs::temp_directory_path() / ("ptxgate-validation-test-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(path) << text;
  }
  ~ScratchFile() { fs::remove(path); }
};

bool has_code(const diag::Diagnostics& d, diag::Code c) {
  for (const auto& x : d)
    if (x.code == c) return true;
  return false;
}

}  // namespace

TEST_CASE("shipped profiles carry the documented per-compute-capability limits") {
  struct Expect {
    const char* name;
    int major, minor;
    uint32_t sms, threads_sm, blocks_sm, smem_sm, optin, reserved;
  };
  const Expect table[] = {
      {"h100-sxm", 9, 0, 132, 2048, 32, 233472, 232448, 1024}, {"h200", 9, 0, 132, 2048, 32, 233472, 232448, 1024},
      {"a100-sxm", 8, 0, 108, 2048, 32, 167936, 166912, 1024}, {"l4", 8, 9, 58, 1536, 24, 102400, 101376, 1024},
      {"t4", 7, 5, 40, 1024, 16, 65536, 65536, 0},
      {"b200", 10, 0, 148, 2048, 32, 233472, 232448, 1024}, {"rtx-5090", 12, 0, 170, 1536, 24, 102400, 101376, 1024},
  };
  for (const auto& e : table) {
    CAPTURE(e.name);
    auto c = profile(e.name);
    CHECK(c.profile == e.name);
    CHECK(c.cc_major == e.major);
    CHECK(c.cc_minor == e.minor);
    CHECK(c.sm_count == e.sms);
    CHECK(c.max_threads_per_sm == e.threads_sm);
    CHECK(c.max_blocks_per_sm == e.blocks_sm);
    CHECK(c.shared_per_sm == e.smem_sm);
    CHECK(c.shared_per_block_optin == e.optin);
    CHECK(c.reserved_shared_per_block == e.reserved);
    CHECK(c.shared_per_block == 49152);
    CHECK(c.max_threads_per_block == 1024);
    CHECK(c.max_block_dim == std::array<uint32_t, 3>{1024, 1024, 64});
    CHECK(c.max_grid_dim == std::array<uint32_t, 3>{2147483647, 65535, 65535});
    CHECK(c.registers_per_block == 65536);
    CHECK(c.registers_per_sm == 65536);
    CHECK(c.cooperative_launch);
  }
  CHECK(profile("h100-sxm").arch() == "sm_90");
  CHECK(profile("t4").arch() == "sm_75");
  CHECK(profile("b200").arch() == "sm_100");
  CHECK(profile("rtx-5090").arch() == "sm_120");
}

TEST_CASE("every profile's blocks/SM agrees with cuda_occupancy.h's own table") {
  auto list = list_profiles();
  REQUIRE(list.has_value());
  CHECK(list->size() >= 5);
  contract::KernelResources tiny;
  tiny.registers_per_thread = 8;
  for (const auto& p : *list) {
    CAPTURE(p.name);
    auto occ = compute_occupancy(p.caps, tiny, 32, 0);
    REQUIRE(occ.computed);
    CHECK(occ.by_blocks == p.caps.max_blocks_per_sm);
    CHECK(occ.by_threads == p.caps.max_threads_per_sm / 32);
  }
}

TEST_CASE("profiles are listed sorted by name and round-trip through JSON") {
  auto list = list_profiles();
  REQUIRE(list.has_value());
  for (size_t i = 1; i < list->size(); ++i) CHECK((*list)[i - 1].name < (*list)[i].name);
  for (const auto& p : *list) {
    auto again = caps_from_json(to_json(p.caps), "roundtrip");
    REQUIRE(again.has_value());
    CHECK(to_json(*again) == to_json(p.caps));
  }
}

TEST_CASE("unknown profile name lists the available names (PG3601)") {
  auto r = load_profile("no-such-gpu");
  REQUIRE_FALSE(r.has_value());
  REQUIRE(r.error().size() == 1);
  CHECK(r.error().items()[0].code == diag::Code::profile_not_found);
  CHECK(r.error().items()[0].message.find("h100-sxm") != std::string::npos);
  CHECK(r.error().items()[0].message.find("t4") != std::string::npos);
}

TEST_CASE("a profile given as a path is read as a file") {
  auto j = to_json(profile("l4"));
  j["sm_count"] = 7;
  j.erase("profile");
  ScratchFile f(j.dump(), "custom-l4.json");
  auto c = load_profile(f.path.string());
  REQUIRE(c.has_value());
  CHECK(c->sm_count == 7);
  CHECK(c->profile == f.path.stem().string());
  auto missing = load_profile("/nonexistent/dir/x.json");
  REQUIRE_FALSE(missing.has_value());
  CHECK(has_code(missing.error(), diag::Code::cannot_read_file));
}

TEST_CASE("PTXGATE_PROFILE_DIR is searched first") {
  auto dir = fs::temp_directory_path() / ("ptxgate-profile-dir-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto j = to_json(profile("h100-sxm"));
  j["sm_count"] = 3;
  std::ofstream(dir / "h100-sxm.json") << j.dump();
  ::setenv("PTXGATE_PROFILE_DIR", dir.c_str(), 1);
  auto c = load_profile("h100-sxm");
  ::unsetenv("PTXGATE_PROFILE_DIR");
  fs::remove_all(dir);
  REQUIRE(c.has_value());
  CHECK(c->sm_count == 3);
}

TEST_CASE("malformed profile JSON is PG3602") {
  ScratchFile f("{ \"name\": \"x\", ");
  auto r = load_profile(f.path.string());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().items()[0].code == diag::Code::profile_malformed);
  CHECK(r.error().items()[0].location.file == f.path.string());
}

TEST_CASE("missing and mistyped fields are PG3603, out-of-range numbers PG3604, each named, all reported") {
  auto j = to_json(profile("a100-sxm"));
  j.erase("sm_count");
  j["max_block_dim"] = {1024, 1024};
  j["cooperative_launch"] = "yes";
  j["warp_size"] = -32;
  auto r = caps_from_json(j, "bad.json");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().size() == 4);
  std::string all;
  for (const auto& d : r.error()) {
    // A negative warp size is a number out of range (PG3604); the others are missing or mistyped.
    CHECK(d.code == (d.message.find("'warp_size'") != std::string::npos ? diag::Code::profile_value_out_of_range
                                                                        : diag::Code::profile_incomplete));
    all += d.message + "\n";
  }
  CHECK(all.find("'sm_count' is missing") != std::string::npos);
  CHECK(all.find("'max_block_dim'") != std::string::npos);
  CHECK(all.find("'cooperative_launch'") != std::string::npos);
  CHECK(all.find("'warp_size'") != std::string::npos);
  CHECK_FALSE(caps_from_json(nlohmann::json::array(), "x").has_value());
}

TEST_CASE("inconsistent shared-memory limits are PG3604") {
  auto j = to_json(profile("t4"));
  j["shared_per_block_optin"] = 1024;
  auto r = caps_from_json(j, "t4.json");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().items()[0].message.find("shared_per_block_optin") != std::string::npos);
}

namespace {

bool has_code_naming(const diag::Diagnostics& d, diag::Code code, std::string_view text) {
  for (const auto& item : d)
    if (item.code == code && item.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("every numeric profile field is bounded to a physical range: PG3604 names field, value and range") {
  struct Case {
    const char* field;
    nlohmann::json value;
  };
  const Case cases[] = {
      {"max_threads_per_sm", 4294967295u}, {"registers_per_sm", 4294967295u}, {"cc_major", 4294967295u},
      {"cc_minor", 10},                    {"sm_count", 0},                   {"sm_count", 1e9},
      {"warp_size", 48},                   {"max_blocks_per_sm", 100000},     {"shared_per_sm", 4294967295u},
      {"shared_allocation_unit", 100},     {"registers_per_block", 5000000},  {"sm_count", 132.5},
      {"sm_count", -1},                    {"max_registers_per_thread", 1u << 20},
  };
  for (const auto& c : cases) {
    CAPTURE(c.field);
    CAPTURE(c.value.dump());
    auto j = to_json(profile("h100-sxm"));
    j[c.field] = c.value;
    auto r = caps_from_json(j, "p.json");
    REQUIRE_FALSE(r.has_value());
    CHECK(has_code_naming(r.error(), diag::Code::profile_value_out_of_range, std::string("'") + c.field + "'"));
  }
  auto j = to_json(profile("h100-sxm"));
  j["max_grid_dim"] = {2147483648u, 65535, 65535};
  auto r = caps_from_json(j, "p.json");
  REQUIRE_FALSE(r.has_value());
  CHECK(has_code_naming(r.error(), diag::Code::profile_value_out_of_range, "'max_grid_dim[0]' = 2147483648"));
  CHECK(has_code_naming(r.error(), diag::Code::profile_value_out_of_range, "[1, 2147483647]"));
}

TEST_CASE("a number no JSON number type holds (1e400) is PG3604 naming the field, never an internal error") {
  auto text = to_json(profile("h100-sxm")).dump();
  auto at = text.find("\"sm_count\":132");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("\"sm_count\":132").size(), "\"sm_count\":1e400");
  auto r = parse_profile(text, "p.json");
  REQUIRE_FALSE(r.has_value());
  CHECK(has_code_naming(r.error(), diag::Code::profile_value_out_of_range, "'sm_count'"));
  ScratchFile f(text, "overflow.json");
  auto loaded = load_profile(f.path.string());
  REQUIRE_FALSE(loaded.has_value());
  CHECK(has_code_naming(loaded.error(), diag::Code::profile_value_out_of_range, "'sm_count'"));
}

TEST_CASE("a profile file is type-checked and bounded before it is read") {
  auto big = fs::temp_directory_path() / ("ptxgate-big-profile-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(big);
    out << std::string(kMaxProfileBytes + 1, ' ');
  }
  auto r = load_profile(big.string());
  fs::remove(big);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().items()[0].code == diag::Code::cannot_read_file);
  auto dir = load_profile(fs::temp_directory_path().string() + "/");
  REQUIRE_FALSE(dir.has_value());
  CHECK(dir.error().items()[0].code == diag::Code::cannot_read_file);
}

TEST_CASE("the profile's max_blocks_per_sm bounds offline occupancy (132 x 1 on h100-sxm)") {
  auto caps = profile("h100-sxm");
  caps.max_blocks_per_sm = 1;
  contract::KernelResources res;
  res.registers_per_thread = 16;
  auto occ = compute_occupancy(caps, res, 256, 0);
  REQUIRE(occ.computed);
  CHECK(occ.active_blocks_per_sm == 1);
  CHECK(occ.by_blocks == 1);
  CHECK(occ.limiter == OccupancyLimiter::blocks);
  contract::KernelInfo k;
  k.name = "k";
  k.required_block = {256, 1, 1};
  contract::LaunchPlan p;
  p.cooperative = true;
  auto v = check_launch(k, res, p, caps);
  CHECK(v.launchable);
  CHECK(v.max_cooperative_grid == 132);
  p.grid = {133, 1, 1};
  CHECK_FALSE(check_launch(k, res, p, caps).launchable);
}

TEST_CASE("the profile's shared_allocation_unit rounds each block's shared memory offline") {
  auto caps = profile("h100-sxm");
  contract::KernelResources res;
  res.registers_per_thread = 16;
  res.static_shared_bytes = 40000;
  auto with_header_unit = compute_occupancy(caps, res, 32, 0);
  REQUIRE(with_header_unit.computed);
  // (40000 + 1024 reserved) rounded to 128 = 41088: 233472 / 41088 = 5 blocks.
  CHECK(with_header_unit.by_shared == 5);
  CHECK(with_header_unit.allocated_shared_per_block == 41088);
  caps.shared_allocation_unit = 65536;  // each block charged 64 KiB: 3 blocks
  auto coarse = compute_occupancy(caps, res, 32, 0);
  REQUIRE(coarse.computed);
  CHECK(coarse.allocated_shared_per_block == 65536);
  CHECK(coarse.by_shared == 3);
  CHECK(coarse.active_blocks_per_sm == 3);
  CHECK(coarse.limiter == OccupancyLimiter::shared_memory);
}

TEST_CASE("cooperative residency fails closed when occupancy cannot be computed (PG3405)") {
  auto caps = profile("h100-sxm");
  contract::KernelResources res;
  res.registers_per_thread = 16;
  contract::KernelInfo k;
  k.name = "k";
  k.required_block = {256, 1, 1};
  contract::LaunchPlan p;
  p.cooperative = true;
  p.grid = {2147483647, 1, 1};
  // Caps no profile can hold any more, built in code: occupancy is unknown, never 0 = unchecked.
  for (auto mutate : {+[](DeviceCaps& c) { c.max_threads_per_sm = 4294967295u; },
                      +[](DeviceCaps& c) { c.registers_per_sm = 4294967295u; },
                      +[](DeviceCaps& c) { c.cc_major = -1; }, +[](DeviceCaps& c) { c.cc_major = 2; },
                      +[](DeviceCaps& c) { c.max_blocks_per_sm = 0; }}) {
    DeviceCaps bad = caps;
    mutate(bad);
    auto v = check_launch(k, res, p, bad);
    CHECK_FALSE(v.launchable);
    CHECK(has_code_naming(v.diagnostics, diag::Code::occupancy_unknown, "cannot compute"));
    p.grid = {1, 1, 1};
    CHECK_FALSE(check_launch(k, res, p, bad).launchable);
    p.grid = {2147483647, 1, 1};
  }
}
