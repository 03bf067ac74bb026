// Typed spans over device and pinned host buffers; copies (host<->device, device<->device) and fills
// on a stream, ordered against other streams by the context's dependency tracking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <expected>
#include <span>
#include <type_traits>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/host_buffer.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// Elements [first, first + count) of a device buffer, as T. A view: the buffer must outlive it.
/// The range is checked where the span is used (PG4006), with the numbers. A view as a type with
/// a kernel counterpart (float, uint32_t, ...) of a buffer typed otherwise is refused where it is
/// copied or filled (PG4009); a view as bytes (`as_bytes`) or as a type without one is untyped.
template <class T>
class DeviceSpan {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>);

 public:
  /// The whole buffer (its size rounded down to whole elements).
  DeviceSpan(const DeviceBuffer& buffer)  // NOLINT(google-explicit-constructor): a buffer is a span of itself
      : buffer_(&buffer), first_(0), count_(buffer.size_bytes() / sizeof(T)) {}
  DeviceSpan(const DeviceBuffer& buffer, size_t first, size_t count) : buffer_(&buffer), first_(first), count_(count) {}

  const DeviceBuffer& buffer() const { return *buffer_; }
  size_t first() const { return first_; }
  size_t size() const { return count_; }
  size_t size_bytes() const { return count_ * sizeof(T); }
  CUdeviceptr pointer() const { return buffer_->pointer() + first_ * sizeof(T); }
  DeviceSpan subspan(size_t first, size_t count) const { return {*buffer_, first_ + first, count}; }
  /// The same range as bytes: the explicit untyped view (binds to any buffer parameter, copies
  /// to and from any buffer).
  DeviceSpan<std::byte> as_bytes() const { return {*buffer_, first_ * sizeof(T), size_bytes()}; }
  /// The element type this view reads the memory as: T's (void_ for bytes and types without a
  /// kernel counterpart, i.e. untyped).
  static constexpr ir::Type view_type() { return element_type_of<T>(); }
  /// As a kernel argument: the range's first element, its size, the buffer's access history,
  /// and the element type of the memory (the buffer's when it has one; untyped for an untyped view).
  operator Arg() const {  // NOLINT(google-explicit-constructor): natural {span, x, 2.0f} lists
    const ir::Type held = buffer_->element_type();
    const ir::Type element = view_type() == ir::Type::void_ ? ir::Type::void_
                             : held != ir::Type::void_      ? held
                                                            : view_type();
    return Arg::buffer_range(*buffer_, first_ * sizeof(T), size_bytes(), element);
  }

 private:
  const DeviceBuffer* buffer_;
  size_t first_;
  size_t count_;
};

/// The whole of `buffer` as bytes: the explicit untyped view.
inline DeviceSpan<std::byte> as_bytes(const DeviceBuffer& buffer) { return DeviceSpan<std::byte>(buffer); }

/// Elements [first, first + count) of a pinned host buffer, as T. A view: the buffer must outlive it.
template <class T>
class HostSpan {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>);

 public:
  HostSpan(const HostBuffer& buffer)  // NOLINT(google-explicit-constructor): a buffer is a span of itself
      : buffer_(&buffer), first_(0), count_(buffer.size_bytes() / sizeof(T)) {}
  HostSpan(const HostBuffer& buffer, size_t first, size_t count) : buffer_(&buffer), first_(first), count_(count) {}

  const HostBuffer& buffer() const { return *buffer_; }
  size_t first() const { return first_; }
  size_t size() const { return count_; }
  size_t size_bytes() const { return count_ * sizeof(T); }
  /// The elements without waiting for pending copies (HostBuffer::read/write wait).
  T* data() const { return reinterpret_cast<T*>(buffer_->data()) + first_; }
  HostSpan subspan(size_t first, size_t count) const { return {*buffer_, first_ + first, count}; }

 private:
  const HostBuffer* buffer_;
  size_t first_;
  size_t count_;
};

/// One end of a copy or fill, untyped: what the typed overloads below reduce to.
struct CopyEnd {
  enum class Where : uint8_t { device, pinned, pageable };
  Where where = Where::device;
  const DeviceBuffer* device = nullptr;  ///< Where::device
  const HostBuffer* pinned = nullptr;    ///< Where::pinned
  std::byte* pageable = nullptr;         ///< Where::pageable (ordinary host memory)
  size_t offset = 0;                     ///< bytes from the buffer's start
  size_t bytes = 0;
  size_t element_size = 1;               ///< for messages: ranges are reported in elements
  ir::Type element = ir::Type::void_;    ///< Where::device: the view's element type (void_: untyped)

