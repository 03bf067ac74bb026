// Runtime: compile through the module cache, load into the context (cubin first), bind and launch.
#include "ptxgate/runtime/runtime.hpp"

#include <bit>
#include <memory>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/internal/launch_path.hpp"
#include "ptxgate/runtime/internal/peer_bridge.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/cubin_entries.hpp"

namespace ptxgate::runtime {

/// A module loaded in one context with its resolved functions. Unloaded when the
/// last Kernel using it and the loaded-module tier have let go.
struct LoadedModule {
  std::shared_ptr<Context> ctx;
  CUmodule module = nullptr;
  bool from_cubin = false;
  std::shared_ptr<const module_cache::CacheEntry> entry;
  std::vector<std::unique_ptr<LoadedFunction>> functions;

  LoadedModule() = default;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule() {
    functions.clear();
    if (module != nullptr && ctx) {
      ctx->enter_to_release();
      (void)ctx->api().cuModuleUnload(module);  // errors ignored: the context may be poisoned
    }
  }
  LoadedFunction* find(std::string_view name) const {
    for (const auto& f : functions)
      if (f->info().name == name) return f.get();
    return nullptr;
  }
};

namespace {

constexpr size_t kInlineArguments = 32;

bool has_code(const diag::Diagnostics& d, diag::Code code) {
  for (const auto& item : d)
    if (item.code == code) return true;
  return false;
}

/// The checks of Kernel::launch and Kernel::check before binding: the stream (moved from: PG3002;
/// another context: PG4008) and every buffer argument's context, naming both devices: another
/// context of the kernel's device is PG4008; another device is allowed when the kernel's context
/// has peer access to it (`*across` set: the launch is ordered by both contexts' tracking), else
/// PG4070. With dependency tracking, `accesses` receives what the launch reads and writes of its
/// own context's buffers.
std::expected<void, diag::Diagnostics> launch_objects(const Context& ctx, const contract::KernelInfo& info,
                                                      std::span<const Arg> args, const Stream* stream,
                                                      boost::container::small_vector<BufferAccess, 8>* accesses,
                                                      bool* across) {
  // A kernel of a retired context (Runtime::reset) is refused as such before its arguments are compared
  // with it: buffers of the runtime's new context are not what is wrong.
  if (ctx.retired()) [[unlikely]]
    return ctx.healthy("launch", fmt::format("kernel '{}'", info.name));
  if (stream != nullptr && stream->context() != &ctx) [[unlikely]]
    return ctx.owns(*stream, fmt::format("launch of kernel '{}'", info.name), "the kernel is loaded in");
  const auto& params = info.params;
  const size_t n = std::min(args.size(), params.size());
  diag::Diagnostics foreign;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (a.context() != nullptr && a.context() != &ctx && a.context()->ordinal() != ctx.ordinal()) [[unlikely]] {
      check_peer_access(ctx, *a.context(),
                        i < params.size()
                            ? fmt::format("launch of kernel '{}': the buffer of parameter '{}'", info.name, params[i].name)
                            : fmt::format("launch of kernel '{}': the buffer of argument {}", info.name, i),
                        foreign);
      if (across != nullptr) *across = true;
      continue;
    }
    if (a.context() != nullptr && a.context() != &ctx) [[unlikely]] {
      foreign.append(ctx.foreign_object(fmt::format("launch of kernel '{}'", info.name),
                                        i < params.size() ? fmt::format("argument {} ('{}')", i, params[i].name)
                                                          : fmt::format("argument {}", i),
                                        *a.context(), "the kernel is loaded in"));
      continue;
    }
    if (accesses != nullptr && i < n)
      if (BufferTrack* t = a.track(); t != nullptr && params[i].is_buffer)
        accesses->push_back({t, access_mode(params[i].access)});
  }
  if (foreign.has_errors()) [[unlikely]] return std::unexpected(std::move(foreign));
  return {};
}

}  // namespace

// ---- Kernel ----

Kernel::Kernel(std::shared_ptr<Context> ctx, std::shared_ptr<const LoadedModule> module, LoadedFunction* function,
               module_cache::CacheOutcome outcome)
    : ctx_(std::move(ctx)),
      state_(&internal::LaunchPath::state(*function)),
      params_(state_->binder.params()),
      key_words_(state_->binder.key_words()),
      function_(function),
      module_(std::move(module)),
      outcome_(outcome) {
  const internal::ArgumentBinder& binder = state_->binder;
  if (binder.steady()) (binder.has_proof_scalars() ? exact_proofs_ : exact_plain_) = binder.size();
}

