// The C API's runtime: options, device, kernels, buffers, streams (owned or foreign), the guarded launch.
#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "ptxgate/capi/internal/args.hpp"
#include "ptxgate/capi/internal/handles.hpp"
#include "ptxgate/ir/float_bits.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/commands/reports.hpp"

using namespace ptxgate;
using capi::fail;
using capi::finish;
using capi::guarded;
using capi::null_argument;
using capi::usage_error;

namespace {

/// The diagnostics of this thread's last failed packed launch or replay.
thread_local std::unique_ptr<ptxgate_diagnostics> last_packed_failure;

/// The C options as the backend's: PG5002 for a value out of range.
std::expected<runtime::RuntimeOptions, diag::Diagnostics> runtime_options(const ptxgate_runtime_options& o) {
  runtime::RuntimeOptions ro;
  ro.device = o.device;
  ro.track_dependencies = o.track_dependencies != 0;
  ro.cache.use_disk = o.disk_cache != 0;
  ro.require_memory_proof = o.require_memory_proof != 0;
  if (o.cache_dir != nullptr) ro.cache.directory = o.cache_dir;
  diag::Diagnostics d;
  ro.checked = o.checked != 0;
  ro.checked_launches = o.checked_launches != 0;
  ro.profile_launches = o.profile_launches != 0;
  ro.allocation = o.stream_ordered != 0 ? runtime::AllocationMode::stream_ordered : runtime::AllocationMode::synchronous;
  ro.stream_policy = o.require_explicit_stream != 0 ? contract::StreamPolicy::require_explicit
                                                    : contract::StreamPolicy::allow_legacy_default;
  ro.pool.limit_bytes = o.pool_limit_bytes;
  ro.pool.keep_reserved_bytes = o.pool_keep_bytes;
  if (o.opt_level > 3)
    d.append(usage_error(fmt::format("ptxgate_runtime_options: opt_level {} is not 0..3", o.opt_level),
                         "pass an optimisation level from 0 to 3 (or -1 for the default, 3)"));
  ro.opt_level = o.opt_level < 0 ? 3u : static_cast<unsigned>(std::min(o.opt_level, 3));
  if (o.fp_mode < 0 || o.fp_mode > 2)
    d.append(usage_error(fmt::format("ptxgate_runtime_options: fp_mode {} is not 0 (contract), 1 (exact) or 2 (fast)", o.fp_mode),
                         "pass 0, 1 or 2"));
  else
    ro.fp_mode = static_cast<ir::FpMode>(o.fp_mode);
  if (d.has_errors()) return std::unexpected(std::move(d));
  return ro;
}

std::string runtime_json(const runtime::Runtime& r, const runtime::RuntimeOptions& o) {
  runtime::Runtime& rt = const_cast<runtime::Runtime&>(r);
  const auto& caps = rt.caps();
  nlohmann::json j;
  j["device"] = rt.context().ordinal();
  j["name"] = caps.name;
  j["target"] = rt.target().name();
  j["compute_capability"] = fmt::format("{}.{}", caps.cc_major, caps.cc_minor);
  j["multiprocessors"] = caps.sm_count;
  j["total_memory_bytes"] = rt.context().live().total_memory_bytes;
  j["track_dependencies"] = o.track_dependencies;
  j["checked"] = o.checked;
  j["checked_launches"] = o.checked_launches;
  j["profile_launches"] = o.profile_launches;
  j["stream_ordered"] = o.allocation == runtime::AllocationMode::stream_ordered;
  j["require_explicit_stream"] = o.stream_policy == contract::StreamPolicy::require_explicit;
  j["opt_level"] = o.opt_level;
  j["fp_mode"] = std::string(ir::fp_mode_name(o.fp_mode));
  return j.dump();
}

ptxgate_runtime* wrap_runtime(std::shared_ptr<runtime::Runtime> runtime, const runtime::RuntimeOptions& options) {
  auto r = std::make_unique<ptxgate_runtime>();
  r->device = runtime->context().ordinal();
  r->json = runtime_json(*runtime, options);
  r->target = runtime->target().name();
  r->runtime = std::move(runtime);
  return r.release();
}

/// Launches prepared arguments on `stream` (null: the legacy default stream).
ptxgate_status run_launch(ptxgate_kernel* kernel, const capi::Launch& launch, ptxgate_stream* stream,
                          ptxgate_diagnostics** diagnostics) {
  auto ok = kernel->kernel->launch(launch.config, std::span<const runtime::Arg>(launch.args.data(), launch.args.size()),
                                   stream != nullptr ? stream->launch_stream() : nullptr);
  if (!ok) return fail(diagnostics, std::move(ok.error()));
  return PTXGATE_OK;
}

ptxgate_status launch_now(ptxgate_kernel* kernel, const ptxgate_launch_config& config, const ptxgate_arg* args,
                          size_t arg_count, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  capi::Launch launch;
  if (auto prepared = capi::prepare(*kernel->kernel, kernel->device, config, args, arg_count, launch); !prepared)
    return fail(diagnostics, std::move(prepared.error()));
  return run_launch(kernel, launch, stream, diagnostics);
}

}  // namespace

