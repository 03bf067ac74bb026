// The guarded launch's steps: a function's launch state, the verdict step every path shares, the driver call.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ptxgate/runtime/internal/arguments.hpp"
#include "ptxgate/runtime/internal/launch_cache.hpp"
#include "ptxgate/runtime/launch.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::runtime::internal {

/// A slot of FunctionState that one thread uses at a time: a thread that finds it taken goes on
/// without it (the slot only saves work).
struct TryLock {
  std::atomic<bool> busy{false};
  bool try_lock() { return !busy.load(std::memory_order_relaxed) && !busy.exchange(true, std::memory_order_acquire); }
  void unlock() { busy.store(false, std::memory_order_release); }
};

/// What the launch path keeps of one LoadedFunction: its handle, counters, KernelInfo and
/// resources, its argument binder and its launch cache.
struct alignas(64) FunctionState {
  FunctionState(CUfunction handle, contract::KernelInfo info, contract::KernelResources resources,
                diag::Location location);
  // What every launch reads comes first, in one cache line of its own.
  CUfunction handle = nullptr;
  /// Unique for the process lifetime (never reused), so a ticket of a destroyed function is
  /// never taken for one of a new function at the same address.
  const uint64_t id;
  /// Launches the launch cache knew that reached the driver: both cached and driver calls (one
  /// counter where a steady launch would otherwise count two).
  std::atomic<uint64_t> cached_driver_calls{0};
  std::atomic<uint32_t> log_name{0};  ///< the name's number in its context's LaunchLog (0: not yet)
  bool checks_alignment = false;      ///< aligned_buffers is not empty
  bool has_hidden_arguments = false;  ///< the kernel declares hidden arguments (HiddenArguments)
  bool checked = false;               ///< compiled in checked mode (KernelInfo::checked): lengths and a record
  std::atomic<bool> shared_opt_in_done{false};
  /// Launches that validated, cache hits that did not reach the driver, other driver calls, blocked.
  std::atomic<uint64_t> validated{0}, cached{0}, driver_calls{0}, blocked{0};
  contract::KernelInfo info;
  contract::KernelResources resources;
  diag::Location location;
  ArgumentBinder binder;
  /// (parameter index, alignment - 1) of each buffer the kernel accesses with vector loads or
  /// stores (ParamInfo::alignment); empty for every other kernel, which then pays one test.
  std::vector<std::pair<uint32_t, uint64_t>> aligned_buffers;
  LaunchCache cache;
  /// The launch a new grid's verdict is derived from (LaunchPath::launch_new_grid): the steady
  /// shape Kernel::launch last validated afresh, its key, and what check_launch kept of it. Used by
  /// one thread at a time (`busy`); a thread that finds it taken validates as before.
  struct GridBaseSlot : TryLock {
    bool valid = false;  ///< `key`'s verdict was launchable and `facts` hold it
    SteadyKey key;
    uint64_t mix = 0;  ///< the LaunchShape::grid_free_mix() of `key`'s shape
    validation::GridBase facts;
  } grid_base;
  /// The plan launch_cuda_function last launched the function with, and that launch's verdict as a
  /// ticket (LaunchPath::remember): the same plan with the same proof scalars launches by it at once
  /// (LaunchPath::launch_remembered). One thread at a time; a thread that finds it taken takes the
  /// launch cache, and threads that launch the function with different plans in turn replace it.
  /// The lock, the validity and the remembered plan's fields other than its arguments share one
  /// cache line (a guarded launch compares them all): `flags` packs the plan's booleans and stream
  /// policy (GuardedSlot::flags_of).
  struct alignas(64) GuardedSlot : TryLock {
    bool valid = false;
    uint32_t flags = 0;
    std::array<uint64_t, 3> grid{}, block{};
    uint64_t dynamic_shared_bytes = 0;
    std::vector<contract::ArgumentDesc> arguments;  ///< the plan's arguments, byte for byte
    LaunchTicket ticket;
    static uint32_t flags_of(const contract::LaunchPlan& p) {
      return uint32_t{p.block_given} | uint32_t{p.cooperative} << 1 | uint32_t{p.arguments_known} << 2 |
             uint32_t{p.stream_is_null} << 3 | uint32_t{p.function_is_null} << 4 |
             uint32_t{p.require_memory_proof} << 5 | uint32_t{p.list_unproven_accesses} << 6 |
             uint32_t{static_cast<uint8_t>(p.stream_policy)} << 8;
    }
    /// Whether `p` agrees with the remembered plan in every field but its arguments. A plan with
    /// required elements is never remembered (its shape is not cacheable), nor launched by a
    /// remembered verdict: its elements are checked by a validation every time.
    bool same_header(const contract::LaunchPlan& p) const {
      const uint64_t differ = (p.grid[0] ^ grid[0]) | (p.grid[1] ^ grid[1]) | (p.grid[2] ^ grid[2]) |
                              (p.block[0] ^ block[0]) | (p.block[1] ^ block[1]) | (p.block[2] ^ block[2]) |
                              (p.dynamic_shared_bytes ^ dynamic_shared_bytes) | (flags_of(p) ^ flags);
      return differ == 0 && p.required_elements.empty();
    }
  } guarded;
};

