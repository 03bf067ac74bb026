// ptxas: assemble PTX into a cubin once, and read the resources it reports (`ptxas -v`).
#pragma once

#include <expected>
#include <map>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/toolchain/toolkit.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::toolchain {

/// Resources of every entry function, by PTX entry name.
using ResourceMap = std::map<std::string, contract::KernelResources, std::less<>>;

/// Parses the info log of `ptxas -v` (any CUDA 11-13 format): "Compiling entry function 'k'",
/// "N bytes stack frame, N bytes spill stores, N bytes spill loads" and "Used N registers, used
/// N barriers, N bytes smem, N bytes cmem[0], ...". Only entry functions are returned;
/// max_threads_per_block is left at its default (see merge_launch_bounds).
ResourceMap parse_ptxas_log(std::string_view log);

/// `.reqntid` (else `.maxntid`) of each entry in PTX text, as a thread count (product of the axes),
/// read by read_ptx_entries; none when the PTX cannot be read.
std::map<std::string, uint32_t, std::less<>> ptx_launch_bounds(std::string_view ptx);

/// Sets each entry's max_threads_per_block from the PTX's launch bounds (1024 when it has none).
void merge_launch_bounds(ResourceMap& resources, std::string_view ptx);

/// What one ptxas run produced.
struct Assembly {
  std::string cubin;        ///< the ELF cubin
  std::string log;          ///< ptxas's `-v` report (stdout + stderr)
  ResourceMap resources;    ///< parsed from `log`, launch bounds merged; may be empty
};

/// Runs `ptxas -v -arch=<arch>` on `ptx` in a private temporary directory (posix_spawn, no
/// shell), within the tool time limit (PG2011 past it). PG2005 when the toolkit has no ptxas or it
/// cannot be started; PG2004 with the start of its output when it fails or writes no cubin.
/// `foreign`: the PTX is the user's (`ptx` is its text, from another compiler), so ptxas rejecting
/// it is the input's fault, not ptxgate's: PG2007 per error ptxas reports, at its line of `foreign`.
/// With `only_entry`, `ptxas -e NAME`: the cubin holds that kernel (and what it calls) alone, so a
/// module of 5000 kernels assembles in a tenth of a second instead of half a minute when one
/// kernel's resources are wanted.
[[nodiscard]] std::expected<Assembly, diag::Diagnostics> assemble(std::string_view ptx, std::string_view arch,
                                                                  const Toolkit& toolkit,
                                                                  const diag::SourceFile* foreign = nullptr,
                                                                  std::string_view only_entry = {});

/// ptxas's report of errors in the user's PTX (`foreign`, assembled from `input_path`) as
/// diagnostics: each "FILE, line N; error : TEXT" is a PG2007 at line N of `foreign`; a report
/// without such lines is one PG2007 at the file with ptxas's text (the path replaced by the user's).
[[nodiscard]] diag::Diagnostics foreign_ptx_errors(const diag::SourceFile& foreign, std::string_view log,
                                                   std::string_view input_path, std::string_view arch);

/// The "release" line of `<ptxas> --version` (e.g. "Cuda compilation tools, release 13.0, V13.0.48"),
/// run once per path per process and memoised; empty when it cannot be run.
std::string ptxas_version(const std::string& ptxas);

}  // namespace ptxgate::toolchain
