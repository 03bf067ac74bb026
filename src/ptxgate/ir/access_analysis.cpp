// The access analysis: a symbolic walk over a verified kernel that records each memory access's
// index and path condition as hash-consed nodes of launch values (docs/ir.md "Memory safety").
#include "ptxgate/ir/access_analysis.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ptxgate/ir/access_sites.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::ir {
namespace {

constexpr uint32_t kNone = UINT32_MAX;  ///< an expression without an integer or bool value (floats, vectors)

struct NodeHash {
  size_t operator()(const SymNode& n) const {
    size_t h = static_cast<size_t>(n.op) * 0x9E3779B97F4A7C15ull ^ static_cast<size_t>(n.type);
    h = h * 31 + n.a;
    h = h * 31 + n.b;
    h = h * 31 + n.c;
    return h * 31 + std::hash<uint64_t>()(n.value);
  }
};

/// Thrown when the kernel is bigger than the limits allow; the facts so far stay, marked incomplete.
struct OverBudget {};

/// An array an access names: a buffer parameter (global), or a shared or local array.
struct ArrayRef {
  Space space = Space::global;
  uint32_t id = 0;             ///< global: the kernel's parameter number; else AccessFacts::arrays
  uint32_t element_bytes = 4;
};

/// What a loop body does that matters for its facts (nested loops' break/continue excluded).
struct BodyScan {
  std::unordered_set<const Symbol*> assigned;
  bool breaks = false, continues = false, returns = false;
};

bool is_value(Type t) { return t == Type::bool_ || is_integer(t); }

class Analysis {
 public:
  Analysis(const Kernel& kernel, const diag::SourceFile* file, const AccessAnalysisLimits& limits)
      : kernel_(kernel), file_(file), limits_(limits) {}

  std::shared_ptr<const AccessFacts> run() {
    try {
      true_ = constant(Type::bool_, 1);
      false_ = constant(Type::bool_, 0);
      path_ = true_;
      for (const Param& p : kernel_.params) {
        if (!p.symbol) continue;
        if (p.is_buffer) arrays_[p.symbol] = {Space::global, p.symbol->param_index, byte_size(p.type)};
        else if (is_value(p.type)) values_[p.symbol] = leaf(SymOp::param, p.type, p.symbol->param_index);
      }
      statements(kernel_.body);
    } catch (const OverBudget&) {
      facts_.complete = false;
    }
    // Every launch's verdict evaluates the facts' nodes (the bounds of each, for each new launch
    // shape): the ones nothing reads go (12 % of gemm_bf16_mma's, 20 % of jacobi's).
    drop_unread_nodes(facts_);
    return std::make_shared<const AccessFacts>(std::move(facts_));
  }

 private:
  // ---- nodes ----

  uint32_t intern(const SymNode& n) {
    if (auto it = interned_.find(n); it != interned_.end()) return it->second;
    if (facts_.nodes.size() >= limits_.max_nodes) throw OverBudget{};
    const auto id = static_cast<uint32_t>(facts_.nodes.size());
    facts_.nodes.push_back(n);
    interned_.emplace(n, id);
    return id;
  }
  const SymNode& node(uint32_t id) const { return facts_.nodes[id]; }
  bool is_constant(uint32_t id) const { return node(id).op == SymOp::constant; }

  uint32_t constant(Type t, uint64_t bits) { return intern({SymOp::constant, t, 0, 0, 0, bits_of(t, value_of(t, bits))}); }
  uint32_t leaf(SymOp op, Type t, uint64_t value) { return intern({op, t, 0, 0, 0, value}); }
  /// A value the analysis does not follow: every one is distinct.
  uint32_t opaque(Type t) { return intern({SymOp::opaque, t, 0, 0, 0, next_opaque_++}); }

  /// A node of `op` over operands, folded when every operand is a constant and simplified where
  /// an identity makes that exact (x + 0, x && true, ...).
  uint32_t make(SymOp op, Type t, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
    const unsigned n = sym_operand_count(op);
    if ((n >= 1 && is_constant(a)) && (n < 2 || is_constant(b)) && (n < 3 || is_constant(c))) {
      if (auto v = apply_sym_op(op, t, node(a).type, node(a).value, n >= 2 ? node(b).value : 0, n >= 3 ? node(c).value : 0))
        return constant(t, *v);
    }
    switch (op) {
      case SymOp::logical_and:
        if (a == true_) return b;
        if (b == true_ || a == b) return a;
        if (a == false_ || b == false_) return false_;
        break;
      case SymOp::logical_or:
        if (a == false_) return b;
        if (b == false_ || a == b) return a;
        if (a == true_ || b == true_) return true_;
        break;
      case SymOp::logical_not:
        if (node(a).op == SymOp::logical_not) return node(a).a;
        break;
      case SymOp::add: case SymOp::bit_or: case SymOp::bit_xor:
        if (is_constant(b) && node(b).value == 0) return a;
        if (is_constant(a) && node(a).value == 0) return b;
        break;
      case SymOp::sub:
        if (is_constant(b) && node(b).value == 0) return a;
        break;
      case SymOp::mul:
        if (is_constant(b) && node(b).value == 1) return a;
        if (is_constant(a) && node(a).value == 1) return b;
        break;
      case SymOp::select:
        if (a == true_ || b == c) return b;
        if (a == false_) return c;
        break;
      case SymOp::cast:
        if (node(a).type == t) return a;
        break;
      default:
        break;
    }
    return intern({op, t, a, b, c, 0});
  }
  uint32_t both(uint32_t a, uint32_t b) { return make(SymOp::logical_and, Type::bool_, a, b); }
  uint32_t either(uint32_t a, uint32_t b) { return make(SymOp::logical_or, Type::bool_, a, b); }
  uint32_t negation(uint32_t a) { return make(SymOp::logical_not, Type::bool_, a); }
  /// An expression's node, or an opaque value of its type when the analysis has none for it.
  uint32_t value_or_opaque(uint32_t v, Type t) { return v != kNone ? v : is_value(t) ? opaque(t) : kNone; }

