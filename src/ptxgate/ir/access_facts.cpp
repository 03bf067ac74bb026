// AccessFacts to and from JSON (kept with the launch contract in the module cache and in `--emit meta`).
#include "ptxgate/ir/access_facts.hpp"

#include <algorithm>
#include <array>
#include <type_traits>

#include "ptxgate/diagnostics/internal/json_checks.hpp"
#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::ir {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(SymOp::select) + 1> kSymOps{
    "constant", "param", "thread_id", "block_id", "block_dim", "grid_dim", "dynamic_shared_bytes", "loop",
    "opaque", "add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor", "min", "max", "neg", "not",
    "eq", "ne", "lt", "le", "gt", "ge", "land", "lor", "lnot", "cast", "select"};
constexpr std::array<std::string_view, 3> kSpaces{"global", "shared", "local"};
constexpr std::array<std::string_view, 3> kKinds{"read", "write", "atomic"};

template <class E, size_t N>
E enum_from(const std::array<std::string_view, N>& table, const std::string& name, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (table[i] == name) return static_cast<E>(i);
  throw std::invalid_argument(std::string("unknown ") + what + " '" + name + "'");
}

bool is_value_type(Type t) { return t == Type::bool_ || is_integer(t); }

}  // namespace

std::string_view sym_op_name(SymOp op) { return kSymOps[static_cast<size_t>(op)]; }
std::string_view space_name(Space s) { return kSpaces[static_cast<size_t>(s)]; }
std::string_view access_kind_name(AccessKind k) { return kKinds[static_cast<size_t>(k)]; }

namespace {

/// Calls `f` with every node id the facts hold outside their node list (a site's index, path, byte
/// limit and written value, each loop's variable and bounds): as uint32_t, or int32_t where -1 is
/// none. The one list read_nodes marks from and drop_unread_nodes renumbers.
template <class Facts, class F>
void each_node_reference(Facts& facts, F&& f) {
  for (auto& s : facts.sites) {
    f(s.index);
    f(s.path);
    f(s.width_limit);
    f(s.value);
  }
  for (auto& l : facts.loops)
    for (auto* ref : {&l.variable, &l.lo, &l.hi, &l.step, &l.offset}) f(*ref);
}

}  // namespace

std::vector<bool> read_nodes(const AccessFacts& facts) {
  // The roots, then their operands (operands have smaller ids: one sweep down).
  const size_t n = facts.nodes.size();
  std::vector<bool> read(n, false);
  const auto root = [&](int64_t id) {
    if (id >= 0 && static_cast<size_t>(id) < n) read[static_cast<size_t>(id)] = true;
  };
  each_node_reference(facts, [&](const auto& id) { root(id); });
  for (size_t i = n; i-- > 0;) {
    if (!read[i]) continue;
    const SymNode& node = facts.nodes[i];
    const unsigned operands = sym_operand_count(node.op);
    if (operands > 0) root(node.a);
    if (operands > 1) root(node.b);
    if (operands > 2) root(node.c);
  }
  return read;
}

void drop_unread_nodes(AccessFacts& facts) {
  const std::vector<bool> read = read_nodes(facts);
  if (std::find(read.begin(), read.end(), false) == read.end()) return;
  // New ids in the old order: operands stay before the nodes that use them, bounds before their
  // loop's variable. An unread node is referenced by no read one.
  std::vector<uint32_t> id(read.size(), 0);
  std::vector<SymNode> kept;
  for (size_t i = 0; i < read.size(); ++i) {
    if (!read[i]) continue;
    id[i] = static_cast<uint32_t>(kept.size());
    SymNode node = facts.nodes[i];
    const unsigned operands = sym_operand_count(node.op);
    node.a = operands > 0 ? id[node.a] : 0;
    node.b = operands > 1 ? id[node.b] : 0;
    node.c = operands > 2 ? id[node.c] : 0;
    kept.push_back(node);
  }
  facts.nodes = std::move(kept);
  each_node_reference(facts, [&](auto& ref) {
    const int64_t old = ref;  // -1: none
    if (old >= 0 && static_cast<size_t>(old) < id.size())
      ref = static_cast<std::remove_reference_t<decltype(ref)>>(id[static_cast<size_t>(old)]);
  });
}

std::vector<uint32_t> parameters_read(const AccessFacts& facts) {
  // A node the analysis built for a value nothing reads (the float a kernel stores, or any node of a
  // forged cache entry that nothing references) names no parameter read.
  const std::vector<bool> read = read_nodes(facts);
  std::vector<uint32_t> params;
  for (size_t i = 0; i < read.size(); ++i)
    if (read[i] && facts.nodes[i].op == SymOp::param && facts.nodes[i].value <= UINT32_MAX)
      params.push_back(static_cast<uint32_t>(facts.nodes[i].value));
  std::sort(params.begin(), params.end());
  params.erase(std::unique(params.begin(), params.end()), params.end());
  return params;
}

