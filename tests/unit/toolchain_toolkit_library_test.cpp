// Unit tests for find_toolkit_library: the override variable, the roots' library directories, versioned names.
#include <doctest/doctest.h>

#include <fstream>

#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/toolchain/toolkit_library.hpp"
#include "scoped_env.hpp"

using namespace ptxgate;

namespace {

void touch(const std::filesystem::path& p) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << "not really a library";
}

}  // namespace

TEST_CASE("toolkit library: the newest versioned name in the first root's lib64, the unversioned one first") {
  auto dir = support::TempDir::create_in_tmp("ptxgate-toolkit-lib");
  REQUIRE(dir);
  const auto root = dir->path();
  touch(root / "lib64/libfake.so.12");
  touch(root / "lib64/libfake.so.13");
  touch(root / "lib64/libfake.so.9");
  testing::ScopedEnv home("CUDA_HOME", root.c_str());
  testing::ScopedEnv pinned("PTXGATE_LIBFAKE", nullptr);
  auto found = toolchain::find_toolkit_library("fake");
  REQUIRE(found);
  CHECK(*found == (root / "lib64/libfake.so.13").string());

  touch(root / "lib64/libfake.so");
  found = toolchain::find_toolkit_library("fake");
  REQUIRE(found);
  CHECK(*found == (root / "lib64/libfake.so").string());
}

TEST_CASE("toolkit library: the override variable is authoritative; a missing library names the places searched") {
  auto dir = support::TempDir::create_in_tmp("ptxgate-toolkit-lib");
  REQUIRE(dir);
  const auto root = dir->path();
  touch(root / "elsewhere/libmine.so.1");
  testing::ScopedEnv home("CUDA_HOME", root.c_str());
  {
    testing::ScopedEnv pinned("PTXGATE_LIBMINE", (root / "elsewhere/libmine.so.1").c_str());
    auto found = toolchain::find_toolkit_library("mine");
    REQUIRE(found);
    CHECK(*found == (root / "elsewhere/libmine.so.1").string());
  }
  {
    testing::ScopedEnv pinned("PTXGATE_LIBMINE", (root / "nowhere.so").c_str());
    auto found = toolchain::find_toolkit_library("mine");
    REQUIRE_FALSE(found);
    CHECK(found.error().find("$PTXGATE_LIBMINE") != std::string::npos);
  }
  auto missing = toolchain::find_toolkit_library("mine");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find((root / "lib64").string()) != std::string::npos);
  CHECK(missing.error().find("$CUDA_HOME") != std::string::npos);
}