  // ---- builtins ----

  uint32_t builtin(Builtin b, uint8_t component) {
    auto u32 = [&](SymOp op, uint64_t c) { return leaf(op, Type::u32, c); };
    switch (b) {
      case Builtin::thread_id: return u32(SymOp::thread_id, component);
      case Builtin::block_id: return u32(SymOp::block_id, component);
      case Builtin::block_dim: return u32(SymOp::block_dim, component);
      case Builtin::grid_dim: return u32(SymOp::grid_dim, component);
      case Builtin::global_id:
        return make(SymOp::add, Type::u32,
                    make(SymOp::mul, Type::u32, u32(SymOp::block_id, component), u32(SymOp::block_dim, component)),
                    u32(SymOp::thread_id, component));
      case Builtin::lane_id: return make(SymOp::rem, Type::u32, linear_thread(), constant(Type::u32, 32));
      case Builtin::warp_id: return make(SymOp::div, Type::u32, linear_thread(), constant(Type::u32, 32));
      case Builtin::warpgroup_id: return make(SymOp::div, Type::u32, linear_thread(), constant(Type::u32, 128));
    }
    return opaque(Type::u32);
  }
  /// (thread_id.z * block_dim.y + thread_id.y) * block_dim.x + thread_id.x, as warps are formed.
  uint32_t linear_thread() {
    auto u32 = [&](SymOp op, uint64_t c) { return leaf(op, Type::u32, c); };
    uint32_t zy = make(SymOp::add, Type::u32, make(SymOp::mul, Type::u32, u32(SymOp::thread_id, 2), u32(SymOp::block_dim, 1)),
                       u32(SymOp::thread_id, 1));
    return make(SymOp::add, Type::u32, make(SymOp::mul, Type::u32, zy, u32(SymOp::block_dim, 0)), u32(SymOp::thread_id, 0));
  }

  // ---- sites ----

  const ArrayRef* array_of(const Expr& named) const {
    if (!named.symbol) return nullptr;
    auto it = arrays_.find(named.symbol);
    return it == arrays_.end() ? nullptr : &it->second;
  }

  /// `part`: which of the operation's site numbers this is (cp_async's source is its second).
  void add_site(AccessKind kind, const ArrayRef& array, uint32_t index, uint32_t stride, uint32_t width,
                const Expr& operation, const Expr& index_expr, uint32_t path_extra = kNone, int32_t width_limit = -1,
                uint32_t part = 0) {
    if (index == kNone) return;
    uint32_t path = path_extra == kNone ? path_ : both(path_, path_extra);
    if (path == false_) return;  // never runs
    if (facts_.sites.size() >= limits_.max_sites) throw OverBudget{};
    AccessSite s;
    if (operation.access_site != UINT32_MAX) s.source = operation.access_site + part;
    s.kind = kind;
    s.space = array.space;
    s.array = array.id;
    s.index = index;
    s.element_bytes = array.element_bytes;
    s.stride = stride;
    s.width = width;
    s.width_limit = width_limit;
    s.path = path;
    s.loop = loop_;
    s.witness_exact = witness_exact_;
    s.epoch = epoch_;
    s.value = kind == AccessKind::write && value_ != kNone ? static_cast<int32_t>(value_) : -1;
    s.operation = print(operation);
    s.index_text = print(index_expr);
    place_site(s, file_, operation.range);
    facts_.sites.push_back(std::move(s));
  }

  /// A plain element access `A[i]` (read or write).
  void element_access(AccessKind kind, const Expr& access) {
    const ArrayRef* array = array_of(access);
    if (!array || access.operands.empty()) {
      ++facts_.unmodelled;
      return;
    }
    uint32_t index = value_or_opaque(expr(*access.operands[0]), access.operands[0]->type);
    add_site(kind, *array, index, array->element_bytes, array->element_bytes, access, *access.operands[0]);
  }

  // ---- expressions ----