/// The geometry of a launch the driver is called with.
struct DriverGeometry {
  std::array<unsigned, 3> grid{0, 0, 0};
  std::array<unsigned, 3> block{0, 0, 0};
  unsigned dynamic_shared_bytes = 0;
  bool cooperative = false;
};

/// The guarded launch's steps. The public ones reach no driver launch entry point: every path
/// with a plan (Kernel::launch's, launch_cuda_function's, a graph node's) takes its verdict from
/// admit(). The private ones trust what they are given (a shape built for exactly these slots, a
/// front key, a ticket) and end in the one driver call, drive(): only the two
/// launch_cuda_function overloads and Kernel::launch reach them.
class LaunchPath {
 public:
  static FunctionState& state(LoadedFunction& fn) { return *fn.state_; }
  static const FunctionState& state(const LoadedFunction& fn) { return *fn.state_; }

  /// A launch plan's fields that come from the configuration, the context and the stream kind
  /// (its arguments come from the binder).
  static void plan_header(contract::LaunchPlan& plan, const LaunchConfig& config, const Context& ctx,
                          const FunctionState& fn, bool stream_is_null);
  /// The same fields as a LaunchShape's flags, for a path that builds the shape without a plan.
  static validation::LaunchShape::Flags shape_flags(const LaunchConfig& config, const Context& ctx,
                                                    const FunctionState& fn, bool stream_is_null);

