// NCCL loaded at run time: a missing library, missing entry points and another major version are
// diagnostics (PG4201, PG4202); a complete library of the header's major version loads.
#include <doctest/doctest.h>

#include <string>

#include "ptxgate/runtime/nccl_api.hpp"
#include "scoped_env.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;

namespace {
std::string text_of(const diag::Diagnostics& d) { return diag::render_text(d); }
}  // namespace

TEST_CASE("nccl loader: a missing library is PG4201 naming it and the environment variable") {
  auto api = load_nccl("libptxgate-no-such-nccl.so.2");
  REQUIRE_FALSE(api);
  const std::string text = text_of(api.error());
  CHECK(text.find("PG4201") != std::string::npos);
  CHECK(text.find("libptxgate-no-such-nccl.so.2") != std::string::npos);
  CHECK(text.find("PTXGATE_NCCL_LIBRARY") != std::string::npos);
}

TEST_CASE("nccl loader: a library without NCCL's entry points is PG4201 listing the missing ones") {
  auto api = load_nccl("libc.so.6");
  REQUIRE_FALSE(api);
  const std::string text = text_of(api.error());
  CHECK(text.find("PG4201") != std::string::npos);
  CHECK(text.find("ncclGetVersion") != std::string::npos);
  CHECK(text.find("ncclAllReduce") != std::string::npos);
}

TEST_CASE("nccl loader: a complete library of the header's major version loads with its version") {
  testing::ScopedEnv version("PTXGATE_FAKE_NCCL_VERSION", "22809");
  auto api = load_nccl(PTXGATE_FAKE_NCCL);
  REQUIRE_MESSAGE(api, text_of(api.error()));
  CHECK(api->version == 22809);
  CHECK(api->library == PTXGATE_FAKE_NCCL);
#define PTXGATE_NCCL_CHECK_ENTRY(name) CHECK_MESSAGE(static_cast<bool>(api->name), #name);
  PTXGATE_NCCL_ENTRY_POINTS(PTXGATE_NCCL_CHECK_ENTRY)
#undef PTXGATE_NCCL_CHECK_ENTRY
  int v = 0;
  CHECK(api->ncclGetVersion(&v) == ncclSuccess);
  CHECK(v == 22809);
}

TEST_CASE("nccl loader: another major version is PG4202 with both versions") {
  testing::ScopedEnv version("PTXGATE_FAKE_NCCL_VERSION", "30102");
  auto api = load_nccl(PTXGATE_FAKE_NCCL);
  REQUIRE_FALSE(api);
  const std::string text = text_of(api.error());
  CHECK(text.find("PG4202") != std::string::npos);
  CHECK(text.find("NCCL 3.1.2 (major 3)") != std::string::npos);
  CHECK(text.find("nccl.h 2.") != std::string::npos);
}

TEST_CASE("nccl loader: version codes of both encodings read as major.minor.patch") {
  CHECK(nccl_version_text(22809) == "2.28.9");
  CHECK(nccl_version_text(21903) == "2.19.3");
  CHECK(nccl_version_text(2804) == "2.8.4");
}

TEST_CASE("nccl loader: an installed fake table is what nccl() answers, and removing it goes back") {
  NcclApi fake;
  fake.library = "fake";
  install_nccl_for_testing(&fake);
  auto a = nccl();
  REQUIRE(a);
  CHECK(*a == &fake);
  install_nccl_for_testing(nullptr);
  auto b = nccl();
  if (b) CHECK(*b != &fake);  // a real NCCL on this machine
  else CHECK(text_of(b.error()).find("PG4201") != std::string::npos);
}
