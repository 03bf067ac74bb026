// The library API: Runtime (device, caches) -> Kernel (compiled, loaded) -> launch(config, {args}, stream).
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/event.hpp"
#include "ptxgate/runtime/host_buffer.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/runtime/launch.hpp"
#include "ptxgate/runtime/pool.hpp"
#include "ptxgate/runtime/launch_profile.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/module_cache/module_cache.hpp"

namespace ptxgate::runtime {

/// Geometry and options of one launch.
struct LaunchConfig {
  std::array<uint64_t, 3> grid{1, 1, 1};
  /// All 0 and `block_given` false: the kernel's @workgroup, else validation::kDefaultBlock (256).
  std::array<uint64_t, 3> block{0, 0, 0};
  uint64_t dynamic_shared_bytes = 0;
  bool cooperative = false;
  /// `block` was asked for explicitly: all 0 is then a zero block (PG3101), not the default.
  bool block_given = false;

  /// A 1-D launch of `grid` blocks of `block` threads.
  static LaunchConfig linear(uint64_t grid, uint64_t block) { return {{grid, 1, 1}, {block, 1, 1}, 0, false, true}; }
};

struct RuntimeOptions {
  int device = 0;                                 ///< CUDA device ordinal
  /// Automatic dependencies (src/ptxgate/runtime/tracking.hpp): launches and copies on one stream wait for
  /// conflicting work of other streams, and buffers freed while in use are freed after that work.
  /// Off for programs that order their streams themselves.
  bool track_dependencies = true;
  /// Where Runtime::allocate takes device memory: cuMemAlloc, or the runtime's stream-ordered
  /// MemoryPool (src/ptxgate/runtime/pool.hpp), created on first use with `pool`.
  AllocationMode allocation = AllocationMode::synchronous;
  PoolOptions pool;
  /// Checked launches (what CUDA_LAUNCH_BLOCKING is used for, with a message that names the
  /// launch): each launch synchronises its stream, and a fault is PG4050 naming the kernel, its
  /// geometry and the launch's sequence number. Without it a fault is reported by a later call,
  /// naming the launches that were in flight.
  bool checked_launches = false;
  /// Per-launch timing events and NVTX ranges (runtime/launch_profile.hpp): Runtime::profiler() then
  /// gives each launch's device time and a per-kernel summary.
  bool profile_launches = false;
  /// Whether work may run on the null (legacy default) stream: launches given no stream, the
  /// synchronous buffer helpers (DeviceBuffer::upload/download/fill_bytes, Runtime::upload/
  /// download) and events recorded on no stream. `require_explicit` blocks each of them with
  /// PG3002 before the driver (programs that capture graphs or want no implicit synchronisation).
  contract::StreamPolicy stream_policy = contract::StreamPolicy::allow_legacy_default;
  size_t loaded_module_capacity = 32;             ///< modules kept loaded per context (LRU)
  module_cache::ModuleCacheOptions cache;         ///< memory and disk tiers of compiled modules
  bool prefer_cubin = true;                       ///< load ptxas's cubin; PTX (driver JIT) as fallback
  unsigned opt_level = 3;
  /// Memory safety must be proven (LaunchPlan::require_memory_proof): a launch with an access not
  /// proven in bounds for its geometry, buffer sizes and scalar values is blocked (PG3802, an
  /// error), as is a kernel of another compiler, whose accesses cannot be analysed. Off: such
  /// accesses are merely not proven, and only a launch proven out of bounds is blocked (PG3801).
  bool require_memory_proof = false;
  /// Floating-point mode of kernels without @fp (docs/ir.md "Floating point"): contract (the
  /// default), exact or fast. Part of the module-cache key.
  ir::FpMode fp_mode = ir::FpMode::contract;
  /// Checked mode (docs/ir.md "Memory safety"): kernels compile with a guard on every access not
  /// proven in bounds for every launch (codegen::CodegenOptions::checked, part of the cache key).
  /// A launch's first access out of bounds (or misaligned TMA tile) touches no memory and the
  /// kernel goes on; the next synchronisation of its stream (Stream::synchronize,
  /// Runtime::synchronize) reports it as PG3804 naming the kernel, the launch, the source
  /// location, the thread, the block, the index and the length; the context stays usable. With
  /// checked_launches the launch itself reports it.
  bool checked = false;
};

class Runtime;
struct LoadedModule;
struct SteadyKey;
namespace internal {
struct ParamBinding;
}  // namespace internal

/// A compiled kernel loaded in the runtime's context. Launch from any thread.
class alignas(64) Kernel {
 public:
  /// Binds `args` to the signature (each argument once), validates (cached verdict when seen
  /// before) and launches on `stream` (the legacy default stream when null, PG3002 when the stream
  /// policy forbids it). A stream, buffer or span of another context is PG4008 naming both
  /// devices, a moved-from stream PG3002, before anything reaches the driver. With dependency tracking,
  /// buffers of `in` parameters are read and those of `out`/`inout` parameters written: the launch
  /// waits for conflicting work of other streams, and later work waits for it. The values of the
  /// scalars the kernel's memory-safety proof uses are part of the verdict: a launch that goes out
  /// of bounds for its values is blocked (PG3801) whatever launches of its shape came before.
  [[nodiscard]] std::expected<void, diag::Diagnostics> launch(const LaunchConfig& config, std::span<const Arg> args,
                                                const Stream* stream = nullptr);
  [[nodiscard]] std::expected<void, diag::Diagnostics> launch(const LaunchConfig& config, std::initializer_list<Arg> args,
                                                const Stream* stream = nullptr) {
    return launch(config, std::span<const Arg>(args.begin(), args.size()), stream);
  }
  /// The verdict for a launch without launching (arguments optional).
  validation::Verdict check(const LaunchConfig& config, std::span<const Arg> args = {}, const Stream* stream = nullptr);

