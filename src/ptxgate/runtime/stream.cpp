// Stream: create, borrow, synchronize, release (errors ignored: safe in a poisoned context).
#include "ptxgate/runtime/stream.hpp"

#include "ptxgate/runtime/internal/checked_records.hpp"

namespace ptxgate::runtime {

std::expected<Stream, diag::Diagnostics> Stream::create(std::shared_ptr<Context> ctx) {
  if (auto ok = ctx->enter("cuStreamCreate", "stream"); !ok) return std::unexpected(ok.error());
  CUstream stream = nullptr;
  if (auto ok = PTXGATE_CU(*ctx, "stream", cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING); !ok)
    return std::unexpected(ok.error());
  Stream s;
  s.owned_ = Owned<Handle>(std::move(ctx), Handle{stream});
  return s;
}

Stream Stream::borrow(std::shared_ptr<Context> ctx, CUstream handle) {
  Stream s;
  s.owned_ = Owned<Handle>(std::move(ctx), Handle{handle, false});
  return s;
}

void Stream::Handle::release(Context& ctx) noexcept {
  if (!owned) return;
  ctx.enter_to_release();
  ctx.tracker().stream_destroyed(stream);
  (void)ctx.api().cuStreamDestroy(stream);
}

std::expected<void, diag::Diagnostics> Stream::synchronize() {
  if (context() == nullptr) return std::unexpected(moved_from_stream("stream synchronize"));
  Context& ctx = *context();
  if (auto ok = ctx.enter("cuStreamSynchronize", "stream"); !ok) return ok;
  const CUstream stream = handle();
  const uint64_t mark = ctx.tracker().before_sync(stream);
  const uint64_t launched = ctx.launch_log().last();
  CheckedRecords* checked = ctx.checked_records_if_made();
  const uint64_t checked_mark = checked ? checked->mark() : 0;
  if (auto ok = PTXGATE_CU(ctx, "stream", cuStreamSynchronize, stream); !ok) return ok;
  ctx.tracker().after_sync(stream, mark);
  ctx.launch_log().stream_completed_through(stream, launched);
  // Checked launches on this stream report what they stopped now that they are complete (PG3804).
  if (checked) return checked->collect(stream, false, checked_mark);
  return {};
}

}  // namespace ptxgate::runtime
