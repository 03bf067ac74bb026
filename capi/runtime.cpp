// The C API's runtime: device, kernels, buffers, streams (owned or foreign) and the guarded launch.
#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "ptxgate/capi/internal/handles.hpp"
#include "ptxgate/module_cache/module_cache.hpp"

using namespace ptxgate;
using capi::fail;
using capi::finish;
using capi::guarded;
using capi::null_argument;

namespace {

std::optional<ir::Type> type_of(int32_t dtype) {
  switch (dtype) {
    case PTXGATE_DTYPE_BOOL: return ir::Type::bool_;
    case PTXGATE_DTYPE_I32: return ir::Type::i32;
    case PTXGATE_DTYPE_U32: return ir::Type::u32;
    case PTXGATE_DTYPE_I64: return ir::Type::i64;
    case PTXGATE_DTYPE_U64: return ir::Type::u64;
    case PTXGATE_DTYPE_F32: return ir::Type::f32;
    case PTXGATE_DTYPE_F64: return ir::Type::f64;
    default: return std::nullopt;
  }
}

/// A scalar argument of `type` from the C API's 64 bits.
backend::Arg scalar_arg(ir::Type type, uint64_t bits) {
  switch (type) {
    case ir::Type::bool_: return backend::Arg(bits != 0);
    case ir::Type::i32: return backend::Arg(static_cast<int32_t>(static_cast<int64_t>(bits)));
    case ir::Type::u32: return backend::Arg(static_cast<uint32_t>(bits));
    case ir::Type::i64: return backend::Arg(static_cast<int64_t>(bits));
    case ir::Type::f32: {
      uint32_t low = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &low, 4);
      return backend::Arg(f);
    }
    case ir::Type::f64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return backend::Arg(d);
    }
    default: return backend::Arg(bits);
  }
}

/// The C argument as a backend::Arg, after the checks only the C API can make: the caller's
/// element type and device against the parameter and the runtime (PG3006, PG4008), and an
/// element count within its buffer (PG3008). Kind, width and null pointers are the backend's.
std::expected<backend::Arg, diag::Diagnostics> to_arg(const ptxgate_arg& a, size_t index, const ptxgate_kernel& k) {
  const contract::KernelInfo& info = k.kernel->info();
  const contract::ParamInfo* param = index < info.params.size() ? &info.params[index] : nullptr;
  const std::string what = param != nullptr ? fmt::format("argument {} ('{}') of kernel '{}'", index, param->name, info.name)
                                            : fmt::format("argument {} of kernel '{}'", index, info.name);
  diag::Diagnostics d;
  auto type = type_of(a.dtype);
  if (a.dtype != PTXGATE_DTYPE_UNKNOWN && !type) {
    d.add(diag::Code::invalid_argument_spec, fmt::format("{}: dtype {} is not a ptxgate_dtype", what, a.dtype), {},
          "use one of PTXGATE_DTYPE_BOOL .. PTXGATE_DTYPE_F64 (or UNKNOWN for an untyped buffer)");
    return std::unexpected(std::move(d));
  }
  if (a.kind == PTXGATE_ARG_SCALAR) {
    if (!type) {
      d.add(diag::Code::invalid_argument_spec, fmt::format("{}: a scalar needs its dtype", what), {},
            "state the scalar's type (PTXGATE_DTYPE_I32 ...)");
      return std::unexpected(std::move(d));
    }
    return scalar_arg(*type, a.bits);
  }
  if (a.kind != PTXGATE_ARG_BUFFER && a.kind != PTXGATE_ARG_POINTER) {
    d.add(diag::Code::invalid_argument_spec, fmt::format("{}: kind {} is not a ptxgate_arg_kind", what, a.kind), {},
          "use PTXGATE_ARG_BUFFER, PTXGATE_ARG_POINTER or PTXGATE_ARG_SCALAR");
    return std::unexpected(std::move(d));
  }
  // A buffer parameter of unknown element type (a pointer of foreign PTX) takes any array.
  if (type && param != nullptr && param->is_buffer && param->type != ir::Type::void_ && *type != param->type) {
    d.add(diag::Code::argument_kind_mismatch,
          fmt::format("{}: an array of {} elements for a buffer of {}", what, ir::type_name(*type), ir::type_name(param->type)),
          {}, fmt::format("pass an array of {} (convert it first)", ir::type_name(param->type)));
    return std::unexpected(std::move(d));
  }
  const ir::Type element = type ? *type : (param != nullptr && param->is_buffer ? param->type : ir::Type::void_);
  const uint64_t element_bytes = std::max(1u, ir::byte_size(element));  // unknown type: elements are bytes
  if (a.kind == PTXGATE_ARG_POINTER) {
    if (a.device >= 0 && a.device != k.device) {
      d.add(diag::Code::foreign_object,
            fmt::format("{}: the array is on device {}, the kernel's runtime on device {}", what, a.device, k.device), {},
            fmt::format("move the array to device {}, or launch through a runtime of device {}", k.device, a.device));
      return std::unexpected(std::move(d));
    }
    return backend::Arg::device_pointer(a.pointer, a.elements * element_bytes);
  }
  if (a.buffer == nullptr) {
    d.add(diag::Code::invalid_argument_spec, fmt::format("{}: 'buffer' is null", what), {}, "pass a ptxgate_buffer");
    return std::unexpected(std::move(d));
  }
  const backend::DeviceBuffer& buffer = a.buffer->buffer;
  if (a.elements == 0) return backend::Arg(buffer);
  const uint64_t bytes = a.elements * element_bytes;
  if (bytes / element_bytes != a.elements || bytes > buffer.size_bytes()) {
    d.add(diag::Code::buffer_too_small,
          fmt::format("{}: {} elements of {} do not fit its buffer of {} bytes", what, a.elements, ir::type_name(element),
                      buffer.size_bytes()),
          {}, fmt::format("pass at most {} elements, or a larger buffer", buffer.size_bytes() / element_bytes));
    return std::unexpected(std::move(d));
  }
  return backend::Arg::buffer_range(buffer, 0, bytes, element);
}

