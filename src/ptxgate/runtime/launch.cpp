// launch_cuda_function: the only caller of cuLaunchKernel / cuLaunchCooperativeKernel in ptxgate.
#include "ptxgate/runtime/launch.hpp"

#include <array>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/internal/checked_records.hpp"
#include "ptxgate/runtime/internal/launch_path.hpp"
#include "ptxgate/runtime/launch_profile.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/support/thread_object.hpp"

namespace ptxgate::runtime {

using internal::DriverGeometry;
using internal::FunctionState;
using internal::LaunchPath;

namespace {

/// Argument slots kept on the stack; kernels with more parameters spill to the heap.
constexpr size_t kInlineArguments = 32;

template <class Dims>
std::string launch_subject(const FunctionState& fn, const Dims& grid, const Dims& block, uint64_t shared,
                           bool cooperative) {
  return fmt::format("kernel '{}' grid=({},{},{}) block=({},{},{}) shared={}{}", fn.info.name, grid[0], grid[1],
                     grid[2], block[0], block[1], block[2], shared, cooperative ? " cooperative" : "");
}

std::string launch_subject(const FunctionState& fn, const contract::LaunchPlan& plan) {
  return launch_subject(fn, plan.grid, plan.block, plan.dynamic_shared_bytes, plan.cooperative);
}

std::string launch_subject(const FunctionState& fn, const DriverGeometry& g) {
  return launch_subject(fn, g.grid, g.block, g.dynamic_shared_bytes, g.cooperative);
}

/// Checks that the plan describes the argument table actually passed; a mismatch
/// is a caller bug (PG9000), not a user error.
std::expected<void, diag::Diagnostics> plan_matches_call(const FunctionState& fn, const contract::LaunchPlan& plan,
                                                         std::span<void* const> args, CUstream stream) {
  bool ok = plan.stream_is_null == (stream == nullptr) && plan.function_is_null == (fn.handle == nullptr);
  if (plan.arguments_known) {
    ok = ok && plan.arguments.size() == args.size();
    bool differ = false;  // gathered without a branch per argument: a guarded launch checks every slot
    for (size_t i = 0; ok && i < args.size(); ++i) differ |= plan.arguments[i].slot_is_null != (args[i] == nullptr);
    ok = ok && !differ;
  }
  if (ok) [[likely]] return {};
  diag::Diagnostics d;
  d.add(diag::Code::internal_error,
        fmt::format("launch of '{}': the LaunchPlan does not describe the call (stream, function or argument slots "
                    "differ)", fn.info.name),
        {}, "build the plan from the same arguments and stream that are passed to launch_cuda_function");
  return std::unexpected(std::move(d));
}

/// A launchable verdict bounds every dimension by the device's limits (< 2^32).
DriverGeometry geometry_of(const validation::LaunchShape& shape, const std::array<unsigned, 3>& block) {
  const auto u = [](uint64_t v) { return static_cast<unsigned>(v); };
  const auto grid = shape.grid();
  return {{u(grid[0]), u(grid[1]), u(grid[2])}, block, u(shape.dynamic_shared_bytes()), shape.cooperative()};
}

DriverGeometry geometry_of(const SteadyKey& key, const std::array<unsigned, 3>& block) {
  return {key.grid(), block, key.dynamic_shared_bytes(), (key.flags() & SteadyKey::kCooperative) != 0};
}

std::atomic<uint64_t> next_function_id{1};

static_assert(std::is_trivially_copyable_v<contract::ArgumentDesc>, "the memo copies and compares descriptions as bytes");

}  // namespace

// ---- FunctionState, the launch plan of this thread ----

namespace internal {

FunctionState::FunctionState(CUfunction handle_, contract::KernelInfo info_, contract::KernelResources resources_,
                             diag::Location location_)
    : handle(handle_),
      id(next_function_id.fetch_add(1, std::memory_order_relaxed)),
      info(std::move(info_)),
      resources(resources_),
      location(std::move(location_)),
      binder(info),
      cache(info.params.size()) {
  for (uint32_t i = 0; i < info.params.size(); ++i)
    if (info.params[i].is_buffer && info.params[i].alignment > 1)
      aligned_buffers.emplace_back(i, uint64_t{info.params[i].alignment} - 1);
  checks_alignment = !aligned_buffers.empty();
  checked = info.checked != nullptr;
  has_hidden_arguments = info.hidden_grid_barrier_param || checked;
}

// Thread-local objects are reached through functions that are never inlined: the caller then
// holds a plain pointer, where an inlined TLS access may be recomputed (a __tls_get_addr call in a
// shared library) at every use inside a loop.
[[gnu::noinline]] contract::LaunchPlan& thread_plan() { return support::thread_object<contract::LaunchPlan>(); }

// ---- LaunchPath: the steps that reach no driver launch entry point ----

void LaunchPath::plan_header(contract::LaunchPlan& plan, const LaunchConfig& config, const Context& ctx,
                             const FunctionState& fn, bool stream_is_null) {
  plan.grid = config.grid;
  plan.block = config.block;
  plan.dynamic_shared_bytes = config.dynamic_shared_bytes;
  plan.cooperative = config.cooperative;
  plan.block_given = config.block_given;
  plan.arguments_known = true;
  plan.stream_policy = ctx.stream_policy();
  plan.stream_is_null = stream_is_null;
  plan.function_is_null = fn.handle == nullptr;
  plan.required_elements.clear();
  plan.require_memory_proof = ctx.require_memory_proof();
  plan.list_unproven_accesses = false;
}

validation::LaunchShape::Flags LaunchPath::shape_flags(const LaunchConfig& config, const Context& ctx,
                                                       const FunctionState& fn, bool stream_is_null) {
  return {config.cooperative, config.block_given, true, stream_is_null, ctx.stream_policy(), fn.handle == nullptr,
          ctx.require_memory_proof()};
}

validation::Verdict LaunchPath::validate(Context& ctx, FunctionState& fn, const contract::LaunchPlan& plan,
                                         bool report_warnings, validation::GridBase* base) {
  const auto& caps = ctx.caps();
  // Asked by check_launch only for a launch whose geometry, shared memory and registers pass
  // its own checks: nothing here re-checks them.
  auto driver_occupancy = [&](uint64_t threads, uint64_t dynamic_shared) -> std::optional<validation::Occupancy> {
    if (fn.handle == nullptr) return std::nullopt;
    // The opt-in is set to its maximum once per function, before the occupancy query,
    // so that the driver's answer accounts for the dynamic shared memory asked for.
    if (fn.resources.static_shared_bytes + dynamic_shared > caps.shared_per_block &&
        !fn.shared_opt_in_done.load(std::memory_order_acquire)) {
      int max_dynamic = static_cast<int>(caps.shared_per_block_optin - fn.resources.static_shared_bytes);
      if (PTXGATE_CU(ctx, fmt::format("kernel '{}'", fn.info.name), cuFuncSetAttribute, fn.handle,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic))
        fn.shared_opt_in_done.store(true, std::memory_order_release);
      else
        return std::nullopt;  // the launch reports the failed opt-in
    }
    // The driver's answer and the offline model's factors depend on the function, the block size,
    // the dynamic shared memory and the opt-in attribute, not on the grid: a new grid of a known
    // block reuses them.
    const bool opt_in = fn.shared_opt_in_done.load(std::memory_order_acquire);
    if (auto known = fn.cache.occupancy(threads, dynamic_shared, opt_in)) return known;
    int blocks = 0;
    if (ctx.api().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn.handle, static_cast<int>(threads),
                                                              dynamic_shared) != CUDA_SUCCESS)
      return std::nullopt;
    validation::Occupancy occupancy =
        validation::compute_occupancy(caps, fn.resources, static_cast<uint32_t>(threads), dynamic_shared);
    occupancy.active_blocks_per_sm = static_cast<uint32_t>(blocks);
    fn.cache.remember_occupancy(threads, dynamic_shared, opt_in, occupancy);
    return occupancy;
  };
  return validation::check_launch(fn.info, fn.resources, plan, caps, fn.location, driver_occupancy, report_warnings,
                                  base);
}

std::expected<LaunchPath::Admitted, diag::Diagnostics> LaunchPath::admit(
    Context& ctx, FunctionState& fn, const contract::LaunchPlan& plan, const validation::LaunchShape& shape,
    diag::Diagnostics* warnings, bool known_miss, std::span<void* const> proof_slots, const SteadyKey* steady) {
  if (!known_miss)
    if (auto block = fn.cache.find(shape)) return Admitted{*block, true};
  // A fresh validation (~0.1-0.2 us with the driver's occupancy answer, itself cached by block
  // size, plus the memory-safety evaluation of the kernel's accesses) happens once per shape.
  const contract::LaunchPlan* checked = &plan;
  if (!proof_slots.empty()) {
    contract::LaunchPlan& with_values = thread_plan();
    if (&with_values != &plan) with_values = plan;
    fn.binder.read_proof_values(proof_slots, with_values.arguments);
    checked = &with_values;
  }
  // A steady shape validated afresh becomes the launch new grids are derived from (launch_new_grid).
  FunctionState::GridBaseSlot* base = steady != nullptr && fn.grid_base.try_lock() ? &fn.grid_base : nullptr;
  validation::Verdict verdict = validate(ctx, fn, *checked, warnings != nullptr, base ? &base->facts : nullptr);
  if (base != nullptr) {
    base->valid = base->facts.launchable;
    base->key = *steady;
    base->mix = shape.grid_free_mix();
    base->unlock();
  }
  fn.validated.fetch_add(1, std::memory_order_relaxed);
  if (!verdict.launchable) {
    fn.blocked.fetch_add(1, std::memory_order_relaxed);
    // check_launch reports a blocked launch whole (its warnings too): validated once.
    return std::unexpected(std::move(verdict.diagnostics));
  }
  if (verdict.needs_shared_opt_in && !fn.shared_opt_in_done.load(std::memory_order_acquire)) {
    diag::Diagnostics d;
    d.add(diag::Code::launch_failed,
          fmt::format("{} needs {} bytes of shared memory, but setting the opt-in attribute failed",
                      launch_subject(fn, plan), verdict.total_shared_bytes));
    return std::unexpected(std::move(d));
  }
  if (warnings != nullptr) warnings->append(verdict.diagnostics);
  fn.cache.insert(shape, verdict.block);
  // A launchable verdict bounds every dimension by the device's limits (< 2^32).
  return Admitted{{static_cast<unsigned>(verdict.block[0]), static_cast<unsigned>(verdict.block[1]),
                   static_cast<unsigned>(verdict.block[2])},
                  false};
}

std::expected<void, diag::Diagnostics> LaunchPath::check_alignment(FunctionState& fn, std::span<void* const> args) {
  diag::Diagnostics d;
  for (auto [index, mask] : fn.aligned_buffers) {
    if (index >= args.size() || args[index] == nullptr) continue;  // reported by the argument checks
    CUdeviceptr address = 0;
    std::memcpy(&address, args[index], sizeof address);
    if ((address & mask) != 0) validation::report_misaligned_buffer(d, fn.info, index, address, fn.location);
  }
  if (!d.has_errors()) return {};
  fn.blocked.fetch_add(1, std::memory_order_relaxed);
  return std::unexpected(std::move(d));
}

// ---- LaunchPath: the steps that end in the driver call ----

/// The driver call of an admitted launch. Inlined, with drive_table, into the launch paths: the
/// frames a launch returns through after the driver call are cache lines the driver's own work
/// has evicted.
template <class Lengths>
[[gnu::always_inline]] inline std::expected<void, diag::Diagnostics> LaunchPath::drive(
    Context& ctx, FunctionState& fn, const DriverGeometry& geometry, const Lengths& lengths,
    std::span<void* const> args, CUstream stream, bool cache_hit) {
  // Every path to the driver comes here: the steady path, a cached shape, a ticket, a fresh verdict.
  if (fn.checks_alignment) [[unlikely]]
    if (auto aligned = check_alignment(fn, args); !aligned) {
      if (cache_hit) fn.cached.fetch_add(1, std::memory_order_relaxed);
      return aligned;
    }
  // The driver only reads the argument table; a copy is made only to append hidden arguments.
  if (fn.has_hidden_arguments) [[unlikely]] {
    internal::HiddenArguments hidden;
    if (fn.checked) checked_lengths(fn, lengths, hidden);
    if (auto ok = internal::hidden_for_stream(ctx, fn.info, stream, hidden); !ok) {
      if (cache_hit) fn.cached.fetch_add(1, std::memory_order_relaxed);
      return ok;
    }
    boost::container::small_vector<void*, kInlineArguments> table(args.begin(), args.end());
    internal::ArgumentBinder::append_hidden(fn.info, hidden, table);
    return drive_table(ctx, fn, geometry, table.data(), stream, cache_hit, &hidden);
  }
  return drive_table(ctx, fn, geometry, const_cast<void**>(args.data()), stream, cache_hit, nullptr);
}

void LaunchPath::checked_lengths(const FunctionState&, const LaunchTicket& ticket, HiddenArguments& out) {
  out.buffers = 0;
  if (!ticket.checked_lengths_) return;  // reported by checked_lengths_complete
  for (uint64_t bytes : *ticket.checked_lengths_) {
    if (out.buffers == out.buffer_bytes.size()) {
      out.buffers = UINT32_MAX;
      return;
    }
    out.buffer_bytes[out.buffers++] = bytes;
  }
}

std::expected<void, diag::Diagnostics> LaunchPath::checked_launched(Context& ctx, FunctionState& fn,
                                                                    const DriverGeometry& geometry,
                                                                    const HiddenArguments& hidden, uint64_t sequence,
                                                                    CUstream stream) {
  const auto slot = static_cast<uint32_t>(hidden.checked_slot);
  ctx.checked_records().launched(slot, sequence, stream,
                                 {fn.info.checked, fn.info.name, fn.location.file, geometry.grid, geometry.block,
                                  geometry.dynamic_shared_bytes});
  if (!ctx.checked_launches()) return {};
  if (auto completed = ctx.complete_checked_launch(sequence, stream); !completed) return completed;
  return ctx.checked_records().collect_slot(slot);
}

[[gnu::always_inline]] inline std::expected<void, diag::Diagnostics> LaunchPath::drive_table(
    Context& ctx, FunctionState& fn, const DriverGeometry& geometry, void** table, CUstream stream, bool cache_hit,
    const HiddenArguments* hidden) {
  const auto& g = geometry.grid;
  const auto& b = geometry.block;
  CUresult r;
  (cache_hit ? fn.cached_driver_calls : fn.driver_calls).fetch_add(1, std::memory_order_relaxed);
  Profiler* profiler = ctx.profiler();
  CUevent profile_start = nullptr;
  if (profiler != nullptr) [[unlikely]]
    profile_start = profiler->begin(fn.info.name, stream);
  if (geometry.cooperative) {
    r = ctx.api().cuLaunchCooperativeKernel(fn.handle, g[0], g[1], g[2], b[0], b[1], b[2],
                                            geometry.dynamic_shared_bytes, stream, table);
  } else {
    r = ctx.api().cuLaunchKernel(fn.handle, g[0], g[1], g[2], b[0], b[1], b[2], geometry.dynamic_shared_bytes,
                                 stream, table, nullptr);
  }
  if (r == CUDA_SUCCESS) [[likely]] {
    uint32_t name = fn.log_name.load(std::memory_order_relaxed);
    if (name == 0) [[unlikely]] {  // the function's first launch: its name gets the log's number
      name = ctx.launch_log().intern(fn.info.name);
      fn.log_name.store(name, std::memory_order_relaxed);
    }
    const uint64_t sequence =
        ctx.launch_log().record(name, g, b, geometry.dynamic_shared_bytes, geometry.cooperative, stream);
    if (profiler != nullptr) [[unlikely]]
      profiler->end(profile_start, sequence, fn.info.name, stream);
    if (hidden != nullptr && hidden->checked_slot >= 0) [[unlikely]]
      return checked_launched(ctx, fn, geometry, *hidden, sequence, stream);
    if (ctx.checked_launches()) [[unlikely]]
      return ctx.complete_checked_launch(sequence, stream);
    return {};
  }
  if (hidden != nullptr && hidden->checked_slot >= 0)
    ctx.checked_records().release(static_cast<uint32_t>(hidden->checked_slot));
  if (profiler != nullptr) profiler->cancel(profile_start);
  auto failed = ctx.check(r, geometry.cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel",
                          launch_subject(fn, geometry));
  auto diags = std::move(failed.error());
  if (diags.items().front().code == diag::Code::kernel_fault) return std::unexpected(std::move(diags));  // an earlier launch
  diags.items().front().code = diag::Code::launch_failed;
  diags.items().front().notes.push_back(
      "ptxgate validated this launch; a driver rejection here means a check is missing: please report it");
  return std::unexpected(std::move(diags));
}

std::expected<void, diag::Diagnostics> LaunchPath::launch(Context& ctx, FunctionState& fn,
                                                          const contract::LaunchPlan& plan,
                                                          const validation::LaunchShape& shape,
                                                          std::span<void* const> args, CUstream stream,
                                                          diag::Diagnostics* warnings, LaunchTicket* ticket,
                                                          const SteadyKey* steady, bool known_miss,
                                                          bool proof_from_slots, bool plan_of_call) {
  if (auto ok = ctx.enter_with("launch", [&] { return launch_subject(fn, plan); }); !ok) [[unlikely]]
    return ok;
  if (!plan_of_call)
    if (auto ok = plan_matches_call(fn, plan, args, stream); !ok) [[unlikely]]
      return ok;
  auto admitted = admit(ctx, fn, plan, shape, warnings, known_miss, proof_from_slots ? args : std::span<void* const>{},
                        steady);
  if (!admitted) return std::unexpected(std::move(admitted.error()));
  if (steady != nullptr) fn.cache.remember_steady(*steady, admitted->block);
  const DriverGeometry geometry = geometry_of(shape, admitted->block);
  if (ticket != nullptr) {
    LaunchTicket t;
    t.function_id_ = fn.id;
    t.grid_ = geometry.grid;
    t.block_ = geometry.block;
    t.dynamic_shared_bytes_ = geometry.dynamic_shared_bytes;
    t.cooperative_ = geometry.cooperative;
    t.stream_is_null_ = shape.stream_is_null();
    t.argument_count_ = static_cast<uint32_t>(args.size());
    t.proof_value_count_ =
        static_cast<uint32_t>(fn.binder.proof_values(args, t.proof_values_.data(), LaunchTicket::kProofValues));
    if (fn.checked) [[unlikely]] {
      HiddenArguments lengths;
      ArgumentBinder::checked_lengths(shape, lengths);
      if (lengths.buffers <= lengths.buffer_bytes.size())
        t.checked_lengths_ = std::make_shared<const std::vector<uint64_t>>(
            lengths.buffer_bytes.begin(), lengths.buffer_bytes.begin() + lengths.buffers);
    }
    *ticket = t;
  }
  return drive(ctx, fn, geometry, shape, args, stream, admitted->cache_hit);
}

std::optional<std::expected<void, diag::Diagnostics>> LaunchPath::launch_cached(Context& ctx, FunctionState& fn,
                                                                                const validation::LaunchShape& shape,
                                                                                std::span<void* const> args,
                                                                                CUstream stream,
                                                                                const SteadyKey* steady) {
  // The shape was built here for exactly these slots (none of them null): a hit is the verdict.
  auto block = fn.cache.find(shape);
  if (!block) return std::nullopt;
  return launch_known(ctx, fn, shape, *block, args, stream, steady);
}

std::expected<void, diag::Diagnostics> LaunchPath::launch_known(Context& ctx, FunctionState& fn,
                                                                const validation::LaunchShape& shape,
                                                                const std::array<unsigned, 3>& block,
                                                                std::span<void* const> args, CUstream stream,
                                                                const SteadyKey* steady) {
  const DriverGeometry geometry = geometry_of(shape, block);
  if (auto ok = ctx.enter_with("launch", [&] { return launch_subject(fn, geometry); }); !ok) [[unlikely]]
    return std::unexpected(std::move(ok.error()));
  if (steady != nullptr) fn.cache.remember_steady(*steady, block);
  return drive(ctx, fn, geometry, shape, args, stream, true);
}

std::optional<std::expected<void, diag::Diagnostics>> LaunchPath::launch_steady(Context& ctx, FunctionState& fn,
                                                                                const SteadyKey& key,
                                                                                std::span<void* const> args,
                                                                                CUstream stream) {
  // As launch_cached, with the front's compact key in place of a LaunchShape.
  std::array<unsigned, 3> block;
  if (!fn.cache.find_steady(key, block)) return std::nullopt;
  const DriverGeometry geometry = geometry_of(key, block);
  if (auto ok = ctx.enter_with("launch", [&] { return launch_subject(fn, geometry); }); !ok) [[unlikely]]
    return std::unexpected(std::move(ok.error()));
  return drive(ctx, fn, geometry, key, args, stream, true);
}

std::optional<std::expected<void, diag::Diagnostics>> LaunchPath::launch_new_grid(Context& ctx, FunctionState& fn,
                                                                                  const SteadyKey& key,
                                                                                  validation::LaunchShape& shape,
                                                                                  std::span<void* const> args,
                                                                                  CUstream stream, bool& missed) {
  FunctionState::GridBaseSlot& base = fn.grid_base;
  if (!base.try_lock()) return std::nullopt;
  if (!base.valid || !base.key.same_but_grid(key)) {
    base.unlock();
    return std::nullopt;
  }
  // The shape differs from the slot's in its grid words only: its tag needs only them mixed in.
  shape.adopt_grid_free_mix(base.mix);
  if (auto known = fn.cache.find(shape)) {
    base.unlock();
    return launch_known(ctx, fn, shape, *known, args, stream, &key);
  }
  missed = true;
  // The opt-in attribute is set by the validation that needed it; a launch that still lacks it is
  // validated afresh, which reports it.
  const bool launchable = (!base.facts.needs_shared_opt_in || fn.shared_opt_in_done.load(std::memory_order_acquire)) &&
                          validation::check_new_grid(fn.info, ctx.caps(), base.facts, shape.grid(), fn.location);
  const std::array<uint64_t, 3> block = base.facts.block;
  base.unlock();
  if (!launchable) return std::nullopt;
  // A launchable verdict bounds every dimension by the device's limits (< 2^32).
  const DriverGeometry geometry = geometry_of(
      key, {static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2])});
  if (auto ok = ctx.enter_with("launch", [&] { return launch_subject(fn, geometry); }); !ok) [[unlikely]]
    return std::unexpected(std::move(ok.error()));
  fn.validated.fetch_add(1, std::memory_order_relaxed);
  fn.cache.insert(shape, block);
  fn.cache.remember_steady(key, geometry.block);
  return drive(ctx, fn, geometry, key, args, stream, false);
}