  const contract::KernelInfo& info() const { return function_->info(); }
  const contract::KernelResources& resources() const { return function_->resources(); }
  LoadedFunction& function() { return *function_; }
  /// The context the kernel is loaded in.
  Context& context() const { return *ctx_; }
  LaunchCounters counters() const { return function_->counters(); }
  /// Where the compile found its module (memory, disk, compiled, joined).
  module_cache::CacheOutcome cache_outcome() const { return outcome_; }
  /// True when the module was loaded from a cubin, false for PTX (driver JIT).
  bool loaded_from_cubin() const;
  /// The module-cache entry the kernel was loaded from (PTX, cubin, KernelInfo, resources).
  const module_cache::CacheEntry& entry() const;

 private:
  friend class Runtime;
  Kernel(std::shared_ptr<Context> ctx, std::shared_ptr<const LoadedModule> module, LoadedFunction* function,
         module_cache::CacheOutcome outcome);
  /// launch() for arguments that match their parameters exactly (the steady path); kProofs: the
  /// kernel's memory-safety proof uses scalars, whose values join the SteadyKey.
  template <bool kProofs>
  [[gnu::always_inline]] [[nodiscard]] std::expected<void, diag::Diagnostics> launch_exact(const LaunchConfig& config,
                                                                    std::span<const Arg> args, const Stream* stream);
  /// launch_exact<true> in a function of its own (Kernel::launch inlines launch_exact<false>): each
  /// stays small enough for the compiler to inline the tracker's submit into it.
  [[gnu::noinline]] [[nodiscard]] std::expected<void, diag::Diagnostics> launch_exact_proofs(
      const LaunchConfig& config, std::span<const Arg> args, const Stream* stream);
  /// launch_exact's one-pass path for a shape off the launch cache's front: the cache's verdict,
  /// else a validation. `key`: the launch's SteadyKey (null when it does not pack), made the front
  /// when the shape is launchable.
  [[gnu::noinline]] [[nodiscard]] std::expected<void, diag::Diagnostics> launch_new_shape(
      const LaunchConfig& config, std::span<const Arg> args, const SteadyKey* key, std::span<void* const> slots,
      CUstream stream);
  /// launch() for arguments the steady path does not take: checks every object, explains errors.
  [[nodiscard]] std::expected<void, diag::Diagnostics> launch_general(const LaunchConfig& config,
                                                                      std::span<const Arg> args, const Stream* stream);
  [[nodiscard]] std::expected<void, diag::Diagnostics> launch_on(const LaunchConfig& config, std::span<const Arg> args,
                                                                  CUstream stream);
  /// launch() with buffers of peer devices (checked by launch_objects): ordered by both contexts' tracking.
  [[nodiscard]] std::expected<void, diag::Diagnostics> launch_across(const LaunchConfig& config,
                                                                     std::span<const Arg> args, CUstream stream);
  /// An argument count no launch has: the exact path of a kind the kernel does not have.
  static constexpr size_t kNoExactPath = ~size_t{0};
  // What the steady launch reads first, in one cache line.
  std::shared_ptr<Context> ctx_;
  internal::FunctionState* state_;
  const internal::ParamBinding* params_;  ///< the binder's (internal/arguments.hpp)
  /// The argument count that takes launch_exact<false> (kernels whose proof uses no scalar) or
  /// launch_exact<true>; kNoExactPath for the other, and for kernels the steady path cannot take.
  size_t exact_plain_ = kNoExactPath, exact_proofs_ = kNoExactPath;
  uint32_t key_words_ = 0;  ///< the SteadyKey's words; past SteadyKey::kMaxWords the front is not used
  LoadedFunction* function_;
  std::shared_ptr<const LoadedModule> module_;
  module_cache::CacheOutcome outcome_;
};

/// One device's context, the module cache and the loaded-module tier.
class Runtime {
 public:
  /// Opens the device (PG4001 without a driver, PG4004 without a device).
  [[nodiscard]] static std::expected<std::unique_ptr<Runtime>, diag::Diagnostics> create(RuntimeOptions options = {});
  /// A runtime over a context opened elsewhere (e.g. through a fake driver in tests).
  Runtime(std::shared_ptr<Context> ctx, RuntimeOptions options);
  ~Runtime();

