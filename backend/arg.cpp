// Arg binding: buffer vs scalar, integer vs float, width and range, checked against a parameter.
#include "ptxgate/backend/arg.hpp"

#include <limits>

#include <fmt/format.h>

#include "ptxgate/backend/context.hpp"
#include "ptxgate/backend/tensor_map.hpp"
#include "ptxgate/ir/float_bits.hpp"

namespace ptxgate::backend {

Arg::Arg(const DeviceBuffer& buffer)
    : kind_(Kind::buffer),
      type_(buffer.element_type()),
      bits_(buffer.pointer()),
      buffer_bytes_(buffer.size_bytes()),
      track_(buffer.track()),
      context_(buffer.context()) {}

Arg Arg::buffer_range(const DeviceBuffer& buffer, uint64_t offset, uint64_t bytes, ir::Type element) {
  Arg a(buffer);
  a.type_ = element;
  a.bits_ = buffer.pointer() + offset;
  a.buffer_bytes_ = bytes;
  return a;
}

Arg Arg::device_pointer(uint64_t pointer, uint64_t size_bytes) {
  Arg a(ir::Type::u64, pointer);
  a.kind_ = Kind::buffer;
  a.type_ = ir::Type::void_;
  a.buffer_bytes_ = size_bytes;
  return a;
}

Arg::Arg(const TensorMap& map)
    : kind_(Kind::tensor_map), type_(ir::Type::tensor_map), bits_(reinterpret_cast<uint64_t>(map.words.data())) {}

std::string Arg::describe() const {
  if (kind_ == Kind::tensor_map) return "a tensor map";
  if (kind_ == Kind::buffer) {
    if (type_ == ir::Type::void_) return fmt::format("a buffer of {} bytes", buffer_bytes_);
    return fmt::format("a buffer of {} ({} bytes)", ir::type_name(type_), buffer_bytes_);
  }
  switch (type_) {
    case ir::Type::f32: {
      float f;
      uint32_t b = static_cast<uint32_t>(bits_);
      std::memcpy(&f, &b, 4);
      return fmt::format("an f32 scalar ({})", f);
    }
    case ir::Type::f64: {
      double d;
      std::memcpy(&d, &bits_, 8);
      return fmt::format("an f64 scalar ({})", d);
    }
    case ir::Type::int_literal:
      return fmt::format("an integer ({})", static_cast<int64_t>(bits_));
    case ir::Type::float_literal: {
      double d;
      std::memcpy(&d, &bits_, 8);
      return fmt::format("a real number ({})", d);
    }
    case ir::Type::f16:
    case ir::Type::bf16:
      return fmt::format("a {} scalar ({})", ir::type_name(type_), ir::half_value(static_cast<uint16_t>(bits_), type_));
    case ir::Type::i8:
    case ir::Type::i16:
    case ir::Type::i32:
    case ir::Type::i64:
      return fmt::format("an {} scalar ({})", ir::type_name(type_), static_cast<int64_t>(bits_));
    case ir::Type::bool_:
      return fmt::format("a bool scalar ({})", bits_ != 0);
    default:
      return fmt::format("a {} scalar ({})", ir::type_name(type_), bits_);
  }
}

namespace {

diag::Diagnostics bind_error(diag::Code code, std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// Whether the integer held by `arg` fits `target` (an integer type of 8 to 64 bits).
bool integer_fits(const Arg& arg, ir::Type target) {
  const unsigned bits = ir::bit_width(target);
  const int64_t s = static_cast<int64_t>(arg.bits());
  const uint64_t u = arg.bits();
  if ((ir::is_signed(arg.type()) || arg.type() == ir::Type::int_literal) && s < 0) {
    if (!ir::is_signed(target)) return false;
    return bits == 64 || s >= -(int64_t{1} << (bits - 1));
  }
  const uint64_t largest = bits == 64 ? (ir::is_signed(target) ? uint64_t{INT64_MAX} : UINT64_MAX)
                                      : (uint64_t{1} << (ir::is_signed(target) ? bits - 1 : bits)) - 1;
  return u <= largest;
}

}  // namespace

std::expected<BoundSlot, diag::Diagnostics> bind_argument(const Arg& arg, const contract::ParamInfo& param,
                                                          std::string_view kernel) {
  // Messages are only formatted on failure: binding is on the steady launch path.
  const auto where = [&] { return fmt::format("argument {} ('{}') of kernel '{}'", param.index, param.name, kernel); };
  const auto expected = [&] {
    return param.is_buffer ? fmt::format("a buffer of {}", ir::type_name(param.type))
                           : fmt::format("an {} scalar", ir::type_name(param.type));
  };
  BoundSlot slot;
  const bool map_param = !param.is_buffer && param.type == ir::Type::tensor_map;
  if (map_param != (arg.kind() == Arg::Kind::tensor_map)) {
    return std::unexpected(bind_error(
        diag::Code::tensor_map_argument_mismatch,
        fmt::format("{} is {}, but the parameter is {}", where(), arg.describe(),
                    map_param ? "a tensor_map" : expected()),
        map_param ? fmt::format("pass a tensor map (backend::encode_tensor_map over the tensor's buffer) for '{}'",
                                param.name)
                  : fmt::format("pass {} for '{}'; tensor maps bind to `tensor_map` parameters only", expected(),
                                param.name)));
  }
  if (map_param) {
    slot.size = 128;
    return slot;
  }
  if (param.is_buffer != (arg.kind() == Arg::Kind::buffer)) {
    return std::unexpected(bind_error(diag::Code::argument_kind_mismatch,
                                      fmt::format("{} is {}, but the parameter is {}", where(), arg.describe(), expected()),
                                      fmt::format("pass {} for '{}'", expected(), param.name)));
  }
  if (param.is_buffer) {
    if (arg.bits() == 0)
      return std::unexpected(bind_error(diag::Code::null_buffer, fmt::format("{} is a null device pointer", where()),
                                        "allocate the buffer before launching"));
    if (!buffer_type_fits(arg, param))
      return std::unexpected(bind_error(
          diag::Code::buffer_element_type_mismatch,
          fmt::format("{} is {}, but the parameter is {}", where(), arg.describe(), expected()),
          fmt::format("pass a buffer of {} elements for '{}', or a byte view (as_bytes) to bind the memory untyped",
                      ir::type_name(param.type), param.name)));
    uint64_t p = arg.bits();
    std::memcpy(slot.bytes, &p, 8);
    slot.size = 8;
    return slot;
  }
  if (bind_scalar(arg, param, slot)) return slot;
  const ir::Type want = param.type, have = arg.type();
  return std::unexpected(bind_error(
      diag::Code::argument_size_mismatch,
      fmt::format("{} is {}, but the parameter is {} ({} bytes)", where(), arg.describe(), expected(), param.size_bytes),
      want == ir::Type::f32 && have == ir::Type::f64 ? fmt::format("pass a float (e.g. 2.0f) for '{}'", param.name)
      : have == ir::Type::float_literal && ir::is_float(want)
          ? fmt::format("pass a value within the range of {} for '{}'", ir::type_name(want), param.name)
          : fmt::format("pass a value of type {} for '{}'", ir::type_name(want), param.name)));
}

bool bind_scalar(const Arg& arg, const contract::ParamInfo& param, BoundSlot& slot) noexcept {
  const ir::Type want = param.type;
  const ir::Type have = arg.type();
  uint64_t value = arg.bits();
  if (want == have) {
  } else if (ir::is_integer(want) && (ir::is_integer(have) || have == ir::Type::int_literal)) {
    if (!integer_fits(arg, want)) return false;
  } else if (have == ir::Type::float_literal && ir::is_float(want)) {
    double d;
    std::memcpy(&d, &value, 8);
    auto bits = ir::float_bits(d, want);
    if (!bits) return false;
    value = *bits;
  } else if (have == ir::Type::int_literal && ir::is_float(want)) {
    // One rounding: f32 straight from the integer, the halves through a double (exact below 2^53).
    const int64_t i = static_cast<int64_t>(value);
    auto bits = want == ir::Type::f32 ? ir::float_bits(static_cast<float>(i), want)
                                      : ir::float_bits(static_cast<double>(i), want);
    if (!bits) return false;
    value = *bits;
  } else if (want == ir::Type::f64 && have == ir::Type::f32) {
    float f;
    uint32_t b = static_cast<uint32_t>(value);
    std::memcpy(&f, &b, 4);
    double d = f;
    std::memcpy(&value, &d, 8);
  } else {
    return false;
  }
  slot.size = param.size_bytes != 0 ? param.size_bytes : ir::byte_size(want);
  // Little-endian: the slot's first `size` bytes are the value's low bytes.
  std::memcpy(slot.bytes, &value, 8);
  if (slot.size < 8) std::memset(slot.bytes + slot.size, 0, 8 - slot.size);
  return true;
}

}  // namespace ptxgate::backend
