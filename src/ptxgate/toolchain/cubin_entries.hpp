// Kernel entries of a cubin (the ELF that ptxas, nvcc -cubin, NVRTC's nvrtcGetCUBIN or Triton
// write): each kernel's parameter sizes, launch bounds and the resources ptxas recorded in it, so
// a kernel of which only the binary is at hand launches through the same guarded path, and the
// offline check needs no ptxas for it.
#pragma once

#include <expected>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/toolchain/ptx_entries.hpp"

namespace ptxgate::toolchain {

/// Reads a cubin: a little-endian ELF64 for EM_CUDA (190), in either CUDA ELF ABI (7: the
/// architecture in the low byte of e_flags; 8: in the second byte).
///
/// The result is a PtxModuleSummary with `binary_arch` set to the cubin's architecture ("sm_90")
/// and, per kernel (a function symbol marked as an entry), `resources` from the cubin's own
/// records: registers (EIATTR_REGCOUNT), stack frame (EIATTR_FRAME_SIZE), named barriers,
/// static shared memory (the kernel's `.nv.shared.` section less the 1 KiB that sm_90 and newer
/// cubins reserve at its start), `cmem[0]` bytes, and the thread limit from `.reqntid` /
/// `.maxntid` (EIATTR_REQNTID, EIATTR_MAX_THREADS), which also fill `info.required_block` and
/// `max_block`.
///
/// A cubin records each parameter's size and offset (EIATTR_KPARAM_INFO) but not its type, and
/// has no parameter names: parameter k is named `param<k>`; an 8-byte parameter is taken as a
/// pointer (a buffer of any element type, inout), a 4-byte one as a u32 scalar (the offline check
/// compares widths only; a runtime launch binds an integer to it, a float needs the signature);
/// any other size makes the entry unlaunchable (PG3007), as for PTX.
/// `apply_signature` states the real types where they matter.
///
/// PG5001 when the bytes are not such an ELF or a table in it lies outside the file; PG2006
/// when it holds no kernel.
[[nodiscard]] std::expected<PtxModuleSummary, diag::Diagnostics> read_cubin_entries(const diag::SourceFile& cubin);

/// A module of either kind: a cubin (read_cubin_entries), PTX text (read_ptx_entries), or PG5001
/// for a fatbin, naming how to take the cubin out of it.
[[nodiscard]] std::expected<PtxModuleSummary, diag::Diagnostics> read_kernel_entries(const diag::SourceFile& module);

/// Restates an entry's parameter types with a signature in the IR's spelling, one item per
/// parameter, comma-separated: a scalar type (`f32`, `i64`, ...) or a buffer `T[]` (`f32[]`,
/// `u8[]`; `[]` alone: any element type). Each item must have the parameter's size (8 bytes for a
/// buffer): PG3007 otherwise, PG1004 for an item that is not a type, PG3005 for a count
/// that differs from the entry's.
[[nodiscard]] std::expected<void, diag::Diagnostics> apply_signature(PtxEntry& entry, std::string_view signature);

/// One entry of another compiler's module chosen for a device: what the runtime loads and the
/// offline check describes.
struct ForeignEntry {
  PtxEntry entry;            ///< its types restated by the signature, when one was given
  std::string target;        ///< the PTX `.target`, or the cubin's architecture
  bool cubin = false;
  unsigned isa_version = 0;  ///< PTX `.version` as major * 10 + minor; 0 for a cubin
};

/// read_kernel_entries, require_ptx_entry (PG2006, PG3007), apply_signature when `signature` is
/// not empty, then check_cubin_target or check_ptx_target against `arch` (PG2001).
[[nodiscard]] std::expected<ForeignEntry, diag::Diagnostics> select_foreign_entry(const diag::SourceFile& module,
                                                                                  std::string_view kernel,
                                                                                  std::string_view arch,
                                                                                  std::string_view signature);

/// PG2001 when a cubin of `cubin_arch` ("sm_80") cannot run on a device of `arch` ("sm_86"): a
/// cubin runs on its own major architecture at the same or a newer minor version only.
[[nodiscard]] std::expected<void, diag::Diagnostics> check_cubin_target(std::string_view cubin_arch, std::string_view arch,
                                                                        const diag::Location& where = {});

}  // namespace ptxgate::toolchain