std::optional<std::expected<void, diag::Diagnostics>> LaunchPath::launch_remembered(Context& ctx, FunctionState& fn,
                                                                                    const contract::LaunchPlan& plan,
                                                                                    std::span<void* const> args,
                                                                                    CUstream stream) {
  FunctionState::GuardedSlot& memo = fn.guarded;
  if (!memo.try_lock()) return std::nullopt;
  const size_t n = args.size();
  if (!memo.valid || !memo.same_header(plan) || plan.stream_is_null != (stream == nullptr) ||
      plan.arguments.size() != n || memo.arguments.size() != n ||
      std::memcmp(plan.arguments.data(), memo.arguments.data(), n * sizeof(contract::ArgumentDesc)) != 0) {
    memo.unlock();
    return std::nullopt;
  }
  // A remembered plan has no null slot (its launch was admitted): the table must have none either.
  bool null_slot = false;
  for (size_t i = 0; i < n; ++i) null_slot |= args[i] == nullptr;
  const LaunchTicket& ticket = memo.ticket;
  bool same_proofs = true;
  if (fn.binder.has_proof_scalars()) {
    // The verdict holds for the proof scalars' values it was validated with only.
    std::array<uint64_t, LaunchTicket::kProofValues> values;
    const size_t count = fn.binder.proof_values(args, values.data(), values.size());
    same_proofs = count == ticket.proof_value_count_ &&
                  std::memcmp(values.data(), ticket.proof_values_.data(), count * sizeof(uint64_t)) == 0;
  }
  if (null_slot || !same_proofs || ctx.poisoned()) [[unlikely]] {
    memo.unlock();
    return std::nullopt;
  }
  const DriverGeometry geometry{ticket.grid_, ticket.block_, ticket.dynamic_shared_bytes_, ticket.cooperative_};
  if (auto ok = ctx.make_current(); !ok) [[unlikely]] {
    memo.unlock();
    return std::unexpected(std::move(ok.error()));
  }
  // The slot stays taken until the driver call returns: drive() reads the ticket (a checked
  // kernel's buffer lengths).
  auto launched = drive(ctx, fn, geometry, ticket, args, stream, true);
  memo.unlock();
  return launched;
}

