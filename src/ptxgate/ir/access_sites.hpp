// Access sites: every memory access of a module as written in its source, numbered once. The
// identity of a checked-mode guard (codegen) and of the access facts' sites (AccessSite::source).
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::ir {

/// What a site's guard checks in checked mode.
enum class SiteCheck : uint8_t {
  bounds,      ///< bytes [stride * i, stride * i + width) inside the array
  tma_shared,  ///< a TMA tile's shared start: element i inside the array and 128-byte aligned
  tma_tile,    ///< a TMA tile's innermost start coordinate: times the element size a multiple of 16 bytes
};

/// One memory access as written (an access in a device function is one site, whichever kernel
/// calls it). Some operations are several sites: cp_async (its shared destination, then its
/// source), tma_load (destination, mbarrier, tile), tma_store (source, tile).
struct SourceAccess {
  AccessKind kind = AccessKind::read;
  Space space = Space::global;
  SiteCheck check = SiteCheck::bounds;
  std::string routine;         ///< the kernel or device function it is written in
  std::string array;           ///< the array's name as the routine calls it (a buffer parameter, a shared or local array)
  uint32_t element_bytes = 4;  ///< the array's element size
  uint32_t stride = 4;         ///< bytes per index unit
  uint32_t width = 4;          ///< bytes touched from stride * i
  std::string operation;       ///< "y[i]", "load4(x, j)", "tma_load(tile, 0, map, bars, 0, x, y)"
  std::string index_text;      ///< the index (or the tile's innermost coordinate) as written
  Type index_type = Type::u32; ///< the index's (or coordinate's) integer type
  uint32_t line = 0, column = 0, length = 1;  ///< 1-based; 0: no position (builder modules)
  std::string source_line;
  bool operator==(const SourceAccess&) const = default;
};

/// Gives `site` (a SourceAccess or an AccessSite: line, column, length, source_line) the position
/// of `range` in `file`, its length cut at the end of the range's first line; nothing without a
/// file or an empty range (a builder module's).
template <class Site>
void place_site(Site& site, const diag::SourceFile* file, SourceRange range) {
  if (file == nullptr || range.length == 0) return;
  auto [line, column] = file->line_col(range.offset);
  site.line = line;
  site.column = column;
  site.source_line = std::string(file->line_text(line));
  site.length =
      std::max<uint32_t>(1, std::min<uint32_t>(range.length, static_cast<uint32_t>(site.source_line.size()) + 1 - column));
}

/// Where a diagnostic about `site` (a SourceAccess or an AccessSite) points, in `file`.
template <class Site>
diag::Location site_location(const Site& site, std::string file) {
  diag::Location l;
  l.file = std::move(file);
  l.line = site.line;
  l.column = site.column;
  l.length = site.length;
  l.source_line = site.source_line;
  return l;
}

/// The sites of a module, by number (Expr::access_site), and the range of numbers each routine holds.
struct AccessSiteTable {
  std::vector<SourceAccess> sites;
  struct Range {
    uint32_t begin = 0, end = 0;
  };
  std::vector<Range> functions;  ///< by Module::functions
  std::vector<Range> kernels;    ///< by Module::kernels
  /// Each kernel's parameters as written (Module::kernels, then parameter order): where a
  /// diagnostic about a parameter points (checked mode's buffer limit, PG1906).
  std::vector<std::vector<diag::Location>> parameters;
};

/// How many site numbers an access expression takes (0: not an access).
uint32_t site_count(const Expr& e);

/// Numbers every access of a verified module in one walk (device functions in order, then kernels,
/// each body in statement order), sets Expr::access_site, and returns the table. `file` gives
/// source positions (null: none).
std::shared_ptr<const AccessSiteTable> number_access_sites(Module& module, const diag::SourceFile* file);

/// The sites a kernel can reach: its own and those of the device functions it calls, transitively.
std::vector<uint32_t> sites_of_kernel(const Module& module, size_t kernel);

/// Per site number: whether checked mode needs a guard there. A shared (static) or local site
/// needs none when every access fact made from it, in every kernel, is in bounds (or unreachable)
/// for every launch the kernel allows: its @workgroup block (else any block), any grid, any scalar
/// arguments (ir::NodeBounds over those ranges). Global and dynamic-shared sites always need one
/// (their lengths are the launch's), as do TMA tiles and sites of kernels whose facts are incomplete.
std::vector<bool> sites_needing_guards(const Module& module);

nlohmann::json to_json(const SourceAccess& site);
[[nodiscard]] std::expected<SourceAccess, std::string> source_access_from_json(const nlohmann::json& j);

}  // namespace ptxgate::ir