bool Kernel::loaded_from_cubin() const { return module_->from_cubin; }

const module_cache::CacheEntry& Kernel::entry() const { return *module_->entry; }

// The steady path hands the driver a pointer to an Arg's 64-bit value for parameters narrower
// than 8 bytes too: their bytes come first only on a little-endian host.
static_assert(std::endian::native == std::endian::little, "the steady launch path assumes a little-endian host");

template <bool kProofs>
[[gnu::always_inline]] inline std::expected<void, diag::Diagnostics> Kernel::launch_exact(const LaunchConfig& config,
                                                                                          std::span<const Arg> args,
                                                                                          const Stream* stream) {
  internal::ExactBinding b;
  if (!internal::bind_exact<kProofs>(params_, state_->binder.exact_plan(), args, ctx_.get(), b)) [[unlikely]]
    return launch_general(config, args, stream);
  const CUstream s = stream ? stream->handle() : nullptr;
  // The launch cache's front holding the key launches it; another shape the cache knows becomes
  // the front; any other is validated (launch_new_shape).
  const uint32_t flags = (config.cooperative ? SteadyKey::kCooperative : 0) |
                         (config.block_given ? SteadyKey::kBlockGiven : 0) | (s == nullptr ? SteadyKey::kNullStream : 0) |
                         ctx_->launch_options() << SteadyKey::kOptionsShift;
  b.key.count = key_words_;
  const bool keyed =
      b.key.pack(config.grid, config.block, config.dynamic_shared_bytes, flags) && key_words_ <= SteadyKey::kMaxWords;
  const std::span<void* const> slots(b.slots.data(), args.size());
  auto go = [&]() __attribute__((always_inline)) -> std::expected<void, diag::Diagnostics> {
    if (keyed) [[likely]]
      if (auto launched = internal::LaunchPath::launch_steady(*ctx_, *state_, b.key, slots, s)) [[likely]]
        return std::move(*launched);
    return launch_new_shape(config, args, keyed ? &b.key : nullptr, slots, s);
  };
  if (b.tracked == 0) return go();
  return ctx_->tracker().submit(s, std::span<const BufferAccess>(b.accesses.items, b.tracked), go);
}

std::expected<void, diag::Diagnostics> Kernel::launch(const LaunchConfig& config, std::span<const Arg> args,
                                                      const Stream* stream) {
  // Steady path, one pass over the arguments (internal::bind_exact): every argument matches its
  // parameter exactly, so the driver's slot is the Arg's own value and the launch's shape is the
  // configuration plus the buffers' sizes (and the values of the scalars the kernel's memory-safety
  // proof uses): a SteadyKey. Anything else takes the general path, which explains itself.
  const size_t n = args.size();
  if (stream == nullptr || stream->context() == ctx_.get()) [[likely]] {
    if (n == exact_plain_) [[likely]]
      return launch_exact<false>(config, args, stream);
    if (n == exact_proofs_) return launch_exact_proofs(config, args, stream);
  }
  return launch_general(config, args, stream);
}

std::expected<void, diag::Diagnostics> Kernel::launch_exact_proofs(const LaunchConfig& config, std::span<const Arg> args,
                                                                   const Stream* stream) {
  return launch_exact<true>(config, args, stream);
}

std::expected<void, diag::Diagnostics> Kernel::launch_new_shape(const LaunchConfig& config, std::span<const Arg> args,
                                                                const SteadyKey* key, std::span<void* const> slots,
                                                                CUstream s) {
  // The launch's LaunchShape, from the binder's words for exactly matching arguments: a shape the
  // launch cache knows launches at once; any other is validated through a plan of the same
  // descriptions (so the shape is not encoded again; the descriptions hold the proof scalars'
  // values, which are the values the slots point at), then cached. Either way a launchable shape
  // becomes the front.
  using internal::LaunchPath;
  validation::LaunchShape shape;
  shape.start(config.grid, config.block, config.dynamic_shared_bytes,
              LaunchPath::shape_flags(config, *ctx_, *state_, s == nullptr));
  state_->binder.exact_shape(args, shape);
  // A shape that differs from the last one validated afresh in its grid only: the cache's verdict
  // or one derived from that validation.
  bool missed = false;
  if (key != nullptr)
    if (auto launched = LaunchPath::launch_new_grid(*ctx_, *state_, *key, shape, slots, s, missed))
      return std::move(*launched);
  if (!missed)
    if (auto launched = LaunchPath::launch_cached(*ctx_, *state_, shape, slots, s, key)) return std::move(*launched);
  contract::LaunchPlan& plan = internal::thread_plan();
  LaunchPath::plan_header(plan, config, *ctx_, *state_, s == nullptr);
  state_->binder.exact_descriptions(args, plan.arguments);
  return LaunchPath::launch(*ctx_, *state_, plan, shape, slots, s, nullptr, nullptr, key, true, false, true);
}

