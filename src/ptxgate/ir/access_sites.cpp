// Access sites: the numbering of a module's memory accesses as written, their table, and which of
// them checked mode must guard (the rest are in bounds for every launch the kernel allows).
#include "ptxgate/ir/access_sites.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <unordered_set>

#include "ptxgate/diagnostics/internal/json_checks.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/sym_bounds.hpp"

namespace ptxgate::ir {
namespace {

/// Bytes of one element in memory (a bool element takes one byte).
uint32_t memory_bytes(Type t) { return t == Type::bool_ ? 1 : byte_size(t); }

bool is_array_symbol(const Symbol* s) {
  return s && (s->kind == SymbolKind::buffer_param || s->kind == SymbolKind::shared_array ||
               s->kind == SymbolKind::local_array);
}

Space space_of(const Symbol& s) {
  return s.kind == SymbolKind::buffer_param ? Space::global
         : s.kind == SymbolKind::shared_array ? Space::shared
                                              : Space::local;
}

bool is_mbarrier(Intrinsic i) {
  return i == Intrinsic::mbarrier_init || i == Intrinsic::mbarrier_arrive || i == Intrinsic::mbarrier_arrive_expect_tx ||
         i == Intrinsic::mbarrier_try_wait || i == Intrinsic::mbarrier_wait || i == Intrinsic::mbarrier_inval;
}

class Numbering {
 public:
  Numbering(const diag::SourceFile* file, AccessSiteTable& table) : file_(file), table_(table) {}

  AccessSiteTable::Range routine(Routine& r) {
    routine_ = r.name;
    const auto begin = static_cast<uint32_t>(table_.sites.size());
    statements(r.body);
    return {begin, static_cast<uint32_t>(table_.sites.size())};
  }

 private:
  void statements(std::vector<StmtPtr>& body) {
    for (auto& s : body)
      if (s) statement(*s);
  }

  void statement(Stmt& s) {
    if (s.kind == StmtKind::assign && s.target) expr(*s.target, /*written=*/true);
    else if (s.target) expr(*s.target, false);
    for (ExprPtr* e : {&s.value, &s.lo, &s.hi, &s.step, &s.unroll_count})
      if (*e) expr(**e, false);
    statements(s.body);
    statements(s.else_body);
  }

  /// The site of `operation` on `array` (a name or index expression) at index `index`.
  SourceAccess site(const Expr& operation, const Expr& array, const Expr* index, AccessKind kind, uint32_t stride,
                    uint32_t width) {
    SourceAccess a;
    a.kind = kind;
    a.space = array.symbol ? space_of(*array.symbol) : Space::global;
    a.routine = routine_;
    a.array = array.name;
    a.element_bytes = array.symbol ? memory_bytes(array.symbol->type) : 1;
    a.stride = stride;
    a.width = width;
    a.operation = print(operation);
    if (index) {
      a.index_text = print(*index);
      if (is_integer(index->type)) a.index_type = index->type;
    }
    place_site(a, file_, operation.range);
    return a;
  }

  void add(Expr& e, std::vector<SourceAccess> sites) {
    e.access_site = static_cast<uint32_t>(table_.sites.size());
    for (auto& s : sites) table_.sites.push_back(std::move(s));
  }

  void expr(Expr& e, bool written) {
    if (e.kind == ExprKind::index && is_array_symbol(e.symbol) && !e.operands.empty()) {
      const uint32_t bytes = memory_bytes(e.symbol->type);
      add(e, {site(e, e, e.operands[0].get(), written ? AccessKind::write : AccessKind::read, bytes, bytes)});
    } else if (e.kind == ExprKind::call && e.intrinsic && !e.function) {
      call(e);
    }
    for (auto& o : e.operands)
      if (o) expr(*o, false);
  }

