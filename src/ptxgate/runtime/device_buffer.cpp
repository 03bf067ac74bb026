// DeviceBuffer: allocate, adopt, release after pending work, synchronous copies and fill.
#include "ptxgate/runtime/device_buffer.hpp"

#include <fmt/format.h>

#include "ptxgate/runtime/pool.hpp"

namespace ptxgate::runtime {

std::expected<DeviceBuffer, diag::Diagnostics> DeviceBuffer::allocate(std::shared_ptr<Context> ctx, size_t bytes,
                                                                      std::string_view what, ir::Type element) {
  std::string subject = fmt::format("{} of {} bytes", what, bytes);
  if (auto ok = ctx->enter("cuMemAlloc", subject); !ok) return std::unexpected(ok.error());
  ctx->tracker().reclaim();  // memory of buffers freed while in use, once their work is done
  CUdeviceptr ptr = 0;
  if (auto ok = PTXGATE_CU(*ctx, subject, cuMemAlloc, &ptr, bytes == 0 ? 1 : bytes); !ok)
    return std::unexpected(ok.error());
  return adopt(std::move(ctx), ptr, bytes, MemoryKind::device, nullptr, element);
}

DeviceBuffer DeviceBuffer::adopt(std::shared_ptr<Context> ctx, CUdeviceptr pointer, size_t bytes, MemoryKind kind,
                                 CUstream home, ir::Type element) {
  auto track = ctx->tracker().track(kind, pointer);
  if (track && kind == MemoryKind::stream_ordered) {
    // The allocation is an operation on `home`: work on other streams must come after it.
    BufferAccess made{track.get(), AccessMode::write};
    (void)ctx->tracker().submit(home, std::span(&made, 1), [] { return std::expected<void, diag::Diagnostics>{}; });
  }
  DeviceBuffer b;
  b.owned_ = Owned<Handle>(std::move(ctx), Handle{pointer, bytes, kind, element, home, std::move(track), nullptr});
  return b;
}

void DeviceBuffer::Handle::release(Context& ctx) noexcept {
  if (track) {
    ctx.tracker().release(std::move(track));
  } else {
    ctx.enter_to_release();
    if (kind == MemoryKind::stream_ordered)
      (void)ctx.api().cuMemFreeAsync(pointer, home);
    else
      (void)ctx.api().cuMemFree(pointer);
  }
  if (pool_account) pool_account->live.fetch_sub(bytes == 0 ? 1 : bytes, std::memory_order_relaxed);
}

std::expected<void, diag::Diagnostics> DeviceBuffer::viewable_as(ir::Type view, std::string_view operation) const {
  if (view == ir::Type::void_ || element_type() == ir::Type::void_ || view == element_type()) [[likely]] return {};
  diag::Diagnostics d;
  d.add(diag::Code::view_type_mismatch,
        fmt::format("{}: a view as {} of a device buffer of {} elements ({} bytes)", operation, ir::type_name(view),
                    ir::type_name(element_type()), size_bytes()),
        {},
        fmt::format("view the buffer as {}, its own element type, or as bytes (as_bytes, std::byte) to use its memory "
                    "untyped",
                    ir::type_name(element_type())));
  return std::unexpected(std::move(d));
}

static diag::Diagnostics copy_too_large(size_t host, size_t device) {
  diag::Diagnostics d;
  d.add(diag::Code::buffer_too_small,
        fmt::format("copy of {} bytes does not fit a device buffer of {} bytes", host, device), {},
        "allocate a buffer at least as large as the host data");
  return d;
}

std::expected<void, diag::Diagnostics> DeviceBuffer::upload(std::span<const std::byte> host) {
  if (host.size() > size_bytes()) return std::unexpected(copy_too_large(host.size(), size_bytes()));
  if (auto ok = context()->enter("cuMemcpyHtoD", "buffer upload"); !ok) return ok;
  if (auto ok = context()->legacy_stream_allowed("buffer upload"); !ok) return ok;
  BufferAccess access{track(), AccessMode::write};
  return context()->tracker().submit(nullptr, std::span(&access, 1), [&] {
    return PTXGATE_CU(*context(), "buffer upload", cuMemcpyHtoD, pointer(), host.data(), host.size());
  });
}

std::expected<void, diag::Diagnostics> DeviceBuffer::download(std::span<std::byte> host) const {
  if (host.size() > size_bytes()) return std::unexpected(copy_too_large(host.size(), size_bytes()));
  if (auto ok = context()->enter("cuMemcpyDtoH", "buffer download"); !ok) return ok;
  if (auto ok = context()->legacy_stream_allowed("buffer download"); !ok) return ok;
  BufferAccess access{track(), AccessMode::read};
  return context()->tracker().submit(nullptr, std::span(&access, 1), [&] {
    return PTXGATE_CU(*context(), "buffer download", cuMemcpyDtoH, host.data(), pointer(), host.size());
  });
}

std::expected<void, diag::Diagnostics> DeviceBuffer::fill_bytes(uint8_t value) {
  if (auto ok = context()->enter("cuMemsetD8", "buffer fill"); !ok) return ok;
  if (auto ok = context()->legacy_stream_allowed("buffer fill"); !ok) return ok;
  BufferAccess access{track(), AccessMode::write};
  return context()->tracker().submit(nullptr, std::span(&access, 1), [&] {
    return PTXGATE_CU(*context(), "buffer fill", cuMemsetD8, pointer(), value, size_bytes());
  });
}

}  // namespace ptxgate::runtime