struct Launch {
  backend::LaunchConfig config;
  std::vector<backend::Arg> args;
};

std::expected<Launch, diag::Diagnostics> prepare(const ptxgate_kernel& k, const ptxgate_launch_config& c,
                                                 const ptxgate_arg* args, size_t count) {
  Launch l;
  for (int i = 0; i < 3; ++i) {
    l.config.grid[i] = c.grid[i];
    l.config.block[i] = c.block[i];
  }
  l.config.dynamic_shared_bytes = c.dynamic_shared_bytes;
  l.config.cooperative = c.cooperative != 0;
  l.config.block_given = c.block[0] != 0 || c.block[1] != 0 || c.block[2] != 0;
  diag::Diagnostics errors;
  l.args.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto a = to_arg(args[i], i, k);
    if (!a) {
      errors.append(a.error());
      continue;
    }
    l.args.push_back(*a);
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return l;
}

}  // namespace

extern "C" {

void ptxgate_runtime_options_init(ptxgate_runtime_options* options) {
  if (options == nullptr) return;
  *options = {};
  options->device = 0;
  options->track_dependencies = 1;
  options->cache_dir = nullptr;
  options->disk_cache = 1;
  options->checked = 0;
  options->checked_launches = 0;
}

ptxgate_status ptxgate_runtime_create(const ptxgate_runtime_options* options, ptxgate_runtime** runtime,
                                      ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_create", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_create", "runtime");
    *runtime = nullptr;
    ptxgate_runtime_options o;
    ptxgate_runtime_options_init(&o);
    if (options != nullptr) o = *options;
    backend::RuntimeOptions ro;
    ro.device = o.device;
    ro.track_dependencies = o.track_dependencies != 0;
    ro.cache.use_disk = o.disk_cache != 0;
    if (o.cache_dir != nullptr) ro.cache.directory = o.cache_dir;
    ro.checked = o.checked != 0;
    ro.checked_launches = o.checked_launches != 0;
    auto created = backend::Runtime::create(ro);
    if (!created) return fail(diagnostics, std::move(created.error()));
    auto r = std::make_unique<ptxgate_runtime>();
    r->runtime = std::move(*created);
    r->device = o.device;
    *runtime = r.release();
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

int ptxgate_runtime_device(const ptxgate_runtime* runtime) { return runtime != nullptr ? runtime->device : -1; }

const char* ptxgate_runtime_target(const ptxgate_runtime* runtime) {
  return runtime != nullptr ? runtime->runtime->target().c_str() : nullptr;
}

ptxgate_status ptxgate_runtime_synchronize(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_synchronize", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_synchronize", "runtime");
    auto ok = runtime->runtime->synchronize();
    if (!ok) return fail(diagnostics, std::move(ok.error()));
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
    if (cu_stream == 0)
      s->legacy_default = runtime->runtime->shared_context();
    else
      s->stream = backend::Stream::borrow(runtime->runtime->shared_context(), reinterpret_cast<CUstream>(cu_stream));
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
    auto launch = prepare(*kernel, *config, args, arg_count);
    if (!launch) return fail(diagnostics, std::move(launch.error()));
    auto ok = kernel->kernel->launch(launch->config, std::span<const backend::Arg>(launch->args),
                                     stream != nullptr ? stream->launch_stream() : nullptr);
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_kernel_check(ptxgate_kernel* kernel, const ptxgate_launch_config* config, const ptxgate_arg* args,
                                    size_t arg_count, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_kernel_check", [&] {
    if (kernel == nullptr) return null_argument(diagnostics, "ptxgate_kernel_check", "kernel");
    if (config == nullptr) return null_argument(diagnostics, "ptxgate_kernel_check", "config");
    if (args == nullptr && arg_count != 0) return null_argument(diagnostics, "ptxgate_kernel_check", "args");
    auto launch = prepare(*kernel, *config, args, arg_count);
    if (!launch) return fail(diagnostics, std::move(launch.error()));
    validation::Verdict v = kernel->kernel->check(launch->config, std::span<const backend::Arg>(launch->args),
                                                  stream != nullptr ? stream->launch_stream() : nullptr);
    return finish(diagnostics, std::move(v.diagnostics), v.launchable ? PTXGATE_OK : PTXGATE_ERROR);
  });
}

}  // extern "C"
