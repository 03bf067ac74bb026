// launch_cuda_function: the only caller of cuLaunchKernel / cuLaunchCooperativeKernel in ptxgate.
#include "ptxgate/backend/launch.hpp"

#include <cstring>
#include <optional>

#include "ptxgate/backend/internal/checked_records.hpp"
#include "ptxgate/backend/internal/launch_cache.hpp"

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/backend/profile.hpp"
#include "ptxgate/validation/check.hpp"

namespace ptxgate::backend {
namespace {

/// Argument slots kept on the stack; kernels with more parameters spill to the heap.
constexpr size_t kInlineArguments = 32;

std::string launch_subject(const LoadedFunction& fn, const contract::LaunchPlan& plan) {
  return fmt::format("kernel '{}' grid=({},{},{}) block=({},{},{}) shared={}{}", fn.info().name, plan.grid[0],
                     plan.grid[1], plan.grid[2], plan.block[0], plan.block[1], plan.block[2],
                     plan.dynamic_shared_bytes, plan.cooperative ? " cooperative" : "");
}

/// Checks that the plan describes the argument table actually passed; a mismatch
/// is a caller bug (PG9000), not a user error.
std::expected<void, diag::Diagnostics> plan_matches_call(const LoadedFunction& fn, const contract::LaunchPlan& plan,
                                                         std::span<void* const> args, CUstream stream) {
  bool ok = plan.stream_is_null == (stream == nullptr) && plan.function_is_null == (fn.handle() == nullptr);
  if (plan.arguments_known) {
    ok = ok && plan.arguments.size() == args.size();
    for (size_t i = 0; ok && i < args.size(); ++i) ok = plan.arguments[i].slot_is_null == (args[i] == nullptr);
  }
  if (ok) [[likely]] return {};
  diag::Diagnostics d;
  d.add(diag::Code::internal_error,
        fmt::format("launch of '{}': the LaunchPlan does not describe the call (stream, function or argument slots "
                    "differ)", fn.info().name),
        {}, "build the plan from the same arguments and stream that are passed to launch_cuda_function");
  return std::unexpected(std::move(d));
}

std::atomic<uint64_t> next_function_id{1};

}  // namespace

LoadedFunction::LoadedFunction(CUfunction handle, contract::KernelInfo info, contract::KernelResources resources,
                               diag::Location location)
    : handle_(handle),
      id_(next_function_id.fetch_add(1, std::memory_order_relaxed)),
      cache_(std::make_unique<LaunchCache>(info.params.size())),  // before info_ is made from `info`
      info_(std::move(info)),
      resources_(resources),
      location_(std::move(location)) {
  for (uint32_t i = 0; i < info_.params.size(); ++i)
    if (info_.params[i].is_buffer && info_.params[i].alignment > 1)
      aligned_buffers_.emplace_back(i, uint64_t{info_.params[i].alignment} - 1);
  checks_alignment_ = !aligned_buffers_.empty();
  appends_barrier_word_ = info_.hidden_grid_barrier_param;
  checked_ = info_.checked != nullptr;
}

std::expected<void, diag::Diagnostics> LoadedFunction::check_buffer_alignment(std::span<void* const> args) {
  diag::Diagnostics d;
  for (auto [index, mask] : aligned_buffers_) {
    if (index >= args.size() || args[index] == nullptr) continue;  // reported by the argument checks
    CUdeviceptr address = 0;
    std::memcpy(&address, args[index], sizeof address);
    if ((address & mask) != 0) validation::report_misaligned_buffer(d, info_, index, address, location_);
  }
  if (!d.has_errors()) return {};
  blocked_.fetch_add(1, std::memory_order_relaxed);
  return std::unexpected(std::move(d));
}

LoadedFunction::~LoadedFunction() = default;

std::optional<LaunchTicket> LoadedFunction::cached_ticket(const validation::LaunchShape& shape,
                                                          size_t argument_count) const {
  auto block = cache_->find(shape);
  if (!block) return std::nullopt;
  LaunchTicket t = LaunchTicket::of(id_, shape, *block, argument_count);
  if (checked_) [[unlikely]]
    t.take_buffer_bytes(shape);
  return t;
}

std::optional<std::expected<void, diag::Diagnostics>> LoadedFunction::launch_cached(Context& ctx, LoadedFunction& fn,
                                                                                    const validation::LaunchShape& shape,
                                                                                    std::span<void* const> args,
                                                                                    CUstream stream,
                                                                                    const SteadyKey* steady) {
  // relaunch without its ticket checks: the ticket is made here from the shape the caller built
  // for exactly these slots (none of them null), so it matches by construction.
  auto block = fn.cache_->find(shape);
  if (!block) return std::nullopt;
  if (ctx.poisoned()) [[unlikely]]
    return std::nullopt;  // the general path reports it
  if (auto ok = ctx.make_current(); !ok) [[unlikely]]
    return std::unexpected(std::move(ok.error()));
  if (steady != nullptr) fn.cache_->remember_steady(*steady, *block);
  LaunchTicket t = LaunchTicket::of(fn.id_, shape, *block, args.size());
  if (fn.checked_) [[unlikely]]
    t.take_buffer_bytes(shape);
  return LaunchTicket::drive(ctx, fn, t, args, stream, true);
}

std::optional<std::expected<void, diag::Diagnostics>> LoadedFunction::launch_steady(Context& ctx, LoadedFunction& fn,
                                                                                    const SteadyKey& key,
                                                                                    std::span<void* const> args,
                                                                                    CUstream stream) {
  // As launch_cached, with the front's compact key in place of a LaunchShape.
  std::array<unsigned, 3> block;
  if (!fn.cache_->find_steady(key, block)) return std::nullopt;
  if (ctx.poisoned()) [[unlikely]]
    return std::nullopt;
  if (auto ok = ctx.make_current(); !ok) [[unlikely]]
    return std::unexpected(std::move(ok.error()));
  LaunchTicket t = LaunchTicket::of(fn.id_, key, block, args.size());
  if (fn.checked_) [[unlikely]]
    t.take_buffer_bytes(key);
  return LaunchTicket::drive(ctx, fn, t, args, stream, true);
}

LaunchTicket LaunchTicket::of(uint64_t function_id, const validation::LaunchShape& shape,
                              const std::array<unsigned, 3>& block, size_t argument_count) {
  // A launchable verdict bounds every dimension by the device's limits (< 2^32).
  const auto u = [](uint64_t v) { return static_cast<unsigned>(v); };
  const auto grid = shape.grid();
  LaunchTicket t;
  t.function_id_ = function_id;
  t.grid_ = {u(grid[0]), u(grid[1]), u(grid[2])};
  t.block_ = block;
  t.dynamic_shared_bytes_ = u(shape.dynamic_shared_bytes());
  t.cooperative_ = shape.cooperative();
  t.stream_is_null_ = shape.stream_is_null();
  t.argument_count_ = argument_count;
  return t;
}

LaunchTicket LaunchTicket::of(uint64_t function_id, const SteadyKey& key, const std::array<unsigned, 3>& block,
                              size_t argument_count) {
  LaunchTicket t;
  t.function_id_ = function_id;
  t.grid_ = key.grid();
  t.block_ = block;
  t.dynamic_shared_bytes_ = key.dynamic_shared_bytes();
  t.cooperative_ = (key.flags() & SteadyKey::kCooperative) != 0;
  t.stream_is_null_ = (key.flags() & SteadyKey::kNullStream) != 0;
  t.argument_count_ = argument_count;
  return t;
}

std::expected<std::unique_ptr<LoadedFunction>, diag::Diagnostics> LoadedFunction::resolve(
    Context& ctx, CUmodule module, const contract::KernelInfo& info, diag::Location location) {
  std::string subject = fmt::format("kernel '{}'", info.name);
  if (auto ok = ctx.healthy("cuModuleGetFunction", subject); !ok) return std::unexpected(ok.error());
  if (auto ok = ctx.make_current(); !ok) return std::unexpected(ok.error());
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

LaunchCounters LoadedFunction::counters() const {
  const uint64_t hits_driven = cached_driver_calls_.load(std::memory_order_relaxed);
  return {validated_.load(std::memory_order_relaxed), cached_.load(std::memory_order_relaxed) + hits_driven,
          driver_calls_.load(std::memory_order_relaxed) + hits_driven, blocked_.load(std::memory_order_relaxed)};
}

validation::Verdict validate_launch(Context& ctx, LoadedFunction& fn, const contract::LaunchPlan& plan,
                                    CUstream, bool report_warnings) {
  const auto& caps = ctx.caps();
  // Asked by check_launch only for a launch whose geometry, shared memory and registers pass
  // its own checks: nothing here re-checks them.
  auto driver_occupancy = [&](uint64_t threads, uint64_t dynamic_shared) -> std::optional<uint32_t> {
    if (fn.handle_ == nullptr) return std::nullopt;
    // The opt-in is set to its maximum once per function, before the occupancy query,
    // so that the driver's answer accounts for the dynamic shared memory asked for.
    if (fn.resources_.static_shared_bytes + dynamic_shared > caps.shared_per_block &&
        !fn.shared_opt_in_done_.load(std::memory_order_acquire)) {
      int max_dynamic = static_cast<int>(caps.shared_per_block_optin - fn.resources_.static_shared_bytes);
      if (PTXGATE_CU(ctx, fmt::format("kernel '{}'", fn.info_.name), cuFuncSetAttribute, fn.handle_,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic))
        fn.shared_opt_in_done_.store(true, std::memory_order_release);
      else
        return std::nullopt;  // the launch reports the failed opt-in
    }
    // The driver's answer depends on the function, the block size, the dynamic shared memory
    // and the opt-in attribute, not on the grid: a new grid of a known block reuses it.
    const bool opt_in = fn.shared_opt_in_done_.load(std::memory_order_acquire);
    if (auto known = fn.cache_->occupancy(threads, dynamic_shared, opt_in)) return *known;
    int blocks = 0;
    if (ctx.api().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn.handle_, static_cast<int>(threads),
                                                              dynamic_shared) != CUDA_SUCCESS)
      return std::nullopt;
    fn.cache_->remember_occupancy(threads, dynamic_shared, opt_in, static_cast<uint32_t>(blocks));
    return static_cast<uint32_t>(blocks);
  };
  return validation::check_launch(fn.info_, fn.resources_, plan, caps, fn.location_, driver_occupancy,
                                  report_warnings);
}

/// The driver call of a launch whose shape `ticket` proves launchable: the grid-barrier
/// word for kernels that need it, then cuLaunchKernel / cuLaunchCooperativeKernel. Inlined, with
/// drive_table, into the launch paths: the frames a launch returns through after the driver call
/// are cache lines the driver's own work has evicted.
[[gnu::always_inline]] inline std::expected<void, diag::Diagnostics> LaunchTicket::drive(Context& ctx, LoadedFunction& fn,
                                                           const LaunchTicket& ticket, std::span<void* const> args,
                                                           CUstream stream, bool cache_hit) {
  // Every path to the driver comes here: the steady path, a cached shape, a ticket, a fresh verdict.
  if (fn.checks_alignment_) [[unlikely]]
    if (auto aligned = fn.check_buffer_alignment(args); !aligned) {
      if (cache_hit) fn.cached_.fetch_add(1, std::memory_order_relaxed);
      return aligned;
    }
  if (fn.checked_) [[unlikely]]
    return drive_checked(ctx, fn, ticket, args, stream, cache_hit);
  // The driver only reads the argument table; a copy is made only to append the barrier word.
  if (fn.appends_barrier_word_) [[unlikely]] {
    auto word = ctx.grid_barrier_word(stream);
    if (!word) {
      if (cache_hit) fn.cached_.fetch_add(1, std::memory_order_relaxed);
      return std::unexpected(word.error());
    }
    CUdeviceptr barrier_word = *word;
    boost::container::small_vector<void*, kInlineArguments> slots(args.begin(), args.end());
    slots.push_back(&barrier_word);
    return drive_table(ctx, fn, ticket, slots.data(), stream, cache_hit);
  }
  return drive_table(ctx, fn, ticket, const_cast<void**>(args.data()), stream, cache_hit);
}

std::expected<void, diag::Diagnostics> LaunchTicket::drive_checked(Context& ctx, LoadedFunction& fn,
                                                                   const LaunchTicket& ticket, std::span<void* const> args,
                                                                   CUstream stream, bool cache_hit) {
  // The table: the user's arguments, the grid-barrier word, each buffer's length, the record.
  const size_t buffers = fn.info_.buffer_count();
  if (buffers != ticket.buffers_) {
    if (cache_hit) fn.cached_.fetch_add(1, std::memory_order_relaxed);
    diag::Diagnostics d;
    d.add(diag::Code::internal_error,
          fmt::format("checked launch of '{}': the launch describes {} buffer sizes for {} buffer parameters (checked "
                      "mode takes at most {})",
                      fn.info_.name, ticket.buffers_, buffers, validation::LaunchShape::kMaxArguments),
          {}, "launch a kernel with fewer buffer parameters in checked mode, or report this as a ptxgate bug");
    return std::unexpected(std::move(d));
  }
  boost::container::small_vector<void*, kInlineArguments + 8> slots(args.begin(), args.end());
  CUdeviceptr barrier_word = 0;
  if (fn.appends_barrier_word_) {
    auto word = ctx.grid_barrier_word(stream);
    if (!word) {
      if (cache_hit) fn.cached_.fetch_add(1, std::memory_order_relaxed);
      return std::unexpected(word.error());
    }
    barrier_word = *word;
    slots.push_back(&barrier_word);
  }
  static_assert(contract::kMaxCheckedBuffers <= validation::LaunchShape::kMaxArguments);
  std::array<uint64_t, validation::LaunchShape::kMaxArguments> lengths;
  for (size_t k = 0; k < buffers; ++k) {
    lengths[k] = ticket.buffer_bytes_[k];
    slots.push_back(&lengths[k]);
  }
  auto slot = ctx.checked_records().reserve();
  if (!slot) {
    if (cache_hit) fn.cached_.fetch_add(1, std::memory_order_relaxed);
    return std::unexpected(slot.error());
  }
  CUdeviceptr record = slot->address;
  slots.push_back(&record);
  return drive_table(ctx, fn, ticket, slots.data(), stream, cache_hit, slot->index);
}

void LaunchTicket::take_buffer_bytes(const validation::LaunchShape& shape) {
  buffers_ = 0;
  for (size_t k = 0; k < shape.arguments(); ++k) {
    const uint64_t description = shape.word(validation::LaunchShape::kHeaderWords + 2 * k);
    if ((description & 1) == 0) continue;  // not a buffer (argument_word's kind bit)
    const uint64_t bytes = shape.word(validation::LaunchShape::kHeaderWords + 2 * k + 1);
    buffer_bytes_[buffers_++] =
        (description & validation::LaunchShape::kBufferBytesKnown) != 0 ? bytes : ~uint64_t{0};
  }
}

void LaunchTicket::take_buffer_bytes(const SteadyKey& key) {
  buffers_ = key.buffers;
  for (uint32_t k = 0; k < key.buffers; ++k) buffer_bytes_[k] = key.bytes[k] != 0 ? key.bytes[k] : ~uint64_t{0};
}

void LaunchTicket::take_buffer_bytes(const contract::LaunchPlan& plan) {
  buffers_ = 0;
  for (const contract::ArgumentDesc& a : plan.arguments) {
    if (a.kind != contract::ArgumentDesc::Kind::buffer) continue;
    if (buffers_ == buffer_bytes_.size()) {  // more than a ticket holds: drive_checked reports it
      buffers_ = UINT32_MAX;
      return;
    }
    buffer_bytes_[buffers_++] = a.buffer_bytes.value_or(~uint64_t{0});
  }
}

[[gnu::always_inline]] inline std::expected<void, diag::Diagnostics> LaunchTicket::drive_table(Context& ctx, LoadedFunction& fn,
                                                                 const LaunchTicket& ticket, void** table,
                                                                 CUstream stream, bool cache_hit,
                                                                 int64_t checked_slot) {
  const auto& g = ticket.grid_;
  const auto& b = ticket.block_;
  CUresult r;
  (cache_hit ? fn.cached_driver_calls_ : fn.driver_calls_).fetch_add(1, std::memory_order_relaxed);
  Profiler* profiler = ctx.profiler();
  CUevent profile_start = nullptr;
  if (profiler != nullptr) [[unlikely]]
    profile_start = profiler->begin(fn.info_.name, stream);
  if (ticket.cooperative_) {
    r = ctx.api().cuLaunchCooperativeKernel(fn.handle_, g[0], g[1], g[2], b[0], b[1], b[2],
                                            ticket.dynamic_shared_bytes_, stream, table);
  } else {
    r = ctx.api().cuLaunchKernel(fn.handle_, g[0], g[1], g[2], b[0], b[1], b[2], ticket.dynamic_shared_bytes_,
                                 stream, table, nullptr);
  }
  if (r == CUDA_SUCCESS) [[likely]] {
    uint32_t name = fn.log_name_.load(std::memory_order_relaxed);
    if (name == 0) [[unlikely]] {  // the function's first launch: its name gets the log's number
      name = ctx.launch_log().intern(fn.info_.name);
      fn.log_name_.store(name, std::memory_order_relaxed);
    }
    const uint64_t sequence =
        ctx.launch_log().record(name, g, b, ticket.dynamic_shared_bytes_, ticket.cooperative_, stream);
    if (profiler != nullptr) [[unlikely]]
      profiler->end(profile_start, sequence, fn.info_.name, stream);
    if (checked_slot >= 0) [[unlikely]]
      ctx.checked_records().launched(static_cast<uint32_t>(checked_slot), sequence, stream,
                                     {fn.info_.checked, fn.info_.name, fn.location_.file, g, b,
                                      ticket.dynamic_shared_bytes_});
    if (ctx.checked_launches()) [[unlikely]] {
      auto completed = ctx.complete_checked_launch(sequence, stream);
      if (completed && checked_slot >= 0) return ctx.checked_records().collect_slot(static_cast<uint32_t>(checked_slot));
      return completed;
    }
    return {};
  }
  if (checked_slot >= 0) ctx.checked_records().release(static_cast<uint32_t>(checked_slot));
  if (profiler != nullptr) profiler->cancel(profile_start);
  auto failed = ctx.check(r, ticket.cooperative_ ? "cuLaunchCooperativeKernel" : "cuLaunchKernel",
                          launch_subject(fn, ticket.described()));
  auto diags = std::move(failed.error());
  if (diags.items().front().code == diag::Code::kernel_fault) return std::unexpected(std::move(diags));  // an earlier launch
  diags.items().front().code = diag::Code::launch_failed;
  diags.items().front().notes.push_back(
      "ptxgate validated this launch; a driver rejection here means a check is missing: please report it");
  return std::unexpected(std::move(diags));
}

std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                            const contract::LaunchPlan& plan,
                                                            std::span<void* const> args, CUstream stream,
                                                            diag::Diagnostics* warnings, LaunchTicket* ticket) {
  return LoadedFunction::launch_with_shape(ctx, fn, plan, validation::LaunchShape::of(plan), args, stream, warnings,
                                           ticket);
}

