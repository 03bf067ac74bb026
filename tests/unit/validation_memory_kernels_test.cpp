// Memory safety on the shipped kernels: every example and benchmark kernel at its documented launch
// has no access proven out of bounds, and the guarded kernels have every access proven.
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <string>

#include "ir_check_support.hpp"
#include "shipped_memory_launch.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/validation/memory_safety.hpp"

using namespace ptxgate;

namespace {

using shipped::Launch;
using shipped::shipped_launches;

validation::MemoryVerdict evaluate(const Launch& l, const ir::AccessFacts*& facts_out, validation::MemoryLaunch& launch,
                                   testing::Checked& checked) {
  const ir::Kernel* k = &testing::shipped_kernel(l, checked);
  facts_out = k->access_facts.get();
  launch = testing::memory_launch_of(*k, l);
  return validation::evaluate_accesses(*k->access_facts, launch);
}

}  // namespace

TEST_CASE("memory safety: the shipped kernels at their documented launches") {
  uint32_t sites = 0, proven = 0;
  for (const Launch& l : shipped_launches()) {
    const std::string where = std::string(l.file) + " " + l.kernel;
    CAPTURE(where);
    const ir::AccessFacts* facts = nullptr;
    validation::MemoryLaunch launch;
    testing::Checked checked;
    validation::MemoryVerdict v = evaluate(l, facts, launch, checked);
    diag::Diagnostics report;
    validation::report_memory_safety(report, *facts, v, launch, l.kernel, l.file, {false, true});
    MESSAGE(l.kernel, ": ", v.proven + v.unreachable, " of ", v.sites + v.unmodelled, " accesses proven (",
            v.coverage_percent(), "%)", report.empty() ? "" : "\n" + diag::render_text(report, false));
    CHECK(v.out_of_bounds == 0);
    CHECK(v.races.empty());
    if (l.all_proven) CHECK(v.coverage_percent() == doctest::Approx(100.0));
    sites += v.sites + v.unmodelled;
    proven += v.proven + v.unreachable;
  }
  MESSAGE("all shipped kernels: ", proven, " of ", sites, " accesses proven");
  CHECK(100.0 * proven / sites >= 90.0);
}
