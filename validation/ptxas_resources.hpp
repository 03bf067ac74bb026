// Offline kernel resources: run `ptxas -v` on PTX and parse its per-function resource report.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/launch_plan.hpp"

namespace ptxgate::validation {

/// Resources of every entry function, by PTX entry name.
using ResourceMap = std::map<std::string, KernelResources, std::less<>>;

/// Parses the info log of `ptxas -v` (any CUDA 11-13 format): "Compiling entry function 'k'",
/// "N bytes stack frame, N bytes spill stores, N bytes spill loads" and "Used N registers, used
/// N barriers, N bytes smem, N bytes cmem[0], ...". Only entry functions are returned.
ResourceMap parse_ptxas_log(std::string_view log);

/// `.maxntid`/`.reqntid` of each entry in PTX text, as a thread count (product of the axes).
std::map<std::string, uint32_t, std::less<>> ptx_launch_bounds(std::string_view ptx);

/// The ptxas executable: $PTXGATE_PTXAS, else $CUDA_HOME/bin/ptxas, else the toolkit found at build time.
std::filesystem::path ptxas_path();

/// Assembles `ptx` for `arch` ("sm_90") with `ptxas -v` in a private temporary directory
/// (posix_spawn, no shell) and returns each entry's resources, with max_threads_per_block
/// taken from the entry's launch bounds (1024 when it has none).
/// PG3303 when ptxas is missing, fails (its log is in the message) or reports no entry.
[[nodiscard]] std::expected<ResourceMap, diag::Diagnostics> query_ptxas_resources(std::string_view ptx, std::string_view arch);

}  // namespace ptxgate::validation