  /// The verdict of a launch: the launch cache's for `shape` (LaunchShape::of(plan)), else a fresh
  /// validation whose launchable verdict goes into the cache (`known_miss`: the caller just missed
  /// it). The block it runs with, and whether the cache knew it. A blocked launch returns every
  /// diagnostic; warnings of a fresh launchable verdict go to `warnings` when given. With
  /// `proof_slots` (a raw argument table whose proof scalars `shape` holds, plan without them), a
  /// validation reads those values from the slots into a copy of the plan first. With `steady`
  /// (Kernel::launch's key of the same shape), a fresh validation becomes the function's GridBaseSlot.
  struct Admitted {
    std::array<unsigned, 3> block{0, 0, 0};
    bool cache_hit = false;
  };
  [[nodiscard]] static std::expected<Admitted, diag::Diagnostics> admit(
      Context& ctx, FunctionState& fn, const contract::LaunchPlan& plan, const validation::LaunchShape& shape,
      diag::Diagnostics* warnings, bool known_miss = false, std::span<void* const> proof_slots = {},
      const SteadyKey* steady = nullptr);
  /// PG3011 unless every buffer of the kernel's aligned_buffers starts at a multiple of its
  /// alignment: the launch cache knows shapes, not addresses, so every launch of such a kernel
  /// checks its slots (drive() for direct launches, a graph node when it is prepared).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> check_addresses(FunctionState& fn,
                                                                              std::span<void* const> args) {
    if (!fn.checks_alignment) [[likely]]
      return {};
    return check_alignment(fn, args);
  }
  /// A fresh verdict with the live caps, the function's attributes and the driver's occupancy.
  static validation::Verdict validate(Context& ctx, FunctionState& fn, const contract::LaunchPlan& plan,
                                      bool report_warnings, validation::GridBase* base = nullptr);

 private:
  friend class runtime::Kernel;
  friend std::expected<void, diag::Diagnostics> runtime::launch_cuda_function(Context&, LoadedFunction&,
                                                                              const contract::LaunchPlan&,
                                                                              std::span<void* const>, CUstream,
                                                                              diag::Diagnostics*, LaunchTicket*);
  friend std::expected<void, diag::Diagnostics> runtime::launch_cuda_function(Context&, LoadedFunction&,
                                                                              const LaunchTicket&,
                                                                              std::span<void* const>, CUstream);

  /// launch_cuda_function(plan)'s body for a caller that holds the plan's shape (`shape` must
  /// equal LaunchShape::of(plan)): admit, then drive. `steady`, when given, is the same shape as
  /// Kernel::launch's SteadyKey: a launchable verdict makes it the launch cache's front.
  /// `proof_from_slots`: `shape` holds the values of the proof scalars read from `args`, the plan
  /// does not (admit's proof_slots). `plan_of_call`: the caller built the plan from this very call
  /// (Kernel::launch), so it describes `args` and `stream` by construction; a caller's own plan
  /// (launch_cuda_function) is compared with them first (PG9000 when they differ).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> launch(
      Context& ctx, FunctionState& fn, const contract::LaunchPlan& plan, const validation::LaunchShape& shape,
      std::span<void* const> args, CUstream stream, diag::Diagnostics* warnings, LaunchTicket* ticket,
      const SteadyKey* steady = nullptr, bool known_miss = false, bool proof_from_slots = false,
      bool plan_of_call = false);
  /// Kernel::launch's path for a shape off the front: when the launch cache knows `shape` (built
  /// by the caller for exactly `args`, no slot null), the launch, and `steady` (when given)
  /// becomes the front; nothing on a miss or in a poisoned context (the caller takes the path
  /// that reports them).
  [[nodiscard]] static std::optional<std::expected<void, diag::Diagnostics>> launch_cached(
      Context& ctx, FunctionState& fn, const validation::LaunchShape& shape, std::span<void* const> args,
      CUstream stream, const SteadyKey* steady);
  /// Kernel::launch's steady path: when `key` (built by the caller for exactly `args`, no slot
  /// null) is the launch cache's front, the launch; nothing otherwise or in a poisoned context.
  [[nodiscard]] static std::optional<std::expected<void, diag::Diagnostics>> launch_steady(
      Context& ctx, FunctionState& fn, const SteadyKey& key, std::span<void* const> args, CUstream stream);
  /// Kernel::launch's path for a steady shape off the front (`shape`: the same shape as `key`,
  /// built for exactly `args`, no slot null) that differs from the function's GridBaseSlot in its
  /// grid only: the launch cache's verdict (looked up with the slot's grid-free tag mix, `missed`
  /// set when it misses), else one derived from the slot's launch (validation::check_new_grid:
  /// only what reads the grid is checked again), which a launchable verdict caches; either way
  /// `key` becomes the front and the launch goes ahead. Nothing otherwise (the slot taken, another
  /// shape, a derived verdict that is not launchable): the caller takes launch_cached's path and
  /// validates afresh, which reports the launch whole.
  [[nodiscard]] static std::optional<std::expected<void, diag::Diagnostics>> launch_new_grid(
      Context& ctx, FunctionState& fn, const SteadyKey& key, validation::LaunchShape& shape,
      std::span<void* const> args, CUstream stream, bool& missed);
  /// launch_cached's launch of a shape the cache knew, running with `block`.
  [[nodiscard]] static std::expected<void, diag::Diagnostics> launch_known(Context& ctx, FunctionState& fn,
                                                                           const validation::LaunchShape& shape,
                                                                           const std::array<unsigned, 3>& block,
                                                                           std::span<void* const> args, CUstream stream,
                                                                           const SteadyKey* steady);
  /// launch_cuda_function(plan)'s steady path: when `fn` was last launched (FunctionState::guarded) with a plan
  /// byte-equal to `plan` (its arguments' descriptions compared as bytes: equal bytes are equal
  /// descriptions, and descriptions equal in value but not in their padding only miss) and the
  /// proof scalars in `args` have the values that launch was validated with, the launch with that
  /// launch's verdict (a LaunchTicket, as relaunch()); nothing otherwise, or in a poisoned context
  /// (the caller takes the path that reports them). The plan's shape is then neither encoded nor
  /// looked up: the verdict of a shape never changes for one function, as the launch cache assumes.
  [[nodiscard]] static std::optional<std::expected<void, diag::Diagnostics>> launch_remembered(
      Context& ctx, FunctionState& fn, const contract::LaunchPlan& plan, std::span<void* const> args, CUstream stream);
  /// Makes `plan`, admitted as `ticket` says, `fn`'s remembered plan (unless another thread holds the slot).
  static void remember(FunctionState& fn, const contract::LaunchPlan& plan, const LaunchTicket& ticket);
  /// launch_cuda_function(ticket)'s body.
  [[nodiscard]] static std::expected<void, diag::Diagnostics> relaunch(Context& ctx, FunctionState& fn,
                                                                       const LaunchTicket& ticket,
                                                                       std::span<void* const> args, CUstream stream);
  /// The driver call of an admitted launch: the address check, the hidden arguments (a checked
  /// kernel's buffer lengths from `lengths`: the launch's LaunchShape, SteadyKey or LaunchTicket,
  /// and its record), then cuLaunchKernel / cuLaunchCooperativeKernel, the launch log, profiling,
  /// checked mode's record and checked launches. `cache_hit`: the launch cache knew the shape
  /// (counted as cached when it reaches the driver or is blocked here).
  template <class Lengths>
  [[nodiscard]] static std::expected<void, diag::Diagnostics> drive(Context& ctx, FunctionState& fn,
                                                                    const DriverGeometry& geometry,
                                                                    const Lengths& lengths,
                                                                    std::span<void* const> args, CUstream stream,
                                                                    bool cache_hit);
  /// drive's driver call with the final argument table; `hidden`: the values its hidden slots
  /// point at (null when the kernel has none).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> drive_table(Context& ctx, FunctionState& fn,
                                                                          const DriverGeometry& geometry, void** table,
                                                                          CUstream stream, bool cache_hit,
                                                                          const HiddenArguments* hidden);
  /// drive_table's step after a checked kernel's launch `sequence` reached the driver: the record
  /// slot is registered with the context's CheckedRecords, and read at once in checked-launch mode.
  [[gnu::noinline]] [[nodiscard]] static std::expected<void, diag::Diagnostics> checked_launched(
      Context& ctx, FunctionState& fn, const DriverGeometry& geometry, const HiddenArguments& hidden,
      uint64_t sequence, CUstream stream);
  /// A checked kernel's buffer lengths from what its launch was admitted with.
  static void checked_lengths(const FunctionState&, const validation::LaunchShape& shape, HiddenArguments& out) {
    ArgumentBinder::checked_lengths(shape, out);
  }
  static void checked_lengths(const FunctionState& fn, const SteadyKey& key, HiddenArguments& out) {
    fn.binder.checked_lengths(key, out);
  }
  static void checked_lengths(const FunctionState& fn, const LaunchTicket& ticket, HiddenArguments& out);
  [[gnu::noinline]] [[nodiscard]] static std::expected<void, diag::Diagnostics> check_alignment(
      FunctionState& fn, std::span<void* const> args);
};

/// This thread's reusable launch plan (no allocation once its vectors have grown): the plan of
/// Kernel::launch's general path and of a raw argument table with proof scalars.
contract::LaunchPlan& thread_plan();

}  // namespace ptxgate::runtime::internal
