// occupancy_offline and its reports.
#include "ptxgate/commands/occupancy.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "ptxgate/commands/launch_flags.hpp"
#include "ptxgate/commands/reports.hpp"

namespace ptxgate::commands {
namespace {

nlohmann::json bound_json(uint32_t v) { return v == UINT32_MAX ? nlohmann::json(nullptr) : nlohmann::json(v); }
std::string bound_text(uint32_t v) { return v == UINT32_MAX ? std::string("-") : fmt::format("{}", v); }

}  // namespace

std::expected<OccupancyReport, OfflineStop> occupancy_offline(const OccupancyRequest& request) {
  auto geometry = parse_launch_flags({}, {}, request.shared_bytes);
  if (!geometry) return std::unexpected(OfflineStop{std::move(geometry.error()), true});
  const uint64_t shared = geometry->shared_bytes;
  auto compiled = compile_for_profile(request.input, request.kernel, request.profile, request.cache, {}, request.fp_mode);
  if (!compiled) return std::unexpected(OfflineStop{compiled.error(), false});
  OccupancyReport report{std::move(*compiled), shared, {}};
  const auto& c = report.compiled;
  report.table = validation::occupancy_table(c.kernel, c.caps, c.resources, shared);
  // One verdict with `check`: when no block size the kernel allows can be launched, the answer is
  // check's own diagnostics for a launch of it (at the default block, as `check` without --block),
  // not a table.
  if (std::none_of(report.table.rows.begin(), report.table.rows.end(), [](const auto& row) { return row.launchable; })) {
    contract::LaunchPlan plan;
    plan.grid = {1, 1, 1};
    plan.dynamic_shared_bytes = shared;
    auto verdict = validation::check_launch(c.kernel, c.resources, plan, c.caps, c.location);
    if (verdict.launchable && !report.table.rows.empty()) {  // the default block is not one the kernel allows
      plan.block = {report.table.rows.front().block_threads, 1, 1};
      verdict = validation::check_launch(c.kernel, c.resources, plan, c.caps, c.location);
    }
    if (!verdict.launchable) {  // its errors (a launch's warnings, about a grid, do not apply)
      OfflineStop s{c.warnings, false};
      for (const auto& d : verdict.diagnostics)
        if (d.severity == diag::Severity::error) s.diagnostics.items().push_back(d);
      return std::unexpected(std::move(s));
    }
  }
  if (report.table.suggested_block == 0) {
    const auto& r = report.compiled.resources;
    OfflineStop s{report.compiled.warnings, false};
    s.diagnostics.add(diag::Code::no_resident_block_size,
                      fmt::format("kernel '{}' cannot be resident on {} at any block size up to {}: {} registers/thread, "
                                  "{} bytes static + {} bytes dynamic shared memory per block",
                                  request.kernel, report.compiled.caps.profile, report.table.block_limit,
                                  r.registers_per_thread, r.static_shared_bytes, shared),
                      report.compiled.location, "use less shared memory (--shared-bytes) or fewer registers per thread");
    return std::unexpected(std::move(s));
  }
  return report;
}

nlohmann::json occupancy_json(const OccupancyReport& report) {
  const auto& c = report.compiled;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : report.table.rows) {
    const auto& o = row.occupancy;
    rows.push_back({{"block", row.block_threads},
                    {"launchable", row.launchable},
                    {"active_blocks_per_sm", o.computed ? o.active_blocks_per_sm : 0},
                    {"active_warps_per_sm", row.active_warps_per_sm},
                    {"occupancy_percent", row.occupancy_percent},
                    {"limiter", validation::limiter_name(o.limiter)},
                    {"by_threads", bound_json(o.by_threads)},
                    {"by_registers", bound_json(o.by_registers)},
                    {"by_shared", bound_json(o.by_shared)},
                    {"by_blocks", bound_json(o.by_blocks)}});
  }
  return {{"schema_version", kJsonSchemaVersion},
          {"kernel", c.kernel.name},
          {"profile", c.caps.profile},
          {"arch", c.caps.arch()},
          {"sm_count", c.caps.sm_count},
          {"dynamic_shared_bytes", report.dynamic_shared_bytes},
          {"resources",
           {{"registers", c.resources.registers_per_thread},
            {"static_shared_bytes", c.resources.static_shared_bytes},
            {"local_bytes", c.resources.local_bytes},
            {"max_threads_per_block", c.resources.max_threads_per_block}}},
          {"block_limit", report.table.block_limit},
          {"suggested_block", report.table.suggested_block},
          {"min_grid_for_full_occupancy", report.table.min_grid_for_full_occupancy},
          {"rows", rows}};
}

std::string occupancy_text(const OccupancyReport& report, bool verbose) {
  const auto& c = report.compiled;
  const auto& r = c.resources;
  std::string out = fmt::format(
      "kernel {} on {} ({}, {} SMs): {} registers/thread, {} bytes static shared, {} bytes dynamic shared\n",
      c.kernel.name, c.caps.profile, c.caps.arch(), c.caps.sm_count, r.registers_per_thread, r.static_shared_bytes,
      report.dynamic_shared_bytes);
  // Each line without the trailing spaces of its last column.
  auto add_line = [&out](std::string line) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  std::string header = fmt::format("{:>5}  {:>10}  {:>10}  {:>9}  {:<13}", "BLOCK", "BLOCKS/SM", "WARPS/SM", "OCCUPANCY",
                                   "LIMITED BY");
  if (verbose) header += fmt::format("  {:>7}  {:>9}  {:>6}  {:>6}", "THREADS", "REGISTERS", "SHARED", "BLOCKS");
  add_line(std::move(header));
  for (const auto& row : report.table.rows) {
    const auto& o = row.occupancy;
    std::string line = fmt::format("{:>5}  {:>10}  {:>10}  {:>8.1f}%  {:<13}", row.block_threads,
                                   o.computed ? o.active_blocks_per_sm : 0, row.active_warps_per_sm,
                                   row.occupancy_percent, validation::limiter_name(o.limiter));
    if (verbose)
      line += fmt::format("  {:>7}  {:>9}  {:>6}  {:>6}", bound_text(o.by_threads), bound_text(o.by_registers),
                          bound_text(o.by_shared), bound_text(o.by_blocks));
    add_line(std::move(line));
  }
  out += fmt::format("suggested block size: {} (cuOccupancyMaxPotentialBlockSize; a grid of {} blocks fills the device)\n",
                     report.table.suggested_block, report.table.min_grid_for_full_occupancy);
  return out;
}

}  // namespace ptxgate::commands