  template <class T>
  static CopyEnd of(DeviceSpan<T> s) {
    return {Where::device, &s.buffer(), nullptr, nullptr, s.first() * sizeof(T), s.size_bytes(), sizeof(T),
            DeviceSpan<T>::view_type()};
  }
  template <class T>
  static CopyEnd of(HostSpan<T> s) {
    return {Where::pinned, nullptr, &s.buffer(), nullptr, s.first() * sizeof(T), s.size_bytes(), sizeof(T)};
  }
  template <class T>
  static CopyEnd of(std::span<T> s) {
    return {Where::pageable, nullptr, nullptr,
            const_cast<std::byte*>(reinterpret_cast<const std::byte*>(s.data())), 0, s.size_bytes(),
            sizeof(std::remove_const_t<T>)};
  }
};

/// The checks of copy_async and fill_async without a stream (graph copy nodes use them too):
/// ranges inside their buffers (PG4006), equal sizes and one device end (PG4007), buffers of
/// `ctx` (PG4008); fills of device buffers in whole elements of 1, 2 or 4 bytes.
diag::Diagnostics check_copy(const Context& ctx, const CopyEnd& dst, const CopyEnd& src);
diag::Diagnostics check_fill(const Context& ctx, const CopyEnd& dst, unsigned width);

/// Copies `src` to `dst` on `stream`, asynchronously for the host. Ranges are checked against
/// their buffers (PG4006) and must have the same size (PG4007); buffers and stream must be of one
/// context (PG4008, naming both devices), except a device buffer of another device where the
/// stream's context has peer access (ordered by both contexts' tracking; PG4070 without access,
/// copy_peer_async needs none); a typed view of a buffer of another element type is
/// PG4009; a moved-from stream is PG3002. With dependency tracking the copy waits for conflicting work on other
/// streams (the source's last writer; the destination's writer and readers) and later work
/// waits for it. Pageable host memory works but makes the driver copy synchronously; pinned
/// HostBuffers overlap with compute.
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_async(const Stream& stream, const CopyEnd& dst,
                                                                const CopyEnd& src);
/// Copies between device buffers of two contexts (usually two devices) with cuMemcpyPeerAsync on
/// `stream`, which belongs to the context of one end. Needs no peer access (the driver stages the
/// copy through the host where there is none). Both ends device buffers, and the stream of one
/// end's context (PG4072); ranges inside their buffers (PG4006); equal sizes (PG4007). Ordered by
/// both contexts' dependency tracking: the copy waits for conflicting work on either device, and
/// later conflicting work on either device waits for it.
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_peer_async(const Stream& stream, const CopyEnd& dst,
                                                                     const CopyEnd& src);
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_peer_async(const Stream& s, DeviceSpan<T> dst,
                                                                     DeviceSpan<T> src) {
  return copy_peer_async(s, CopyEnd::of(dst), CopyEnd::of(src));
}

/// Sets every `width`-byte element of `dst` (width 1, 2 or 4) to the low `width` bytes of `value`.
[[nodiscard]] std::expected<void, diag::Diagnostics> fill_async(const Stream& stream, const CopyEnd& dst,
                                                                uint32_t value, unsigned width);

template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_async(const Stream& s, DeviceSpan<T> dst, HostSpan<T> src) {
  return copy_async(s, CopyEnd::of(dst), CopyEnd::of(src));
}
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_async(const Stream& s, HostSpan<T> dst, DeviceSpan<T> src) {
  return copy_async(s, CopyEnd::of(dst), CopyEnd::of(src));
}
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_async(const Stream& s, DeviceSpan<T> dst, DeviceSpan<T> src) {
  return copy_async(s, CopyEnd::of(dst), CopyEnd::of(src));
}
/// From pageable host memory (the driver stages it before returning).
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_async(const Stream& s, DeviceSpan<T> dst,
                                                                std::type_identity_t<std::span<const T>> src) {
  return copy_async(s, CopyEnd::of(dst), CopyEnd::of(src));
}
/// Into pageable host memory (the driver returns after the copy).
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> copy_async(const Stream& s,
                                                                std::type_identity_t<std::span<T>> dst,
                                                                DeviceSpan<T> src) {
  return copy_async(s, CopyEnd::of(dst), CopyEnd::of(src));
}
/// Every element of `dst` set to `value` (elements of 1, 2 or 4 bytes).
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> fill_async(const Stream& s, DeviceSpan<T> dst, T value) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "fills set elements of 1, 2 or 4 bytes");
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return fill_async(s, CopyEnd::of(dst), bits, sizeof(T));
}

}  // namespace ptxgate::runtime
