// MemoryPool: one cuMemPoolCreate pool per runtime; allocations checked against the limit, then
// cuMemAllocFromPoolAsync on the stream, adopted as tracked stream-ordered DeviceBuffers.
#include "ptxgate/runtime/pool.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ptxgate::runtime {
namespace {

std::string device_name(const Context& ctx) { return fmt::format("device {} ({})", ctx.device(), ctx.caps().name); }

}  // namespace

std::expected<std::unique_ptr<MemoryPool>, diag::Diagnostics> MemoryPool::create(std::shared_ptr<Context> ctx,
                                                                                 PoolOptions options) {
  const std::string subject = fmt::format("memory pool of {}", device_name(*ctx));
  if (auto ok = ctx->enter("cuMemPoolCreate", subject); !ok) return std::unexpected(ok.error());
  int supported = 0;
  if (auto ok = PTXGATE_CU(*ctx, subject, cuDeviceGetAttribute, &supported,
                           CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, ctx->device());
      !ok)
    return std::unexpected(ok.error());
  diag::Diagnostics d;
  if (supported == 0)
    d.add(diag::Code::pool_unsupported,
          fmt::format("{} has no stream-ordered memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)",
                      device_name(*ctx)),
          {}, "use AllocationMode::synchronous (cuMemAlloc) on this device");
  const uint64_t total = ctx->live().total_memory_bytes;
  if (options.limit_bytes > total)
    d.add(diag::Code::pool_option_invalid,
          fmt::format("pool limit of {} bytes is above the {} bytes of {}", options.limit_bytes, total,
                      device_name(*ctx)),
          {}, "give PoolOptions::limit_bytes at most the device's memory, or 0 for all of it");
  if (d.has_errors()) return std::unexpected(std::move(d));

  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ctx->device();
  std::unique_ptr<MemoryPool> pool(new MemoryPool());
  if (auto ok = PTXGATE_CU(*ctx, subject, cuMemPoolCreate, &pool->pool_, &props); !ok)
    return std::unexpected(ok.error());
  pool->ctx_ = ctx;  // from here the destructor releases the pool
  cuuint64_t keep = options.keep_reserved_bytes;
  if (auto ok = PTXGATE_CU(*ctx, subject, cuMemPoolSetAttribute, pool->pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
      !ok)
    return std::unexpected(ok.error());
  pool->limit_ = options.limit_bytes == 0 ? total : options.limit_bytes;
  pool->account_ = std::make_shared<PoolAccount>();
  return pool;
}

MemoryPool::~MemoryPool() {
  if (pool_ == nullptr || !ctx_) return;
  // Allocations still live keep the pool's memory: the driver releases it after their frees.
  ctx_->enter_to_release();
  (void)ctx_->api().cuMemPoolDestroy(pool_);
}

std::expected<DeviceBuffer, diag::Diagnostics> MemoryPool::allocate(size_t bytes, const Stream* stream) {
  diag::Diagnostics d;
  if (stream != nullptr && stream->context() == nullptr) {
    d.add(diag::Code::null_stream, "stream-ordered allocation on a stream that was moved from or reset", {},
          "pass a stream made by Runtime::create_stream, or none for the legacy default stream");
    return std::unexpected(std::move(d));
  }
  if (stream != nullptr && stream->context() != ctx_.get()) {
    d.add(diag::Code::foreign_object,
          fmt::format("stream-ordered allocation of {} bytes from the pool of {} on a stream of {}", bytes,
                      device_name(*ctx_), device_name(*stream->context())),
          {}, "allocate on a stream made by the pool's own runtime");
    return std::unexpected(std::move(d));
  }
  const uint64_t n = bytes == 0 ? 1 : bytes;
  // Reserve the bytes against the limit first, so that concurrent allocations cannot pass it together.
  uint64_t live = account_->live.load(std::memory_order_relaxed);
  do {
    if (n > limit_ || live > limit_ - n) {
      d.add(diag::Code::pool_limit_exceeded,
            fmt::format("stream-ordered allocation of {} bytes: {} bytes of the pool are live and its limit is {} "
                        "bytes ({} over)",
                        n, live, limit_, live + n - limit_),
            {},
            "destroy buffers that are no longer needed (their memory is reused after the work that used them), or "
            "raise PoolOptions::limit_bytes");
      return std::unexpected(std::move(d));
    }
  } while (!account_->live.compare_exchange_weak(live, live + n, std::memory_order_relaxed));
  auto give_back = [&] { account_->live.fetch_sub(n, std::memory_order_relaxed); };

  const std::string subject = fmt::format("stream-ordered allocation of {} bytes", n);
  if (auto ok = ctx_->enter("cuMemAllocFromPoolAsync", subject); !ok) {
    give_back();
    return std::unexpected(ok.error());
  }
  ctx_->tracker().reclaim();
  CUstream s = stream != nullptr ? stream->handle() : nullptr;
  CUdeviceptr p = 0;
  if (auto ok = PTXGATE_CU(*ctx_, subject, cuMemAllocFromPoolAsync, &p, n, pool_, s); !ok) {
    give_back();
    return std::unexpected(ok.error());
  }
  const uint64_t now = live + n;
  uint64_t peak = account_->peak.load(std::memory_order_relaxed);
  while (now > peak && !account_->peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  account_->allocations.fetch_add(1, std::memory_order_relaxed);
  DeviceBuffer b = DeviceBuffer::adopt(ctx_, p, bytes, MemoryKind::stream_ordered, s);
  b.owned_.get().pool_account = account_;
  return b;
}

std::expected<PoolUsage, diag::Diagnostics> MemoryPool::usage() const {
  PoolUsage u;
  const std::string subject = fmt::format("memory pool of {}", device_name(*ctx_));
  if (auto ok = ctx_->enter("cuMemPoolGetAttribute", subject); !ok) return std::unexpected(ok.error());
  const std::pair<CUmemPool_attribute, uint64_t*> attributes[] = {
      {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &u.reserved_bytes},
      {CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &u.reserved_peak_bytes},
      {CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u.used_bytes},
      {CU_MEMPOOL_ATTR_USED_MEM_HIGH, &u.used_peak_bytes},
  };
  for (const auto& [attribute, out] : attributes) {
    cuuint64_t value = 0;
    if (auto ok = PTXGATE_CU(*ctx_, subject, cuMemPoolGetAttribute, pool_, attribute, &value); !ok)
      return std::unexpected(ok.error());
    *out = value;
  }
  u.live_bytes = account_->live.load(std::memory_order_relaxed);
  u.live_peak_bytes = account_->peak.load(std::memory_order_relaxed);
  u.allocations = account_->allocations.load(std::memory_order_relaxed);
  return u;
}

std::expected<void, diag::Diagnostics> MemoryPool::trim(uint64_t keep_bytes) {
  const std::string subject = fmt::format("trim of the memory pool of {} to {} bytes", device_name(*ctx_), keep_bytes);
  if (auto ok = ctx_->enter("cuMemPoolTrimTo", subject); !ok) return ok;
  ctx_->tracker().reclaim();
  return PTXGATE_CU(*ctx_, subject, cuMemPoolTrimTo, pool_, keep_bytes);
}

std::expected<void, diag::Diagnostics> MemoryPool::reset_peaks() {
  const std::string subject = fmt::format("memory pool of {}", device_name(*ctx_));
  if (auto ok = ctx_->enter("cuMemPoolSetAttribute", subject); !ok) return ok;
  for (CUmemPool_attribute attribute : {CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, CU_MEMPOOL_ATTR_USED_MEM_HIGH}) {
    cuuint64_t zero = 0;  // the only value these attributes take: the driver resets them to the current values
    if (auto ok = PTXGATE_CU(*ctx_, subject, cuMemPoolSetAttribute, pool_, attribute, &zero); !ok) return ok;
  }
  account_->peak.store(account_->live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return {};
}

}  // namespace ptxgate::runtime