  /// Compiles (through the module cache) and loads the module, then resolves `kernel`.
  [[nodiscard]] std::expected<std::shared_ptr<Kernel>, diag::Diagnostics> compile(const ir::Module& verified,
                                                                     std::string_view kernel);
  /// Parses and verifies `.pg` text first; `path` names it in diagnostics.
  [[nodiscard]] std::expected<std::shared_ptr<Kernel>, diag::Diagnostics> compile(std::string_view pg_text, std::string_view kernel,
                                                                     std::string_view path = "<text>");

  /// Loads `kernel` of a module made by another compiler (nvcc, NVRTC, Triton): PTX text, whose
  /// signature comes from its parameters (src/ptxgate/toolchain/ptx_entries.hpp: pointers are buffers of any
  /// element type) and which the driver JIT-compiles, or a cubin, whose parameter sizes come from
  /// its records (src/ptxgate/toolchain/cubin_entries.hpp: 8-byte parameters are taken as buffers). A
  /// non-empty `signature` restates the parameter types ("f32[], u64, f32";
  /// toolchain::apply_signature). The kernel launches through the same guarded path.
  /// PG1004, PG2001, PG2006, PG3005, PG3007, PG5001.
  [[nodiscard]] std::expected<std::shared_ptr<Kernel>, diag::Diagnostics> load_foreign(std::string_view image,
                                                                          std::string_view kernel,
                                                                          std::string_view path = "<ptx>",
                                                                          std::string_view signature = {});

