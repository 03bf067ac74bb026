// Bounds of access-fact nodes for one launch: forward interval bounds of every node, and their
// narrowing by the conjuncts of a path condition (HC4-style, through + - * casts min max shifts).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::ir {

/// A closed range of mathematical integers; lo > hi is empty (a value no thread computes).
struct Interval {
  Integer lo = 0, hi = -1;
  bool empty() const { return lo > hi; }
  bool point() const { return lo == hi; }
  bool operator==(const Interval&) const = default;
};

/// Ranges of the launch's geometry, for bounds that hold for every launch (compile time).
struct LeafRanges {
  std::array<Interval, 3> grid, block;
  Interval dynamic_shared_bytes;
};

/// A node's bounds as two 64-bit values, when they are not empty and lie in [0, 2^64).
struct Bounds64 {
  uint64_t lo, hi;
  bool point() const { return lo == hi; }
};

/// The launch's leaf values.
struct LeafValues {
  std::array<uint64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint64_t dynamic_shared_bytes = 0;
  const std::vector<std::optional<uint64_t>>* scalar_bits = nullptr;
  /// When set, the geometry leaves take these ranges instead of the values above (`grid`, `block`
  /// and `dynamic_shared_bytes` are then unused).
  const LeafRanges* ranges = nullptr;
};

/// A comparison a path condition implies: `node` (eq .. ge) holds when `truth`, fails otherwise.
struct Conjunct {
  uint32_t node = 0;
  bool truth = true;
};

/// The comparisons that `path` being true implies through its `&&`, `!` and `||` (a false `||` has
/// both operands false), in the order NodeBounds::under's narrowing visits them, to the same depth.
/// Launch-independent.
std::vector<Conjunct> path_conjuncts(const AccessFacts& facts, uint32_t path);

/// Bounds of every node of one kernel's facts for one launch, refinable by path conditions.
class NodeBounds {
 public:
  NodeBounds(const AccessFacts& facts, const LeafValues& leaves);
  /// No facts yet: bind() gives them. Lets one object (e.g. a thread's) keep its buffers across
  /// launches, so that evaluating a launch allocates nothing once they are large enough.
  NodeBounds() = default;
  /// Starts over for `facts` and `leaves`: the same bounds as NodeBounds(facts, leaves).
  void bind(const AccessFacts& facts, const LeafValues& leaves);
  /// The bounds of the facts last bound for a launch `leaves` that differs from that one only in the
  /// launch inputs of `changed` (leaf_dependencies' bits): only the nodes that depend on one of them
  /// are evaluated again, the others keep their bounds, which are a function of the inputs they
  /// depend on. The same bounds as bind(facts, leaves). `deps`: leaf_dependencies(facts), not empty.
  void rebind(const LeafValues& leaves, const std::vector<uint64_t>& deps, uint64_t changed);
  /// The bounds without any path condition.
  const std::vector<Interval>& base() const { return base_; }
  /// Bounds under `path` (a bool node) being true, up to node `last`: the conjuncts of the path
  /// (comparisons, && and negations) narrow their operands and, through invertible operations,
  /// the values they are computed from; every node is then re-evaluated. Returns the refined
  /// bounds (valid until the next call) of the nodes up to `last`; entries past it are unspecified.
  const std::vector<Interval>& under(uint32_t path, uint32_t last);
  /// under(path, last) computed only for the nodes its sites read: `path_cone` (node_cone of the
  /// path: what narrowing reaches and each round re-evaluates) and `rest` (the other nodes of the
  /// cone of what the sites read, evaluated once after the rounds), both ascending, none past
  /// `last`. The same bounds for those nodes; every other node's entry is unspecified. A kernel's
  /// cones are launch-independent: they are built once (internal::SitePlan).
  const std::vector<Interval>& under(uint32_t path, uint32_t last, std::span<const uint32_t> path_cone,
                                     std::span<const uint32_t> rest);
  /// A cheaper, coarser under(): each of `conjuncts` (path_conjuncts of the path) limits its two
  /// operands once, by the other's base bounds with the limits of the conjuncts before it, and the
  /// nodes of `cone` (ascending: node_cone of the path and of what its sites read) are evaluated
  /// once from the base bounds under those limits. No narrowing through the operations an operand
  /// is computed from, and no second pass. Sound (a thread that takes the path computes values
  /// inside these bounds) and never tighter than under() (which makes the same limits, then more),
  /// so what these bounds prove in bounds the narrowing proves too. Entries outside `cone` are
  /// unspecified; valid until the next call.
  const std::vector<Interval>& direct(std::span<const Conjunct> conjuncts, std::span<const uint32_t> cone);
  /// For tests: from the next bind() on, every node through the general 128-bit operations instead
  /// of their 64-bit form for unsigned operands (which must give the same bounds).
  void set_general_only(bool on) { general_only_ = on; }