namespace ptxgate::capi {

void set_last_failure(ptxgate_diagnostics* failure) { last_packed_failure.reset(failure); }

ptxgate_runtime* runtime_handle(std::shared_ptr<runtime::Runtime> runtime, const runtime::RuntimeOptions& options) {
  return wrap_runtime(std::move(runtime), options);
}

std::expected<runtime::RuntimeOptions, diag::Diagnostics> options_of(const ptxgate_runtime_options* options) {
  ptxgate_runtime_options o;
  ptxgate_runtime_options_init(&o);
  if (options != nullptr) o = *options;
  return runtime_options(o);
}

}  // namespace ptxgate::capi

extern "C" {

void ptxgate_runtime_options_init(ptxgate_runtime_options* options) {
  if (options == nullptr) return;
  *options = {};
  options->device = 0;
  options->track_dependencies = 1;
  options->cache_dir = nullptr;
  options->disk_cache = 1;
  options->pool_limit_bytes = 0;
  options->pool_keep_bytes = UINT64_MAX;
  options->opt_level = 3;
  options->fp_mode = 0;
  options->require_memory_proof = 0;
}

ptxgate_status ptxgate_runtime_create(const ptxgate_runtime_options* options, ptxgate_runtime** runtime,
                                      ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_create", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_create", "runtime");
    *runtime = nullptr;
    auto ro = capi::options_of(options);
    if (!ro) return finish(diagnostics, std::move(ro.error()), PTXGATE_USAGE);
    auto created = runtime::Runtime::create(*ro);
    if (!created) return fail(diagnostics, std::move(created.error()));
    *runtime = wrap_runtime(std::shared_ptr<runtime::Runtime>(std::move(*created)), *ro);
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

int ptxgate_runtime_device(const ptxgate_runtime* runtime) { return runtime != nullptr ? runtime->device : -1; }

const char* ptxgate_runtime_target(const ptxgate_runtime* runtime) {
  return runtime != nullptr ? runtime->target.c_str() : nullptr;
}

ptxgate_status ptxgate_runtime_synchronize(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_synchronize", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_synchronize", "runtime");
    auto ok = runtime->runtime->synchronize();
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

const char* ptxgate_runtime_json(const ptxgate_runtime* runtime) { return runtime != nullptr ? runtime->json.c_str() : nullptr; }

ptxgate_status ptxgate_devices_json(ptxgate_text** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_devices_json", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_devices_json", "out");
    *out = nullptr;
    commands::DeviceListing listing = commands::list_devices();
    *out = new ptxgate_text{commands::devices_json(listing).dump()};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_runtime_reset(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_reset", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_reset", "runtime");
    auto ok = runtime->runtime->reset();
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

void ptxgate_runtime_free(ptxgate_runtime* runtime) { delete runtime; }

ptxgate_status ptxgate_runtime_compile(ptxgate_runtime* runtime, const char* source, size_t size, const char* path,
                                       const char* kernel, ptxgate_kernel** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_compile", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_runtime_compile", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_compile", "runtime");
    if (source == nullptr && size != 0) return null_argument(diagnostics, "ptxgate_runtime_compile", "source");
    if (kernel == nullptr) return null_argument(diagnostics, "ptxgate_runtime_compile", "kernel");
    auto compiled = runtime->runtime->compile(std::string_view(source != nullptr ? source : "", size), kernel,
                                              capi::text_or(path, "<text>"));
    diag::Diagnostics warnings = runtime->runtime->take_warnings();
    if (!compiled) {
      warnings.append(compiled.error());
      return fail(diagnostics, std::move(warnings));
    }
    auto k = std::make_unique<ptxgate_kernel>();
    k->kernel = std::move(*compiled);
    k->device = runtime->device;
    k->json = capi::kernel_json(*k->kernel);
    *out = k.release();
    return finish(diagnostics, std::move(warnings), PTXGATE_OK);
  });
}

