// Unit tests for ir::Target: spelling, where PTX and cubins of a target run, the supported list,
// the choice for a device and for a module, and what a kernel's operations need.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/target.hpp"

using ptxgate::ir::Target;
namespace ir = ptxgate::ir;
namespace diag = ptxgate::diag;

namespace {

Target sm(const char* name) {
  auto t = Target::parse(name);
  REQUIRE_MESSAGE(t.has_value(), name);
  return *t;
}

}  // namespace

TEST_CASE("target: parse and name round-trip; anything else is no target") {
  for (const char* name : {"sm_75", "sm_80", "sm_90", "sm_90a", "sm_100", "sm_100f", "sm_120", "sm_7"}) {
    CAPTURE(name);
    CHECK(sm(name).name() == name);
  }
  CHECK(sm("sm_90a").sm() == 90);
  CHECK(sm("sm_90a").variant() == Target::Variant::arch_specific);
  CHECK(sm("sm_100f").variant() == Target::Variant::family_specific);
  CHECK(sm("sm_90a").generic() == Target(90));
  CHECK_FALSE(sm("sm_90").specific());
  for (const char* bad : {"", "sm_", "sm_a", "sm_90b", "sm_-90", "sm_+90", " sm_90", "sm_90 ", "compute_90", "SM_90",
                          "sm_0x5a", "sm_99999999999"})
    CHECK_MESSAGE(!Target::parse(bad), bad);
  CHECK(Target::of_device(8, 6) == Target(86));
  CHECK(Target::of_device(10, 0).name() == "sm_100");
}

TEST_CASE("target: PTX runs on its own and newer devices, a specific target only on its own; cubins keep their major") {
  CHECK(sm("sm_80").ptx_runs_on(Target(90)));
  CHECK(sm("sm_90").ptx_runs_on(Target(90)));
  CHECK(sm("sm_90a").ptx_runs_on(Target(90)));
  CHECK_FALSE(sm("sm_90").ptx_runs_on(Target(80)));
  CHECK_FALSE(sm("sm_90a").ptx_runs_on(Target(100)));
  CHECK_FALSE(sm("sm_100f").ptx_runs_on(Target(120)));
  CHECK(sm("sm_80").cubin_runs_on(Target(86)));
  CHECK_FALSE(sm("sm_86").cubin_runs_on(Target(80)));
  CHECK_FALSE(sm("sm_80").cubin_runs_on(Target(90)));
}

TEST_CASE("target: the supported list, and the target for a device") {
  CHECK(ir::supported_target_names() ==
        std::vector<std::string>{"sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120"});
  CHECK(ir::is_supported(sm("sm_90a")));
  CHECK_FALSE(ir::is_supported(Target(70)));
  CHECK_FALSE(ir::is_supported(sm("sm_100f")));
  auto unknown = ir::supported_target("sm_70");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().items()[0].code == diag::Code::unknown_target);
  CHECK(unknown.error().items()[0].message ==
        "unsupported target architecture 'sm_70' (supported: sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, "
        "sm_120)");
  CHECK(*ir::supported_target("sm_90a") == sm("sm_90a"));

  auto exact = ir::target_for_device(Target(90));
  CHECK(exact.target == Target(90));
  CHECK(exact.exact);
  auto newer = ir::target_for_device(Target(121));  // a device newer than every supported target: its PTX, JIT
  CHECK(newer.target == Target(120));
  CHECK_FALSE(newer.exact);
  auto between = ir::target_for_device(Target(88));
  CHECK(between.target == Target(87));
  CHECK_FALSE(between.exact);
  CHECK(ir::target_for_device(Target(70)).target == Target(75));  // older than all: the oldest
}

TEST_CASE("target: a requirement keeps the strongest need and says which targets meet it") {
  ir::TargetRequirement need;
  CHECK_FALSE(need.any());
  CHECK(need.met_by(Target(75)));
  need.raise({Target(80), "mma_m16n8k8", {}});
  need.raise({Target(80), "ldmatrix_x4", {}});  // no stronger: the first stays
  CHECK(need.operation == "mma_m16n8k8");
  CHECK(need.met_by(Target(80)));
  CHECK(need.met_by(sm("sm_90a")));
  CHECK(need.met_by(Target(120)));
  CHECK_FALSE(need.met_by(Target(75)));
  need.raise({sm("sm_90a"), "wgmma_fence", {}});
  need.raise({Target(100), "later", {}});  // a newer generic need does not replace a specific one
  CHECK(need.operation == "wgmma_fence");
  CHECK(need.met_by(sm("sm_90a")));
  CHECK_FALSE(need.met_by(Target(90)));
  CHECK_FALSE(need.met_by(Target(100)));
}

TEST_CASE("target: the module policy picks sm_90a for sm_90 only where a kernel needs it") {
  auto hopper = ir::load_module(diag::SourceFile("h.pg", R"(@workgroup(128)
kernel k(out y: f32[]) {
  shared bars: u64[1];
  if (thread_id.x == 0) { mbarrier_init(bars, 0, 1); }
  y[thread_id.x] = 1.0;
}
)"));
  REQUIRE(hopper);
  CHECK(ir::target_for_module(hopper->module, Target(90)) == sm("sm_90a"));
  CHECK(ir::target_for_module(hopper->module, sm("sm_90a")) == sm("sm_90a"));
  CHECK(ir::target_for_module(hopper->module, Target(100)) == Target(100));  // then check_target refuses it
  CHECK(ir::check_target(hopper->module, sm("sm_90a")));
  auto refused = ir::check_target(hopper->module, Target(100));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().items()[0].code == diag::Code::hopper_needs_sm90a);
  CHECK(refused.error().items()[0].location.line == 4);

  auto mma = ir::load_module(diag::SourceFile("m.pg", R"(@workgroup(32)
kernel k(out d: f32[]) { store4(d, 0, mma_m16n8k8(f32x4(0.0), f32x2(1.0), f32x4(0.0))); }
)"));
  REQUIRE(mma);
  CHECK(ir::target_for_module(mma->module, Target(90)) == Target(90));
  CHECK(ir::check_target(mma->module, Target(80)));
  auto old = ir::check_target(mma->module, Target(75));
  REQUIRE_FALSE(old);
  CHECK(old.error().items()[0].code == diag::Code::target_too_old);
  CHECK(old.error().items()[0].message ==
        "kernel 'k' uses mma_m16n8k8, which needs sm_80 or newer, but the target is sm_75");
}
