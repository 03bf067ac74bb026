// Stream-ordered device memory: buffers allocated and freed on streams from one memory pool
// (cuMemAllocFromPoolAsync / cuMemFreeAsync), with its usage, a limit checked before the driver, and trim.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <limits>
#include <memory>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// How Runtime::allocate gets device memory.
enum class AllocationMode : uint8_t {
  synchronous,     ///< cuMemAlloc / cuMemFree: allocation and free wait for the device
  stream_ordered,  ///< the runtime's MemoryPool: allocation and free are operations on a stream
};

struct PoolOptions {
  /// Bytes the pool keeps reserved when a synchronisation would return them to the device
  /// (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD). The default keeps everything: later allocations reuse it.
  uint64_t keep_reserved_bytes = std::numeric_limits<uint64_t>::max();
  /// Most bytes of live allocations at once (0: the device's memory). An allocation past it is
  /// PG4021 before the driver; a limit above the device's memory is PG4022.
  uint64_t limit_bytes = 0;
};

/// What a pool holds. The driver's numbers (reserved and used, with their peaks) count memory
/// whose stream-ordered free has not run yet as used; `live_bytes` counts buffers not yet given back.
struct PoolUsage {
  uint64_t reserved_bytes = 0;       ///< CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: taken from the device
  uint64_t reserved_peak_bytes = 0;  ///< CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
  uint64_t used_bytes = 0;           ///< CU_MEMPOOL_ATTR_USED_MEM_CURRENT: handed out, free not yet run
  uint64_t used_peak_bytes = 0;      ///< CU_MEMPOOL_ATTR_USED_MEM_HIGH
  uint64_t live_bytes = 0;           ///< buffers of this pool not yet destroyed (the limit counts these)
  uint64_t live_peak_bytes = 0;
  uint64_t allocations = 0;          ///< allocations made so far
};

/// The live-byte count of one pool, shared with its buffers (a buffer gives its bytes back when
/// destroyed, even after the pool).
struct PoolAccount {
  std::atomic<uint64_t> live{0};
  std::atomic<uint64_t> peak{0};
  std::atomic<uint64_t> allocations{0};
};

/// A memory pool of one device (cuMemPoolCreate). Buffers from it are ordinary DeviceBuffers of
/// MemoryKind::stream_ordered: with dependency tracking, work on other streams waits for the
/// allocation, and the free is placed on a stream ordered after every stream that used the buffer
/// (Tracker::release), so the pool hands the memory out again only after that work. Thread-safe.
class MemoryPool {
 public:
  /// PG4020 when the device has no memory pools, PG4022 for options out of range.
  [[nodiscard]] static std::expected<std::unique_ptr<MemoryPool>, diag::Diagnostics> create(
      std::shared_ptr<Context> ctx, PoolOptions options = {});
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  /// `bytes` (at least 1) allocated on `stream` (the legacy default stream when null): usable by
  /// work on that stream at once, and by other streams' work after it (with tracking). PG4008 for
  /// a stream of another context, PG3002 for a moved-from stream, PG4021 past the limit.
  [[nodiscard]] std::expected<DeviceBuffer, diag::Diagnostics> allocate(size_t bytes, const Stream* stream = nullptr);
  /// The driver's counters and the live bytes.
  [[nodiscard]] std::expected<PoolUsage, diag::Diagnostics> usage() const;
  /// Returns reserved memory beyond `keep_bytes` that no allocation uses to the device
  /// (cuMemPoolTrimTo). Memory whose free has not run yet on its stream is still in use.
  [[nodiscard]] std::expected<void, diag::Diagnostics> trim(uint64_t keep_bytes = 0);
  /// Resets the peaks (driver and live) to the current values.
  [[nodiscard]] std::expected<void, diag::Diagnostics> reset_peaks();

  CUmemoryPool handle() const { return pool_; }
  uint64_t limit_bytes() const { return limit_; }

 private:
  MemoryPool() = default;
  std::shared_ptr<Context> ctx_;
  CUmemoryPool pool_ = nullptr;
  uint64_t limit_ = 0;
  std::shared_ptr<PoolAccount> account_;
};

}  // namespace ptxgate::runtime
