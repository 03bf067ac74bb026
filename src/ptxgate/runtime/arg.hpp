// Arg: one typed kernel argument (a device buffer or a scalar), bound against a kernel's signature.
#pragma once

#include <cstdint>
#include <cstring>
#include <expected>
#include <span>
#include <string>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::runtime {

class Context;
class DeviceBuffer;
struct BufferTrack;
struct TensorMap;

/// A kernel argument as the caller supplies it: `{y, x, 2.0f, n}` where y and x
/// are DeviceBuffers. Scalars keep their C++ type; binding checks it against the
/// parameter (buffer vs scalar, integer vs float, width; integers convert when
/// the value fits the parameter's type).
class Arg {
 public:
  /// tensor_map (Hopper): an encoded TMA descriptor for a `tensor_map` parameter, by value.
  enum class Kind : uint8_t { buffer, scalar, tensor_map };

  /// The whole buffer, of the buffer's element type.
  Arg(const DeviceBuffer& buffer);  // NOLINT(google-explicit-constructor): natural {a, b, 2.0f, n} lists
  /// `bytes` of `buffer` from byte `offset` (DeviceSpan's conversion), with the buffer's access
  /// history, of element type `element` (void_: an untyped view, e.g. as_bytes()).
  static Arg buffer_range(const DeviceBuffer& buffer, uint64_t offset, uint64_t bytes, ir::Type element);
  /// An encoded tensor map (runtime::encode_tensor_map), passed by value to a `tensor_map` parameter; the
  /// map must outlive the launch call (the driver copies its 128 bytes when the launch is enqueued).
  Arg(const TensorMap& map);  // NOLINT(google-explicit-constructor)
  /// A raw device pointer of a known size in bytes (0 = unknown); untyped, not tracked, of no context.
  static Arg device_pointer(uint64_t pointer, uint64_t size_bytes = 0);
  Arg(int32_t v) : Arg(ir::Type::i32, static_cast<uint64_t>(static_cast<int64_t>(v))) {}  // NOLINT
  Arg(uint32_t v) : Arg(ir::Type::u32, v) {}                                              // NOLINT
  Arg(int64_t v) : Arg(ir::Type::i64, static_cast<uint64_t>(v)) {}                        // NOLINT
  Arg(uint64_t v) : Arg(ir::Type::u64, v) {}                                              // NOLINT
  Arg(long long v) : Arg(static_cast<int64_t>(v)) {}                                      // NOLINT
  Arg(unsigned long long v) : Arg(static_cast<uint64_t>(v)) {}                            // NOLINT
  Arg(float v) : Arg(ir::Type::f32, bits_of(v)) {}                                        // NOLINT
  Arg(double v) : Arg(ir::Type::f64, bits_of(v)) {}                                       // NOLINT
  Arg(bool v) : Arg(ir::Type::bool_, v ? 1u : 0u) {}                                      // NOLINT
  /// A scalar of `type` (a number type or bool) from its bits: integers as 64-bit two's
  /// complement (sign-extended), floats as their IEEE bits in the low bits (f16/bf16 in 16).
  static Arg scalar(ir::Type type, uint64_t bits) { return Arg(type, bits); }
  /// A real number for a float parameter of any width, as an untyped float literal is in the IR:
  /// bound rounded to the parameter's type (f16, bf16, f32, f64), to nearest, ties to even
  /// (ir::float_bits); a value beyond that type's range is PG3007. A Python float is one.
  static Arg real(double v) { return Arg(ir::Type::float_literal, bits_of(v)); }
  /// An integer for a parameter of any number type, as an untyped integer literal is in the IR:
  /// bound to an integer parameter when the value fits it, to a float parameter as the nearest
  /// value of that type (ties to even); PG3007 otherwise. A Python int is one.
  static Arg integer(int64_t v) { return Arg(ir::Type::int_literal, static_cast<uint64_t>(v)); }

  Kind kind() const { return kind_; }
  /// A scalar's type, or a buffer's element type (void_ for untyped memory, which binds to any
  /// buffer parameter).
  ir::Type type() const { return type_; }
  /// Device pointer (buffers) or the value's bits, sign-extended for signed integers.
  uint64_t bits() const { return bits_; }
  uint64_t buffer_bytes() const { return buffer_bytes_; }
  /// Where bits() is stored: the argument-table slot of a scalar of exactly the parameter's type
  /// or a buffer, read by the driver as the parameter's first bytes (little-endian); for a tensor
  /// map, its 128 bytes.
  const uint64_t* value_address() const {
    return kind_ == Kind::tensor_map ? reinterpret_cast<const uint64_t*>(bits_) : &bits_;
  }
  /// The buffer's access history (buffers of a tracking context), else null.
  BufferTrack* track() const { return track_; }
  /// The context the buffer belongs to (buffers made by a runtime), else null.
  Context* context() const { return context_; }
  /// "a buffer of 4096 bytes", "a buffer of f64 (4096 bytes)", "an f32 scalar (2.5)".
  std::string describe() const;

 private:
  Arg(ir::Type type, uint64_t bits) : kind_(Kind::scalar), type_(type), bits_(bits) {}
  template <class T>
  static uint64_t bits_of(T v) {
    if constexpr (sizeof(T) == 4) {
      uint32_t b;
      std::memcpy(&b, &v, 4);
      return b;
    } else {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
  }
  Kind kind_ = Kind::scalar;
  ir::Type type_ = ir::Type::void_;
  uint64_t bits_ = 0;
  uint64_t buffer_bytes_ = 0;
  BufferTrack* track_ = nullptr;
  Context* context_ = nullptr;
};

/// The by-value bytes of one bound argument (8 bytes of storage; the driver reads
/// `size` of them).
struct BoundSlot {
  alignas(8) unsigned char bytes[8] = {};
  uint32_t size = 0;
};

/// Binds `arg` to parameter `param`: PG3006 for buffer vs scalar, PG3007 for a
/// scalar of the wrong family or width (or a value that does not fit), PG3009
/// for a null buffer, PG3010 for a typed buffer of another element type than the
/// parameter's, PG3712 for a tensor map and a parameter that is not one (or the reverse).
/// `kernel` names the kernel in messages. Every launch path binds through the same binder
/// (src/ptxgate/runtime/internal/arguments.hpp), which explains a failed binding with this function.
[[nodiscard]] std::expected<BoundSlot, diag::Diagnostics> bind_argument(const Arg& arg, const contract::ParamInfo& param,
                                                          std::string_view kernel);

}  // namespace ptxgate::runtime
