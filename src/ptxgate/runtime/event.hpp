// Event: a CUDA event of a context, recorded on a stream and timed.
#pragma once

#include <expected>
#include <memory>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/owned.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

class Stream;

/// A CUDA event with timing enabled. Move-only.
class Event {
 public:
  [[nodiscard]] static std::expected<Event, diag::Diagnostics> create(std::shared_ptr<Context> ctx);
  Event() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  CUevent handle() const { return owned_->event; }
  Context* context() const { return owned_.context(); }
  /// Records the event on `stream`, or on the legacy default stream when null (PG3002 when the
  /// stream policy forbids it); a stream of another context is PG4008.
  [[nodiscard]] std::expected<void, diag::Diagnostics> record(const Stream* stream);
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize();
  /// Whether the work recorded before the event is complete (cuEventQuery), without waiting.
  [[nodiscard]] std::expected<bool, diag::Diagnostics> query();
  /// Makes work submitted later to `stream` (the legacy default stream when null; PG3002 when the
  /// stream policy forbids it) wait until the work recorded before this event is complete
  /// (cuStreamWaitEvent). The stream may be of another context: the driver orders across devices.
  [[nodiscard]] std::expected<void, diag::Diagnostics> wait_in(const Stream* stream);
  /// Milliseconds from `start` to this event (both recorded and complete); `start` of another
  /// context is PG4008.
  [[nodiscard]] std::expected<float, diag::Diagnostics> elapsed_ms_since(const Event& start);

 private:
  struct Handle {
    CUevent event = nullptr;
    bool held() const { return event != nullptr; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
};

}  // namespace ptxgate::runtime