void LaunchPath::remember(FunctionState& fn, const contract::LaunchPlan& plan, const LaunchTicket& ticket) {
  if (!ticket.valid() || !plan.required_elements.empty() || ticket.proof_value_count_ > LaunchTicket::kProofValues)
    return;
  FunctionState::GuardedSlot& memo = fn.guarded;
  if (!memo.try_lock()) return;
  memo.valid = true;
  memo.grid = plan.grid;
  memo.block = plan.block;
  memo.dynamic_shared_bytes = plan.dynamic_shared_bytes;
  memo.flags = FunctionState::GuardedSlot::flags_of(plan);
  memo.arguments.resize(plan.arguments.size());
  if (!plan.arguments.empty())
    std::memcpy(memo.arguments.data(), plan.arguments.data(), plan.arguments.size() * sizeof(contract::ArgumentDesc));
  memo.ticket = ticket;
  memo.unlock();
}

std::expected<void, diag::Diagnostics> LaunchPath::relaunch(Context& ctx, FunctionState& fn,
                                                            const LaunchTicket& ticket, std::span<void* const> args,
                                                            CUstream stream) {
  if (!ticket.valid() || ticket.function_id_ != fn.id || ticket.stream_is_null_ != (stream == nullptr) ||
      ticket.argument_count_ != args.size()) [[unlikely]] {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error,
          fmt::format("launch of '{}': the launch ticket was issued for another function, stream kind or argument "
                      "count",
                      fn.info.name),
          {}, "relaunch with a ticket that launch_cuda_function issued for this function and call shape");
    return std::unexpected(std::move(d));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr) [[unlikely]] {
      diag::Diagnostics d;
      d.add(diag::Code::null_argument_slot, fmt::format("argument slot {} is a null pointer", i), fn.location,
            "every slot of the argument table must point at the argument's value");
      fn.blocked.fetch_add(1, std::memory_order_relaxed);
      return std::unexpected(std::move(d));
    }
  }
  if (fn.binder.has_proof_scalars()) [[unlikely]] {
    // The ticket's verdict holds for the values of the proof scalars it was validated with only.
    std::array<uint64_t, LaunchTicket::kProofValues> values{};
    const size_t count = fn.binder.proof_values(args, values.data(), values.size());
    const auto proof = fn.binder.proof_params();
    for (size_t k = 0; k < count; ++k) {
      if (k < values.size() && count == ticket.proof_value_count_ && values[k] == ticket.proof_values_[k]) continue;
      const auto& param = fn.info.params[proof[k]];
      diag::Diagnostics d;
      d.add(diag::Code::internal_error,
            k < values.size()
                ? fmt::format("launch of '{}' by ticket: parameter '{}' is 0x{:x}, but the ticket was validated with "
                              "0x{:x}, and the kernel's memory-safety proof depends on it",
                              fn.info.name, param.name, values[k], ticket.proof_values_[k])
                : fmt::format("launch of '{}' by ticket: the kernel's memory-safety proof depends on more than {} "
                              "scalars, more than a ticket keeps",
                              fn.info.name, LaunchTicket::kProofValues),
            {}, "launch through launch_cuda_function with a plan (or Kernel::launch), which validates the new value");
      fn.blocked.fetch_add(1, std::memory_order_relaxed);
      return std::unexpected(std::move(d));
    }
  }
  const DriverGeometry geometry{ticket.grid_, ticket.block_, ticket.dynamic_shared_bytes_, ticket.cooperative_};
  if (auto ok = ctx.enter_with("launch", [&] { return launch_subject(fn, geometry); }); !ok) [[unlikely]]
    return ok;
  return drive(ctx, fn, geometry, ticket, args, stream, true);
}

}  // namespace internal

