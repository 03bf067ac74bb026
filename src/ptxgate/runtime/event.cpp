// Event: create, record, synchronize, time, release.
#include "ptxgate/runtime/event.hpp"

#include "ptxgate/runtime/stream.hpp"

namespace ptxgate::runtime {

std::expected<Event, diag::Diagnostics> Event::create(std::shared_ptr<Context> ctx) {
  if (auto ok = ctx->enter("cuEventCreate", "event"); !ok) return std::unexpected(ok.error());
  CUevent event = nullptr;
  if (auto ok = PTXGATE_CU(*ctx, "event", cuEventCreate, &event, CU_EVENT_DEFAULT); !ok)
    return std::unexpected(ok.error());
  Event e;
  e.owned_ = Owned<Handle>(std::move(ctx), Handle{event});
  return e;
}

void Event::Handle::release(Context& ctx) noexcept {
  ctx.enter_to_release();
  (void)ctx.api().cuEventDestroy(event);
}

std::expected<void, diag::Diagnostics> Event::record(const Stream* stream) {
  if (auto ok = context()->enter("cuEventRecord", "event"); !ok) return ok;
  if (stream == nullptr) {
    if (auto ok = context()->legacy_stream_allowed("event record"); !ok) return ok;
  } else if (auto ok = context()->owns(*stream, "event record", "the event was created in"); !ok) {
    return ok;
  }
  return PTXGATE_CU(*context(), "event", cuEventRecord, handle(), stream != nullptr ? stream->handle() : nullptr);
}

std::expected<void, diag::Diagnostics> Event::synchronize() {
  if (auto ok = context()->enter("cuEventSynchronize", "event"); !ok) return ok;
  return PTXGATE_CU(*context(), "event", cuEventSynchronize, handle());
}

std::expected<float, diag::Diagnostics> Event::elapsed_ms_since(const Event& start) {
  if (start.context() != nullptr && start.context() != context())
    return std::unexpected(
        context()->foreign_object("event timing", "the start event", *start.context(), "the end event belongs to"));
  float ms = 0;
  if (auto ok = PTXGATE_CU(*context(), "event timing", cuEventElapsedTime, &ms, start.handle(), handle()); !ok)
    return std::unexpected(ok.error());
  return ms;
}

std::expected<bool, diag::Diagnostics> Event::query() {
  if (auto ok = context()->enter("cuEventQuery", "event"); !ok) return std::unexpected(ok.error());
  const CUresult r = context()->api().cuEventQuery(handle());
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (auto ok = context()->check(r, "cuEventQuery", "event"); !ok) return std::unexpected(ok.error());
  return true;
}

std::expected<void, diag::Diagnostics> Event::wait_in(const Stream* stream) {
  if (auto ok = context()->healthy("cuStreamWaitEvent", "event"); !ok) return ok;
  CUstream s = nullptr;
  if (stream == nullptr) {
    if (auto ok = context()->legacy_stream_allowed("event wait"); !ok) return ok;
  } else if (stream->context() == nullptr) {
    return std::unexpected(moved_from_stream("event wait"));
  } else {
    s = stream->handle();
  }
  Context& ctx = stream != nullptr ? *stream->context() : *context();
  if (auto ok = ctx.make_current(); !ok) return ok;
  return PTXGATE_CU(ctx, "event wait", cuStreamWaitEvent, s, handle(), 0);
}

}  // namespace ptxgate::runtime
