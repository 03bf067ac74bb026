// PG3804: a checked launch's first violating access, with its source location, thread and index.
#include "ptxgate/validation/checked_report.hpp"

#include <fmt/format.h>

#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::validation {
namespace {

std::string space_words(ir::Space s) {
  return s == ir::Space::global ? "buffer" : s == ir::Space::shared ? "shared array" : "local array";
}

/// The recorded 64-bit value as the index type's value (signed types were sign-extended).
std::string index_text(ir::Type type, uint64_t bits) {
  return ir::is_signed(type) ? fmt::format("{}", static_cast<int64_t>(bits)) : fmt::format("{}", bits);
}

}  // namespace

bool report_checked_violation(diag::Diagnostics& out, const contract::CheckedInfo& sites,
                              const contract::CheckedRecord& record, const std::string& kernel,
                              const std::string& launch, const std::string& file) {
  if (record.count == 0) return false;
  const std::string more =
      record.count > 1 ? fmt::format("; {} threads of this launch had accesses stopped (each thread's first is kept, "
                                     "this is one of them)", record.count)
                       : "";
  const std::string who = fmt::format("thread ({}, {}, {}) of block ({}, {}, {})", record.thread[0], record.thread[1],
                                      record.thread[2], record.block[0], record.block[1], record.block[2]);
  const contract::CheckedSite* site = sites.find(record.site);
  if (site == nullptr) {
    out.add(diag::Code::checked_violation,
            fmt::format("{} (checked): {} stopped an access at site {}, which the kernel's checked-mode sites do not "
                        "name (value {}, limit {}){}",
                        launch, who, record.site, record.value, record.limit, more),
            {}, "recompile the kernel: its metadata and its code disagree");
    return true;
  }
  const ir::SourceAccess& a = site->access;
  const diag::Location where = ir::site_location(a, file);
  const std::string in_function = a.routine.empty() || a.routine == kernel ? "" : fmt::format(" (in '{}')", a.routine);
  const auto reason = static_cast<contract::Violation>(record.reason);
  std::string message, fix;
  if (reason == contract::Violation::tile_coordinate) {
    message = fmt::format("{} (checked): {}{}: {} starts its tile at innermost coordinate {} = {}, {} bytes into the "
                          "row, which is not a multiple of 16 bytes (the H100 raises an illegal instruction); the "
                          "copy was redirected outside the tensor (a load writes zeros, a store nothing) and the "
                          "kernel went on{}",
                          launch, a.operation, in_function, who, a.index_text.empty() ? "x" : a.index_text,
                          index_text(a.index_type, record.value),
                          static_cast<int64_t>(record.value) * static_cast<int64_t>(record.limit), more);
    fix = fmt::format("start tiles at coordinates that are multiples of {} elements ({}-byte elements)",
                      record.limit == 0 ? 16 : 16 / std::min<uint64_t>(record.limit, 16), record.limit);
  } else if (reason == contract::Violation::tile_alignment) {
    message = fmt::format("{} (checked): {}{}: {} gives shared address {:#x} for the tile of '{}', which is not "
                          "{}-byte aligned; the copy was redirected to the 128-byte boundary below it, outside the "
                          "tensor (a load writes zeros there, a store writes nothing), and the kernel went on{}",
                          launch, a.operation, in_function, who, record.value, a.array, record.limit, more);
    fix = fmt::format("start the tile at an element of '{}' whose address is a multiple of 128 bytes", a.array);
  } else {
    const uint64_t length = record.limit;
    const uint32_t stride = std::max<uint32_t>(a.stride, 1);
    const uint32_t element = std::max<uint32_t>(a.element_bytes, 1);
    const char* verb = a.kind == ir::AccessKind::read ? "read" : a.kind == ir::AccessKind::write ? "write" : "update";
    const char* outcome = a.check == ir::SiteCheck::tma_shared
                              ? "the copy was redirected to the array's start, outside the tensor (a load writes "
                                "zeros there, a store writes nothing)"
                          : a.kind == ir::AccessKind::read  ? "the read gave 0"
                          : a.kind == ir::AccessKind::write ? "the write was skipped"
                                                            : "the update was skipped and gave 0";
    const std::string index = a.index_text.empty() ? "the index" : a.index_text;
    const std::string units = stride == element ? "elements" : fmt::format("{}-byte units", stride);
    message = fmt::format("{} (checked): {}{} would {} {} '{}' out of bounds: {} computed {} = {}, but '{}' holds {} "
                          "bytes ({} {}); {} and the kernel went on{}",
                          launch, a.operation, in_function, verb, space_words(a.space), a.array, who, index,
                          index_text(a.index_type, record.value), a.array, length, length / stride, units, outcome,
                          more);
    if (ir::is_signed(a.index_type) && static_cast<int64_t>(record.value) < 0)
      fix = fmt::format("the index is negative: guard the access with `if ({} >= 0)` or compute it in an unsigned type",
                        index);
    else if (a.space == ir::Space::global)
      fix = fmt::format("guard the access (`if ({} < {})`) or check the values the index is computed from", index,
                        length / stride);
    else if (a.space == ir::Space::shared)
      fix = fmt::format("guard the access, or give '{}' more elements (a dynamic shared array: more dynamic shared "
                        "memory at launch)", a.array);
    else
      fix = fmt::format("guard the access, or declare '{}' with more elements", a.array);
  }
  out.add(diag::Code::checked_violation, std::move(message), std::move(where), std::move(fix));
  return true;
}

}  // namespace ptxgate::validation
