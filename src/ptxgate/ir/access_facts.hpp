// Access facts: every memory access of a kernel, its index and the condition under which it runs,
// as symbolic expressions of the launch (threads, blocks, scalar arguments, loop variables).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/ir/types.hpp"

namespace ptxgate::ir {

/// What one node of a kernel's symbolic expressions computes. Leaves name a value of the launch;
/// the other nodes apply the IR's integer semantics (docs/ir.md "Results of every operation") to
/// their operands, so evaluating a node with concrete leaves gives exactly what the thread computes.
enum class SymOp : uint8_t {
  constant,              ///< `value`: the bits of the node's type, zero-extended
  param,                 ///< scalar parameter number `value` (its position in the signature)
  thread_id, block_id, block_dim, grid_dim,  ///< component `value` (0 x, 1 y, 2 z), u32
  dynamic_shared_bytes,  ///< the launch's dynamic shared memory in bytes (u64)
  loop,                  ///< the variable of loop `value` (AccessFacts::loops) when an iteration starts
  opaque,                ///< a value the analysis does not follow: a load, a shuffle, an atomic, a float
  add, sub, mul, div, rem, shl, shr, bit_and, bit_or, bit_xor, min, max,  ///< operands a, b
  neg, bit_not,          ///< operand a
  eq, ne, lt, le, gt, ge,  ///< bool from two operands of one integer type
  logical_and, logical_or, logical_not,  ///< bool
  cast,                  ///< operand a converted to the node's type (integers and bool)
  select,                ///< a ? b : c
};
std::string_view sym_op_name(SymOp op);

/// One node. Operands always have smaller ids than the node (the list is in topological order).
struct SymNode {
  SymOp op = SymOp::constant;
  Type type = Type::u32;  ///< an integer type or bool
  uint32_t a = 0, b = 0, c = 0;   ///< operand ids
  uint64_t value = 0;             ///< constant bits, parameter number, component or loop number
  bool operator==(const SymNode&) const = default;
};

/// A loop whose variable a node names.
struct LoopFact {
  enum class Kind : uint8_t {
    /// `for v in lo..hi step s`: v takes lo, lo + s, ... while below hi (never wrapping).
    range,
    /// `var v = init; while (v + offset < bound) { ...; v = v + step; }` (or `<=` when
    /// `inclusive`), offset, bound and step loop-invariant: one unconditional increment by a
    /// non-negative step per iteration.
    induction,
    /// A variable (unsigned) every assignment in the loop makes no larger (v / C, v >> E, v & E,
    /// v % E, min(v, E)): between 0 and its value before the loop (`lo`); `parent` is the loop
    /// that carries it (-1: a loop the facts do not model). Not a loop of its own.
    shrinking,
  };
  Kind kind = Kind::range;
  uint32_t variable = 0;      ///< its SymOp::loop node
  uint32_t lo = 0;            ///< range: the first value; induction: the initial value
  uint32_t hi = 0;            ///< range: the end (exclusive); induction: the bound
  uint32_t step = 0;          ///< the step (range: taken as unsigned; 0 ends after one iteration)
  uint32_t offset = 0;        ///< induction: the node of the amount added to v in the condition (>= 0)
  bool inclusive = false;     ///< induction: the condition is `<=`
  int32_t parent = -1;        ///< the enclosing loop, -1 for none
  std::string name;           ///< the variable's name, for messages
  /// The body may leave the loop early (break, return) or skip the increment: only the first
  /// iteration serves as a concrete witness.
  bool exits_early = false;
};

/// Where an accessed array lives.
enum class Space : uint8_t { global, shared, local };
std::string_view space_name(Space s);

/// What an access does.
enum class AccessKind : uint8_t { read, write, atomic };
std::string_view access_kind_name(AccessKind k);

/// A shared or local array the kernel declares.
struct ArrayFact {
  std::string name;
  Space space = Space::shared;
  uint32_t element_bytes = 4;
  uint64_t elements = 0;      ///< 0 for the dynamic shared array (sized by the launch)
  bool dynamic = false;
};

/// One access in the kernel (an access in a device function appears once per call of it).
/// It touches bytes [stride * i, stride * i + width) of its array, `i` the index's value as a
/// mathematical integer of the index's type.
struct AccessSite {
  /// The access as written: its number in the module's AccessSiteTable (src/ptxgate/ir/access_sites.hpp), the
  /// same for every call of a device function; UINT32_MAX when not known.
  uint32_t source = UINT32_MAX;
  AccessKind kind = AccessKind::read;
  Space space = Space::global;
  uint32_t array = 0;          ///< global: the buffer parameter's number; else AccessFacts::arrays
  uint32_t index = 0;          ///< node of the index
  uint32_t element_bytes = 4;  ///< the array's element size
  uint32_t stride = 4;         ///< bytes per index unit (element, vector or chunk)
  uint32_t width = 4;          ///< bytes touched from stride * i
  /// A u32 node limiting the bytes touched to min(its value, width), none when it is 0
  /// (cp_async's `src_bytes`); -1: always `width`.
  int32_t width_limit = -1;
  uint32_t path = 0;           ///< bool node: the access runs when it is true
  int32_t loop = -1;           ///< the innermost enclosing loop, -1 for none
  /// False when code on the way to it may not finish (a loop the analysis cannot bound): a
  /// concrete thread that satisfies `path` then proves nothing.
  bool witness_exact = true;
  /// Accesses with the same epoch have no barrier between them in program order (barrier(),
  /// grid_sync() and the mbarrier and wgmma waits end an epoch): the shared-memory race check pairs
  /// those of one block.
  uint32_t epoch = 0;
  /// Writes: the node of the value written when it is an integer (two writes of the same value are
  /// no race), -1 otherwise.
  int32_t value = -1;
  std::string operation;       ///< what the source calls it: "y[i]", "load4(x, j)", "atomic_add(h, b, 1)"
  std::string index_text;      ///< the index as written
  uint32_t line = 0, column = 0, length = 1;  ///< 1-based, in the kernel's source; 0: no position
  std::string source_line;     ///< the line's text, for the excerpt
};

/// Every access of a kernel, the symbolic expressions they need, and the loops they are in.
struct AccessFacts {
  std::vector<SymNode> nodes;
  std::vector<LoopFact> loops;
  std::vector<ArrayFact> arrays;
  std::vector<AccessSite> sites;
  /// Accesses the analysis does not model (e.g. wgmma descriptors, TMA tiles): never proven.
  uint32_t unmodelled = 0;
  /// False when the analysis stopped at its size limit: the sites listed are sound, the rest unmodelled.
  bool complete = true;
};

/// By node: whether a launch's evaluation reads it: the sites' indices, paths, byte limits and
/// written values, every loop's variable and bounds, and what those are computed from.
std::vector<bool> read_nodes(const AccessFacts& facts);

/// Drops the nodes read_nodes leaves unmarked (values the analysis built that nothing reads, such
/// as an integer a kernel converts to the float it stores), renumbering the others in order and
/// every reference to them: the same verdicts, from fewer nodes.
void drop_unread_nodes(AccessFacts& facts);

/// The scalar parameters whose value the facts read (scalars that indices, paths or loop bounds use),
/// by number, ascending, each once: a launch's memory-safety verdict depends on exactly these
/// arguments' values (the launch cache keys them, and so does the kernel's memo of node bounds).
std::vector<uint32_t> parameters_read(const AccessFacts& facts);
/// parameters_read as one flag for each of `count` parameters.
std::vector<bool> parameters_used(const AccessFacts& facts, size_t count);

nlohmann::json to_json(const AccessFacts& facts);
/// Checks every id and enum (cached metadata is input: a forged or stale entry is an error, never a crash).
[[nodiscard]] std::expected<AccessFacts, std::string> access_facts_from_json(const nlohmann::json& j);

}  // namespace ptxgate::ir
