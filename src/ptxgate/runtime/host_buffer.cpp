// HostBuffer: pinned host memory, released after pending copies; host access waits for the device.
#include "ptxgate/runtime/host_buffer.hpp"

#include <fmt/format.h>

namespace ptxgate::runtime {

std::expected<HostBuffer, diag::Diagnostics> HostBuffer::allocate(std::shared_ptr<Context> ctx, size_t bytes) {
  std::string subject = fmt::format("pinned host buffer of {} bytes", bytes);
  if (auto ok = ctx->enter("cuMemAllocHost", subject); !ok) return std::unexpected(ok.error());
  void* p = nullptr;
  ctx->tracker().reclaim();
  if (auto ok = PTXGATE_CU(*ctx, subject, cuMemAllocHost, &p, bytes == 0 ? 1 : bytes); !ok)
    return std::unexpected(ok.error());
  auto track = ctx->tracker().track(MemoryKind::pinned_host, reinterpret_cast<uint64_t>(p));
  HostBuffer h;
  h.owned_ = Owned<Handle>(std::move(ctx), Handle{static_cast<std::byte*>(p), bytes, std::move(track)});
  return h;
}

void HostBuffer::Handle::release(Context& ctx) noexcept {
  if (track) {
    ctx.tracker().release(std::move(track));
    return;
  }
  ctx.enter_to_release();
  (void)ctx.api().cuMemFreeHost(data);
}

std::expected<void, diag::Diagnostics> HostBuffer::wait_for_device(AccessMode mode) const {
  if (!owned_->track) return {};
  if (auto ok = context()->enter("cuEventSynchronize", "pinned host buffer"); !ok) return ok;
  return context()->tracker().host_access(*owned_->track, mode, "pinned host buffer");
}

}  // namespace ptxgate::runtime
