// Fuzz target: any bytes as a PTX file -> read_ptx_entries (the reader behind `ptxgate check
// kernel.ptx` and foreign-PTX launches). Invariants: a failure always says why (PG1004 malformed,
// PG2006 no entry, PG5001 binary input); a success has entries, each with a name, 4/8-byte parameters indexed in order,
// an entry with an unsupported parameter is refused by require_ptx_entry,
// pointers of unknown element type, and launch bounds within 1..1024 per axis.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptxgate/toolchain/ptx_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate;
  diag::SourceFile file("fuzz.ptx", std::string(reinterpret_cast<const char*>(data), size));
  auto m = toolchain::read_ptx_entries(file);
  if (!m) {
    if (m.error().empty()) __builtin_trap();
    for (const auto& d : m.error())
      if (d.code != diag::Code::expected_token && d.code != diag::Code::kernel_not_found &&
          d.code != diag::Code::cannot_read_file)
        __builtin_trap();
    return 0;
  }
  if (m->entries.empty() || m->target.empty()) __builtin_trap();
  for (const auto& e : m->entries) {
    if (e.info.name.empty()) __builtin_trap();
    auto found = toolchain::require_ptx_entry(*m, e.info.name, "fuzz.ptx");
    if (found && !(*found)->unsupported.empty()) __builtin_trap();  // an unlaunchable entry is never handed out
    for (size_t i = 0; i < e.info.params.size(); ++i) {
      const auto& p = e.info.params[i];
      if (p.index != i || (p.size_bytes != 4 && p.size_bytes != 8)) __builtin_trap();
      if (p.is_buffer && (p.size_bytes != 8 || p.type != ir::Type::void_)) __builtin_trap();
    }
    for (uint32_t d : e.max_block)
      if (d > 1024) __builtin_trap();
    for (uint32_t d : e.info.required_block)
      if (d > 1024) __builtin_trap();
    (void)toolchain::check_ptx_target(m->target, "sm_90");
  }
  return 0;
}