std::expected<void, diag::Diagnostics> Kernel::launch_general(const LaunchConfig& config, std::span<const Arg> args,
                                                              const Stream* stream) {
  // What the launch reads and writes, from the signature: tracked buffers only.
  boost::container::small_vector<BufferAccess, 8> accesses;
  bool across = false;
  if (auto ok = launch_objects(*ctx_, state_->info, args, stream, &accesses, &across); !ok) [[unlikely]]
    return ok;
  CUstream s = stream ? stream->handle() : nullptr;
  if (across) [[unlikely]]
    return launch_across(config, args, s);
  if (accesses.empty()) return launch_on(config, args, s);
  return ctx_->tracker().submit(s, std::span<const BufferAccess>(accesses.data(), accesses.size()),
                                [&] { return launch_on(config, args, s); });
}

std::expected<void, diag::Diagnostics> Kernel::launch_across(const LaunchConfig& config, std::span<const Arg> args,
                                                             CUstream s) {
  const auto& params = state_->info.params;
  boost::container::small_vector<BufferAccess, 8> local;
  boost::container::small_vector<ForeignAccess, 4> foreign;
  for (size_t i = 0; i < std::min(args.size(), params.size()); ++i) {
    if (!params[i].is_buffer) continue;
    const Arg& a = args[i];
    if (a.context() != nullptr && a.context() != ctx_.get())
      foreign.push_back({a.context(), a.track(), access_mode(params[i].access)});
    else if (a.track() != nullptr)
      local.push_back({a.track(), access_mode(params[i].access)});
  }
  return submit_across(*ctx_, s, std::span<const BufferAccess>(local.data(), local.size()),
                       std::span<const ForeignAccess>(foreign.data(), foreign.size()),
                       [&] { return launch_on(config, args, s); });
}

std::expected<void, diag::Diagnostics> Kernel::launch_on(const LaunchConfig& config, std::span<const Arg> args,
                                                         CUstream s) {
  // The general path: every argument bound once, with messages, into this thread's plan; then the
  // launch as launch_cuda_function makes it (the launch cache's verdict, or a validation).
  using internal::LaunchPath;
  const size_t n = args.size();
  boost::container::small_vector<void*, kInlineArguments> slots(n);
  boost::container::small_vector<BoundSlot, kInlineArguments> values(n);
  contract::LaunchPlan& plan = internal::thread_plan();
  LaunchPath::plan_header(plan, config, *ctx_, *state_, s == nullptr);
  if (auto ok = state_->binder.bind(state_->info, args, plan.arguments, slots.data(), values.data()); !ok) return ok;
  return LaunchPath::launch(*ctx_, *state_, plan, validation::LaunchShape::of(plan),
                            std::span<void* const>(slots.data(), n), s, nullptr, nullptr, nullptr, false, false, true);
}

validation::Verdict Kernel::check(const LaunchConfig& config, std::span<const Arg> args, const Stream* stream) {
  if (auto ok = launch_objects(*ctx_, state_->info, args, stream, nullptr, nullptr); !ok) {
    validation::Verdict blocked;
    blocked.diagnostics = std::move(ok.error());
    return blocked;
  }
  CUstream s = stream ? stream->handle() : nullptr;
  std::vector<void*> slots(args.size());
  std::vector<BoundSlot> values(args.size());
  contract::LaunchPlan plan;
  internal::LaunchPath::plan_header(plan, config, *ctx_, *state_, s == nullptr);
  auto bound = state_->binder.bind(state_->info, args, plan.arguments, slots.data(), values.data());
  plan.arguments_known = !args.empty();
  if (!plan.arguments_known) plan.arguments.clear();
  validation::Verdict v = internal::LaunchPath::validate(*ctx_, *state_, plan, true);
  if (!bound) {
    v.diagnostics.append(bound.error());
    v.launchable = false;
  }
  return v;
}

// ---- Runtime ----