const char* ptxgate_kernel_json(const ptxgate_kernel* kernel) { return kernel != nullptr ? kernel->json.c_str() : nullptr; }

void ptxgate_kernel_free(ptxgate_kernel* kernel) { delete kernel; }

ptxgate_status ptxgate_buffer_allocate(ptxgate_runtime* runtime, size_t bytes, ptxgate_buffer** out,
                                       ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_buffer_allocate", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_buffer_allocate", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_buffer_allocate", "runtime");
    auto allocated = runtime->runtime->allocate(bytes);
    if (!allocated) return fail(diagnostics, std::move(allocated.error()));
    *out = new ptxgate_buffer{std::move(*allocated)};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_buffer_allocate_array(ptxgate_runtime* runtime, size_t count, int32_t dtype,
                                             ptxgate_stream* stream, ptxgate_buffer** out,
                                             ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_buffer_allocate_array", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_buffer_allocate_array", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_buffer_allocate_array", "runtime");
    const auto type = capi::ir_type_of(dtype);
    if (!type)
      return finish(diagnostics,
                    usage_error(fmt::format("ptxgate_buffer_allocate_array: dtype {} is not a ptxgate_dtype", dtype),
                                "use a ptxgate_dtype (UNKNOWN: bytes)"),
                    PTXGATE_USAGE);
    const size_t element = std::max(1u, ir::byte_size(*type));
    if (count > SIZE_MAX / element)
      return finish(diagnostics,
                    usage_error(fmt::format("ptxgate_buffer_allocate_array: {} elements of {} bytes overflow", count, element),
                                "allocate fewer elements"),
                    PTXGATE_USAGE);
    runtime::Runtime& rt = *runtime->runtime;
    auto allocated = stream != nullptr && !stream->legacy_default ? rt.allocate(count * element, stream->stream)
                                                                  : rt.allocate(count * element);
    if (!allocated) return fail(diagnostics, std::move(allocated.error()));
    allocated->retype(*type);
    *out = new ptxgate_buffer{std::move(*allocated)};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

int32_t ptxgate_buffer_dtype(const ptxgate_buffer* buffer) {
  return buffer != nullptr ? capi::dtype_of(buffer->buffer.element_type()) : PTXGATE_DTYPE_UNKNOWN;
}

int ptxgate_buffer_device(const ptxgate_buffer* buffer) {
  return buffer != nullptr && buffer->buffer.context() != nullptr ? buffer->buffer.context()->ordinal() : -1;
}

ptxgate_status ptxgate_buffer_fill_bytes(ptxgate_buffer* buffer, uint8_t value, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_buffer_fill_bytes", [&] {
    if (buffer == nullptr) return null_argument(diagnostics, "ptxgate_buffer_fill_bytes", "buffer");
    auto ok = buffer->buffer.fill_bytes(value);
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_buffer_upload(ptxgate_buffer* buffer, const void* host, size_t bytes,
                                     ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_buffer_upload", [&] {
    if (buffer == nullptr) return null_argument(diagnostics, "ptxgate_buffer_upload", "buffer");
    if (host == nullptr && bytes != 0) return null_argument(diagnostics, "ptxgate_buffer_upload", "host");
    auto ok = buffer->buffer.upload(std::span(static_cast<const std::byte*>(host), bytes));
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_buffer_download(const ptxgate_buffer* buffer, void* host, size_t bytes,
                                       ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_buffer_download", [&] {
    if (buffer == nullptr) return null_argument(diagnostics, "ptxgate_buffer_download", "buffer");
    if (host == nullptr && bytes != 0) return null_argument(diagnostics, "ptxgate_buffer_download", "host");
    auto ok = buffer->buffer.download(std::span(static_cast<std::byte*>(host), bytes));
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

uint64_t ptxgate_buffer_device_pointer(const ptxgate_buffer* buffer) { return buffer != nullptr ? buffer->buffer.pointer() : 0; }

size_t ptxgate_buffer_size(const ptxgate_buffer* buffer) { return buffer != nullptr ? buffer->buffer.size_bytes() : 0; }

void ptxgate_buffer_free(ptxgate_buffer* buffer) { delete buffer; }

ptxgate_status ptxgate_stream_create(ptxgate_runtime* runtime, ptxgate_stream** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_stream_create", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_stream_create", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_stream_create", "runtime");
    auto created = runtime->runtime->create_stream();
    if (!created) return fail(diagnostics, std::move(created.error()));
    auto s = std::make_unique<ptxgate_stream>();
    s->stream = std::move(*created);
    *out = s.release();
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_stream_wrap(ptxgate_runtime* runtime, uintptr_t cu_stream, ptxgate_stream** out,
                                   ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_stream_wrap", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_stream_wrap", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_stream_wrap", "runtime");
    auto s = std::make_unique<ptxgate_stream>();
    if (cu_stream == 0) {
      s->legacy_default = runtime->runtime->shared_context();
      s->stream = runtime::Stream::borrow(s->legacy_default, nullptr);
    } else
      s->stream = runtime::Stream::borrow(runtime->runtime->shared_context(), reinterpret_cast<CUstream>(cu_stream));
    *out = s.release();
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

uintptr_t ptxgate_stream_handle(const ptxgate_stream* stream) {
  return stream != nullptr ? reinterpret_cast<uintptr_t>(stream->stream.handle()) : 0;
}

ptxgate_status ptxgate_stream_synchronize(ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_stream_synchronize", [&] {
    if (stream == nullptr) return null_argument(diagnostics, "ptxgate_stream_synchronize", "stream");
    // The legacy default stream synchronises with the whole context.
    auto ok = stream->legacy_default ? stream->legacy_default->synchronize() : stream->stream.synchronize();
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

void ptxgate_stream_free(ptxgate_stream* stream) { delete stream; }

ptxgate_status ptxgate_kernel_launch(ptxgate_kernel* kernel, const ptxgate_launch_config* config, const ptxgate_arg* args,
                                     size_t arg_count, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_kernel_launch", [&] {
    if (kernel == nullptr) return null_argument(diagnostics, "ptxgate_kernel_launch", "kernel");
    if (config == nullptr) return null_argument(diagnostics, "ptxgate_kernel_launch", "config");
    if (args == nullptr && arg_count != 0) return null_argument(diagnostics, "ptxgate_kernel_launch", "args");
    const ptxgate_status status = launch_now(kernel, *config, args, arg_count, stream, diagnostics);
    return status == PTXGATE_OK ? finish(diagnostics, {}, PTXGATE_OK) : status;
  });
}

ptxgate_status ptxgate_kernel_launch_packed(ptxgate_kernel* kernel, const uint64_t* words) {
  ptxgate_diagnostics* failure = nullptr;
  const ptxgate_status status = guarded(&failure, "ptxgate_kernel_launch_packed", [&] {
    if (kernel == nullptr) return null_argument(&failure, "ptxgate_kernel_launch_packed", "kernel");
    if (words == nullptr) return null_argument(&failure, "ptxgate_kernel_launch_packed", "words");
    capi::Unpacked unpacked;
    if (auto ok = capi::unpack(words, unpacked); !ok) return finish(&failure, std::move(ok.error()), PTXGATE_USAGE);
    capi::Launch launch;
    if (auto prepared = capi::prepare_packed(*kernel->kernel, kernel->device, unpacked, launch); !prepared)
      return fail(&failure, std::move(prepared.error()));
    return run_launch(kernel, launch, unpacked.stream, &failure);
  });
  capi::set_last_failure(failure);
  return status;
}

ptxgate_diagnostics* ptxgate_take_last_diagnostics(void) { return last_packed_failure.release(); }

ptxgate_status ptxgate_kernel_check(ptxgate_kernel* kernel, const ptxgate_launch_config* config, const ptxgate_arg* args,
                                    size_t arg_count, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_kernel_check", [&] {
    if (kernel == nullptr) return null_argument(diagnostics, "ptxgate_kernel_check", "kernel");
    if (config == nullptr) return null_argument(diagnostics, "ptxgate_kernel_check", "config");
    if (args == nullptr && arg_count != 0) return null_argument(diagnostics, "ptxgate_kernel_check", "args");
    capi::Launch launch;
    if (auto prepared = capi::prepare(*kernel->kernel, kernel->device, *config, args, arg_count, launch); !prepared)
      return fail(diagnostics, std::move(prepared.error()));
    validation::Verdict v =
        kernel->kernel->check(launch.config, std::span<const runtime::Arg>(launch.args.data(), launch.args.size()),
                              stream != nullptr ? stream->launch_stream() : nullptr);
    return finish(diagnostics, std::move(v.diagnostics), v.launchable ? PTXGATE_OK : PTXGATE_ERROR);
  });
}

const char* ptxgate_dtype_name(int32_t dtype) {
  const auto type = capi::ir_type_of(dtype);
  if (!type) return nullptr;
  return *type == ir::Type::void_ ? "unknown" : ir::type_name(*type).data();
}

size_t ptxgate_dtype_size(int32_t dtype) {
  const auto type = capi::ir_type_of(dtype);
  return type ? ir::byte_size(*type) : 0;
}

ptxgate_status ptxgate_float_bits(double value, int32_t dtype, uint64_t* bits, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_float_bits", [&] {
    if (bits == nullptr) return null_argument(diagnostics, "ptxgate_float_bits", "bits");
    const auto type = capi::ir_type_of(dtype);
    if (!type || !ir::is_float(*type))
      return finish(diagnostics,
                    usage_error(fmt::format("ptxgate_float_bits: dtype {} is not a float type", dtype),
                                "pass PTXGATE_DTYPE_F16, _BF16, _F32 or _F64"),
                    PTXGATE_USAGE);
    const auto b = ir::float_bits(value, *type);
    if (!b)
      return finish(diagnostics,
                    usage_error(fmt::format("ptxgate_float_bits: {} is beyond the range of {}", value, ir::type_name(*type)),
                                fmt::format("pass a value within the range of {}", ir::type_name(*type))),
                    PTXGATE_USAGE);
    *bits = *b;
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

const char* ptxgate_text_data(const ptxgate_text* text) { return text != nullptr ? text->text.c_str() : nullptr; }

void ptxgate_text_free(ptxgate_text* text) { delete text; }

}  // extern "C"
