// The C API's kernel arguments: dtypes, the checks only the C API can make, scalars bound to their
// parameter's type, and the packed form of ptxgate_kernel_launch_packed.
#include "ptxgate/capi/internal/args.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "ptxgate/runtime/internal/arguments.hpp"
#include "ptxgate/capi/internal/handles.hpp"

namespace ptxgate::capi {
namespace {

/// The C dtypes in order of their values (UNKNOWN first).
constexpr ir::Type kDtypes[] = {ir::Type::void_, ir::Type::bool_, ir::Type::i32, ir::Type::u32, ir::Type::i64,
                                ir::Type::u64,   ir::Type::f32,   ir::Type::f64, ir::Type::i8,  ir::Type::u8,
                                ir::Type::i16,   ir::Type::u16,   ir::Type::f16, ir::Type::bf16};

diag::Diagnostics one(diag::Code code, std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// A scalar argument of the C API as given: its dtype and bits, or a real number.
runtime::Arg given_scalar(ir::Type type, uint64_t bits) {
  switch (type) {
    case ir::Type::bool_: return runtime::Arg(bits != 0);
    case ir::Type::i8: return runtime::Arg::scalar(type, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(bits))));
    case ir::Type::i16: return runtime::Arg::scalar(type, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(bits))));
    case ir::Type::i32: return runtime::Arg::scalar(type, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(bits))));
    case ir::Type::u8: return runtime::Arg::scalar(type, bits & 0xffu);
    case ir::Type::u16: case ir::Type::f16: case ir::Type::bf16: return runtime::Arg::scalar(type, bits & 0xffffu);
    case ir::Type::u32: case ir::Type::f32: return runtime::Arg::scalar(type, bits & 0xffffffffu);
    default: return runtime::Arg::scalar(type, bits);
  }
}

/// `arg` as a value of `param`'s own type when it binds (so the launch takes its steady path).
runtime::Arg bound_scalar(const runtime::Arg& arg, const contract::ParamInfo* param) {
  if (param == nullptr || param->is_buffer || param->type == ir::Type::tensor_map || arg.type() == param->type) return arg;
  runtime::BoundSlot slot;
  if (!runtime::internal::bind_scalar(arg, *param, slot)) return arg;  // the backend explains (PG3007)
  uint64_t bits = 0;
  std::memcpy(&bits, slot.bytes, 8);
  return given_scalar(param->type, bits);
}

}  // namespace

std::optional<ir::Type> ir_type_of(int32_t dtype) {
  if (dtype < 0 || static_cast<size_t>(dtype) >= std::size(kDtypes)) return std::nullopt;
  return kDtypes[dtype];
}

int32_t dtype_of(ir::Type type) {
  for (size_t i = 0; i < std::size(kDtypes); ++i)
    if (kDtypes[i] == type) return static_cast<int32_t>(i);
  return PTXGATE_DTYPE_UNKNOWN;
}

runtime::LaunchConfig launch_config(const ptxgate_launch_config& c) {
  runtime::LaunchConfig config;
  for (int i = 0; i < 3; ++i) {
    config.grid[i] = c.grid[i];
    config.block[i] = c.block[i];
  }
  config.dynamic_shared_bytes = c.dynamic_shared_bytes;
  config.cooperative = c.cooperative != 0;
  config.block_given = c.block[0] != 0 || c.block[1] != 0 || c.block[2] != 0;
  return config;
}

