// The concrete evaluation of symbolic nodes (ir::apply_sym_op in 64-bit arithmetic) against the IR's
// integer semantics written out in mathematical integers, operation by operation at edge values and
// over every node of every shipped kernel at many random launches and threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <string>

#include "shipped_memory_launch.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_eval.hpp"

using namespace ptxgate;

namespace {

using ir::Integer;
using ir::SymOp;
using ir::Type;

/// docs/ir.md "Results of every operation" on the operands' mathematical values (128 bits): the
/// reference the 64-bit evaluation must equal bit for bit.
std::optional<uint64_t> reference(SymOp op, Type type, Type operand, uint64_t a, uint64_t b, uint64_t c) {
  const Integer x = ir::value_of(operand, a), y = ir::value_of(operand, b);
  const unsigned w = ir::sym_width(operand);
  auto wrap = [&](Integer v) { return ir::bits_of(type, v); };
  const uint64_t mask = ir::sym_mask(type);
  switch (op) {
    case SymOp::add: return wrap(x + y);
    case SymOp::sub: return wrap(x - y);
    case SymOp::mul: return wrap(ir::value_of(type, (a & ir::sym_mask(operand)) * (b & ir::sym_mask(operand))));
    case SymOp::div: return y == 0 ? mask : y == -1 ? wrap(-x) : wrap(x / y);
    case SymOp::rem: return y == 0 ? wrap(x) : y == -1 ? 0 : wrap(x % y);
    case SymOp::shl: return wrap(x << (b & (w - 1)));
    case SymOp::shr: return wrap(x >> (b & (w - 1)));
    case SymOp::bit_and: return (a & b) & mask;
    case SymOp::bit_or: return (a | b) & mask;
    case SymOp::bit_xor: return (a ^ b) & mask;
    case SymOp::min: return wrap(x < y ? x : y);
    case SymOp::max: return wrap(x > y ? x : y);
    case SymOp::neg: return wrap(-x);
    case SymOp::bit_not: return ~a & mask;
    case SymOp::eq: return x == y;
    case SymOp::ne: return x != y;
    case SymOp::lt: return x < y;
    case SymOp::le: return x <= y;
    case SymOp::gt: return x > y;
    case SymOp::ge: return x >= y;
    case SymOp::logical_and: return (a & 1) && (b & 1);
    case SymOp::logical_or: return (a & 1) || (b & 1);
    case SymOp::logical_not: return !(a & 1);
    case SymOp::cast: return wrap(x);
    case SymOp::select: return (a & 1) ? b : c;
    default: return std::nullopt;
  }
}

constexpr std::array kIntegerTypes{Type::bool_, Type::i8, Type::u8, Type::i16, Type::u16,
                                   Type::i32,   Type::u32, Type::i64, Type::u64};

/// Bits at the edges of every width (0, 1, all ones, the sign bit and its neighbours) or random.
uint64_t edge_bits(std::mt19937_64& rng) {
  const unsigned w = std::array{1u, 8u, 16u, 32u, 64u}[rng() % 5];
  const uint64_t sign = uint64_t{1} << (w - 1);
  switch (rng() % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return ~uint64_t{0};
    case 3: return sign;
    case 4: return sign - 1;
    case 5: return sign + 1;
    case 6: return rng() % 64;
    default: return rng();
  }
}

/// Nodes of `facts` where the concrete evaluation (ir::ConcreteNodes, through apply_sym_op) and the
/// reference differ, for `threads` random threads of `launch`, each loop at its first or last pass.
int concrete_mismatches(const ir::AccessFacts& facts, const validation::MemoryLaunch& launch, std::mt19937& rng,
                        int threads) {
  ir::ConcreteNodes eval(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits);
  std::vector<std::optional<uint64_t>> mine(facts.nodes.size());
  int mismatches = 0;
  for (int t = 0; t < threads; ++t) {
    std::array<uint64_t, 6> at{};
    for (unsigned c = 0; c < 3; ++c) {
      at[c] = rng() % std::max<uint64_t>(launch.block[c], 1);
      at[3 + c] = rng() % std::max<uint64_t>(launch.grid[c], 1);
    }
    eval.reset(at);
    for (uint32_t l = 0; l < facts.loops.size(); ++l) eval.enter_loop(l, rng() % 2 == 1);
    for (uint32_t id = 0; id < facts.nodes.size(); ++id) mine[id] = eval.value(id);
    for (uint32_t id = 0; id < facts.nodes.size(); ++id) {
      const ir::SymNode& n = facts.nodes[id];
      const unsigned count = ir::sym_operand_count(n.op);
      if (count == 0) continue;
      std::optional<uint64_t> a = mine[n.a], b = count > 1 ? mine[n.b] : uint64_t{0}, c = count > 2 ? mine[n.c] : uint64_t{0};
      std::optional<uint64_t> expected;
      if (n.op == SymOp::logical_and && ((a && !(*a & 1)) || (b && !(*b & 1)))) expected = 0;
      else if (n.op == SymOp::logical_or && ((a && (*a & 1)) || (b && (*b & 1)))) expected = 1;
      else if (n.op == SymOp::select && a) expected = (*a & 1) ? b : c;
      else if (a && b && c) expected = reference(n.op, n.type, facts.nodes[n.a].type, *a, *b, *c);
      mismatches += expected != mine[id];
    }
  }
  return mismatches;
}

}  // namespace