// ---- LoadedFunction ----

LoadedFunction::LoadedFunction(CUfunction handle, contract::KernelInfo info, contract::KernelResources resources,
                               diag::Location location)
    : state_(std::make_unique<FunctionState>(handle, std::move(info), resources, std::move(location))) {}

LoadedFunction::~LoadedFunction() = default;

CUfunction LoadedFunction::handle() const { return state_->handle; }
const contract::KernelInfo& LoadedFunction::info() const { return state_->info; }
const contract::KernelResources& LoadedFunction::resources() const { return state_->resources; }
const diag::Location& LoadedFunction::location() const { return state_->location; }
uint64_t LoadedFunction::id() const { return state_->id; }

LaunchCounters LoadedFunction::counters() const {
  const FunctionState& s = *state_;
  const uint64_t hits_driven = s.cached_driver_calls.load(std::memory_order_relaxed);
  return {s.validated.load(std::memory_order_relaxed), s.cached.load(std::memory_order_relaxed) + hits_driven,
          s.driver_calls.load(std::memory_order_relaxed) + hits_driven, s.blocked.load(std::memory_order_relaxed)};
}

std::expected<std::unique_ptr<LoadedFunction>, diag::Diagnostics> LoadedFunction::resolve(
    Context& ctx, CUmodule module, const contract::KernelInfo& info, diag::Location location) {
  std::string subject = fmt::format("kernel '{}'", info.name);
  if (auto ok = ctx.enter("cuModuleGetFunction", subject); !ok) return std::unexpected(ok.error());
  CUfunction f = nullptr;
  if (auto ok = PTXGATE_CU(ctx, subject, cuModuleGetFunction, &f, module, info.name.c_str()); !ok)
    return std::unexpected(ok.error());
  int regs = 0, shared = 0, local = 0, max_threads = 0;
  diag::Diagnostics errors;
  auto attr = [&](int& out, CUfunction_attribute a, const char* what) {
    if (auto ok = PTXGATE_CU(ctx, fmt::format("{} of {}", what, subject), cuFuncGetAttribute, &out, a, f); !ok)
      errors.append(ok.error());
  };
  attr(regs, CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS");
  attr(shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES");
  attr(local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES");
  attr(max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  contract::KernelResources res;
  res.registers_per_thread = static_cast<uint32_t>(regs);
  res.static_shared_bytes = static_cast<uint64_t>(shared);
  res.local_bytes = static_cast<uint64_t>(local);
  res.max_threads_per_block = static_cast<uint32_t>(max_threads);
  return std::make_unique<LoadedFunction>(f, info, res, std::move(location));
}

// ---- the public entry points ----

validation::Verdict validate_launch(Context& ctx, LoadedFunction& fn, const contract::LaunchPlan& plan, CUstream,
                                    bool report_warnings) {
  return LaunchPath::validate(ctx, LaunchPath::state(fn), plan, report_warnings);
}

std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                            const contract::LaunchPlan& plan,
                                                            std::span<void* const> args, CUstream stream,
                                                            diag::Diagnostics* warnings, LaunchTicket* ticket) {
  FunctionState& st = LaunchPath::state(fn);
  // The plan the function was last launched with: launched by its verdict at once.
  if (ticket == nullptr) [[likely]]
    if (auto launched = LaunchPath::launch_remembered(ctx, st, plan, args, stream)) return std::move(*launched);
  validation::LaunchShape shape = validation::LaunchShape::of(plan);
  // The scalars the kernel's memory-safety proof uses are read from the argument table, which is
  // what the kernel receives: the launch cache's key holds those values, and a validation reads
  // them into a copy of the plan (admit).
  const bool proofs = st.binder.has_proof_scalars();
  if (proofs) st.binder.add_proof_values(args, plan.arguments, shape);
  // The launch's verdict as a ticket (the caller's, when asked for) becomes the function's memo.
  LaunchTicket issued;
  LaunchTicket& verdict = ticket != nullptr ? *ticket : issued;
  auto launched = LaunchPath::launch(ctx, st, plan, shape, args, stream, warnings, &verdict, nullptr, false, proofs);
  if (launched) LaunchPath::remember(st, plan, verdict);
  return launched;
}

std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                            const LaunchTicket& ticket, std::span<void* const> args,
                                                            CUstream stream) {
  return LaunchPath::relaunch(ctx, LaunchPath::state(fn), ticket, args, stream);
}

}  // namespace ptxgate::runtime
