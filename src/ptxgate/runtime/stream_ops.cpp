// Copies and fills on a stream: ranges and contexts checked first, then one tracked driver call.
#include "ptxgate/runtime/stream_ops.hpp"

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/internal/peer_bridge.hpp"

namespace ptxgate::runtime {
namespace {

const char* where_name(CopyEnd::Where w) {
  switch (w) {
    case CopyEnd::Where::device: return "device buffer";
    case CopyEnd::Where::pinned: return "pinned host buffer";
    case CopyEnd::Where::pageable: return "host memory";
  }
  return "?";
}

Context* context_of(const CopyEnd& e) {
  if (e.where == CopyEnd::Where::device) return e.device->context();
  if (e.where == CopyEnd::Where::pinned) return e.pinned->context();
  return nullptr;
}

size_t capacity_of(const CopyEnd& e) {
  if (e.where == CopyEnd::Where::device) return e.device->size_bytes();
  if (e.where == CopyEnd::Where::pinned) return e.pinned->size_bytes();
  return e.bytes;
}

BufferTrack* track_of(const CopyEnd& e) {
  if (e.where == CopyEnd::Where::device) return e.device->track();
  if (e.where == CopyEnd::Where::pinned) return e.pinned->track();
  return nullptr;
}

/// PG4006 when `e` reaches past its buffer; PG4008 when it belongs to another context than the
/// stream; PG4009 when a typed view reads a buffer of another element type. With `peers`, a device
/// buffer of another device is allowed where `ctx` has peer access to it, else PG4070.
void check_end(const CopyEnd& e, const char* role, const Context& ctx, std::string_view operation,
               diag::Diagnostics& d, bool peers = false) {
  const size_t capacity = capacity_of(e);
  const size_t n = e.element_size == 0 ? 1 : e.element_size;
  if (e.offset > capacity || e.bytes > capacity - e.offset) {
    d.add(diag::Code::copy_out_of_range,
          fmt::format("{} range of a {}: elements [{}, {}) of {} bytes each reach byte {}, past its {} bytes", role,
                      where_name(e.where), e.offset / n, (e.offset + e.bytes) / n, n,
                      static_cast<unsigned long long>(e.offset) + e.bytes, capacity),
          {}, "pass a span inside the buffer, or allocate a larger buffer");
  }
  Context* owner = context_of(e);
  if (peers && owner != nullptr && owner != &ctx && e.where == CopyEnd::Where::device &&
      owner->ordinal() != ctx.ordinal())
    check_peer_access(ctx, *owner, fmt::format("{}: the {} device buffer", operation, role), d);
  else if (owner != nullptr && owner != &ctx)
    d.append(ctx.foreign_object(operation, fmt::format("the {} {}", role, where_name(e.where)), *owner,
                                "the stream belongs to"));
  if (e.where == CopyEnd::Where::device)
    if (auto ok = e.device->viewable_as(e.element, fmt::format("{} ({})", operation, role)); !ok) d.append(ok.error());
}

/// A copy's two ends as accesses: those of the stream's context for its tracker, the others
/// (peer device buffers) for submit_across.
struct Orders {
  Context& ctx;
  boost::container::small_vector<BufferAccess, 2> local;
  boost::container::small_vector<ForeignAccess, 2> foreign;
  Orders(Context& c, const CopyEnd& src, const CopyEnd& dst) : ctx(c) {
    add(src, AccessMode::read);
    add(dst, AccessMode::write);
  }
  void add(const CopyEnd& e, AccessMode mode) {
    Context* owner = context_of(e);
    if (owner != nullptr && owner != &ctx)
      foreign.push_back({owner, track_of(e), mode});
    else
      local.push_back({track_of(e), mode});
  }
  template <class Op>
  std::expected<void, diag::Diagnostics> submit(CUstream s, Op&& op) {
    if (foreign.empty()) [[likely]]
      return ctx.tracker().submit(s, std::span<const BufferAccess>(local.data(), local.size()), op);
    return submit_across(ctx, s, std::span<const BufferAccess>(local.data(), local.size()),
                         std::span<const ForeignAccess>(foreign.data(), foreign.size()), op);
  }
};

/// check_copy, with device buffers of peer devices allowed (`peers`: copy_async) or not (graph nodes).
diag::Diagnostics check_copy_ends(const Context& ctx, const CopyEnd& dst, const CopyEnd& src, bool peers) {
  diag::Diagnostics d;
  const std::string operation = fmt::format("copy of {} bytes", src.bytes);
  check_end(dst, "destination", ctx, operation, d, peers);
  check_end(src, "source", ctx, operation, d, peers);
  if (dst.bytes != src.bytes)
    d.add(diag::Code::copy_size_mismatch,
          fmt::format("copy of {} bytes from a {} into {} bytes of a {}", src.bytes, where_name(src.where), dst.bytes,
                      where_name(dst.where)),
          {}, "give the source and destination spans the same number of elements");
  if (dst.where != CopyEnd::Where::device && src.where != CopyEnd::Where::device)
    d.add(diag::Code::copy_size_mismatch, "copy between two host ranges: one end must be a device buffer", {},
          "copy host memory with std::memcpy");
  return d;
}

}  // namespace

diag::Diagnostics check_copy(const Context& ctx, const CopyEnd& dst, const CopyEnd& src) {
  return check_copy_ends(ctx, dst, src, false);
}

diag::Diagnostics check_fill(const Context& ctx, const CopyEnd& dst, unsigned width) {
  diag::Diagnostics d;
  if (dst.where != CopyEnd::Where::device)
    d.add(diag::Code::copy_out_of_range, fmt::format("fill of a {}: only device buffers are filled on a stream",
                                                     where_name(dst.where)),
          {}, "fill host memory with std::fill");
  else
    check_end(dst, "fill", ctx, fmt::format("fill of {} bytes", dst.bytes), d);
  if (width != 1 && width != 2 && width != 4)
    d.add(diag::Code::copy_size_mismatch, fmt::format("fill of {}-byte elements: the driver sets 1, 2 or 4 bytes", width));
  else if (dst.offset % width != 0 || dst.bytes % width != 0)
    d.add(diag::Code::copy_size_mismatch,
          fmt::format("fill of {}-byte elements over bytes [{}, {}), which is not whole elements", width, dst.offset,
                      dst.offset + dst.bytes));
  return d;
}

std::expected<void, diag::Diagnostics> copy_async(const Stream& stream, const CopyEnd& dst, const CopyEnd& src) {
  if (stream.context() == nullptr) return std::unexpected(moved_from_stream("copy"));
  Context& ctx = *stream.context();
  diag::Diagnostics d = check_copy_ends(ctx, dst, src, true);
  const bool to_device = dst.where == CopyEnd::Where::device, from_device = src.where == CopyEnd::Where::device;
  if (d.has_errors()) return std::unexpected(std::move(d));
  if (dst.bytes == 0) return {};

  const char* call = to_device && from_device ? "cuMemcpyDtoDAsync" : to_device ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
  const std::string subject = fmt::format("copy of {} bytes", dst.bytes);
  if (auto ok = ctx.enter(call, subject); !ok) return ok;
  auto host_pointer = [](const CopyEnd& e) -> std::byte* {
    return (e.where == CopyEnd::Where::pinned ? e.pinned->data() : e.pageable) + e.offset;
  };
  CUstream s = stream.handle();
  Orders orders(ctx, src, dst);
  return orders.submit(s, [&]() -> std::expected<void, diag::Diagnostics> {
    if (to_device && from_device)
      return PTXGATE_CU(ctx, subject, cuMemcpyDtoDAsync, dst.device->pointer() + dst.offset,
                        src.device->pointer() + src.offset, dst.bytes, s);
    if (to_device)
      return PTXGATE_CU(ctx, subject, cuMemcpyHtoDAsync, dst.device->pointer() + dst.offset, host_pointer(src),
                        dst.bytes, s);
    return PTXGATE_CU(ctx, subject, cuMemcpyDtoHAsync, host_pointer(dst), src.device->pointer() + src.offset,
                      dst.bytes, s);
  });
}

std::expected<void, diag::Diagnostics> copy_peer_async(const Stream& stream, const CopyEnd& dst, const CopyEnd& src) {
  if (stream.context() == nullptr) return std::unexpected(moved_from_stream("peer copy"));
  Context& ctx = *stream.context();
  diag::Diagnostics d;
  for (const auto& [end, role] : {std::pair{&dst, "destination"}, std::pair{&src, "source"}}) {
    if (end->where != CopyEnd::Where::device) {
      d.add(diag::Code::peer_copy_invalid,
            fmt::format("peer copy with a {} {}: both ends of a peer copy are device buffers", role,
                        where_name(end->where)),
            {}, "copy host memory with copy_async");
      continue;
    }
    const size_t capacity = end->device->size_bytes(), n = end->element_size == 0 ? 1 : end->element_size;
    if (end->offset > capacity || end->bytes > capacity - end->offset)
      d.add(diag::Code::copy_out_of_range,
            fmt::format("{} range of a device buffer: elements [{}, {}) of {} bytes each reach byte {}, past its {} "
                        "bytes",
                        role, end->offset / n, (end->offset + end->bytes) / n, n,
                        static_cast<unsigned long long>(end->offset) + end->bytes, capacity),
            {}, "pass a span inside the buffer, or allocate a larger buffer");
  }
  if (d.has_errors()) return std::unexpected(std::move(d));
  if (dst.bytes != src.bytes)
    d.add(diag::Code::copy_size_mismatch,
          fmt::format("peer copy of {} bytes into {} bytes", src.bytes, dst.bytes), {},
          "give the source and destination spans the same number of elements");
  Context* to = dst.device->context();
  Context* from = src.device->context();
  if (to != &ctx && from != &ctx)
    d.add(diag::Code::peer_copy_invalid,
          fmt::format("peer copy from device {} to device {} on a stream of device {}: the stream must belong to the "
                      "context of one end",
                      from->ordinal(), to->ordinal(), ctx.ordinal()),
          {}, "issue the copy on a stream of the source's or the destination's device");
  if (d.has_errors()) return std::unexpected(std::move(d));
  if (dst.bytes == 0) return {};
  const std::string subject =
      fmt::format("peer copy of {} bytes from device {} to device {}", dst.bytes, from->ordinal(), to->ordinal());
  if (auto ok = ctx.enter("cuMemcpyPeerAsync", subject); !ok) return ok;
  for (Context* c : {to, from})
    if (auto ok = c->healthy("cuMemcpyPeerAsync", subject); !ok) return ok;
  CUstream s = stream.handle();
  Orders orders(ctx, src, dst);
  return orders.submit(s, [&]() -> std::expected<void, diag::Diagnostics> {
    return PTXGATE_CU(ctx, subject, cuMemcpyPeerAsync, dst.device->pointer() + dst.offset, to->handle(),
                      src.device->pointer() + src.offset, from->handle(), dst.bytes, s);
  });
}

std::expected<void, diag::Diagnostics> fill_async(const Stream& stream, const CopyEnd& dst, uint32_t value,
                                                  unsigned width) {
  if (stream.context() == nullptr) return std::unexpected(moved_from_stream("fill"));
  Context& ctx = *stream.context();
  diag::Diagnostics d = check_fill(ctx, dst, width);
  if (d.has_errors()) return std::unexpected(std::move(d));
  if (dst.bytes == 0) return {};
  const std::string subject = fmt::format("fill of {} bytes", dst.bytes);
  if (auto ok = ctx.enter("cuMemsetD8Async", subject); !ok) return ok;
  const BufferAccess access{dst.device->track(), AccessMode::write};
  const CUdeviceptr p = dst.device->pointer() + dst.offset;
  const size_t n = dst.bytes / width;
  CUstream s = stream.handle();
  return ctx.tracker().submit(s, std::span(&access, 1), [&]() -> std::expected<void, diag::Diagnostics> {
    if (width == 1) return PTXGATE_CU(ctx, subject, cuMemsetD8Async, p, static_cast<unsigned char>(value), n, s);
    if (width == 2) return PTXGATE_CU(ctx, subject, cuMemsetD16Async, p, static_cast<unsigned short>(value), n, s);
    return PTXGATE_CU(ctx, subject, cuMemsetD32Async, p, value, n, s);
  });
}

}  // namespace ptxgate::runtime