std::expected<std::unique_ptr<Runtime>, diag::Diagnostics> Runtime::create(RuntimeOptions options) {
  auto ctx = Context::open(options.device);
  if (!ctx) return std::unexpected(ctx.error());
  return std::make_unique<Runtime>(std::move(*ctx), std::move(options));
}

Runtime::Runtime(std::shared_ptr<Context> ctx, RuntimeOptions options)
    : ctx_(std::move(ctx)), options_(std::move(options)) {
  adopt_context();
  const ir::DeviceTarget chosen = ir::target_for_device(ctx_->caps().target());
  target_ = chosen.target;
  cubin_for_device_ = chosen.exact;
  cache_ = std::make_unique<module_cache::ModuleCache>(options_.cache);
}

Runtime::~Runtime() = default;

void Runtime::adopt_context() {
  ctx_->tracker().set_enabled(options_.track_dependencies);
  ctx_->set_checked_launches(options_.checked_launches);
  if (options_.profile_launches) ctx_->enable_profiling();
  ctx_->set_stream_policy(options_.stream_policy);
  ctx_->set_require_memory_proof(options_.require_memory_proof);
  loaded_ = std::make_unique<
      module_cache::OnceLruCache<module_cache::CacheKey, std::shared_ptr<const LoadedModule>, diag::Diagnostics>>(
      options_.loaded_module_capacity);
}

std::expected<void, diag::Diagnostics> Runtime::reset() {
  auto fresh = ctx_->reopen();
  if (!fresh) return std::unexpected(std::move(fresh.error()));
  {
    std::lock_guard lock(pool_mutex_);
    pool_.reset();  // the old pool's memory went with the old context: released through the refusing table
  }
  ctx_ = std::move(*fresh);
  adopt_context();
  return {};
}

std::expected<MemoryPool*, diag::Diagnostics> Runtime::pool() {
  std::lock_guard lock(pool_mutex_);
  if (!pool_) {
    auto made = MemoryPool::create(ctx_, options_.pool);
    if (!made) return std::unexpected(made.error());
    pool_ = std::move(*made);
  }
  return pool_.get();
}

std::expected<DeviceBuffer, diag::Diagnostics> Runtime::allocate(size_t bytes) {
  if (options_.allocation == AllocationMode::synchronous) return DeviceBuffer::allocate(ctx_, bytes);
  auto p = pool();
  if (!p) return std::unexpected(p.error());
  return (*p)->allocate(bytes);
}

std::expected<DeviceBuffer, diag::Diagnostics> Runtime::allocate(size_t bytes, const Stream& stream) {
  if (options_.allocation == AllocationMode::synchronous) return DeviceBuffer::allocate(ctx_, bytes);
  auto p = pool();
  if (!p) return std::unexpected(p.error());
  return (*p)->allocate(bytes, &stream);
}

diag::Diagnostics Runtime::take_warnings() {
  std::lock_guard lock(warnings_mutex_);
  return std::exchange(warnings_, {});
}

std::expected<std::shared_ptr<const LoadedModule>, diag::Diagnostics> Runtime::load(
    std::shared_ptr<const module_cache::CacheEntry> shared_entry, std::string_view path) {
  const module_cache::CacheEntry& entry = *shared_entry;
  auto lm = std::make_shared<LoadedModule>();
  lm->ctx = ctx_;
  lm->entry = shared_entry;
  std::string subject = fmt::format("module '{}' ({})", path, entry.target_arch);
  if (auto ok = ctx_->enter("cuModuleLoadData", subject); !ok) return std::unexpected(ok.error());
  diag::Diagnostics cubin_failure;
  // A foreign cubin (no PTX beside it) is loaded whatever the options prefer.
  if (!entry.cubin.empty() && ((cubin_for_device_ && options_.prefer_cubin) || entry.ptx.empty())) {
    auto ok = PTXGATE_CU(*ctx_, subject, cuModuleLoadData, &lm->module, entry.cubin.data());
    if (ok) {
      lm->from_cubin = true;
    } else {
      if (ctx_->poisoned()) return std::unexpected(ok.error());
      cubin_failure = ok.error();
      lm->module = nullptr;
      if (entry.ptx.empty()) return std::unexpected(std::move(cubin_failure));  // no PTX to JIT instead
    }
  }
  if (lm->module == nullptr) {
    char error_log[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof error_log))};
    auto ok = PTXGATE_CU(*ctx_, subject, cuModuleLoadDataEx, &lm->module, entry.ptx.c_str(), 2, options, values);
    if (!ok) {
      auto d = ok.error();
      if (error_log[0] != 0) d.items().front().notes.push_back(fmt::format("JIT log: {}", error_log));
      d.append(cubin_failure);
      return std::unexpected(std::move(d));
    }
  }
  for (const auto& info : entry.kernels) {
    diag::Location where;
    where.file = std::string(path);
    auto fn = LoadedFunction::resolve(*ctx_, lm->module, info, where);
    if (!fn) return std::unexpected(fn.error());
    lm->functions.push_back(std::move(*fn));
  }
  return std::shared_ptr<const LoadedModule>(std::move(lm));
}

