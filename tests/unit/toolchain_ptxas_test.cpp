// Unit tests for the ptxas -v log parser (captured real outputs), launch bounds, and assemble().
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/toolchain/internal/process.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "scoped_env.hpp"
#include "toolkit_test_support.hpp"

using namespace ptxgate::toolchain;
using ptxgate::diag::Code;
using ptxgate::testing::toolkit_with_ptxas;

namespace {

// ptxas 13.0 -arch=sm_75 on a three-entry module (stack frame, shared + barrier, plain).
constexpr std::string_view kLogSm75 = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'stacky' for 'sm_75'
ptxas info    : Function properties for stacky
    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 6 registers, used 0 barriers, 256 bytes cumulative stack size, 364 bytes cmem[0]
ptxas info    : Compile time = 3.035 ms
ptxas info    : Compiling entry function 'with_shared' for 'sm_75'
ptxas info    : Function properties for with_shared
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 1 barriers, 4096 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 2.227 ms
ptxas info    : Compiling entry function 'saxpy' for 'sm_75'
ptxas info    : Function properties for saxpy
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 376 bytes cmem[0]
ptxas info    : Compile time = 2.102 ms
)";

// ptxas 13.0 -arch=sm_90: no cmem figures.
constexpr std::string_view kLogSm90 = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'with_shared' for 'sm_90'
ptxas info    : Function properties for with_shared
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 3.957 ms
ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
ptxas info    : Function properties for saxpy
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 3.437 ms
)";

// CUDA 11/12 style: no barrier item, spills, a device function's properties, cmem[2].
constexpr std::string_view kLogOld = R"(ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPf
    40 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 255 registers, 49152 bytes smem, 360 bytes cmem[0], 8 bytes cmem[2]
)";

}  // namespace

TEST_CASE("ptxas log parser reads every entry of a sm_75 log") {
  auto m = parse_ptxas_log(kLogSm75);
  REQUIRE(m.size() == 3);
  CHECK(m["stacky"].registers_per_thread == 6);
  CHECK(m["stacky"].local_bytes == 256);
  CHECK(m["stacky"].constant_bytes == 364);
  CHECK(m["with_shared"].registers_per_thread == 8);
  CHECK(m["with_shared"].static_shared_bytes == 4096);
  CHECK(m["with_shared"].barriers == 1);
  CHECK(m["saxpy"].registers_per_thread == 10);
  CHECK(m["saxpy"].static_shared_bytes == 0);
  CHECK(m["saxpy"].constant_bytes == 376);
}

TEST_CASE("ptxas log parser handles the sm_90 format without cmem") {
  auto m = parse_ptxas_log(kLogSm90);
  REQUIRE(m.size() == 2);
  CHECK(m["with_shared"].static_shared_bytes == 4096);
  CHECK(m["with_shared"].registers_per_thread == 10);
  CHECK(m["saxpy"].constant_bytes == 0);
}

TEST_CASE("ptxas log parser: older format, spills, device functions ignored") {
  auto m = parse_ptxas_log(kLogOld);
  REQUIRE(m.size() == 1);
  const auto& k = m["_Z6kernelPf"];
  CHECK(k.registers_per_thread == 255);
  CHECK(k.static_shared_bytes == 49152);
  CHECK(k.local_bytes == 40);
  CHECK(k.spill_store_bytes == 24);
  CHECK(k.spill_load_bytes == 20);
  CHECK(k.constant_bytes == 360);
}

TEST_CASE("ptxas log parser tolerates garbage and truncation") {
  CHECK(parse_ptxas_log("").empty());
  CHECK(parse_ptxas_log("ptxas fatal   : Unresolved extern function 'f'\n").empty());
  auto m = parse_ptxas_log(kLogSm75.substr(0, 140));
  CHECK(m.size() == 1);
  CHECK(parse_ptxas_log("ptxas info : Compiling entry function 'k' for 'sm_90'\nUsed x registers, used  barriers\n")
            .at("k")
            .registers_per_thread == 0);
}

TEST_CASE("PTX launch bounds give the kernel's thread limit") {
  constexpr std::string_view ptx = R"(
.visible .entry a(.param .u64 p)
.maxntid 128, 2, 1
{ ret; }
.visible .entry b(.param .u64 p)
.reqntid 64
{ ret; }
.visible .entry c(.param .u64 p)
{ ret; }
)";
  auto b = ptx_launch_bounds(ptx);
  CHECK(b.at("a") == 256);
  CHECK(b.at("b") == 64);
  CHECK(b.count("c") == 0);
}

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

}  // namespace

TEST_CASE("assemble: real PTX gives a cubin and each entry's resources with launch bounds merged") {
  auto toolkit = toolkit_with_ptxas();
  if (!toolkit) return;
  constexpr std::string_view ptx = R"(.version 7.0
.target sm_75
.address_size 64
.shared .align 4 .b8 tile[2048];
.visible .entry k(.param .u64 y)
.maxntid 128, 1, 1
{
  .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [y];
  mov.u32 %r1, %tid.x; shl.b32 %r2, %r1, 2;
  mov.u32 %r3, tile; add.u32 %r3, %r3, %r2;
  cvta.to.global.u64 %rd2, %rd1; mul.wide.u32 %rd3, %r1, 4; add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2];
  st.shared.f32 [%r3], %f1;
  bar.sync 0;
  ld.shared.f32 %f2, [%r3+4];
  st.global.f32 [%rd2], %f2;
  ret;
}
)";
  for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
    CAPTURE(arch);
    auto r = assemble(ptx, arch, *toolkit);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().items()[0].message));
    CHECK(r->cubin.substr(0, 4) == "\x7f" "ELF");
    CHECK(r->log.find("registers") != std::string::npos);
    const auto& k = r->resources.at("k");
    CHECK(k.static_shared_bytes == 2048);
    CHECK(k.registers_per_thread > 0);
    CHECK(k.registers_per_thread < 64);
    CHECK(k.barriers == 1);
    CHECK(k.max_threads_per_block == 128);
  }
  auto plain = assemble(kStorePtx, "sm_90", *toolkit);
  REQUIRE(plain.has_value());
  CHECK(plain->resources.at("store_tid").max_threads_per_block == 1024);
}