namespace {

std::expected<runtime::Arg, diag::Diagnostics> to_arg(const ptxgate_arg& a, size_t index, const runtime::Kernel& k,
                                                      int device) {
  const contract::KernelInfo& info = k.info();
  const contract::ParamInfo* param = index < info.params.size() ? &info.params[index] : nullptr;
  // Messages are formatted only on failure: this runs on every launch.
  const auto what = [&] {
    return param != nullptr ? fmt::format("argument {} ('{}') of kernel '{}'", index, param->name, info.name)
                            : fmt::format("argument {} of kernel '{}'", index, info.name);
  };
  const auto type = ir_type_of(a.dtype);
  if (!type)
    return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: dtype {} is not a ptxgate_dtype", what(), a.dtype),
                               "use one of PTXGATE_DTYPE_BOOL .. PTXGATE_DTYPE_BF16 (or UNKNOWN for an untyped buffer)"));
  switch (a.kind) {
    case PTXGATE_ARG_SCALAR:
      if (*type == ir::Type::void_)
        return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: a scalar needs its dtype", what()),
                                   "state the scalar's type (PTXGATE_DTYPE_I32 ...)"));
      return bound_scalar(given_scalar(*type, a.bits), param);
    case PTXGATE_ARG_REAL: {
      double d;
      std::memcpy(&d, &a.bits, 8);
      return bound_scalar(runtime::Arg::real(d), param);
    }
    case PTXGATE_ARG_INTEGER:
      return bound_scalar(runtime::Arg::integer(static_cast<int64_t>(a.bits)), param);
    case PTXGATE_ARG_TENSOR_MAP:
      if (a.tensor_map == nullptr)
        return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: 'tensor_map' is null", what()),
                                   "pass a ptxgate_tensor_map (ptxgate_tensor_map_encode)"));
      return runtime::Arg(a.tensor_map->map);
    case PTXGATE_ARG_BUFFER:
    case PTXGATE_ARG_POINTER: break;
    default:
      return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: kind {} is not a ptxgate_arg_kind", what(), a.kind),
                                 "use PTXGATE_ARG_BUFFER, _POINTER, _SCALAR, _REAL, _TENSOR_MAP or _INTEGER"));
  }
  const bool typed = *type != ir::Type::void_;
  // A buffer parameter of unknown element type (a pointer of foreign PTX) takes any array. The
  // same mismatch as the C++ binder's (src/ptxgate/runtime/arguments.cpp): PG3010.
  if (typed && param != nullptr && param->is_buffer && param->type != ir::Type::void_ && *type != param->type)
    return std::unexpected(one(diag::Code::buffer_element_type_mismatch,
                               fmt::format("{}: an array of {} elements for a buffer of {}", what(), ir::type_name(*type),
                                           ir::type_name(param->type)),
                               fmt::format("pass an array of {} (convert it first)", ir::type_name(param->type))));
  const ir::Type element = typed ? *type : (param != nullptr && param->is_buffer ? param->type : ir::Type::void_);
  const uint64_t element_bytes = std::max(1u, ir::byte_size(element));  // unknown type: elements are bytes
  if (a.kind == PTXGATE_ARG_POINTER) {
    if (a.device >= 0 && a.device != device)
      return std::unexpected(one(diag::Code::foreign_object,
                                 fmt::format("{}: the array is on device {}, the kernel's runtime on device {}", what(), a.device,
                                             device),
                                 fmt::format("move the array to device {}, or launch through a runtime of device {}", device,
                                             a.device)));
    return runtime::Arg::device_pointer(a.pointer, a.elements * element_bytes);
  }
  if (a.buffer == nullptr)
    return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: 'buffer' is null", what()), "pass a ptxgate_buffer"));
  const runtime::DeviceBuffer& buffer = a.buffer->buffer;
  if (a.elements == 0 && !typed) return runtime::Arg(buffer);
  const uint64_t elements = a.elements != 0 ? a.elements : buffer.size_bytes() / element_bytes;
  const uint64_t bytes = elements * element_bytes;
  if (bytes / element_bytes != elements || bytes > buffer.size_bytes())
    return std::unexpected(one(diag::Code::buffer_too_small,
                               fmt::format("{}: {} elements of {} do not fit its buffer of {} bytes", what(), elements,
                                           ir::type_name(element), buffer.size_bytes()),
                               fmt::format("pass at most {} elements, or a larger buffer", buffer.size_bytes() / element_bytes)));
  // A typed view of the buffer keeps the buffer's own type when it has one (binding checks it).
  const ir::Type held = buffer.element_type();
  return runtime::Arg::buffer_range(buffer, 0, bytes, held != ir::Type::void_ ? held : element);
}

}  // namespace

