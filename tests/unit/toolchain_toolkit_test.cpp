// Unit tests for toolchain::discover: one fallback order for ptxas and libdevice, and its diagnostics.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/toolchain/toolkit.hpp"
#include "scoped_env.hpp"

using namespace ptxgate;
using ptxgate::testing::ScopedEnv;
namespace fs = std::filesystem;

namespace {

/// A fake toolkit root holding bin/ptxas (executable) and nvvm/libdevice/libdevice.10.bc.
void make_root(const fs::path& root, bool with_ptxas, bool with_libdevice) {
  if (with_ptxas) {
    fs::create_directories(root / "bin");
    std::ofstream(root / "bin/ptxas") << "#!/bin/sh\nexit 0\n";
    ::chmod((root / "bin/ptxas").c_str(), 0755);
  }
  if (with_libdevice) {
    fs::create_directories(root / "nvvm/libdevice");
    std::ofstream(root / "nvvm/libdevice/libdevice.10.bc") << "BC";
  }
}

support::TempDir scratch() {
  auto dir = support::TempDir::create_in_tmp("ptxgate-toolkit-test-");
  REQUIRE(dir.has_value());
  return std::move(*dir);
}

}  // namespace

TEST_CASE("toolkit: $CUDA_HOME first, then the build-time toolkit, for both files") {
  auto dir = scratch();
  ScopedEnv no_ptxas("PTXGATE_PTXAS", nullptr);
  ScopedEnv no_libdevice("PTXGATE_LIBDEVICE", nullptr);
  make_root(dir.path() / "full", true, true);
  {
    ScopedEnv home("CUDA_HOME", (dir.path() / "full").c_str());
    auto roots = toolchain::cuda_roots();
    REQUIRE(roots.size() == 2);
    CHECK(roots[0].origin == "$CUDA_HOME");
    auto t = toolchain::discover();
    REQUIRE(t.ptxas.has_value());
    REQUIRE(t.libdevice.has_value());
    CHECK(*t.ptxas == (dir.path() / "full/bin/ptxas").string());
    CHECK(*t.libdevice == (dir.path() / "full/nvvm/libdevice/libdevice.10.bc").string());
  }
  // A $CUDA_HOME without the file falls through to the next root, the same way for both files.
  fs::create_directories(dir.path() / "empty");
  ScopedEnv home("CUDA_HOME", (dir.path() / "empty").c_str());
  auto without_home = toolchain::discover();
  for (const auto* found : {&without_home.ptxas, &without_home.libdevice}) {
    if (*found) CHECK(found->value().find((dir.path() / "empty").string()) == std::string::npos);
    else CHECK(found->error().items()[0].message.find("empty") != std::string::npos);  // searched list names it
  }
}

TEST_CASE("toolkit: overrides and environment variables are authoritative") {
  auto dir = scratch();
  make_root(dir.path() / "full", true, true);
  ScopedEnv home("CUDA_HOME", (dir.path() / "full").c_str());
  SUBCASE("an override that does not exist is an error, not a reason to look further") {
    auto t = toolchain::discover({.ptxas = "/nonexistent/ptxas", .libdevice = "/nonexistent/libdevice.10.bc"});
    REQUIRE_FALSE(t.ptxas.has_value());
    CHECK(t.ptxas.error().items()[0].code == diag::Code::ptxas_missing);
    CHECK(t.ptxas.error().items()[0].message ==
          "ptxas not found or not executable at '/nonexistent/ptxas' (the ptxas path requested)");
    REQUIRE_FALSE(t.libdevice.has_value());
    CHECK(t.libdevice.error().items()[0].code == diag::Code::libdevice_missing);
    CHECK(t.libdevice.error().items()[0].message ==
          "libdevice not found at '/nonexistent/libdevice.10.bc' (the libdevice path requested)");
  }
  SUBCASE("an environment variable wins over $CUDA_HOME and must exist") {
    ScopedEnv ptxas("PTXGATE_PTXAS", "/nonexistent/bin/ptxas");
    ScopedEnv libdevice("PTXGATE_LIBDEVICE", (dir.path() / "full/nvvm/libdevice/libdevice.10.bc").c_str());
    auto t = toolchain::discover();
    REQUIRE_FALSE(t.ptxas.has_value());
    CHECK(t.ptxas.error().items()[0].message.find("($PTXGATE_PTXAS)") != std::string::npos);
    REQUIRE(t.libdevice.has_value());
  }
  SUBCASE("a directory or a non-executable file is not a ptxas") {
    std::ofstream(dir.path() / "not-executable") << "x";
    CHECK_FALSE(toolchain::discover({.ptxas = dir.path().string()}).ptxas.has_value());
    CHECK_FALSE(toolchain::discover({.ptxas = (dir.path() / "not-executable").string()}).ptxas.has_value());
    CHECK_FALSE(toolchain::discover({.libdevice = dir.path().string()}).libdevice.has_value());
  }
}
