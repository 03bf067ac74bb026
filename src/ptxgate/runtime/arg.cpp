// Arg: a typed kernel argument as the caller gives it (buffer, scalar, tensor map), and its description in words.
#include "ptxgate/runtime/arg.hpp"

#include <limits>

#include <fmt/format.h>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/tensor_map.hpp"
#include "ptxgate/ir/float_bits.hpp"

namespace ptxgate::runtime {

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

}  // namespace ptxgate::runtime
