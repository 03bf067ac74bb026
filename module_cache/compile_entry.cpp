// compile_to_entry: codegen::compile, then ptxas for a cubin and its resource report; the key inputs of a compile.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

#include "ptxgate/ir/printer.hpp"
#include "ptxgate/diagnostics/internal/json_checks.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/module_cache/internal/process.hpp"
#include "ptxgate/validation/ptxas_resources.hpp"

namespace ptxgate::module_cache {
namespace {

/// The libdevice file codegen links: the option, else $PTXGATE_LIBDEVICE, else the toolkit's.
std::string libdevice_path_for(const codegen::CodegenOptions& options) {
  if (!options.libdevice_path.empty()) return options.libdevice_path;
  if (const char* env = std::getenv("PTXGATE_LIBDEVICE"); env && *env) return env;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    return std::string(home) + "/nvvm/libdevice/libdevice.10.bc";
#ifdef PTXGATE_DEFAULT_CUDA_ROOT
  return std::string(PTXGATE_DEFAULT_CUDA_ROOT) + "/nvvm/libdevice/libdevice.10.bc";
#else
  return "libdevice.10.bc";
#endif
}

/// At most `max_lines` lines of a tool's output, for a diagnostic message.
std::string first_lines(const std::string& text, size_t max_lines) {
  std::istringstream in(text);
  std::string out;
  size_t n = 0;
  for (std::string line; std::getline(in, line) && n < max_lines; ++n) out += (n ? "\n" : "") + line;
  return out;
}

}  // namespace

std::string codegen_options_text(const codegen::CodegenOptions& options) {
  // The pipeline is named (and versioned) at -O2/-O3, where ptxgate's own pipeline is the default.
  if (options.opt_level < 2) return fmt::format("opt_level={}", options.opt_level);
  return fmt::format("opt_level={};pipeline={}", options.opt_level, options.llvm_pipeline ? "llvm" : "kernel-1");
}

CacheKeyInputs key_inputs_for(const ir::Module& verified, const CompileRequest& request) {
  CacheKeyInputs in;
  in.canonical_module_text = ir::print(verified);
  in.target_arch = request.codegen.target;
  in.codegen_options = codegen_options_text(request.codegen);
  in.ptxgate_version = ptxgate_version();
  in.llvm_version = codegen::llvm_version();
  in.libdevice_hash = libdevice_hash(libdevice_path_for(request.codegen));
  if (request.produce_cubin) in.ptxas_version = ptxas_version(request.ptxas.empty() ? ptxas_path() : request.ptxas);
  in.driver_version = request.driver_version;
  return in;
}

std::expected<std::string, diag::Diagnostics> run_ptxas(const std::string& ptx, const std::string& target_arch,
                                                        const std::string& ptxas, std::string& log) {
  diag::Diagnostics d;
  if (::access(ptxas.c_str(), X_OK) != 0) {
    d.add(diag::Code::ptxas_missing, fmt::format("ptxas not found or not executable at '{}'", ptxas), {},
          "install the CUDA Toolkit and set CUDA_HOME (or PTXGATE_PTXAS to the ptxas binary)");
    return std::unexpected(std::move(d));
  }
  std::error_code ec;
  auto tmp_root = std::filesystem::temp_directory_path(ec);
  if (ec) tmp_root = "/tmp";
  auto dir = TempDir::create(tmp_root, "ptxgate-ptxas-");
  if (!dir) {
    d.add(diag::Code::ptxas_failure, "cannot prepare ptxas input: " + dir.error(), {},
          "set TMPDIR to a writable directory");
    return std::unexpected(std::move(d));
  }
  const auto ptx_path = dir->path() / "module.ptx";
  const auto cubin_path = dir->path() / "module.cubin";
  {
    std::ofstream out(ptx_path, std::ios::binary);
    out << ptx;
    if (!out) {
      d.add(diag::Code::ptxas_failure, fmt::format("cannot write ptxas input '{}'", ptx_path.string()), {},
            "set TMPDIR to a writable directory with free space");
      return std::unexpected(std::move(d));
    }
  }
  auto run = run_process({ptxas, "-v", "-arch=" + target_arch, ptx_path.string(), "-o", cubin_path.string()});
  if (!run) {
    d.add(diag::Code::ptxas_missing, run.error(), {}, "check the ptxas binary (CUDA_HOME or PTXGATE_PTXAS)");
    return std::unexpected(std::move(d));
  }
  log = run->stdout_text + run->stderr_text;
  if (run->exit_status != 0) {
    d.add(diag::Code::ptxas_failure,
          fmt::format("ptxas -arch={} exited with status {}: {}", target_arch, run->exit_status,
                      first_lines(log, 20)),
          {}, "this is a code generation bug unless the target is unsupported by this ptxas; please report it");
    return std::unexpected(std::move(d));
  }
  std::ifstream in(cubin_path, std::ios::binary);
  std::ostringstream cubin;
  cubin << in.rdbuf();
  if (!in || cubin.str().empty()) {
    d.add(diag::Code::ptxas_failure, "ptxas succeeded but wrote no cubin", {}, "check the ptxas installation");
    return std::unexpected(std::move(d));
  }
  return cubin.str();
}

std::expected<CacheEntry, diag::Diagnostics> compile_to_entry(const ir::Module& verified,
                                                              const CompileRequest& request) {
  auto compiled = codegen::compile(verified, request.codegen);
  if (!compiled) return std::unexpected(compiled.error());
  CacheEntry entry;
  entry.target_arch = compiled->target.empty() ? request.codegen.target : compiled->target;
  entry.ptx_isa_version = compiled->ptx_isa_version;
  entry.ptx = std::move(compiled->ptx);
  entry.kernels = std::move(compiled->kernels);
  if (request.produce_cubin) {
    std::string log;
    auto cubin = run_ptxas(entry.ptx, entry.target_arch, request.ptxas.empty() ? ptxas_path() : request.ptxas, log);
    if (!cubin) return std::unexpected(cubin.error());
    entry.cubin = std::move(*cubin);
    auto bounds = validation::ptx_launch_bounds(entry.ptx);
    for (auto [name, res] : validation::parse_ptxas_log(log)) {
      auto it = bounds.find(name);
      res.max_threads_per_block = it != bounds.end() ? std::min<uint32_t>(it->second, 1024) : 1024;
      entry.resources[name] = resources_to_json(res);
    }
    entry.resources["ptxas_log"] = log;
  }
  return entry;
}

nlohmann::json resources_to_json(const validation::KernelResources& r) {
  return {{"registers_per_thread", r.registers_per_thread}, {"static_shared_bytes", r.static_shared_bytes},
          {"local_bytes", r.local_bytes},   {"max_threads_per_block", r.max_threads_per_block},
          {"barriers", r.barriers},         {"spill_store_bytes", r.spill_store_bytes},
          {"spill_load_bytes", r.spill_load_bytes}, {"constant_bytes", r.constant_bytes}};
}

std::optional<validation::KernelResources> kernel_resources(const CacheEntry& entry, std::string_view kernel) {
  auto it = entry.resources.find(std::string(kernel));
  if (it == entry.resources.end() || !it->is_object()) return std::nullopt;
  try {
    validation::KernelResources r;
    r.registers_per_thread = diag::json_integer<uint32_t>(it->at("registers_per_thread"));
    r.static_shared_bytes = diag::json_integer<uint64_t>(it->at("static_shared_bytes"));
    r.local_bytes = diag::json_integer<uint64_t>(it->at("local_bytes"));
    r.max_threads_per_block = diag::json_integer<uint32_t>(it->at("max_threads_per_block"));
    r.barriers = diag::json_integer_or(*it, "barriers", uint32_t{0});
    r.spill_store_bytes = diag::json_integer_or(*it, "spill_store_bytes", uint64_t{0});
    r.spill_load_bytes = diag::json_integer_or(*it, "spill_load_bytes", uint64_t{0});
    r.constant_bytes = diag::json_integer_or(*it, "constant_bytes", uint64_t{0});
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ptxgate::module_cache
