// LaunchPlan and KernelResources: the launch being asked for, and what the compiled kernel consumes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "ptxgate/ir/types.hpp"

namespace ptxgate::contract {

/// What is known about one argument slot at validation time.
struct ArgumentDesc {
  /// tensor_map (Hopper): a 128-byte TMA descriptor passed by value to a `tensor_map` parameter.
  enum class Kind : uint8_t { buffer, scalar, tensor_map };
  Kind kind = Kind::scalar;
  uint32_t size_bytes = 0;             ///< width of the by-value slot (8 for a device pointer)
  bool slot_is_null = false;           ///< the void* in the argument table is null
  bool pointer_is_null = false;        ///< buffer whose device pointer is 0
  std::optional<ir::Type> scalar_type; ///< scalar's type when known
  std::optional<uint64_t> buffer_bytes;///< allocation size of a buffer when known
  std::optional<uint64_t> address;     ///< a buffer's device address when known (alignment, PG3011)
  /// A scalar's value as the bits of its type, zero-extended, when known: the memory-safety
  /// check evaluates the kernel's indices with it.
  std::optional<uint64_t> scalar_bits;
};

enum class StreamPolicy : uint8_t {
  allow_legacy_default,  ///< a null stream (the legacy default stream) is accepted
  require_explicit,      ///< a null stream is an error
};

struct LaunchPlan {
  std::array<uint64_t, 3> grid{1, 1, 1};
  /// The block. All 0 and `block_given` false: the kernel's @workgroup, else kDefaultBlock
  /// (validation::effective_block, check.hpp).
  std::array<uint64_t, 3> block{0, 0, 0};
  /// The caller asked for `block` explicitly: all 0 is then a zero block (PG3101), not "default".
  bool block_given = false;
  uint64_t dynamic_shared_bytes = 0;
  bool cooperative = false;
  /// Arguments as supplied; when empty and `arguments_known` is false, argument
  /// checks are skipped (offline `ptxgate check` with no --arg).
  std::vector<ArgumentDesc> arguments;
  bool arguments_known = false;
  StreamPolicy stream_policy = StreamPolicy::allow_legacy_default;
  bool stream_is_null = false;
  bool function_is_null = false;            ///< online only: the CUfunction handle
  /// Elements each buffer parameter must hold, by parameter index, when the
  /// caller knows them (e.g. from a scalar `n`); checked against buffer_bytes.
  std::vector<std::pair<uint32_t, uint64_t>> required_elements;
  /// Memory safety: accesses not proven in bounds for this launch are errors (PG3802) instead
  /// of notes, and an unanalysable (foreign) kernel is blocked.
  bool require_memory_proof = false;
  /// Memory safety: list the accesses not proven as notes (PG3802), as `check -v` does.
  bool list_unproven_accesses = false;
};

/// Resources the compiled kernel uses (from ptxas offline, cuFuncGetAttribute online).
struct KernelResources {
  uint32_t registers_per_thread = 0;
  uint64_t static_shared_bytes = 0;
  uint64_t local_bytes = 0;             ///< per-thread local memory (spills + stack)
  uint32_t max_threads_per_block = 1024;///< the function's limit (launch bounds, registers)
  uint32_t barriers = 0;                ///< named barriers used (ptxas "used N barriers")
  uint64_t spill_store_bytes = 0;       ///< ptxas "N bytes spill stores" (offline only)
  uint64_t spill_load_bytes = 0;        ///< ptxas "N bytes spill loads" (offline only)
  uint64_t constant_bytes = 0;          ///< ptxas "N bytes cmem[0]" (0 where ptxas omits it)
};

}  // namespace ptxgate::contract
