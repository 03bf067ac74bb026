// HostBuffer: page-locked host memory for asynchronous copies, with its access history.
#pragma once

#include <cstddef>
#include <expected>
#include <memory>
#include <span>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/owned.hpp"
#include "ptxgate/runtime/tracking.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// Page-locked host memory (cuMemAllocHost), for asynchronous copies, with its access history when
/// the context tracks dependencies. Move-only; freed after pending copies that use it.
class HostBuffer {
 public:
  [[nodiscard]] static std::expected<HostBuffer, diag::Diagnostics> allocate(std::shared_ptr<Context> ctx, size_t bytes);
  HostBuffer() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  /// The memory as it is, without waiting (for callers that synchronise themselves).
  std::byte* data() const { return owned_->data; }
  size_t size_bytes() const { return owned_->bytes; }
  Context* context() const { return owned_.context(); }
  BufferTrack* track() const { return owned_->track.get(); }

  /// Waits until pending copies that write this buffer are complete, then gives its elements to read.
  template <class T>
  [[nodiscard]] std::expected<std::span<const T>, diag::Diagnostics> read() const {
    if (auto ok = wait_for_device(AccessMode::read); !ok) return std::unexpected(ok.error());
    return std::span<const T>(reinterpret_cast<const T*>(data()), size_bytes() / sizeof(T));
  }
  /// Waits until pending copies that read or write this buffer are complete, then gives its elements to write.
  template <class T>
  [[nodiscard]] std::expected<std::span<T>, diag::Diagnostics> write() {
    if (auto ok = wait_for_device(AccessMode::write); !ok) return std::unexpected(ok.error());
    return std::span<T>(reinterpret_cast<T*>(data()), size_bytes() / sizeof(T));
  }
  /// Blocks until device work that conflicts with the host accessing the memory (`mode`) is complete.
  [[nodiscard]] std::expected<void, diag::Diagnostics> wait_for_device(AccessMode mode) const;

 private:
  struct Handle {
    std::byte* data = nullptr;
    size_t bytes = 0;
    std::shared_ptr<BufferTrack> track;
    bool held() const { return data != nullptr; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
};

}  // namespace ptxgate::runtime