std::expected<std::shared_ptr<Kernel>, diag::Diagnostics> Runtime::compile(const ir::Module& verified,
                                                                            std::string_view kernel) {
  if (auto found = ir::require_kernel(verified, kernel); !found) return std::unexpected(std::move(found.error()));
  module_cache::CompileRequest request;
  request.codegen.target = ir::target_for_module(verified, target_);
  request.codegen.opt_level = options_.opt_level;
  request.codegen.fp_mode = options_.fp_mode;
  request.codegen.checked = options_.checked;
  request.produce_cubin = options_.prefer_cubin && cubin_for_device_;
  request.driver_version = std::to_string(ctx_->live().driver_version);
  auto got = cache_->compile(verified, request);
  if (!got && request.produce_cubin && has_code(got.error(), diag::Code::ptxas_missing)) {
    request.produce_cubin = false;  // no toolkit: let the driver JIT the PTX
    got = cache_->compile(verified, request);
  }
  if (!got) return std::unexpected(got.error());
  if (!got->warnings.empty()) {
    std::lock_guard lock(warnings_mutex_);
    warnings_.append(got->warnings);
  }
  auto entry = got->entry;
  auto [loaded, source] = loaded_->get_or_create(got->key, [&] { return load(entry, verified.path); });
  if (!loaded) return std::unexpected(loaded.error());
  LoadedFunction* fn = (*loaded)->find(kernel);
  if (fn == nullptr) {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error,
          fmt::format("kernel '{}' is in the module but not in its compiled entry", kernel));
    return std::unexpected(std::move(d));
  }
  auto outcome = got->outcome;
  return std::shared_ptr<Kernel>(new Kernel(ctx_, std::move(*loaded), fn, outcome));
}

std::expected<std::shared_ptr<Kernel>, diag::Diagnostics> Runtime::load_foreign(std::string_view image,
                                                                                 std::string_view kernel,
                                                                                 std::string_view path,
                                                                                 std::string_view signature) {
  diag::SourceFile file{std::string(path), std::string(image)};
  auto chosen = toolchain::select_foreign_entry(file, kernel, ctx_->caps().arch(), signature);
  if (!chosen) return std::unexpected(std::move(chosen.error()));
  // An entry of its own, outside the module cache: the driver loads the cubin or JIT-compiles
  // the PTX, and the resources come from the driver (cuFuncGetAttribute) as for every loaded function.
  auto entry = std::make_shared<module_cache::CacheEntry>();
  entry->target_arch = chosen->target;
  entry->ptx_isa_version = chosen->isa_version;
  (chosen->cubin ? entry->cubin : entry->ptx) = file.text();
  entry->kernels.push_back(chosen->entry.info);
  auto loaded = load(entry, file.path());
  if (!loaded) return std::unexpected(std::move(loaded.error()));
  LoadedFunction* fn = (*loaded)->find(kernel);
  if (fn == nullptr) {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error, fmt::format("kernel '{}' was loaded but not resolved", kernel));
    return std::unexpected(std::move(d));
  }
  return std::shared_ptr<Kernel>(new Kernel(ctx_, std::move(*loaded), fn, module_cache::CacheOutcome::compiled));
}

std::expected<std::shared_ptr<Kernel>, diag::Diagnostics> Runtime::compile(std::string_view pg_text,
                                                                            std::string_view kernel,
                                                                            std::string_view path) {
  diag::SourceFile file{std::string(path), std::string(pg_text)};
  auto loaded = ir::load_module(file);
  if (!loaded) return std::unexpected(loaded.error());
  if (!loaded->warnings.empty()) {
    std::lock_guard lock(warnings_mutex_);
    warnings_.append(loaded->warnings);
  }
  return compile(loaded->module, kernel);
}

}  // namespace ptxgate::runtime
