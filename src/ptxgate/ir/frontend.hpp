// One call from text to a verified module: parse, then verify.
#pragma once

#include <expected>
#include <string>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/ir/limits.hpp"

namespace ptxgate::ir {

/// A verified module together with the warnings the front end produced.
struct LoadedModule {
  Module module;
  diag::Diagnostics warnings;
};

/// Parses and verifies `file`. On any error returns every diagnostic found.
[[nodiscard]] std::expected<LoadedModule, diag::Diagnostics> load_module(const diag::SourceFile& file, const Limits& limits = {});

/// A verified module, its warnings, and the text it came from (for diagnostic locations).
struct LoadedFile : LoadedModule {
  diag::SourceFile source;
};

/// read_source, then load_module: every diagnostic of either step on failure.
[[nodiscard]] std::expected<LoadedFile, diag::Diagnostics> load_file(const std::string& path, const Limits& limits = {});

/// Reads a file (or "-" for standard input) into a SourceFile, with PG5001/PG1902 on failure.
[[nodiscard]] std::expected<diag::SourceFile, diag::Diagnostics> read_source(const std::string& path, const Limits& limits = {});

/// The kernel of `module` named `name`, or PG2006 naming the module and listing its kernels
/// ("kernels in this module: a, b", or "(none)").
[[nodiscard]] std::expected<const Kernel*, diag::Diagnostics> require_kernel(const Module& module, std::string_view name);

}  // namespace ptxgate::ir