  void call(Expr& e) {
    const Intrinsic which = *e.intrinsic;
    auto operand = [&](size_t i) -> const Expr* { return i < e.operands.size() ? e.operands[i].get() : nullptr; };
    auto array_at = [&](size_t i) -> const Expr* {
      const Expr* a = operand(i);
      return a && is_array_symbol(a->symbol) ? a : nullptr;
    };
    auto element = [&](const Expr* a) { return a && a->symbol ? memory_bytes(a->symbol->type) : 1u; };
    if (is_atomic(which) || is_mbarrier(which)) {
      if (const Expr* a = array_at(0); a && operand(1))
        add(e, {site(e, *a, operand(1), AccessKind::atomic, element(a), element(a))});
    } else if (is_vector_access(which)) {
      if (const Expr* a = array_at(0); a && operand(1)) {
        const uint32_t bytes = element(a) * vector_access_lanes(which);
        add(e, {site(e, *a, operand(1), is_vector_store(which) ? AccessKind::write : AccessKind::read, bytes, bytes)});
      }
    } else if (is_ldmatrix(which)) {
      if (const Expr* a = array_at(0); a && operand(1)) add(e, {site(e, *a, operand(1), AccessKind::read, 16, 16)});
    } else if (is_async_copy(which)) {
      const uint32_t bytes = async_copy_bytes(which);
      const Expr* dst = array_at(0);
      const Expr* src = array_at(2);
      if (dst && src && operand(1) && operand(3))
        add(e, {site(e, *dst, operand(1), AccessKind::write, bytes, bytes),
                site(e, *src, operand(3), AccessKind::read, bytes, bytes)});
    } else if (which == Intrinsic::tma_load) {
      const Expr* dst = array_at(0);
      const Expr* bars = array_at(3);
      if (dst && bars && operand(1) && operand(4) && operand(5)) {
        SourceAccess shared = site(e, *dst, operand(1), AccessKind::write, element(dst), element(dst));
        shared.check = SiteCheck::tma_shared;
        SourceAccess tile = site(e, *dst, operand(5), AccessKind::write, element(dst), element(dst));
        tile.check = SiteCheck::tma_tile;
        add(e, {std::move(shared), site(e, *bars, operand(4), AccessKind::atomic, element(bars), element(bars)),
                std::move(tile)});
      }
    } else if (which == Intrinsic::tma_store) {
      const Expr* src = array_at(1);
      if (src && operand(2) && operand(3)) {
        SourceAccess shared = site(e, *src, operand(2), AccessKind::read, element(src), element(src));
        shared.check = SiteCheck::tma_shared;
        SourceAccess tile = site(e, *src, operand(3), AccessKind::read, element(src), element(src));
        tile.check = SiteCheck::tma_tile;
        add(e, {std::move(shared), std::move(tile)});
      }
    }
  }