 private:
  /// under() over the nodes cone[0, count) (ascending), or nodes 0 .. count - 1 when `cone` is null.
  const std::vector<Interval>& narrowed(uint32_t path, uint32_t last, const uint32_t* cone, size_t count);
  [[gnu::always_inline]] inline Interval forward(uint32_t id, const std::vector<Interval>& values) const;
  /// forward() in 64-bit arithmetic for a node of unsigned operands whose operands' bounds lie in
  /// [0, 2^64) (fast_): the same bounds; any other node or operand takes forward().
  [[gnu::always_inline]] inline Interval unsigned_forward(uint32_t id, const std::vector<Interval>& values) const;
  /// unsigned_forward()'s 64-bit arithmetic for operation `op` (the node's fast_), its operands'
  /// bounds from `operand(id, Bounds64&)`: false where forward() must decide.
  template <class Operand>
  [[gnu::always_inline]] inline bool forward64(uint32_t id, UnsignedOp op, const Operand& operand, Bounds64& out) const;
  /// Node `id`'s base bounds from its operands' (base_, and base64_ for a 64-bit operation); whether
  /// they changed.
  [[gnu::always_inline]] inline bool evaluate_base(uint32_t id);
  /// An operation's bounds from its operands' (not for leaves).
  Interval apply(const SymNode& n, Interval a, Interval b, Interval c) const;
  /// The bounds of a select's branch `node` when its condition `cond` is `truth`: the condition's
  /// operands narrowed and the branch re-evaluated a few levels deep with them (so that
  /// `select(i > 0, i - 1, i)` does not count i - 1 at i = 0).
  Interval branch(uint32_t node, uint32_t cond, bool truth, const std::vector<Interval>& values) const;
  Interval reevaluate(uint32_t id, uint32_t x, Interval x_bounds, uint32_t y, Interval y_bounds,
                      const std::vector<Interval>& values, int depth) const;
  Interval loop_bounds(uint32_t id, uint32_t loop, const std::vector<Interval>& values) const;
  /// Narrows what `path` being true implies (walk_implied): each comparison's operands, and every
  /// node the walk reaches to its truth.
  void constrain(uint32_t path);
  void constrain_node(uint32_t id, bool truth);
  void narrow(uint32_t id, Interval to, int depth);
  void backward(uint32_t id, int depth);

  const AccessFacts* facts_ = nullptr;
  LeafValues leaves_;
  std::vector<Interval> base_;
  /// base_ in 64 bits where the bounds lie in [0, 2^64) and are not empty; {1, 0} elsewhere.
  std::vector<Bounds64> base64_;
  std::vector<Interval> current_;
  std::vector<Interval> limit_;     ///< per node: what the path allows (full range: none)
  std::vector<uint32_t> touched_;   ///< nodes with a limit, to reset
  std::vector<uint8_t> dirty_;      ///< per node: changed in the current re-evaluation pass
  std::vector<uint8_t> fast_;       ///< per node: its unsigned operation (unsigned_forward), set by bind()
  /// Per node, what rebind() reads to decide whether it must evaluate the node again: its operands
  /// (the first repeated for fewer than three), or `always` for a leaf or a select.
  struct Reads {
    uint32_t a = 0, b = 0, c = 0;
    uint32_t always = 1;
  };
  std::vector<Reads> reads_;
  std::vector<uint32_t> rebound_;  ///< per node: the rebind() (epoch_) that last changed its bounds
  uint32_t epoch_ = 0;
  /// The nodes rebind() visits for `visit_changed_` (those whose leaf_dependencies in `visit_deps_`
  /// meet it), ascending: a launch that changes the same inputs as the last one reuses the list.
  std::vector<uint32_t> visit_;
  uint64_t visit_changed_ = 0;
  const uint64_t* visit_deps_ = nullptr;
  size_t visit_size_ = 0;
  bool general_only_ = false;
  bool changed_ = false;
};

/// Every node the bounds of `targets` are computed from, the targets included, ascending: operands,
/// and the bounds of the loops whose variables they read (those placed before the variable; later
/// ones are not read, loop_bounds). Under a path condition, narrowing reaches only the path's cone
/// and re-evaluation changes a node only through its cone, so a node outside the cone of what is
/// read keeps bounds nobody reads. Ids past the node list are ignored.
std::vector<uint32_t> node_cone(const AccessFacts& facts, const std::vector<uint32_t>& targets);

/// The full range of a node's type.
constexpr Interval full_range(Type t) { return {type_min(t), type_max(t)}; }

/// The bit of a launch input in leaf_dependencies: the grid's and the block's components (0-2, 3-5),
/// the dynamic shared bytes (6) and scalar parameter p (7 + p % 57; parameters may share a bit).
constexpr uint64_t leaf_bit_grid(uint64_t component) { return uint64_t{1} << (component % 3); }
constexpr uint64_t leaf_bit_block(uint64_t component) { return uint64_t{1} << (3 + component % 3); }
constexpr uint64_t kLeafBitDynamicShared = uint64_t{1} << 6;
constexpr uint64_t leaf_bit_param(uint64_t p) { return uint64_t{1} << (7 + p % 57); }

/// Per node, the launch inputs its bounds (NodeBounds::base, and under() of the paths that read it)
/// depend on, as leaf_bit_* bits over everything the node is computed from (operands, and the
/// bounds of the loops whose variables it reads). Empty when a loop's bounds are nodes after its
/// variable (bounds then read nodes not yet evaluated: no node may be skipped).
std::vector<uint64_t> leaf_dependencies(const AccessFacts& facts);

}  // namespace ptxgate::ir