TEST_CASE("assemble: rejected PTX is PG2004 with ptxas's message") {
  auto toolkit = toolkit_with_ptxas();
  if (!toolkit) return;
  std::string broken = kStorePtx;
  broken.replace(broken.find("mov.u32"), 7, "mov.bogus");
  auto cubin = assemble(broken, "sm_90", *toolkit);
  REQUIRE_FALSE(cubin.has_value());
  REQUIRE(cubin.error().size() == 1);
  CHECK(cubin.error().items()[0].code == Code::ptxas_failure);
  CHECK(cubin.error().items()[0].message.find("sm_90") != std::string::npos);
  CHECK(cubin.error().items()[0].message.find("bogus") != std::string::npos);
  CHECK(assemble("not ptx", "sm_90", *toolkit).error().items()[0].code == Code::ptxas_failure);
}

TEST_CASE("assemble: a missing ptxas is PG2005 naming the path") {
  auto toolkit = discover({.ptxas = "/nonexistent/cuda/bin/ptxas"});
  auto cubin = assemble(kStorePtx, "sm_90", toolkit);
  REQUIRE_FALSE(cubin.has_value());
  CHECK(cubin.error().items()[0].code == Code::ptxas_missing);
  CHECK(cubin.error().items()[0].message.find("/nonexistent/cuda/bin/ptxas") != std::string::npos);
  CHECK_FALSE(cubin.error().items()[0].fix.empty());
}

TEST_CASE("ptxas_version runs ptxas once, empty when it cannot run") {
  CHECK(ptxas_version("/nonexistent/bin/ptxas").empty());
  auto toolkit = toolkit_with_ptxas();
  if (!toolkit) return;
  auto v = ptxas_version(*toolkit->ptxas);
  CHECK(v.find("release") != std::string::npos);
  CHECK(ptxas_version(*toolkit->ptxas) == v);
}

TEST_CASE("assemble: only_entry assembles that kernel alone (ptxas -e), for one kernel of a large module") {
  // ptxas takes about 35 s of CPU for 5000 trivial entries, 0.1 s for one of them.
  auto toolkit = toolkit_with_ptxas();
  if (!toolkit) return;
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
  for (int i = 0; i < 3; ++i) ptx += ".visible .entry k" + std::to_string(i) + "() { ret; }\n";
  auto all = assemble(ptx, "sm_90", *toolkit);
  REQUIRE(all.has_value());
  CHECK(all->resources.size() == 3);
  auto one = assemble(ptx, "sm_90", *toolkit, nullptr, "k1");
  REQUIRE(one.has_value());
  REQUIRE(one->resources.size() == 1);
  CHECK(one->resources.contains("k1"));
}

TEST_CASE("assemble: a ptxas past the tool time limit is stopped, PG2011 naming the limit") {
  auto dir = ptxgate::support::TempDir::create_in_tmp("ptxgate-ptxas-test-").value();
  const auto slow = dir.path() / "ptxas";
  {
    std::ofstream script(slow);
    script << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo release; exit 0; fi\nsleep 60\n";
  }
  std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
  ptxgate::testing::ScopedEnv limit("PTXGATE_TOOL_TIMEOUT", "1");
  auto toolkit = discover({.ptxas = slow.string()});
  const auto start = std::chrono::steady_clock::now();
  auto r = assemble(kStorePtx, "sm_90", toolkit);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().items()[0].code == Code::tool_timed_out);
  CHECK(r.error().items()[0].message == "ptxas -arch=sm_90 did not finish within 1 s (the tool time limit) and was stopped");
  CHECK(r.error().items()[0].fix.find("PTXGATE_TOOL_TIMEOUT") != std::string::npos);
  ptxgate::testing::ScopedEnv bad("PTXGATE_TOOL_TIMEOUT", "soon");
  auto refused = assemble(kStorePtx, "sm_90", toolkit);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().items()[0].message.find("PTXGATE_TOOL_TIMEOUT='soon' is not a number") != std::string::npos);
}

TEST_CASE("run_process: past its time limit the child's whole process group is killed") {
  // A shell whose own child would outlive it, were only the shell killed.
  auto dir = ptxgate::support::TempDir::create_in_tmp("ptxgate-ptxas-test-").value();
  const auto marker = dir.path() / "grandchild";
  const auto start = std::chrono::steady_clock::now();
  auto r = run_process({"/bin/sh", "-c", "sleep 60 & echo $! > " + marker.string() + "; wait"},
                       std::chrono::milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  REQUIRE(r.has_value());
  CHECK(r->timed_out);
  CHECK(r->exit_status == 128 + SIGKILL);
  std::ifstream in(marker);
  pid_t grandchild = 0;
  in >> grandchild;
  REQUIRE(grandchild > 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // killed; its reaping (by init) may take a moment
    gone = ::kill(grandchild, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(gone);
  auto quick = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::milliseconds(30000));
  REQUIRE(quick.has_value());
  CHECK_FALSE(quick->timed_out);
  CHECK(quick->exit_status == 3);
  CHECK(quick->stdout_text == "out\n");
  CHECK(quick->stderr_text == "err\n");
}