  uint32_t expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::int_literal:
        return is_value(e.type) ? constant(e.type, e.int_value) : kNone;
      case ExprKind::float_literal:
        return kNone;
      case ExprKind::bool_literal:
        return constant(Type::bool_, e.bool_value ? 1 : 0);
      case ExprKind::name:
        return name(e);
      case ExprKind::builtin:
        return builtin(e.builtin, e.component);
      case ExprKind::index:
        return index(e);
      case ExprKind::unary: {
        uint32_t a = expr(*e.operands.at(0));
        if (!is_value(e.type)) return kNone;
        if (a == kNone) return opaque(e.type);
        SymOp op = e.unary_op == UnaryOp::neg ? SymOp::neg : e.unary_op == UnaryOp::bit_not ? SymOp::bit_not : SymOp::logical_not;
        return make(op, e.type, a);
      }
      case ExprKind::binary:
        return binary(e);
      case ExprKind::cast: {
        std::vector<uint32_t> parts;
        for (const auto& o : e.operands) parts.push_back(expr(*o));
        if (!is_value(e.cast_type) || e.operands.size() != 1) return value_or_opaque(kNone, e.type);
        const Type from = e.operands[0]->type;
        if (!is_value(from) || parts[0] == kNone) return opaque(e.cast_type);
        return make(SymOp::cast, e.cast_type, parts[0]);
      }
      case ExprKind::call:
        return call(e);
    }
    return kNone;
  }

  uint32_t name(const Expr& e) {
    if (!e.symbol) return value_or_opaque(kNone, e.type);
    if (auto it = values_.find(e.symbol); it != values_.end()) return it->second;
    if (e.symbol->kind == SymbolKind::constant && is_value(e.symbol->type))
      return constant(e.symbol->type, e.symbol->constant_bits);
    return value_or_opaque(kNone, e.type);
  }

  uint32_t index(const Expr& e) {
    if (e.symbol && is_vector(e.symbol->type)) {  // a lane of a vector value
      for (const auto& o : e.operands) expr(*o);
      return value_or_opaque(kNone, e.type);
    }
    element_access(AccessKind::read, e);
    return value_or_opaque(kNone, e.type);
  }

  uint32_t binary(const Expr& e) {
    const Expr& l = *e.operands.at(0);
    const Expr& r = *e.operands.at(1);
    if (e.binary_op == BinaryOp::logical_and || e.binary_op == BinaryOp::logical_or) {
      // The right side runs only when the left one does not decide: its accesses are under that.
      uint32_t a = value_or_opaque(expr(l), Type::bool_);
      const uint32_t saved = path_;
      path_ = both(path_, e.binary_op == BinaryOp::logical_and ? a : negation(a));
      uint32_t b = value_or_opaque(expr(r), Type::bool_);
      path_ = saved;
      return make(e.binary_op == BinaryOp::logical_and ? SymOp::logical_and : SymOp::logical_or, Type::bool_, a, b);
    }
    uint32_t a = expr(l);
    uint32_t b = expr(r);
    const Type operand = l.type;
    if (!is_value(operand) || a == kNone || b == kNone) return value_or_opaque(kNone, e.type);
    SymOp op = SymOp::add;
    switch (e.binary_op) {
      case BinaryOp::add: op = SymOp::add; break;
      case BinaryOp::sub: op = SymOp::sub; break;
      case BinaryOp::mul: op = SymOp::mul; break;
      case BinaryOp::div: op = SymOp::div; break;
      case BinaryOp::rem: op = SymOp::rem; break;
      case BinaryOp::shl: op = SymOp::shl; break;
      case BinaryOp::shr: op = SymOp::shr; break;
      case BinaryOp::bit_and: op = operand == Type::bool_ ? SymOp::logical_and : SymOp::bit_and; break;
      case BinaryOp::bit_or: op = operand == Type::bool_ ? SymOp::logical_or : SymOp::bit_or; break;
      case BinaryOp::bit_xor: op = operand == Type::bool_ ? SymOp::ne : SymOp::bit_xor; break;
      case BinaryOp::eq: op = SymOp::eq; break;
      case BinaryOp::ne: op = SymOp::ne; break;
      case BinaryOp::lt: op = SymOp::lt; break;
      case BinaryOp::le: op = SymOp::le; break;
      case BinaryOp::gt: op = SymOp::gt; break;
      case BinaryOp::ge: op = SymOp::ge; break;
      default: return value_or_opaque(kNone, e.type);
    }
    // A shift amount of another type than the value: taken modulo the value's width, as bits.
    if ((op == SymOp::shl || op == SymOp::shr) && r.type != operand) b = make(SymOp::cast, operand, b);
    return make(op, e.type, a, b);
  }


  /// An atomic or an mbarrier operation on element operand 1 of the array in operand 0 (an
  /// atomic site of one element); the other operands evaluated for their own accesses.
  void element_update_site(const Expr& e) {
    const ArrayRef* array = e.operands.empty() ? nullptr : array_of(*e.operands[0]);
    uint32_t index = e.operands.size() > 1 ? value_or_opaque(expr(*e.operands[1]), e.operands[1]->type) : kNone;
    for (size_t i = 2; i < e.operands.size(); ++i) expr(*e.operands[i]);
    if (array && index != kNone)
      add_site(AccessKind::atomic, *array, index, array->element_bytes, array->element_bytes, e, *e.operands[1]);
    else
      ++facts_.unmodelled;
  }
  uint32_t call(const Expr& e) {
    if (e.function) return inline_call(*e.function, e);
    if (!e.intrinsic) {
      for (const auto& o : e.operands) expr(*o);
      return value_or_opaque(kNone, e.type);
    }
    using I = Intrinsic;
    const I which = *e.intrinsic;
    auto operand = [&](size_t i) { return i < e.operands.size() ? expr(*e.operands[i]) : kNone; };
    if (is_atomic(which)) {
      element_update_site(e);
      return value_or_opaque(kNone, e.type);
    }
    if (is_vector_access(which)) {
      const ArrayRef* array = e.operands.empty() ? nullptr : array_of(*e.operands[0]);
      uint32_t index = e.operands.size() > 1 ? value_or_opaque(expr(*e.operands[1]), e.operands[1]->type) : kNone;
      for (size_t i = 2; i < e.operands.size(); ++i) expr(*e.operands[i]);
      if (array && index != kNone) {
        const uint32_t bytes = array->element_bytes * vector_access_lanes(which);
        add_site(is_vector_store(which) ? AccessKind::write : AccessKind::read, *array, index, bytes, bytes, e,
                 *e.operands[1]);
      } else {
        ++facts_.unmodelled;
      }
      return kNone;
    }
    if (is_ldmatrix(which)) {
      const ArrayRef* array = e.operands.empty() ? nullptr : array_of(*e.operands[0]);
      uint32_t chunk = e.operands.size() > 1 ? value_or_opaque(expr(*e.operands[1]), e.operands[1]->type) : kNone;
      if (array && chunk != kNone) {
        // Lanes 8j .. 8j+7 give the rows of matrix j < N; the other lanes' chunks are not read.
        uint32_t reads = make(SymOp::lt, Type::bool_, builtin(Builtin::lane_id, 0),
                              constant(Type::u32, 8 * ldmatrix_count(which)));
        add_site(AccessKind::read, *array, chunk, 16, 16, e, *e.operands[1], reads);
      } else {
        ++facts_.unmodelled;
      }
      return kNone;
    }
    if (is_async_copy(which)) {
      const uint32_t bytes = async_copy_bytes(which);
      const ArrayRef* shared = e.operands.size() > 0 ? array_of(*e.operands[0]) : nullptr;
      uint32_t i = e.operands.size() > 1 ? value_or_opaque(expr(*e.operands[1]), e.operands[1]->type) : kNone;
      const ArrayRef* buffer = e.operands.size() > 2 ? array_of(*e.operands[2]) : nullptr;
      uint32_t j = e.operands.size() > 3 ? value_or_opaque(expr(*e.operands[3]), e.operands[3]->type) : kNone;
      int32_t limit = -1;
      uint32_t reads = kNone;
      if (e.operands.size() > 4) {
        uint32_t src = value_or_opaque(expr(*e.operands[4]), e.operands[4]->type);
        if (src != kNone) {
          limit = static_cast<int32_t>(make(SymOp::cast, Type::u32, src));
          // select(c, bytes, 0), the edge-tile idiom: the copy reads only when c holds.
          const SymNode& n = node(src);
          if (n.op == SymOp::select && is_constant(n.c) && node(n.c).value == 0) reads = n.a;
        }
      }
      if (shared && i != kNone) add_site(AccessKind::write, *shared, i, bytes, bytes, e, *e.operands[1]);
      else ++facts_.unmodelled;
      if (buffer && j != kNone) add_site(AccessKind::read, *buffer, j, bytes, bytes, e, *e.operands[3], reads, limit, 1);
      else ++facts_.unmodelled;
      return kNone;
    }
    switch (which) {
      case I::min: case I::max: {
        uint32_t a = operand(0), b = operand(1);
        if (!is_value(e.type) || a == kNone || b == kNone) return value_or_opaque(kNone, e.type);
        return make(which == I::min ? SymOp::min : SymOp::max, e.type, a, b);
      }
      case I::abs: {
        uint32_t a = operand(0);
        if (!is_value(e.type) || a == kNone) return value_or_opaque(kNone, e.type);
        if (!is_signed(e.type)) return a;
        return make(SymOp::select, e.type, make(SymOp::lt, Type::bool_, a, constant(e.type, 0)), make(SymOp::neg, e.type, a), a);
      }
      case I::select: {
        uint32_t c = operand(0), a = operand(1), b = operand(2);
        if (!is_value(e.type) || c == kNone || a == kNone || b == kNone) return value_or_opaque(kNone, e.type);
        return make(SymOp::select, e.type, c, a, b);
      }
      case I::mbarrier_init: case I::mbarrier_arrive: case I::mbarrier_arrive_expect_tx:
      case I::mbarrier_try_wait: case I::mbarrier_wait: case I::mbarrier_inval: {
        element_update_site(e);
        if (which == I::mbarrier_wait || which == I::mbarrier_try_wait) ++epoch_;
        return value_or_opaque(kNone, e.type);
      }
      case I::tma_load: {
        // tma_load(dst, dst_index, map, bars, bar_index, coordinates...): the mbarrier is an access;
        // the tile's size is the tensor map's (a launch argument), which the facts do not hold.
        for (size_t i = 0; i < e.operands.size(); ++i)
          if (i != 0 && i != 2 && i != 3) expr(*e.operands[i]);
        const ArrayRef* bars = e.operands.size() > 3 ? array_of(*e.operands[3]) : nullptr;
        if (bars && e.operands.size() > 4) {
          uint32_t bi = value_or_opaque(expr(*e.operands[4]), e.operands[4]->type);
          add_site(AccessKind::atomic, *bars, bi, bars->element_bytes, bars->element_bytes, e, *e.operands[4], kNone, -1, 1);
        }
        ++facts_.unmodelled;
        return kNone;
      }
      case I::tma_store: case I::wgmma_desc:
        for (const auto& o : e.operands)
          if (o->kind != ExprKind::name) expr(*o);
        ++facts_.unmodelled;
        return value_or_opaque(kNone, e.type);
      default:
        break;
    }
    // Everything else reads no array the facts model (math, warp operations, fences, mma, ...):
    // its value is opaque, its operands may hold accesses. Barriers end an epoch.
    for (const auto& o : e.operands)
      if (o->kind != ExprKind::name || !array_of(*o)) expr(*o);
    if (which == I::barrier || which == I::grid_sync || which == I::wgmma_wait) ++epoch_;
    return value_or_opaque(kNone, e.type);
  }

  /// A device function, inlined: scalar parameters bound to the arguments' nodes, buffer
  /// parameters to the caller's arrays; its result is a select over the paths of its returns.
  uint32_t inline_call(const Function& f, const Expr& call) {
    std::vector<uint32_t> scalars(f.params.size(), kNone);
    for (size_t i = 0; i < f.params.size() && i < call.operands.size(); ++i)
      if (!f.params[i].is_buffer) scalars[i] = expr(*call.operands[i]);
    if (depth_ >= limits_.max_call_depth) {
      ++facts_.unmodelled;
      facts_.complete = false;
      return value_or_opaque(kNone, call.type);
    }
    for (size_t i = 0; i < f.params.size() && i < call.operands.size(); ++i) {
      const Param& p = f.params[i];
      if (!p.symbol) continue;
      if (p.is_buffer) {
        if (const ArrayRef* a = array_of(*call.operands[i])) arrays_[p.symbol] = *a;
      } else if (is_value(p.type)) {
        values_[p.symbol] = value_or_opaque(scalars[i], p.type);
      }
    }
    const uint32_t saved_path = path_;
    const bool saved_exact = witness_exact_;
    std::vector<std::pair<uint32_t, uint32_t>> saved_returns;
    saved_returns.swap(returns_);
    const bool in_function_before = in_function_;
    in_function_ = true;
    ++depth_;
    statements(f.body);
    --depth_;
    in_function_ = in_function_before;
    std::vector<std::pair<uint32_t, uint32_t>> returns;
    returns.swap(returns_);
    returns_.swap(saved_returns);
    path_ = saved_path;
    witness_exact_ = saved_exact;
    if (!is_value(f.result)) return kNone;
    uint32_t result = opaque(f.result);
    for (auto it = returns.rbegin(); it != returns.rend(); ++it)
      result = make(SymOp::select, f.result, it->first, value_or_opaque(it->second, f.result), result);
    return result;
  }

  // ---- statements ----

  void statements(const std::vector<StmtPtr>& body) {
    for (const auto& s : body) {
      if (path_ == false_) return;  // unreachable from here on
      if (s) statement(*s);
    }
  }

  void statement(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::let_decl:
      case StmtKind::var_decl: {
        uint32_t v = s.value ? expr(*s.value) : kNone;
        const Type t = s.symbol ? s.symbol->type : Type::error;
        if (s.symbol && is_value(t)) values_[s.symbol] = s.value ? value_or_opaque(v, t) : constant(t, 0);
        return;
      }
      case StmtKind::local_array_decl:
      case StmtKind::shared_decl: {
        if (!s.symbol) return;
        ArrayFact a;
        a.name = s.name;
        a.space = s.kind == StmtKind::shared_decl ? Space::shared : Space::local;
        a.element_bytes = byte_size(s.symbol->type);
        a.elements = s.symbol->array_size;
        a.dynamic = s.symbol->dynamic;
        arrays_[s.symbol] = {a.space, static_cast<uint32_t>(facts_.arrays.size()), a.element_bytes};
        facts_.arrays.push_back(std::move(a));
        return;
      }
      case StmtKind::assign:
        assign(s);
        return;
      case StmtKind::if_:
        branch(s);
        return;
      case StmtKind::while_:
      case StmtKind::for_:
        loop(s);
        return;
      case StmtKind::break_:
      case StmtKind::continue_:
        path_ = false_;
        return;
      case StmtKind::return_:
        if (in_function_) returns_.emplace_back(path_, s.value ? expr(*s.value) : kNone);
        path_ = false_;
        return;
      case StmtKind::expr:
        if (!s.value) return;
        if (s.value->kind == ExprKind::call && s.value->intrinsic == Intrinsic::assert_ && !s.value->operands.empty()) {
          // assert(c): a thread goes on only when c holds.
          path_ = both(path_, value_or_opaque(expr(*s.value->operands[0]), Type::bool_));
          return;
        }
        expr(*s.value);
        return;
      case StmtKind::block:
        statements(s.body);
        return;
      case StmtKind::const_decl:
        return;
    }
  }

  void assign(const Stmt& s) {
    if (!s.target || !s.value) return;
    const Expr& target = *s.target;
    if (target.kind == ExprKind::name) {
      uint32_t v = expr(*s.value);
      if (target.symbol && is_value(target.symbol->type)) values_[target.symbol] = value_or_opaque(v, target.symbol->type);
      return;
    }
    if (target.kind == ExprKind::index) {
      if (target.symbol && is_vector(target.symbol->type)) {  // a lane of a vector var
        for (const auto& o : target.operands) expr(*o);
        expr(*s.value);
        return;
      }
      value_ = expr(*s.value);
      element_access(AccessKind::write, target);
      value_ = kNone;
    }
  }

  void branch(const Stmt& s) {
    uint32_t c = value_or_opaque(s.value ? expr(*s.value) : kNone, Type::bool_);
    const uint32_t before = path_;
    auto saved = values_;
    path_ = both(before, c);
    const uint32_t then_entry = path_;
    statements(s.body);
    const uint32_t then_exit = path_;
    auto then_values = std::move(values_);
    values_ = std::move(saved);
    path_ = both(before, negation(c));
    const uint32_t else_entry = path_;
    if (s.has_else) statements(s.else_body);
    const uint32_t else_exit = path_;
    // Values after the if: each changed one is a select on the condition.
    for (auto& [symbol, then_value] : then_values) {
      auto it = values_.find(symbol);
      if (it == values_.end()) continue;  // declared inside the branch
      if (it->second != then_value) it->second = make(SymOp::select, node(then_value).type, c, then_value, it->second);
    }
    // The path after it: exact when neither branch left early, else the union of what falls through.
    const bool then_whole = then_exit == then_entry, else_whole = else_exit == else_entry;
    if (then_whole && else_whole) path_ = before;
    else if (then_exit == false_ && else_whole) path_ = else_entry;
    else if (else_exit == false_ && then_whole) path_ = then_entry;
    else path_ = either(then_exit, else_exit);
  }

  static void scan_body(const std::vector<StmtPtr>& body, BodyScan& out, bool nested_loop) {
    for (const auto& s : body) {
      if (!s) continue;
      switch (s->kind) {
        case StmtKind::assign:
          if (s->target && s->target->kind == ExprKind::name && s->target->symbol) out.assigned.insert(s->target->symbol);
          break;
        case StmtKind::break_: if (!nested_loop) out.breaks = true; break;
        case StmtKind::continue_: if (!nested_loop) out.continues = true; break;
        case StmtKind::return_: out.returns = true; break;
        default: break;
      }
      const bool inner = nested_loop || s->kind == StmtKind::while_ || s->kind == StmtKind::for_;
      scan_body(s->body, out, inner);
      scan_body(s->else_body, out, inner);
    }
  }

  /// Names `e` reads (symbols), and whether it reads memory or calls anything.
  static bool invariant_in(const Expr& e, const std::unordered_set<const Symbol*>& assigned) {
    if (e.kind == ExprKind::index || e.kind == ExprKind::call) {
      if (e.kind == ExprKind::call && e.intrinsic && (*e.intrinsic == Intrinsic::min || *e.intrinsic == Intrinsic::max)) {
        for (const auto& o : e.operands)
          if (!invariant_in(*o, assigned)) return false;
        return true;
      }
      return false;
    }
    if (e.kind == ExprKind::name && e.symbol && assigned.count(e.symbol)) return false;
    for (const auto& o : e.operands)
      if (!invariant_in(*o, assigned)) return false;
    return true;
  }

  /// `v + a < B`, `v < B`, `v + a <= B`, `v <= B` (or mirrored) with v a var of the loop and a, B
  /// loop-invariant: the variable, a (null: none), the bound and whether it is inclusive.
  struct InductionCondition {
    const Symbol* variable = nullptr;
    const Expr* offset = nullptr;
    const Expr* bound = nullptr;
    bool inclusive = false;
  };
  static std::optional<InductionCondition> induction_condition(const Expr& c, const BodyScan& scan) {
    if (c.kind != ExprKind::binary) return std::nullopt;
    const Expr* lhs = c.operands[0].get();
    const Expr* rhs = c.operands[1].get();
    BinaryOp op = c.binary_op;
    if (op == BinaryOp::gt || op == BinaryOp::ge) {
      std::swap(lhs, rhs);
      op = op == BinaryOp::gt ? BinaryOp::lt : BinaryOp::le;
    }
    if (op != BinaryOp::lt && op != BinaryOp::le) return std::nullopt;
    if (!is_integer(lhs->type)) return std::nullopt;
    InductionCondition out;
    out.inclusive = op == BinaryOp::le;
    const Expr* v = lhs;
    if (lhs->kind == ExprKind::binary && lhs->binary_op == BinaryOp::add) {
      v = lhs->operands[0].get();
      out.offset = lhs->operands[1].get();
      if (!invariant_in(*out.offset, scan.assigned)) return std::nullopt;
    }
    if (v->kind != ExprKind::name || !v->symbol || v->symbol->kind != SymbolKind::var || !scan.assigned.count(v->symbol))
      return std::nullopt;
    if (!invariant_in(*rhs, scan.assigned)) return std::nullopt;
    out.variable = v->symbol;
    out.bound = rhs;
    return out;
  }

  /// The one `v = v + E` of a loop body (at its top level), E invariant; null otherwise.
  static const Expr* induction_step(const std::vector<StmtPtr>& body, const Symbol* v, const BodyScan& scan) {
    const Expr* step = nullptr;
    int assignments = 0;
    std::function<void(const std::vector<StmtPtr>&, bool)> count = [&](const std::vector<StmtPtr>& b, bool top) {
      for (const auto& s : b) {
        if (!s) continue;
        if (s->kind == StmtKind::assign && s->target && s->target->kind == ExprKind::name && s->target->symbol == v) {
          ++assignments;
          const Expr& value = *s->value;
          if (top && value.kind == ExprKind::binary && value.binary_op == BinaryOp::add &&
              value.operands[0]->kind == ExprKind::name && value.operands[0]->symbol == v &&
              invariant_in(*value.operands[1], scan.assigned))
            step = value.operands[1].get();
        }
        count(s->body, false);
        count(s->else_body, false);
      }
    };
    count(body, true);
    return assignments == 1 ? step : nullptr;
  }

  void loop(const Stmt& s) {
    BodyScan scan;
    scan_body(s.body, scan, false);
    const uint32_t before = path_;
    const bool exact_before = witness_exact_;
    LoopFact fact;
    fact.parent = loop_;
    fact.exits_early = scan.breaks || scan.returns || scan.continues;
    bool terminates = s.kind == StmtKind::for_;
    std::optional<InductionCondition> induction;
    const Expr* induction_step_expr = nullptr;
    if (s.kind == StmtKind::for_) {
      const Type t = s.symbol ? s.symbol->type : Type::u32;
      fact.kind = LoopFact::Kind::range;
      fact.name = s.name;
      fact.lo = value_or_opaque(s.lo ? expr(*s.lo) : kNone, t);
      fact.hi = value_or_opaque(s.hi ? expr(*s.hi) : kNone, t);
      fact.step = s.step ? value_or_opaque(expr(*s.step), t) : constant(t, 1);
    } else if (s.value && !scan.continues) {
      induction = induction_condition(*s.value, scan);
      if (induction) induction_step_expr = induction_step(s.body, induction->variable, scan);
      if (!induction_step_expr) induction.reset();
    }
    if (induction) {
      const Type t = induction->variable->type;
      fact.kind = LoopFact::Kind::induction;
      fact.name = induction->variable->name;
      auto init = values_.find(induction->variable);
      fact.lo = init != values_.end() ? init->second : opaque(t);
      fact.hi = value_or_opaque(expr(*induction->bound), t);
      fact.step = value_or_opaque(expr(*induction_step_expr), t);
      fact.offset = induction->offset ? value_or_opaque(expr(*induction->offset), t) : constant(t, 0);
      fact.inclusive = induction->inclusive;
      terminates = is_constant(fact.step) && value_of(t, node(fact.step).value) > 0 && !scan.returns && !scan.breaks;
    }
    const auto id = static_cast<int32_t>(facts_.loops.size());
    const bool modelled = s.kind == StmtKind::for_ || induction.has_value();
    if (modelled) {
      const Type t = s.kind == StmtKind::for_ ? (s.symbol ? s.symbol->type : Type::u32) : induction->variable->type;
      fact.variable = leaf(SymOp::loop, t, static_cast<uint64_t>(id));
      facts_.loops.push_back(fact);
    }
    // The loop head: the loop variable; a variable the body steps by an invariant amount once per
    // iteration of a `for` loop, as its value at that iteration; one the body only shrinks, bounded by
    // its value before the loop; every other variable the body changes, unknown.
    std::unordered_map<const Symbol*, uint32_t> head;
    for (const Symbol* v : scan.assigned) {
      auto before_loop = values_.find(v);
      if (before_loop == values_.end() || !is_value(v->type) || v->type == Type::bool_) continue;
      const uint32_t init = before_loop->second;
      if (modelled && s.kind == StmtKind::for_ && !scan.continues)
        if (const Expr* step = induction_step(s.body, v, scan)) {
          head[v] = stepped_value(v->type, init, value_or_opaque(expr(*step), v->type), fact);
          continue;
        }
      if (!is_signed(v->type) && only_shrinks(s.body, v)) {
        LoopFact shrink;
        shrink.kind = LoopFact::Kind::shrinking;
        shrink.name = v->name;
        shrink.lo = shrink.hi = shrink.step = init;
        shrink.parent = modelled ? id : -1;
        const auto shrink_id = static_cast<uint64_t>(facts_.loops.size());
        shrink.variable = leaf(SymOp::loop, v->type, shrink_id);
        facts_.loops.push_back(shrink);
        head[v] = shrink.variable;
      }
    }
    for (const Symbol* v : scan.assigned)
      if (values_.count(v) && is_value(v->type)) {
        auto known = head.find(v);
        values_[v] = known != head.end() ? known->second : opaque(v->type);
      }
    if (modelled && s.kind == StmtKind::for_ && s.symbol) values_[s.symbol] = fact.variable;
    if (induction) values_[induction->variable] = fact.variable;
    const int32_t outer_loop = loop_;
    if (modelled) loop_ = id;
    if (!modelled) witness_exact_ = false;  // a variable the sites may depend on is not bounded per iteration
    if (s.kind == StmtKind::while_ && s.value) path_ = both(path_, value_or_opaque(expr(*s.value), Type::bool_));
    statements(s.body);
    loop_ = outer_loop;
    path_ = before;
    for (const Symbol* v : scan.assigned)
      if (values_.count(v) && is_value(v->type)) values_[v] = opaque(v->type);
    witness_exact_ = exact_before && terminates && !scan.returns;
  }

  /// The value at an iteration's start of a variable a `for` loop steps by `step` once per
  /// iteration: init + step * k for the k-th iteration, k = (v - lo) / s of the loop variable v
  /// (exact: v = lo + k * s never wraps; a step of 0 runs one iteration, k = 0), with the
  /// variable's own wrap-around, as the repeated additions compute it.
  uint32_t stepped_value(Type t, uint32_t init, uint32_t step, const LoopFact& loop) {
    if (step == kNone) return opaque(t);
    const Type lt = node(loop.variable).type;
    uint32_t k = make(SymOp::div, lt, make(SymOp::sub, lt, loop.variable, loop.lo), loop.step);
    if (!(is_constant(loop.step) && node(loop.step).value != 0))
      k = make(SymOp::select, lt, make(SymOp::eq, Type::bool_, loop.step, constant(lt, 0)), constant(lt, 0), k);
    return make(SymOp::add, t, init, make(SymOp::mul, t, step, make(SymOp::cast, t, k)));
  }

  /// Whether every assignment to `v` in `body` makes it no larger (unsigned): v / C with a
  /// constant C >= 1, v >> E, v & E, v % E, min(v, E).
  static bool only_shrinks(const std::vector<StmtPtr>& body, const Symbol* v) {
    for (const auto& s : body) {
      if (!s) continue;
      if (s->kind == StmtKind::assign && s->target && s->target->kind == ExprKind::name && s->target->symbol == v) {
        const Expr& e = *s->value;
        auto is_v = [&](const Expr& x) { return x.kind == ExprKind::name && x.symbol == v; };
        bool ok = false;
        if (e.kind == ExprKind::binary && is_v(*e.operands[0])) {
          const Expr& r = *e.operands[1];
          if (e.binary_op == BinaryOp::shr || e.binary_op == BinaryOp::bit_and || e.binary_op == BinaryOp::rem) ok = true;
          if (e.binary_op == BinaryOp::div)
            ok = (r.kind == ExprKind::int_literal && r.int_value >= 1) ||
                 (r.kind == ExprKind::name && r.symbol && r.symbol->kind == SymbolKind::constant && r.symbol->constant_bits >= 1);
        }
        if (e.kind == ExprKind::call && e.intrinsic == Intrinsic::min && e.operands.size() == 2)
          ok = is_v(*e.operands[0]) || is_v(*e.operands[1]);
        if (!ok) return false;
      }
      if (!only_shrinks(s->body, v) || !only_shrinks(s->else_body, v)) return false;
    }
    return true;
  }

  const Kernel& kernel_;
  const diag::SourceFile* file_;
  AccessAnalysisLimits limits_;
  AccessFacts facts_;
  std::unordered_map<SymNode, uint32_t, NodeHash> interned_;
  std::unordered_map<const Symbol*, uint32_t> values_;
  std::unordered_map<const Symbol*, ArrayRef> arrays_;
  uint64_t next_opaque_ = 0;
  uint32_t true_ = 0, false_ = 0, path_ = 0;
  uint32_t epoch_ = 0;        ///< barriers passed so far in program order (AccessSite::epoch)
  uint32_t value_ = kNone;    ///< the integer value the write being recorded stores
  int32_t loop_ = -1;
  bool witness_exact_ = true;
  bool in_function_ = false;
  unsigned depth_ = 0;
  std::vector<std::pair<uint32_t, uint32_t>> returns_;
};

}  // namespace

std::shared_ptr<const AccessFacts> analyze_accesses(const Kernel& kernel, const diag::SourceFile* file,
                                                    const AccessAnalysisLimits& limits) {
  return Analysis(kernel, file, limits).run();
}

}  // namespace ptxgate::ir
