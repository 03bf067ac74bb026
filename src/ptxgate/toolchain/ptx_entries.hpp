// Kernel entries of PTX from any compiler (nvcc, NVRTC, Triton, LLVM): each .entry's signature
// from its parameter list, its launch bounds and its static shared memory, so such a kernel
// launches through the same guarded path as ptxgate's own.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/ir/target.hpp"

namespace ptxgate::toolchain {

/// One kernel entry of a PTX module.
///
/// Parameters become `info.params`, named as in the PTX, in order:
/// - a 64-bit parameter (.u64/.b64/.s64) is a pointer (a buffer of unknown element type:
///   `ir::Type::void_`, access inout) when PTX says so: declared `.ptr` (LLVM, Triton), or, in
///   the entry's body, its loaded value is converted with `cvta.to.global` or used directly as
///   a global-memory address (nvcc and NVRTC declare pointers as plain .u64); otherwise it is
///   a 64-bit integer (.s64: i64, else u64);
/// - .f32/.f64 are f32/f64 scalars, .s32 is i32, .u32/.b32 are u32;
/// - anything else (8- and 16-bit values, .f16, .pred, arrays such as a struct passed by value
///   as `.align 8 .b8 s[24]`) makes the entry unlaunchable: `unsupported` holds a PG3007 for
///   each such parameter (a launch passes 4- and 8-byte values only), and `info.params` stops
///   before the first of them.
/// `.reqntid` becomes `info.required_block` (checked like @workgroup); `.maxntid` is
/// `max_block`. `info.static_shared_bytes` sums the entry body's static `.shared` arrays
/// (ptxas's report is the authority where it is available).
struct PtxEntry {
  contract::KernelInfo info;
  std::array<uint32_t, 3> max_block{0, 0, 0};  ///< .maxntid; all 0: none
  diag::Location location;                     ///< the entry's name in the PTX
  diag::Diagnostics unsupported;               ///< PG3007 per parameter a launch cannot pass; empty: launchable
  /// A cubin's own record of the kernel's resources (src/ptxgate/toolchain/cubin_entries.hpp); PTX has none
  /// (ptxas or the driver reports them).
  std::optional<contract::KernelResources> resources;
};

struct PtxModuleSummary {
  unsigned isa_major = 0, isa_minor = 0;  ///< `.version`
  std::string target;                     ///< the first `.target` item, e.g. "sm_90a"
  std::vector<PtxEntry> entries;          ///< in module order; declarations without a body are skipped
  std::string binary_arch;                ///< a cubin's architecture ("sm_90"); empty for PTX text
};

/// Reads the module directives and every `.entry`. PG1004 for text that is not PTX (no
/// `.version`/`.target`) or an entry that cannot be read, PG2006 when no entry has a body,
/// PG5001 for a cubin or fatbin (binary input).
[[nodiscard]] std::expected<PtxModuleSummary, diag::Diagnostics> read_ptx_entries(const diag::SourceFile& ptx);

/// Only the module directives of PTX text (`.version`, the first `.target` item), read as
/// read_ptx_entries reads them, with no entries: what the build and the module cache need of
/// ptxgate's own PTX. PG1004 when either is missing or malformed, PG5001 for binary input.
[[nodiscard]] std::expected<PtxModuleSummary, diag::Diagnostics> read_ptx_header(const diag::SourceFile& ptx);

/// The entry named `name` when it is launchable: PG2006 listing the module's entries when there
/// is none, its PG3007 diagnostics when a parameter cannot be passed.
[[nodiscard]] std::expected<const PtxEntry*, diag::Diagnostics> require_ptx_entry(const PtxModuleSummary& module,
                                                                                  std::string_view name,
                                                                                  const std::string& path);

/// PG2001 when PTX for `ptx_target` ("sm_90a") cannot run on a device of architecture `arch`
/// ("sm_80"): a newer target, or an architecture-specific (`a`/`f`) target of another device.
[[nodiscard]] std::expected<void, diag::Diagnostics> check_ptx_target(std::string_view ptx_target, std::string_view arch,
                                                                      const diag::Location& where = {});

/// Whether `text` starts like a cubin (ELF) or a fatbin rather than PTX text.
bool is_binary_module(std::string_view text);

/// What a module's bytes are, decided by reading them, not by their name or by words inside.
enum class ModuleFormat { ir, ptx, cubin, fatbin };

/// A cubin (an ELF header), a fatbin (its magic number), PTX (its first token after white space
/// and comments is the `.version` directive, which the PTX ISA requires to open every module), or
/// else ptxgate IR text (`.pg`, which never starts with a directive).
ModuleFormat module_format(std::string_view bytes);

}  // namespace ptxgate::toolchain
