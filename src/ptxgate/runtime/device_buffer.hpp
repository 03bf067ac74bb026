// DeviceBuffer: typed device memory of a known size with its access history; element_type_of<T>.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/owned.hpp"
#include "ptxgate/runtime/tracking.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/types.hpp"

namespace ptxgate::runtime {

struct PoolAccount;
class MemoryPool;

/// The element type of a C++ type as a buffer holds it (f32 for float, u64 for uint64_t, ...);
/// void_ for types with no kernel counterpart (std::byte, bytes of a struct): untyped.
template <class T>
constexpr ir::Type element_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return ir::Type::f32;
  else if constexpr (std::is_same_v<U, double>) return ir::Type::f64;
  else if constexpr (std::is_same_v<U, int32_t>) return ir::Type::i32;
  else if constexpr (std::is_same_v<U, uint32_t>) return ir::Type::u32;
  else if constexpr (std::is_same_v<U, int64_t> || std::is_same_v<U, long long>) return ir::Type::i64;
  else if constexpr (std::is_same_v<U, uint64_t> || std::is_same_v<U, unsigned long long>) return ir::Type::u64;
  else return ir::Type::void_;
}

/// Device memory of a known size, with its access history when the context tracks dependencies,
/// and an element type: a buffer allocated for floats binds only to `f32[]` parameters (PG3010)
/// and is viewed only as floats (PG4009); an untyped buffer (ir::Type::void_, from raw bytes)
/// binds to any buffer parameter. The explicit escape hatch is a byte view (stream_ops.hpp's
/// `as_bytes`), which is untyped whatever the buffer holds.
/// Move-only. Destroying it while pending work uses it is safe: the memory is freed after that work.
class DeviceBuffer {
 public:
  /// Allocates `bytes` (at least 1) of device memory holding elements of `element` (void_: untyped).
  [[nodiscard]] static std::expected<DeviceBuffer, diag::Diagnostics> allocate(
      std::shared_ptr<Context> ctx, size_t bytes, std::string_view what = "buffer", ir::Type element = ir::Type::void_);
  /// Takes ownership of `pointer` from `kind`'s allocator (stream-ordered memory: made on
  /// `home`, the stream it is freed on when the context does not track dependencies).
  static DeviceBuffer adopt(std::shared_ptr<Context> ctx, CUdeviceptr pointer, size_t bytes, MemoryKind kind,
                            CUstream home = nullptr, ir::Type element = ir::Type::void_);
  DeviceBuffer() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  CUdeviceptr pointer() const { return owned_->pointer; }
  size_t size_bytes() const { return owned_->bytes; }
  Context* context() const { return owned_.context(); }
  MemoryKind kind() const { return owned_->kind; }
  /// What the buffer holds: f32, u64, ..., or void_ for untyped memory.
  ir::Type element_type() const { return owned_->element; }
  /// Declares what the buffer holds (memory allocated untyped, e.g. from a pool): explicit, like
  /// every other way of changing how the memory is typed.
  void retype(ir::Type element) { owned_.get().element = element; }
  /// PG4009 when `operation` reads or writes this buffer through a view of element type `view`
  /// and both are typed but differ; untyped buffers and untyped (byte) views pass.
  [[nodiscard]] std::expected<void, diag::Diagnostics> viewable_as(ir::Type view, std::string_view operation) const;
  /// The access history (null when the context does not track dependencies).
  BufferTrack* track() const { return owned_->track.get(); }
  const std::shared_ptr<BufferTrack>& shared_track() const { return owned_->track; }

  /// Synchronous copies (the whole of `host`, which must fit) and fill, on the legacy default
  /// stream: tracked, so they come after the work of other streams that conflicts with them and
  /// later work on other streams comes after them. PG3002 when the context's stream policy
  /// forbids the legacy default stream (use copy_async / fill_async on a stream then).
  [[nodiscard]] std::expected<void, diag::Diagnostics> upload(std::span<const std::byte> host);
  [[nodiscard]] std::expected<void, diag::Diagnostics> download(std::span<std::byte> host) const;
  [[nodiscard]] std::expected<void, diag::Diagnostics> fill_bytes(uint8_t value);

 private:
  struct Handle {
    CUdeviceptr pointer = 0;
    size_t bytes = 0;
    MemoryKind kind = MemoryKind::device;
    ir::Type element = ir::Type::void_;
    CUstream home = nullptr;  ///< stream-ordered memory: the stream it was made on
    std::shared_ptr<BufferTrack> track;
    std::shared_ptr<PoolAccount> pool_account;  ///< the live-byte count of the pool it came from
    bool held() const { return pointer != 0; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
  friend class MemoryPool;
};

}  // namespace ptxgate::runtime