  const diag::SourceFile* file_;
  AccessSiteTable& table_;
  std::string routine_;
};

/// Every launch the kernel allows: its @workgroup block (else any block the targets allow), any
/// grid, any dynamic shared memory up to the largest opt-in.
LeafRanges every_launch(const Kernel& k) {
  LeafRanges r;
  const std::array<Integer, 3> block_max{1024, 1024, 64}, grid_max{2147483647, 65535, 65535};
  for (unsigned c = 0; c < 3; ++c) {
    if (k.has_workgroup()) {
      const Integer b = k.workgroup[c] ? k.workgroup[c] : 1;
      r.block[c] = {b, b};
    } else {
      r.block[c] = {1, block_max[c]};
    }
    r.grid[c] = {1, grid_max[c]};
  }
  r.dynamic_shared_bytes = {0, 232448};
  return r;
}

}  // namespace

uint32_t site_count(const Expr& e) {
  if (e.access_site == UINT32_MAX) return 0;
  if (e.kind != ExprKind::call || !e.intrinsic) return 1;
  if (is_async_copy(*e.intrinsic) || *e.intrinsic == Intrinsic::tma_store) return 2;
  if (*e.intrinsic == Intrinsic::tma_load) return 3;
  return 1;
}

std::shared_ptr<const AccessSiteTable> number_access_sites(Module& module, const diag::SourceFile* file) {
  auto table = std::make_shared<AccessSiteTable>();
  Numbering n(file, *table);
  for (Function& f : module.functions) table->functions.push_back(n.routine(f));
  for (Kernel& k : module.kernels) {
    table->kernels.push_back(n.routine(k));
    auto& params = table->parameters.emplace_back();
    for (const Param& p : k.params) {
      diag::Location where;
      where.file = module.path;
      params.push_back(file != nullptr && p.range.length > 0 ? diag::locate(*file, p.range.offset, p.range.length)
                                                             : where);
    }
  }
  return table;
}

std::vector<uint32_t> sites_of_kernel(const Module& module, size_t kernel) {
  std::vector<uint32_t> out;
  if (!module.access_sites || kernel >= module.kernels.size()) return out;
  const AccessSiteTable& t = *module.access_sites;
  auto take = [&](AccessSiteTable::Range r) {
    for (uint32_t i = r.begin; i < r.end; ++i) out.push_back(i);
  };
  take(t.kernels[kernel]);
  std::unordered_set<const Function*> seen;
  std::function<void(const std::vector<StmtPtr>&)> walk_body;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e.function && seen.insert(e.function).second) {
      const auto index = static_cast<size_t>(e.function - module.functions.data());
      if (index < t.functions.size()) take(t.functions[index]);
      walk_body(e.function->body);
    }
    for (const auto& o : e.operands)
      if (o) walk(*o);
  };
  walk_body = [&](const std::vector<StmtPtr>& body) {
    for (const auto& s : body) {
      if (!s) continue;
      for (const Expr* e : {s->target.get(), s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
        if (e) walk(*e);
      walk_body(s->body);
      walk_body(s->else_body);
    }
  };
  walk_body(module.kernels[kernel].body);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<bool> sites_needing_guards(const Module& module) {
  if (!module.access_sites) return {};
  const AccessSiteTable& table = *module.access_sites;
  const size_t n = table.sites.size();
  // Per site: 1 while every fact of it seen is proven, 0 once one is not (or cannot be), -1 before any.
  std::vector<int8_t> proven(n, -1);
  auto refute = [&](uint32_t site) {
    if (site < n) proven[site] = 0;
  };
  for (size_t k = 0; k < module.kernels.size(); ++k) {
    const Kernel& kernel = module.kernels[k];
    const std::vector<uint32_t> reachable = sites_of_kernel(module, k);
    const AccessFacts* facts = kernel.access_facts.get();
    if (!facts || !facts->complete) {
      for (uint32_t s : reachable) refute(s);
      continue;
    }
    const LeafRanges ranges = every_launch(kernel);
    LeafValues leaves;
    leaves.ranges = &ranges;
    NodeBounds bounds(*facts, leaves);
    std::vector<bool> covered(n, false);
    std::map<uint32_t, std::vector<uint32_t>> by_path;
    for (uint32_t i = 0; i < facts->sites.size(); ++i) by_path[facts->sites[i].path].push_back(i);
    for (const auto& [path, sites] : by_path) {
      uint32_t last = path;
      for (uint32_t s : sites) {
        last = std::max(last, facts->sites[s].index);
        if (facts->sites[s].width_limit >= 0) last = std::max<uint32_t>(last, static_cast<uint32_t>(facts->sites[s].width_limit));
      }
      const std::vector<Interval>& values = bounds.under(path, last);
      for (uint32_t s : sites) {
        const AccessSite& site = facts->sites[s];
        if (site.source >= n) continue;
        covered[site.source] = true;
        if (proven[site.source] == 0) continue;
        bool ok = false;
        if (site.space != Space::global && site.array < facts->arrays.size() && !facts->arrays[site.array].dynamic) {
          const ArrayFact& array = facts->arrays[site.array];
          const Interval p = values[path], index = values[site.index];
          const bool runs = !p.empty() && p != Interval{0, 0} && !index.empty();
          const Integer length = static_cast<Integer>(array.elements) * array.element_bytes;
          ok = !runs || (index.lo >= 0 && index.hi * site.stride + site.width <= length);
        }
        proven[site.source] = ok ? 1 : 0;
      }
    }
    // A reachable site without a fact: never reached in this kernel when the facts model every
    // access; else possibly one they left out.
    if (facts->unmodelled > 0)
      for (uint32_t s : reachable)
        if (!covered[s]) refute(s);
  }
  std::vector<bool> needs(n, true);
  for (size_t i = 0; i < n; ++i)
    needs[i] = !(proven[i] == 1 && table.sites[i].check == SiteCheck::bounds && table.sites[i].space != Space::global);
  return needs;
}

nlohmann::json to_json(const SourceAccess& s) {
  return {{"kind", std::string(access_kind_name(s.kind))},
          {"space", std::string(space_name(s.space))},
          {"check", s.check == SiteCheck::bounds ? "bounds" : s.check == SiteCheck::tma_shared ? "tma_shared" : "tma_tile"},
          {"routine", s.routine},
          {"array", s.array},
          {"element_bytes", s.element_bytes},
          {"stride", s.stride},
          {"width", s.width},
          {"operation", s.operation},
          {"index_text", s.index_text},
          {"index_type", std::string(type_name(s.index_type))},
          {"line", s.line},
          {"column", s.column},
          {"length", s.length},
          {"source_line", s.source_line}};
}

std::expected<SourceAccess, std::string> source_access_from_json(const nlohmann::json& j) {
  try {
    SourceAccess s;
    const std::string kind = j.at("kind").get<std::string>(), space = j.at("space").get<std::string>(),
                      check = j.at("check").get<std::string>();
    if (kind == "read") s.kind = AccessKind::read;
    else if (kind == "write") s.kind = AccessKind::write;
    else if (kind == "atomic") s.kind = AccessKind::atomic;
    else return std::unexpected("unknown access kind '" + kind + "'");
    if (space == "global") s.space = Space::global;
    else if (space == "shared") s.space = Space::shared;
    else if (space == "local") s.space = Space::local;
    else return std::unexpected("unknown space '" + space + "'");
    if (check == "bounds") s.check = SiteCheck::bounds;
    else if (check == "tma_shared") s.check = SiteCheck::tma_shared;
    else if (check == "tma_tile") s.check = SiteCheck::tma_tile;
    else return std::unexpected("unknown site check '" + check + "'");
    s.routine = j.at("routine").get<std::string>();
    s.array = j.at("array").get<std::string>();
    s.element_bytes = diag::json_integer<uint32_t>(j.at("element_bytes"));
    s.stride = diag::json_integer<uint32_t>(j.at("stride"));
    s.width = diag::json_integer<uint32_t>(j.at("width"));
    if (s.element_bytes == 0 || s.stride == 0 || s.width == 0)
      return std::unexpected("a site's element size, stride and width must be positive");
    s.operation = j.at("operation").get<std::string>();
    s.index_text = j.at("index_text").get<std::string>();
    auto index_type = type_from_name(j.at("index_type").get<std::string>());
    if (!index_type || !is_integer(*index_type)) return std::unexpected("a site's index type must be an integer type");
    s.index_type = *index_type;
    s.line = diag::json_integer<uint32_t>(j.at("line"));
    s.column = diag::json_integer<uint32_t>(j.at("column"));
    s.length = diag::json_integer<uint32_t>(j.at("length"));
    s.source_line = j.at("source_line").get<std::string>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(std::string("invalid access site: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return std::unexpected(std::string("invalid access site: ") + e.what());
  }
}

}  // namespace ptxgate::ir