std::expected<void, diag::Diagnostics> LoadedFunction::launch_with_shape(Context& ctx, LoadedFunction& fn,
                                                                         const contract::LaunchPlan& plan,
                                                                         const validation::LaunchShape& shape,
                                                                         std::span<void* const> args, CUstream stream,
                                                                         diag::Diagnostics* warnings,
                                                                         LaunchTicket* ticket,
                                                                         const SteadyKey* steady, bool known_miss) {
  if (ctx.poisoned()) [[unlikely]]
    return std::unexpected(ctx.healthy("launch", launch_subject(fn, plan)).error());
  if (auto ok = plan_matches_call(fn, plan, args, stream); !ok) [[unlikely]]
    return ok;
  if (auto ok = ctx.make_current(); !ok) [[unlikely]]
    return ok;

  std::optional<std::array<unsigned, 3>> block = known_miss ? std::nullopt : fn.cache_->find(shape);
  const bool cache_hit = block.has_value();
  if (!cache_hit) {
    // A fresh validation (~0.1-0.2 us with the driver's occupancy answer, itself cached by
    // block size) costs about what one launch cache insert does.
    validation::Verdict verdict = validate_launch(ctx, fn, plan, stream, warnings != nullptr);
    fn.validated_.fetch_add(1, std::memory_order_relaxed);
    if (!verdict.launchable) {
      fn.blocked_.fetch_add(1, std::memory_order_relaxed);
      // check_launch reports a blocked launch whole (its warnings too): validated once.
      return std::unexpected(std::move(verdict.diagnostics));
    }
    if (verdict.needs_shared_opt_in && !fn.shared_opt_in_done_.load(std::memory_order_acquire)) {
      diag::Diagnostics d;
      d.add(diag::Code::launch_failed,
            fmt::format("{} needs {} bytes of shared memory, but setting the opt-in attribute failed",
                        launch_subject(fn, plan), verdict.total_shared_bytes));
      return std::unexpected(std::move(d));
    }
    if (warnings != nullptr) warnings->append(verdict.diagnostics);
    // A launchable verdict bounds every dimension by the device's limits (< 2^32).
    block = std::array<unsigned, 3>{static_cast<unsigned>(verdict.block[0]), static_cast<unsigned>(verdict.block[1]),
                                    static_cast<unsigned>(verdict.block[2])};
    fn.cache_->insert(shape, verdict.block);
  }
  if (steady != nullptr) fn.cache_->remember_steady(*steady, *block);

  LaunchTicket t = LaunchTicket::of(fn.id_, shape, *block, args.size());
  if (fn.checked_) [[unlikely]]
    t.take_buffer_bytes(plan);
  if (ticket != nullptr) *ticket = t;
  return LaunchTicket::drive(ctx, fn, t, args, stream, cache_hit);
}

