// KernelInfo: what a launch needs to know about a compiled kernel (signature, block size, shared memory).
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/contract/checked.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/types.hpp"

namespace ptxgate::contract {

/// One kernel parameter as the launch sees it, in signature order.
struct ParamInfo {
  std::string name;
  uint32_t index = 0;
  bool is_buffer = false;
  ir::Access access = ir::Access::inout;  ///< buffers only
  ir::Type type = ir::Type::f32;          ///< element type (buffer) or value type (scalar)
  uint32_t size_bytes = 0;                ///< bytes of the by-value slot: 8 for buffers, 4/8 for scalars
  /// Buffers: the alignment in bytes its base address needs, from the kernel's widest vector
  /// access of it (load4 of f32 needs 16); 0 when the kernel makes none (element alignment is
  /// then enough). The launch check rejects a misaligned base (PG3011).
  uint32_t alignment = 0;
  /// Scalars: the kernel's access facts use the argument's value (an index, a guard or a loop
  /// bound depends on it), so a launch's memory-safety verdict, and any verdict cached for a
  /// launch shape, depends on it. Derived from KernelInfo::access.
  bool value_in_access_proof = false;
};

struct KernelInfo {
  std::string name;                                   ///< PTX entry name
  std::vector<ParamInfo> params;                      ///< user-visible parameters
  std::array<uint32_t, 3> required_block{0, 0, 0};    ///< from @workgroup; all 0 = any
  uint64_t static_shared_bytes = 0;
  bool cooperative = false;                           ///< declared @cooperative
  bool uses_grid_sync = false;
  /// The number of threads every block must be a whole multiple of (src/ptxgate/ir/block_granule.hpp): 128
  /// for warpgroup operations (wgmma, setmaxnreg), 32 for warp-wide ones (shuffles, votes, warp
  /// reductions, mma, ldmatrix, through device functions too), else 1. The verifier records it
  /// (foreign PTX: read from its instructions); check_launch holds every launch to it, with or
  /// without @workgroup (PG1320, PG1358).
  uint32_t block_granule = 1;
  /// Thread block clusters (sm_90 and newer): the cluster shape the kernel requires (PTX
  /// `.reqnctapercluster`, nvcc's `__cluster_dims__`, a cubin's cluster attribute); all 0: none.
  /// A launch's grid must be a whole number of clusters on every axis (PG3107).
  std::array<uint32_t, 3> cluster_dims{0, 0, 0};
  /// `.explicitcluster` with no shape: the cluster is chosen at launch, which ptxgate's launches
  /// do not do yet, so no launch of it is accepted (PG3107).
  bool explicit_cluster = false;
  /// Element size in bytes of the kernel's dynamic shared array (`shared NAME: T[];`), 0 when
  /// it has none. Such a kernel needs dynamic shared bytes > 0, a multiple of this size.
  uint32_t dynamic_shared_element_bytes = 0;
  /// When true the PTX entry has one extra trailing parameter, a pointer to a
  /// 4-byte device word holding grid-barrier state, supplied by the backend.
  bool hidden_grid_barrier_param = false;
  /// Made by another compiler (PTX or a cubin, toolchain/ptx_entries, cubin_entries): its
  /// required block is a `.reqntid`, not a `@workgroup`, and diagnostics say so.
  bool foreign = false;
  /// Every memory access of the kernel as symbolic expressions of the launch (the verifier's
  /// access analysis); the launch check proves each launch's accesses with them. Null for
  /// another compiler's kernel (nothing to analyse).
  std::shared_ptr<const ir::AccessFacts> access;
  /// Compiled in checked mode (codegen::CodegenOptions::checked): the sites it guards and its
  /// hidden parameters (src/ptxgate/contract/checked.hpp); null otherwise.
  std::shared_ptr<const CheckedInfo> checked;

  bool has_required_block() const { return required_block[0] != 0; }
  /// Buffer parameters: a checked kernel takes one hidden length per buffer.
  size_t buffer_count() const {
    size_t n = 0;
    for (const auto& p : params) n += p.is_buffer;
    return n;
  }
  bool has_cluster_dims() const { return cluster_dims[0] != 0; }
  /// Whether some buffer parameter needs a base alignment (a vector access): launches check it.
  bool needs_buffer_alignment() const {
    for (const auto& p : params)
      if (p.alignment > 1) return true;
    return false;
  }
};

/// Sets `access` and, from it, each parameter's value_in_access_proof.
void attach_access_facts(KernelInfo& info, std::shared_ptr<const ir::AccessFacts> facts);

nlohmann::json to_json(const KernelInfo& info);
/// What `emit --emit meta` and the C API show of a kernel: to_json, with the access facts summed up
/// for a reader (whether the analysis is complete, and per access its operation, kind, space, line
/// and column) instead of their symbolic expressions, which only the module cache needs.
nlohmann::json to_meta_json(const KernelInfo& info);
[[nodiscard]] std::expected<KernelInfo, std::string> kernel_info_from_json(const nlohmann::json& j);

}  // namespace ptxgate::contract
