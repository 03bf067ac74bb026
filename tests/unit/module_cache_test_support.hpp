// Shared helpers of the module cache unit tests: scratch directories and sample entries.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/support/temp_dir.hpp"

namespace ptxgate::module_cache::testing {

/// A fresh scratch directory under the system temporary directory.
inline support::TempDir scratch_dir() {
  auto dir = support::TempDir::create(std::filesystem::temp_directory_path(), "ptxgate-cache-test-");
  if (!dir) throw std::runtime_error(dir.error());
  return std::move(*dir);
}

/// A realistic entry; `marker` is written into every payload so a mixed entry is detectable.
inline CacheEntry sample_entry(const std::string& arch = "sm_90", const std::string& marker = "A") {
  CacheEntry e;
  e.target_arch = arch;
  e.ptx_isa_version = 80;
  e.ptx = "//\n// writer " + marker + "\n//\n.version 8.0\n.target " + arch +
          "\n.address_size 64\n\n.visible .entry saxpy(\n\t.param .u64 saxpy_param_0\n)\n{\n\tret;\n}\n";
  e.cubin = std::string("\x7f" "ELF") + std::string(5, '\0') + "cubin-of-" + marker + std::string(300, '\x5a');
  contract::KernelInfo k;
  k.name = "saxpy";
  k.params.push_back({"y", 0, true, ir::Access::inout, ir::Type::f32, 8});
  k.params.push_back({"a", 1, false, ir::Access::inout, ir::Type::f32, 4});
  k.required_block = {256, 1, 1};
  e.kernels.push_back(k);
  e.resources = {{"saxpy", {{"registers_per_thread", 10}, {"writer", marker}}}};
  return e;
}

/// The marker a sample entry was built with, read back from its PTX, cubin and resources;
/// "mixed" when the payloads disagree.
inline std::string entry_marker(const CacheEntry& e) {
  auto pos = e.ptx.find("// writer ");
  if (pos == std::string::npos) return "none";
  std::string from_ptx = e.ptx.substr(pos + 10, e.ptx.find('\n', pos) - pos - 10);
  std::string from_cubin = e.cubin.substr(18, from_ptx.size());
  std::string from_resources = e.resources["saxpy"].value("writer", "");
  return (from_ptx == from_cubin && from_ptx == from_resources) ? from_ptx : "mixed";
}

inline bool has_code(const diag::Diagnostics& d, diag::Code code) {
  return std::any_of(d.begin(), d.end(), [&](const diag::Diagnostic& x) { return x.code == code; });
}

inline size_t count_code(const diag::Diagnostics& d, diag::Code code) {
  return std::count_if(d.begin(), d.end(), [&](const diag::Diagnostic& x) { return x.code == code; });
}

}  // namespace ptxgate::module_cache::testing
