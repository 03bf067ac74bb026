// The C API's offline calls: compile through the module cache, and check a launch against a profile.
#include <fmt/format.h>

#include "ptxgate/capi/internal/handles.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"

using namespace ptxgate;
using capi::fail;
using capi::finish;
using capi::guarded;
using capi::null_argument;

namespace {

module_cache::ModuleCacheOptions cache_options(const char* directory, bool disk) {
  module_cache::ModuleCacheOptions o;
  o.use_disk = disk;
  if (directory != nullptr) o.directory = directory;
  return o;
}

ptxgate_status compile_loaded(const ir::Module& module, diag::Diagnostics warnings, const ptxgate_compile_options& o,
                              ptxgate_module** out, ptxgate_diagnostics** diagnostics) {
  module_cache::ModuleCache cache(cache_options(o.cache_dir, o.disk_cache != 0));
  module_cache::CompileRequest request;
  // The target policy of the runtime, `check` and `emit`: sm_90 becomes sm_90a for Hopper's operations.
  auto requested = ir::supported_target(capi::text_or(o.target, "sm_90"));
  if (!requested) return fail(diagnostics, std::move(requested.error()));
  request.codegen.target = ir::target_for_module(module, *requested);
  request.codegen.opt_level = o.opt_level < 0 ? 3u : static_cast<unsigned>(o.opt_level);
  if (request.codegen.opt_level > 3) {
    diag::Diagnostics d;
    d.add(diag::Code::invalid_argument_spec, fmt::format("ptxgate_compile: opt_level {} is not 0..3", o.opt_level), {},
          "pass an optimisation level from 0 to 3 (or -1 for the default, 3)");
    return finish(diagnostics, std::move(d), PTXGATE_USAGE);
  }
  request.produce_cubin = o.cubin != 0;
  auto compiled = cache.compile(module, request);
  if (!compiled) return fail(diagnostics, std::move(compiled.error()));
  warnings.append(compiled->warnings);
  auto m = std::make_unique<ptxgate_module>();
  m->entry = *compiled->entry;
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& info : m->entry.kernels) {
    nlohmann::json k = contract::to_meta_json(info);
    auto resources = module_cache::kernel_resources(m->entry, info.name);
    k["resources"] = resources ? module_cache::resources_to_json(*resources) : nlohmann::json(nullptr);
    kernels.push_back(std::move(k));
  }
  m->kernels_json = kernels.dump();
  *out = m.release();
  return finish(diagnostics, std::move(warnings), PTXGATE_OK);
}

}  // namespace

extern "C" {

void ptxgate_compile_options_init(ptxgate_compile_options* options) {
  if (options == nullptr) return;
  *options = {};
  options->target = nullptr;
  options->opt_level = 3;
  options->cubin = 1;
  options->cache_dir = nullptr;
  options->disk_cache = 1;
}

ptxgate_status ptxgate_compile(const char* source, size_t size, const char* path, const ptxgate_compile_options* options,
                               ptxgate_module** module, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_compile", [&] {
    if (module == nullptr) return null_argument(diagnostics, "ptxgate_compile", "module");
    *module = nullptr;
    if (source == nullptr && size != 0) return null_argument(diagnostics, "ptxgate_compile", "source");
    ptxgate_compile_options o;
    ptxgate_compile_options_init(&o);
    if (options != nullptr) o = *options;
    diag::SourceFile file{capi::text_or(path, "<text>"), std::string(source != nullptr ? source : "", size)};
    auto loaded = ir::load_module(file);
    if (!loaded) return fail(diagnostics, std::move(loaded.error()));
    return compile_loaded(loaded->module, std::move(loaded->warnings), o, module, diagnostics);
  });
}

ptxgate_status ptxgate_compile_file(const char* path, const ptxgate_compile_options* options, ptxgate_module** module,
                                    ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_compile_file", [&] {
    if (module == nullptr) return null_argument(diagnostics, "ptxgate_compile_file", "module");
    *module = nullptr;
    if (path == nullptr) return null_argument(diagnostics, "ptxgate_compile_file", "path");
    ptxgate_compile_options o;
    ptxgate_compile_options_init(&o);
    if (options != nullptr) o = *options;
    auto loaded = ir::load_file(path);
    if (!loaded) return fail(diagnostics, std::move(loaded.error()));
    return compile_loaded(loaded->module, std::move(loaded->warnings), o, module, diagnostics);
  });
}

