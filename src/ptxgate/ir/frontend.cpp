// Text to verified module: read the file, parse, verify.
#include "ptxgate/ir/frontend.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/verifier.hpp"

namespace ptxgate::ir {

std::expected<LoadedModule, diag::Diagnostics> load_module(const diag::SourceFile& file, const Limits& limits) {
  ParseResult parsed = parse(file, limits);
  if (parsed.diagnostics.has_errors()) return std::unexpected(std::move(parsed.diagnostics));
  diag::Diagnostics verified = verify(parsed.module, &file, limits);
  diag::Diagnostics all = std::move(parsed.diagnostics);
  all.append(verified);
  if (all.has_errors()) return std::unexpected(std::move(all));
  return LoadedModule{std::move(parsed.module), std::move(all)};
}

std::expected<LoadedFile, diag::Diagnostics> load_file(const std::string& path, const Limits& limits) {
  auto source = read_source(path, limits);
  if (!source) return std::unexpected(std::move(source.error()));
  auto loaded = load_module(*source, limits);
  if (!loaded) return std::unexpected(std::move(loaded.error()));
  return LoadedFile{std::move(*loaded), std::move(*source)};
}

std::expected<diag::SourceFile, diag::Diagnostics> read_source(const std::string& path, const Limits& limits) {
  diag::Diagnostics d;
  std::string text;
  std::string shown = path == "-" ? "<stdin>" : path;
  std::istream* in = &std::cin;
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) {
      d.add(diag::Code::cannot_read_file, fmt::format("cannot open '{}'", path), {},
            "check the path and that the file is readable");
      return std::unexpected(std::move(d));
    }
    in = &file;
  }
  char buffer[65536];
  while (*in) {
    in->read(buffer, sizeof buffer);
    text.append(buffer, static_cast<size_t>(in->gcount()));
    if (text.size() > limits.max_file_bytes) {
      diag::Location loc;
      loc.file = shown;
      d.add(diag::Code::input_too_large,
            fmt::format("input is larger than the limit of {} bytes", limits.max_file_bytes), loc,
            "split the module into several files");
      return std::unexpected(std::move(d));
    }
  }
  if (in->bad()) {
    d.add(diag::Code::cannot_read_file, fmt::format("error while reading '{}'", shown), {}, "check the file");
    return std::unexpected(std::move(d));
  }
  return diag::SourceFile(shown, std::move(text));
}

std::expected<const Kernel*, diag::Diagnostics> require_kernel(const Module& module, std::string_view name) {
  if (const Kernel* kernel = module.find_kernel(name)) return kernel;
  std::string names;
  for (const auto& k : module.kernels) names += (names.empty() ? "" : ", ") + k.name;
  diag::Diagnostics d;
  diag::Location where;
  where.file = module.path;
  d.add(diag::Code::kernel_not_found, fmt::format("no kernel named '{}' in '{}'", name, module.path), where,
        fmt::format("kernels in this module: {}", names.empty() ? "(none)" : names));
  return std::unexpected(std::move(d));
}

}  // namespace ptxgate::ir
