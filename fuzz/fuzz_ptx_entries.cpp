// Fuzz target: any bytes as a foreign module -> read_kernel_entries, which reads PTX text
// (read_ptx_entries) or a cubin (read_cubin_entries): the readers behind `ptxgate check kernel.ptx`,
// `check kernel.cubin` and foreign launches; the seeds hold PTX and cubins. Invariants: a failure
// always says why (PG1004 malformed, PG2006 no entry, PG5001 unreadable binary); a success has
// PTX's target or a cubin's architecture and entries, each with a name, 4/8-byte parameters (or 128-byte
// tensor maps, and nothing else of 128 bytes) indexed in order,
// an entry with an unsupported parameter is refused by require_ptx_entry,
// pointers of unknown element type, launch bounds and cluster shapes within 1..1024 per axis, a block
// granule of 1, 32 or 128, and a cubin's stack, static shared memory and barriers within device limits.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptxgate/ir/limits.hpp"
#include "ptxgate/toolchain/cubin_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate;
  diag::SourceFile file("fuzz.ptx", std::string(reinterpret_cast<const char*>(data), size));
  auto m = toolchain::read_kernel_entries(file);
  if (!m) {
    if (m.error().empty()) __builtin_trap();
    for (const auto& d : m.error())
      if (d.code != diag::Code::expected_token && d.code != diag::Code::kernel_not_found &&
          d.code != diag::Code::cannot_read_file)
        __builtin_trap();
    return 0;
  }
  const bool cubin = !m->binary_arch.empty();
  if (m->entries.empty() || m->target.empty() == !cubin) __builtin_trap();
  for (const auto& e : m->entries) {
    if (e.info.name.empty()) __builtin_trap();
    auto found = toolchain::require_ptx_entry(*m, e.info.name, "fuzz.ptx");
    if (found && !(*found)->unsupported.empty()) __builtin_trap();  // an unlaunchable entry is never handed out
    for (size_t i = 0; i < e.info.params.size(); ++i) {
      const auto& p = e.info.params[i];
      const bool map = p.type == ir::Type::tensor_map;
      if (p.index != i || map != (p.size_bytes == 128) || (!map && p.size_bytes != 4 && p.size_bytes != 8) ||
          (map && p.is_buffer))
        __builtin_trap();
      if (p.is_buffer && (p.size_bytes != 8 || p.type != ir::Type::void_)) __builtin_trap();
    }
    for (uint32_t d : e.max_block)
      if (d > 1024) __builtin_trap();
    for (uint32_t d : e.info.required_block)
      if (d > 1024) __builtin_trap();
    // A cluster shape is whole (every axis 1..1024) or absent; the block granule is 1, 32 or 128.
    const auto& c = e.info.cluster_dims;
    if (e.info.has_cluster_dims() && (c[1] == 0 || c[2] == 0 || c[0] > 1024 || c[1] > 1024 || c[2] > 1024))
      __builtin_trap();
    if (!e.info.has_cluster_dims() && (c[1] != 0 || c[2] != 0)) __builtin_trap();
    if (e.info.block_granule != 1 && e.info.block_granule != 32 && e.info.block_granule != 128) __builtin_trap();
    // A cubin's records are within every device's limits (a forged one is refused, PG5001).
    if (cubin && (e.resources->local_bytes > ir::device::kMaxLocalBytesPerThread ||
                  e.resources->static_shared_bytes > ir::device::kMaxStaticSharedBytes ||
                  e.resources->barriers > ir::device::kMaxNamedBarriers))
      __builtin_trap();
    if (cubin != e.resources.has_value()) __builtin_trap();  // a cubin's own resources, PTX has none
    if (cubin && (e.resources->max_threads_per_block < 1 || e.resources->max_threads_per_block > 1024)) __builtin_trap();
    if (cubin)
      (void)toolchain::check_cubin_target(m->binary_arch, "sm_90");
    else
      (void)toolchain::check_ptx_target(m->target, "sm_90");
  }
  return 0;
}
