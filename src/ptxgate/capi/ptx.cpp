// The C API's calls for PTX and cubins made by other compilers: read their entries offline, load one to launch.
#include "ptxgate/capi/internal/handles.hpp"
#include "ptxgate/toolchain/cubin_entries.hpp"

using namespace ptxgate;
using capi::fail;
using capi::finish;
using capi::guarded;
using capi::null_argument;

extern "C" {

int ptxgate_module_format_of(const void* bytes, size_t size) {
  if (bytes == nullptr) return PTXGATE_FORMAT_IR;
  switch (toolchain::module_format({static_cast<const char*>(bytes), size})) {
    case toolchain::ModuleFormat::ptx: return PTXGATE_FORMAT_PTX;
    case toolchain::ModuleFormat::cubin: return PTXGATE_FORMAT_CUBIN;
    case toolchain::ModuleFormat::fatbin: return PTXGATE_FORMAT_FATBIN;
    case toolchain::ModuleFormat::ir: break;
  }
  return PTXGATE_FORMAT_IR;
}

ptxgate_status ptxgate_read_ptx(const char* ptx, size_t size, const char* path, ptxgate_module** module,
                                ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_read_ptx", [&] {
    if (module == nullptr) return null_argument(diagnostics, "ptxgate_read_ptx", "module");
    *module = nullptr;
    if (ptx == nullptr && size != 0) return null_argument(diagnostics, "ptxgate_read_ptx", "ptx");
    diag::SourceFile file{capi::text_or(path, "<ptx>"), std::string(ptx != nullptr ? ptx : "", size)};
    auto read = toolchain::read_kernel_entries(file);
    if (!read) return fail(diagnostics, std::move(read.error()));
    auto m = std::make_unique<ptxgate_module>();
    if (read->binary_arch.empty()) {
      m->entry.target_arch = read->target;
      m->entry.ptx_isa_version = read->isa_major * 10 + read->isa_minor;
      m->entry.ptx = file.text();
    } else {
      m->entry.target_arch = read->binary_arch;
      m->entry.cubin = file.text();
    }
    nlohmann::json kernels = nlohmann::json::array();
    diag::Diagnostics notes;
    for (const auto& e : read->entries) {
      if (!e.unsupported.empty()) {
        notes.append(e.unsupported);  // reported, the entry left out
        continue;
      }
      m->entry.kernels.push_back(e.info);
      nlohmann::json k = contract::to_meta_json(e.info);
      k["resources"] = e.resources ? module_cache::resources_to_json(*e.resources) : nlohmann::json(nullptr);
      if (e.max_block[0] != 0) k["max_block"] = {e.max_block[0], e.max_block[1], e.max_block[2]};
      kernels.push_back(std::move(k));
    }
    for (auto& d : notes.items()) d.severity = diag::Severity::warning;
    m->kernels_json = kernels.dump();
    *module = m.release();
    return finish(diagnostics, std::move(notes), PTXGATE_OK);
  });
}

ptxgate_status ptxgate_runtime_load_module(ptxgate_runtime* runtime, const void* image, size_t size, const char* path,
                                           const char* kernel, const char* signature, ptxgate_kernel** out,
                                           ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_load_module", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_runtime_load_module", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_load_module", "runtime");
    if (image == nullptr && size != 0) return null_argument(diagnostics, "ptxgate_runtime_load_module", "image");
    if (kernel == nullptr) return null_argument(diagnostics, "ptxgate_runtime_load_module", "kernel");
    const std::string_view bytes(image != nullptr ? static_cast<const char*>(image) : "", size);
    auto loaded = runtime->runtime->load_foreign(bytes, kernel, capi::text_or(path, "<module>"),
                                                 signature != nullptr ? signature : "");
    if (!loaded) return fail(diagnostics, std::move(loaded.error()));
    auto k = std::make_unique<ptxgate_kernel>();
    k->kernel = std::move(*loaded);
    k->device = runtime->device;
    k->json = capi::kernel_json(*k->kernel);
    *out = k.release();
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_runtime_load_ptx(ptxgate_runtime* runtime, const char* ptx, size_t size, const char* path,
                                        const char* kernel, ptxgate_kernel** out, ptxgate_diagnostics** diagnostics) {
  return ptxgate_runtime_load_module(runtime, ptx, size, path != nullptr ? path : "<ptx>", kernel, nullptr, out,
                                     diagnostics);
}

}  // extern "C"
