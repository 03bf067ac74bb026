// Unit tests for running ptxas from the module cache: cubin production and its failure diagnostics.
#include <doctest/doctest.h>

#include <unistd.h>

#include "module_cache/module_cache.hpp"
#include "module_cache_test_support.hpp"

using namespace ptxgate::module_cache;
using namespace ptxgate::module_cache::testing;
using ptxgate::diag::Code;

namespace {

const char* kStorePtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry store_tid(
	.param .u64 store_tid_param_0
)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [store_tid_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	st.global.u32 [%rd2], %r1;
	ret;
}
)";

bool have_ptxas() {
  if (::access(PTXGATE_PTXAS, X_OK) == 0) return true;
  MESSAGE("skipped: no ptxas at " << PTXGATE_PTXAS);
  return false;
}

}  // namespace

TEST_CASE("ptxas cache step: valid PTX gives an ELF cubin and a resource report") {
  if (!have_ptxas()) return;
  std::string log;
  auto cubin = run_ptxas(kStorePtx, "sm_90", PTXGATE_PTXAS, log);
  REQUIRE(cubin.has_value());
  CHECK(cubin->substr(0, 4) == "\x7f" "ELF");
  CHECK(log.find("store_tid") != std::string::npos);
  CHECK(log.find("registers") != std::string::npos);
}

TEST_CASE("ptxas cache step: rejected PTX is PG2004 with ptxas's message") {
  if (!have_ptxas()) return;
  std::string broken = kStorePtx;
  broken.replace(broken.find("mov.u32"), 7, "mov.bogus");
  std::string log;
  auto cubin = run_ptxas(broken, "sm_90", PTXGATE_PTXAS, log);
  REQUIRE_FALSE(cubin.has_value());
  REQUIRE(cubin.error().size() == 1);
  CHECK(cubin.error().items()[0].code == Code::ptxas_failure);
  CHECK(cubin.error().items()[0].message.find("sm_90") != std::string::npos);
  CHECK(cubin.error().items()[0].message.find("bogus") != std::string::npos);
}

TEST_CASE("ptxas cache step: a missing ptxas is PG2005 naming the path") {
  std::string log;
  auto cubin = run_ptxas(kStorePtx, "sm_90", "/nonexistent/cuda/bin/ptxas", log);
  REQUIRE_FALSE(cubin.has_value());
  CHECK(cubin.error().items()[0].code == Code::ptxas_missing);
  CHECK(cubin.error().items()[0].message.find("/nonexistent/cuda/bin/ptxas") != std::string::npos);
  CHECK_FALSE(cubin.error().items()[0].fix.empty());
}