const char* ptxgate_module_ptx(const ptxgate_module* module) { return module != nullptr ? module->entry.ptx.c_str() : nullptr; }

const void* ptxgate_module_cubin(const ptxgate_module* module, size_t* size) {
  if (size != nullptr) *size = module != nullptr ? module->entry.cubin.size() : 0;
  return module != nullptr ? module->entry.cubin.data() : nullptr;
}

const char* ptxgate_module_target(const ptxgate_module* module) {
  return module != nullptr ? module->entry.target_arch.c_str() : nullptr;
}

const char* ptxgate_module_kernels_json(const ptxgate_module* module) {
  return module != nullptr ? module->kernels_json.c_str() : nullptr;
}

void ptxgate_module_free(ptxgate_module* module) { delete module; }

ptxgate_status ptxgate_check(const ptxgate_check_request* request, ptxgate_verdict** verdict,
                             ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_check", [&] {
    if (verdict == nullptr) return null_argument(diagnostics, "ptxgate_check", "verdict");
    *verdict = nullptr;
    if (request == nullptr) return null_argument(diagnostics, "ptxgate_check", "request");
    if (request->input == nullptr) return null_argument(diagnostics, "ptxgate_check", "request->input");
    if (request->kernel == nullptr) return null_argument(diagnostics, "ptxgate_check", "request->kernel");
    if (request->arg_count != 0 && request->args == nullptr)
      return null_argument(diagnostics, "ptxgate_check", "request->args");
    if (request->element_count != 0 && request->elements == nullptr)
      return null_argument(diagnostics, "ptxgate_check", "request->elements");
    commands::OfflineLaunch launch;
    launch.input = request->input;
    launch.kernel = request->kernel;
    launch.signature = capi::text_or(request->signature, "");
    launch.grid = capi::text_or(request->grid, "1");
    launch.block = capi::text_or(request->block, "");
    launch.shared_bytes = capi::text_or(request->shared_bytes, "0");
    launch.cooperative = request->cooperative != 0;
    launch.profile = capi::text_or(request->profile, "h100-sxm");  // the CLI's default
    for (size_t i = 0; i < request->arg_count; ++i) {
      if (request->args[i] == nullptr) return null_argument(diagnostics, "ptxgate_check", fmt::format("request->args[{}]", i));
      launch.args.emplace_back(request->args[i]);
    }
    launch.empty_args = request->empty_args != 0;
    for (size_t i = 0; i < request->element_count; ++i) {
      if (request->elements[i] == nullptr)
        return null_argument(diagnostics, "ptxgate_check", fmt::format("request->elements[{}]", i));
      launch.elements.emplace_back(request->elements[i]);
    }
    launch.null_stream = request->null_stream != 0;
    launch.require_explicit_stream = request->require_explicit_stream != 0;
    if (request->cache_dir != nullptr) launch.cache.directory = request->cache_dir;
    auto checked = commands::check_offline(launch);
    if (!checked)
      return finish(diagnostics, std::move(checked.error().diagnostics), checked.error().usage ? PTXGATE_USAGE : PTXGATE_ERROR);
    auto v = std::make_unique<ptxgate_verdict>();
    v->check = std::move(*checked);
    v->diagnostics.list = v->check.verdict.diagnostics;
    v->json = v->check.verdict.to_json(launch.kernel, v->check.plan).dump(2);
    v->summary = v->check.verdict.summary_line(launch.kernel, v->check.plan);
    diag::Diagnostics warnings = v->check.warnings;
    *verdict = v.release();
    return finish(diagnostics, std::move(warnings), PTXGATE_OK);
  });
}

int ptxgate_verdict_launchable(const ptxgate_verdict* verdict) {
  return verdict != nullptr && verdict->check.verdict.launchable ? 1 : 0;
}

ptxgate_diagnostics* ptxgate_verdict_diagnostics(ptxgate_verdict* verdict) {
  return verdict != nullptr ? &verdict->diagnostics : nullptr;
}

const char* ptxgate_verdict_json(const ptxgate_verdict* verdict) { return verdict != nullptr ? verdict->json.c_str() : nullptr; }

const char* ptxgate_verdict_summary(const ptxgate_verdict* verdict) {
  return verdict != nullptr ? verdict->summary.c_str() : nullptr;
}

void ptxgate_verdict_free(ptxgate_verdict* verdict) { delete verdict; }

}  // extern "C"