namespace {

/// Converts `count` arguments, `arg(i)` giving the i-th C argument, after the configuration.
template <typename ArgAt>
std::expected<void, diag::Diagnostics> prepare_each(const runtime::Kernel& kernel, int device,
                                                    const ptxgate_launch_config& config, size_t count, ArgAt arg,
                                                    Launch& l) {
  l.config = launch_config(config);
  l.args.clear();
  diag::Diagnostics errors;
  for (size_t i = 0; i < count; ++i) {
    auto a = to_arg(arg(i), i, kernel, device);
    if (!a) {
      errors.append(a.error());
      continue;
    }
    l.args.push_back(*a);
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return {};
}

/// One argument's two words (value, descriptor) of the packed form as a C argument.
ptxgate_arg arg_of_words(uint64_t value, uint64_t d) {
  ptxgate_arg a{};
  a.kind = static_cast<int32_t>(d & 0xf);
  a.dtype = static_cast<int32_t>((d >> 4) & 0xff);
  a.device = static_cast<int32_t>((d >> 12) & 0xff) - 1;
  a.elements = d >> 20;
  switch (a.kind) {
    case PTXGATE_ARG_BUFFER: a.buffer = reinterpret_cast<ptxgate_buffer*>(static_cast<uintptr_t>(value)); break;
    case PTXGATE_ARG_POINTER: a.pointer = value; break;
    case PTXGATE_ARG_TENSOR_MAP: a.tensor_map = reinterpret_cast<ptxgate_tensor_map*>(static_cast<uintptr_t>(value)); break;
    default: a.bits = value; break;
  }
  return a;
}

}  // namespace

std::expected<void, diag::Diagnostics> prepare(const runtime::Kernel& kernel, int device,
                                               const ptxgate_launch_config& config, const ptxgate_arg* args,
                                               size_t count, Launch& l) {
  return prepare_each(kernel, device, config, count, [&](size_t i) -> const ptxgate_arg& { return args[i]; }, l);
}

std::expected<void, diag::Diagnostics> unpack(const uint64_t* words, Unpacked& u) {
  const uint64_t count = words[0] & 0xffffffffu;
  const uint64_t flags = words[0] >> 32;
  if (count > 256 || (flags & ~uint64_t{1}) != 0)
    return std::unexpected(one(diag::Code::invalid_argument_spec,
                               fmt::format("ptxgate_kernel_launch_packed: word 0 is {:#x}: {} arguments (at most 256) and flags {:#x} "
                                           "(1: cooperative)",
                                           words[0], count, flags),
                               "write the argument count in the low 32 bits and only flag 1 above them"));
  for (int i = 0; i < 3; ++i) {
    u.config.grid[i] = words[1 + i];
    u.config.block[i] = words[4 + i];
  }
  u.config.dynamic_shared_bytes = words[7];
  u.config.cooperative = (flags & 1) != 0;
  u.stream = reinterpret_cast<ptxgate_stream*>(static_cast<uintptr_t>(words[8]));
  u.count = count;
  u.arg_words = words + 9;
  return {};
}

std::expected<void, diag::Diagnostics> prepare_packed(const runtime::Kernel& kernel, int device, const Unpacked& u,
                                                      Launch& l) {
  const uint64_t* w = u.arg_words;
  return prepare_each(kernel, device, u.config, u.count, [w](size_t i) { return arg_of_words(w[2 * i], w[2 * i + 1]); },
                      l);
}

std::expected<runtime::CopyEnd, diag::Diagnostics> copy_end(const ptxgate_copy_end* end, std::string_view call,
                                                           std::string_view role) {
  if (end == nullptr)
    return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: '{}' is null", call, role), fmt::format("pass the {}", role)));
  const auto type = ir_type_of(end->dtype);
  if (!type)
    return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: {} dtype {} is not a ptxgate_dtype", call, role, end->dtype),
                               "use a ptxgate_dtype (UNKNOWN: bytes)"));
  runtime::CopyEnd e;
  e.offset = end->offset;
  e.bytes = end->bytes;
  e.element = *type;
  e.element_size = std::max(1u, ir::byte_size(*type));
  switch (end->memory) {
    case PTXGATE_MEMORY_DEVICE:
      if (end->buffer == nullptr) break;
      e.where = runtime::CopyEnd::Where::device;
      e.device = &end->buffer->buffer;
      return e;
    case PTXGATE_MEMORY_PINNED:
      if (end->pinned == nullptr) break;
      e.where = runtime::CopyEnd::Where::pinned;
      e.pinned = &end->pinned->buffer;
      return e;
    case PTXGATE_MEMORY_HOST:
      if (end->host == nullptr && end->bytes != 0) break;
      e.where = runtime::CopyEnd::Where::pageable;
      e.pageable = static_cast<std::byte*>(end->host);
      return e;
    default:
      return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: {} memory {} is not a ptxgate_memory", call, role, end->memory),
                                 "use PTXGATE_MEMORY_DEVICE, _PINNED or _HOST"));
  }
  return std::unexpected(one(diag::Code::invalid_argument_spec, fmt::format("{}: the {}'s memory object is null", call, role),
                             "pass the ptxgate_buffer, ptxgate_host_buffer or host pointer the memory kind names"));
}

std::expected<void, diag::Diagnostics> same_element_type(const runtime::CopyEnd& dst, const runtime::CopyEnd& src,
                                                         std::string_view call) {
  if (dst.element == ir::Type::void_ || src.element == ir::Type::void_ || dst.element == src.element) return {};
  return std::unexpected(one(diag::Code::view_type_mismatch,
                             fmt::format("{}: copies {} elements into a view of {} elements", call,
                                         ir::type_name(src.element), ir::type_name(dst.element)),
                             "copy between ends of one element type, or view one end as bytes (dtype UNKNOWN)"));
}

std::expected<const runtime::Stream*, diag::Diagnostics> stream_object(ptxgate_stream* stream, runtime::Context& ctx,
                                                                       std::string_view operation,
                                                                       runtime::Stream& legacy) {
  if (stream != nullptr && !stream->legacy_default) return &stream->stream;
  runtime::Context& owner = stream != nullptr ? *stream->legacy_default : ctx;
  if (auto ok = owner.legacy_stream_allowed(operation); !ok) return std::unexpected(std::move(ok.error()));
  legacy = runtime::Stream::borrow(owner.shared_from_this(), nullptr);
  return &legacy;
}

}  // namespace ptxgate::capi