std::vector<bool> parameters_used(const AccessFacts& facts, size_t count) {
  std::vector<bool> used(count, false);
  for (uint32_t p : parameters_read(facts))
    if (p < count) used[p] = true;
  return used;
}

nlohmann::json to_json(const AccessFacts& facts) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const SymNode& n : facts.nodes)
    nodes.push_back({std::string(sym_op_name(n.op)), std::string(type_name(n.type)), n.a, n.b, n.c, n.value});
  nlohmann::json loops = nlohmann::json::array();
  for (const LoopFact& l : facts.loops)
    loops.push_back({{"kind", l.kind == LoopFact::Kind::range ? "range" : l.kind == LoopFact::Kind::induction ? "induction" : "shrinking"},
                     {"variable", l.variable}, {"lo", l.lo}, {"hi", l.hi}, {"step", l.step},
                     {"offset", l.offset}, {"inclusive", l.inclusive}, {"parent", l.parent},
                     {"exits_early", l.exits_early}, {"name", l.name}});
  nlohmann::json arrays = nlohmann::json::array();
  for (const ArrayFact& a : facts.arrays)
    arrays.push_back({{"name", a.name}, {"space", std::string(space_name(a.space))},
                      {"element_bytes", a.element_bytes}, {"elements", a.elements}, {"dynamic", a.dynamic}});
  nlohmann::json sites = nlohmann::json::array();
  for (const AccessSite& s : facts.sites)
    sites.push_back({{"kind", std::string(access_kind_name(s.kind))}, {"space", std::string(space_name(s.space))},
                     {"array", s.array}, {"index", s.index}, {"element_bytes", s.element_bytes}, {"stride", s.stride}, {"width", s.width}, {"width_limit", s.width_limit},
                     {"path", s.path}, {"loop", s.loop}, {"witness_exact", s.witness_exact},
                     {"epoch", s.epoch}, {"value", s.value},
                     {"operation", s.operation}, {"index_text", s.index_text}, {"line", s.line},
                     {"column", s.column}, {"length", s.length}, {"source_line", s.source_line}});
  for (size_t i = 0; i < facts.sites.size(); ++i)
    if (facts.sites[i].source != UINT32_MAX) sites[i]["source"] = facts.sites[i].source;
  return {{"nodes", nodes}, {"loops", loops}, {"arrays", arrays}, {"sites", sites},
          {"unmodelled", facts.unmodelled}, {"complete", facts.complete}};
}