  /// `bytes` of device memory as RuntimeOptions::allocation says: cuMemAlloc, or from the
  /// runtime's pool on the legacy default stream.
  [[nodiscard]] std::expected<DeviceBuffer, diag::Diagnostics> allocate(size_t bytes);
  /// The same on `stream`: a stream-ordered allocation there (usable by other streams' work after
  /// it, with tracking) in AllocationMode::stream_ordered; cuMemAlloc in synchronous mode.
  [[nodiscard]] std::expected<DeviceBuffer, diag::Diagnostics> allocate(size_t bytes, const Stream& stream);
  /// The runtime's memory pool, created on first use with RuntimeOptions::pool (PG4020, PG4022).
  [[nodiscard]] std::expected<MemoryPool*, diag::Diagnostics> pool();
  /// A device buffer of `count` elements of T, typed (element_type_of<T>), from where allocate takes memory.
  template <class T>
  [[nodiscard]] std::expected<DeviceBuffer, diag::Diagnostics> allocate_array(size_t count) {
    auto buffer = allocate(count * sizeof(T));
    if (buffer) buffer->retype(element_type_of<T>());
    return buffer;
  }
  /// A device buffer holding a copy of `host`, of T's element type (untyped for std::byte).
  template <class T>
  [[nodiscard]] std::expected<DeviceBuffer, diag::Diagnostics> upload(std::span<const T> host) {
    auto buf = allocate_array<T>(host.size());
    if (!buf) return buf;
    if (auto ok = buf->upload(std::as_bytes(host)); !ok) return std::unexpected(ok.error());
    return buf;
  }
  /// The buffer's elements as T: PG4009 when T is typed and the buffer holds another type
  /// (download<std::byte> reads any buffer).
  template <class T>
  [[nodiscard]] std::expected<std::vector<T>, diag::Diagnostics> download(const DeviceBuffer& buffer) {
    if (auto ok = buffer.viewable_as(element_type_of<T>(), "download"); !ok) return std::unexpected(ok.error());
    std::vector<T> out(buffer.size_bytes() / sizeof(T));
    if (auto ok = buffer.download(std::as_writable_bytes(std::span(out))); !ok) return std::unexpected(ok.error());
    return out;
  }
  [[nodiscard]] std::expected<Stream, diag::Diagnostics> create_stream() { return Stream::create(ctx_); }
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize() { return ctx_->synchronize(); }

  /// After a fault: resets the device's primary context and gives the runtime a fresh one where the
  /// driver allows it (Context::reopen). Every object made before it, by this runtime or another of the
  /// device — kernels, buffers, streams, events, graphs, pools — reports PG4010 when used and is released
  /// without reaching the driver; make them again from this runtime (compiles are module-cache hits).
  /// PG4011 when the driver gives the process no new context (an H100 with driver 580 after an illegal
  /// address: start a new process); PG4002 when the reset itself fails. The reset destroys what other
  /// libraries made in the primary context too (PyTorch's, CuPy's memory). Not to be called while other
  /// threads use objects of the device.
  [[nodiscard]] std::expected<void, diag::Diagnostics> reset();

  /// The launch profiler; null unless RuntimeOptions::profile_launches.
  Profiler* profiler() { return ctx_->profiler(); }
  Context& context() { return *ctx_; }
  std::shared_ptr<Context> shared_context() { return ctx_; }
  const validation::DeviceCaps& caps() const { return ctx_->caps(); }
  module_cache::ModuleCache& cache() { return *cache_; }
  /// Warnings gathered while compiling (cache PG41xx, front-end warnings); cleared by the call.
  diag::Diagnostics take_warnings();
  /// The codegen target for this device (ir::target_for_device): its own architecture when ptxgate
  /// compiles for it (then ptxas builds a cubin), else the newest supported one below it (PTX).
  ir::Target target() const { return target_; }

 private:
  [[nodiscard]] std::expected<std::shared_ptr<const LoadedModule>, diag::Diagnostics> load(
      std::shared_ptr<const module_cache::CacheEntry> entry, std::string_view path);
  /// Applies the options to ctx_ (tracking, checked launches, profiling, stream policy) and makes an
  /// empty loaded-module tier for it.
  void adopt_context();
  std::shared_ptr<Context> ctx_;
  RuntimeOptions options_;
  ir::Target target_;
  bool cubin_for_device_ = true;
  std::unique_ptr<module_cache::ModuleCache> cache_;
  std::unique_ptr<module_cache::OnceLruCache<module_cache::CacheKey, std::shared_ptr<const LoadedModule>,
                                             diag::Diagnostics>>
      loaded_;
  std::mutex warnings_mutex_;
  diag::Diagnostics warnings_;
  std::mutex pool_mutex_;
  std::unique_ptr<MemoryPool> pool_;
};

}  // namespace ptxgate::runtime
