// Stream: a non-blocking stream of a context, owned or borrowed (PyTorch's, CuPy's).
#pragma once

#include <expected>
#include <memory>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/owned.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// A non-blocking stream (CU_STREAM_NON_BLOCKING). Move-only. Destroying it with work pending is
/// safe: the work completes, and tracked buffers it used keep a point of it to wait for.
class Stream {
 public:
  [[nodiscard]] static std::expected<Stream, diag::Diagnostics> create(std::shared_ptr<Context> ctx);
  /// A stream made elsewhere in `ctx` (PyTorch's, CuPy's), used without owning it: reset() and
  /// the destructor forget it and never destroy it. The caller vouches that it is of `ctx`.
  static Stream borrow(std::shared_ptr<Context> ctx, CUstream handle);
  Stream() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  CUstream handle() const { return owned_->stream; }
  Context* context() const { return owned_.context(); }
  /// False for a borrowed stream.
  bool owned() const { return owned_->owned; }
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize();

 private:
  struct Handle {
    CUstream stream = nullptr;
    bool owned = true;  ///< false: borrowed, forgotten on release, never destroyed
    bool held() const { return stream != nullptr; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
};

}  // namespace ptxgate::runtime