std::expected<AccessFacts, std::string> access_facts_from_json(const nlohmann::json& j) {
  try {
    AccessFacts f;
    for (const auto& jn : j.at("nodes")) {
      if (!jn.is_array() || jn.size() != 6) return std::unexpected("a node must be [op, type, a, b, c, value]");
      SymNode n;
      n.op = enum_from<SymOp>(kSymOps, jn[0].get<std::string>(), "node operation");
      auto t = type_from_name(jn[1].get<std::string>());
      if (!t || !is_value_type(*t)) return std::unexpected("a node's type must be an integer type or bool");
      n.type = *t;
      n.a = diag::json_integer<uint32_t>(jn[2]);
      n.b = diag::json_integer<uint32_t>(jn[3]);
      n.c = diag::json_integer<uint32_t>(jn[4]);
      n.value = diag::json_integer<uint64_t>(jn[5]);
      const auto id = static_cast<uint32_t>(f.nodes.size());
      const bool leaf = n.op <= SymOp::opaque;
      const unsigned operands = leaf ? 0 : n.op == SymOp::select ? 3
                              : (n.op == SymOp::neg || n.op == SymOp::bit_not || n.op == SymOp::logical_not ||
                                 n.op == SymOp::cast) ? 1 : 2;
      if ((operands > 0 && n.a >= id) || (operands > 1 && n.b >= id) || (operands > 2 && n.c >= id))
        return std::unexpected("a node's operand must come before it");
      if ((n.op >= SymOp::thread_id && n.op <= SymOp::grid_dim) && n.value > 2)
        return std::unexpected("a builtin's component must be 0, 1 or 2");
      f.nodes.push_back(n);
    }
    const auto node_count = f.nodes.size();
    auto node_id = [&](const nlohmann::json& v) {
      const auto id = diag::json_integer<uint32_t>(v);
      if (id >= node_count) throw std::invalid_argument("a node id past the list");
      return id;
    };
    for (const auto& jl : j.at("loops")) {
      LoopFact l;
      const std::string kind = jl.at("kind").get<std::string>();
      if (kind != "range" && kind != "induction" && kind != "shrinking")
        return std::unexpected("unknown loop kind '" + kind + "'");
      l.kind = kind == "range" ? LoopFact::Kind::range : kind == "induction" ? LoopFact::Kind::induction : LoopFact::Kind::shrinking;
      l.variable = node_id(jl.at("variable"));
      l.lo = node_id(jl.at("lo"));
      l.hi = node_id(jl.at("hi"));
      l.step = node_id(jl.at("step"));
      l.offset = node_id(jl.at("offset"));
      l.inclusive = jl.at("inclusive").get<bool>();
      l.parent = diag::json_integer<int32_t>(jl.at("parent"));
      if (l.parent < -1 || l.parent >= static_cast<int32_t>(f.loops.size()))
        return std::unexpected("a loop's parent must come before it");
      l.exits_early = jl.at("exits_early").get<bool>();
      l.name = jl.at("name").get<std::string>();
      if (l.lo >= l.variable || l.hi >= l.variable || l.step >= l.variable || l.offset >= l.variable)
        return std::unexpected("a loop's bounds must come before its variable");
      f.loops.push_back(l);
    }
    for (size_t i = 0; i < f.nodes.size(); ++i)
      if (f.nodes[i].op == SymOp::loop && f.nodes[i].value >= f.loops.size())
        return std::unexpected("a loop node names no loop");
    for (const auto& ja : j.at("arrays")) {
      ArrayFact a;
      a.name = ja.at("name").get<std::string>();
      a.space = enum_from<Space>(kSpaces, ja.at("space").get<std::string>(), "space");
      a.element_bytes = diag::json_integer<uint32_t>(ja.at("element_bytes"));
      a.elements = diag::json_integer<uint64_t>(ja.at("elements"));
      a.dynamic = ja.at("dynamic").get<bool>();
      if (a.element_bytes == 0 || a.space == Space::global) return std::unexpected("an array fact must be shared or local with elements");
      f.arrays.push_back(std::move(a));
    }
    for (const auto& js : j.at("sites")) {
      AccessSite s;
      s.kind = enum_from<AccessKind>(kKinds, js.at("kind").get<std::string>(), "access kind");
      s.space = enum_from<Space>(kSpaces, js.at("space").get<std::string>(), "space");
      s.array = diag::json_integer<uint32_t>(js.at("array"));
      if (s.space != Space::global && s.array >= f.arrays.size()) return std::unexpected("a site names no array");
      s.index = node_id(js.at("index"));
      s.element_bytes = diag::json_integer<uint32_t>(js.at("element_bytes"));
      if (s.element_bytes == 0) return std::unexpected("a site's element size must be positive");
      s.stride = diag::json_integer<uint32_t>(js.at("stride"));
      s.width = diag::json_integer<uint32_t>(js.at("width"));
      if (s.stride == 0 || s.width == 0) return std::unexpected("a site's stride and width must be positive");
      s.width_limit = diag::json_integer<int32_t>(js.at("width_limit"));
      if (s.width_limit < -1 || s.width_limit >= static_cast<int32_t>(node_count))
        return std::unexpected("a site's width limit names no node");
      s.path = node_id(js.at("path"));
      s.loop = diag::json_integer<int32_t>(js.at("loop"));
      if (s.loop < -1 || s.loop >= static_cast<int32_t>(f.loops.size())) return std::unexpected("a site names no loop");
      s.witness_exact = js.at("witness_exact").get<bool>();
      s.epoch = diag::json_integer<uint32_t>(js.at("epoch"));
      s.value = diag::json_integer<int32_t>(js.at("value"));
      if (s.value < -1 || s.value >= static_cast<int32_t>(node_count)) return std::unexpected("a site's value names no node");
      s.operation = js.at("operation").get<std::string>();
      s.index_text = js.at("index_text").get<std::string>();
      s.line = diag::json_integer<uint32_t>(js.at("line"));
      s.column = diag::json_integer<uint32_t>(js.at("column"));
      s.length = diag::json_integer<uint32_t>(js.at("length"));
      s.source_line = js.at("source_line").get<std::string>();
      if (js.contains("source")) s.source = diag::json_integer<uint32_t>(js.at("source"));
      f.sites.push_back(std::move(s));
    }
    f.unmodelled = diag::json_integer<uint32_t>(j.at("unmodelled"));
    f.complete = j.at("complete").get<bool>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(std::string("invalid access facts: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return std::unexpected(std::string("invalid access facts: ") + e.what());
  }
}

}  // namespace ptxgate::ir