std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                            const LaunchTicket& ticket, std::span<void* const> args,
                                                            CUstream stream) {
  return LoadedFunction::relaunch(ctx, fn, ticket, args, stream);
}

std::expected<void, diag::Diagnostics> LoadedFunction::relaunch(Context& ctx, LoadedFunction& fn,
                                                                const LaunchTicket& ticket,
                                                                std::span<void* const> args, CUstream stream) {
  if (!ticket.valid() || ticket.function_id_ != fn.id_ || ticket.stream_is_null_ != (stream == nullptr) ||
      ticket.argument_count_ != args.size()) [[unlikely]] {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error,
          fmt::format("launch of '{}': the launch ticket was issued for another function, stream kind or argument "
                      "count",
                      fn.info_.name),
          {}, "relaunch with a ticket that launch_cuda_function issued for this function and call shape");
    return std::unexpected(std::move(d));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr) [[unlikely]] {
      diag::Diagnostics d;
      d.add(diag::Code::null_argument_slot, fmt::format("argument slot {} is a null pointer", i), fn.location_,
            "every slot of the argument table must point at the argument's value");
      fn.blocked_.fetch_add(1, std::memory_order_relaxed);
      return std::unexpected(std::move(d));
    }
  }
  if (ctx.poisoned()) [[unlikely]] {
    return std::unexpected(ctx.healthy("launch", launch_subject(fn, ticket.described())).error());
  }
  if (auto ok = ctx.make_current(); !ok) [[unlikely]]
    return ok;
  return LaunchTicket::drive(ctx, fn, ticket, args, stream, true);
}

}  // namespace ptxgate::backend