TEST_CASE("concrete evaluation: every operation of every integer type equals the mathematical definition") {
  std::mt19937_64 rng(2718);
  int compared = 0;
  for (int op = static_cast<int>(SymOp::add); op <= static_cast<int>(SymOp::select); ++op)
    for (Type operand : kIntegerTypes)
      for (Type type : kIntegerTypes) {
        for (int k = 0; k < 64; ++k) {
          const uint64_t a = edge_bits(rng), b = edge_bits(rng), c = edge_bits(rng);
          const auto fast = ir::apply_sym_op(static_cast<SymOp>(op), type, operand, a, b, c);
          const auto slow = reference(static_cast<SymOp>(op), type, operand, a, b, c);
          CAPTURE(op);
          CAPTURE(static_cast<int>(type));
          CAPTURE(static_cast<int>(operand));
          CAPTURE(a);
          CAPTURE(b);
          REQUIRE(fast == slow);
          ++compared;
        }
      }
  CHECK(compared > 100000);
}

TEST_CASE("concrete evaluation: every node of every shipped kernel at random launches equals the definition") {
  std::mt19937 rng(1618);
  int launches = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    for (int step = 0; step < 16; ++step) {
      const validation::MemoryLaunch launch = step == 0 ? documented : testing::varied(documented, rng);
      CHECK(concrete_mismatches(*k.access_facts, launch, rng, 16) == 0);
      ++launches;
    }
  });
  CHECK(launches > 400);
}

TEST_CASE("concrete evaluation: the unsigned operations' 64-bit form gives apply_sym_op's bits") {
  // unsigned_operation picks the nodes the bounds and the envelope's cone evaluate through
  // apply_unsigned_op: for every such node of random operand types, its bits must be apply_sym_op's
  // on any operand bits (wider than their types too: scalars arrive as 64 bits).
  std::mt19937_64 rng(3141);
  const Type types[] = {Type::bool_, Type::u8, Type::u16, Type::u32, Type::u64, Type::i32, Type::i64};
  int compared = 0, unsigned_nodes = 0;
  for (int op = static_cast<int>(SymOp::add); op <= static_cast<int>(SymOp::select); ++op)
    for (Type result : types)
      for (Type first : types)
        for (Type second : types) {
          ir::AccessFacts facts;
          facts.nodes = {{SymOp::param, first, 0, 0, 0, 0},
                         {SymOp::param, second, 0, 0, 0, 1},
                         {SymOp::param, second, 0, 0, 0, 2},
                         {static_cast<SymOp>(op), result, 0, 1, 2, 0}};
          const ir::UnsignedOp u = ir::unsigned_operation(facts.nodes, 3);
          if (u == ir::UnsignedOp::none) continue;
          ++unsigned_nodes;
          for (int k = 0; k < 64; ++k) {
            const uint64_t a = edge_bits(rng), b = edge_bits(rng), c = edge_bits(rng);
            CAPTURE(op);
            CAPTURE(static_cast<int>(result));
            CAPTURE(static_cast<int>(first));
            CAPTURE(a);
            CAPTURE(b);
            const auto general = ir::apply_sym_op(static_cast<SymOp>(op), result, first, a, b, c);
            REQUIRE(general);
            REQUIRE(ir::apply_unsigned_op(u, result, first, a, b, c) == *general);
            ++compared;
          }
        }
  // Every operation of the list has unsigned forms (add .. bit_and, six comparisons, && || !, cast,
  // select), and none of shl, shr, or, xor, neg, bit_not.
  CHECK(unsigned_nodes > 100);
  CHECK(compared > 6400);
  ir::AccessFacts shift;
  shift.nodes = {{SymOp::param, Type::u32, 0, 0, 0, 0}, {SymOp::shl, Type::u32, 0, 0, 0, 0}};
  CHECK(ir::unsigned_operation(shift.nodes, 1) == ir::UnsignedOp::none);
}
