// Runtime: compile through the module cache, load into the context (cubin first), bind and launch.
#include "ptxgate/backend/runtime.hpp"

#include <bit>
#include <memory>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/backend/internal/launch_cache.hpp"
#include "ptxgate/backend/internal/peer_bridge.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/cubin_entries.hpp"

namespace ptxgate::backend {

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
      (void)ctx->make_current();
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

/// The codegen target for a device: its own architecture when ptxgate supports it
/// (then ptxas builds a cubin), else the newest supported one below it (PTX, JIT).
std::pair<std::string, bool> target_for(const validation::DeviceCaps& caps) {
  const auto& targets = codegen::supported_targets();
  std::string arch = caps.arch();
  for (const auto& t : targets)
    if (t == arch) return {arch, true};
  int device_number = caps.cc_major * 10 + caps.cc_minor;
  std::string best = targets.front();
  for (const auto& t : targets) {
    if (t.ends_with('a')) continue;
    int n = std::stoi(t.substr(3));
    if (n <= device_number) best = t;
  }
  return {best, false};
}

bool has_code(const diag::Diagnostics& d, diag::Code code) {
  for (const auto& item : d)
    if (item.code == code) return true;
  return false;
}

/// This thread's reusable plan. Thread-local objects are reached through functions that are
/// never inlined: the caller then holds a plain pointer, where an inlined TLS access may be
/// recomputed (a __tls_get_addr call in a shared library) at every use inside a loop.
[[gnu::noinline]] contract::LaunchPlan& thread_plan() {
  thread_local contract::LaunchPlan plan;
  return plan;
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

bool Kernel::loaded_from_cubin() const { return module_->from_cubin; }

const module_cache::CacheEntry& Kernel::entry() const { return *module_->entry; }

std::expected<void, diag::Diagnostics> Kernel::fill_plan(contract::LaunchPlan& plan, const LaunchConfig& config,
                                                         std::span<const Arg> args, CUstream stream, void** slots,
                                                         BoundSlot* values) {
  plan_header(plan, config, stream);
  plan.arguments.resize(args.size());
  const auto& params = function_->info().params;
  diag::Diagnostics errors;
  for (size_t i = 0; i < args.size(); ++i) {
    auto& d = plan.arguments[i];
    d = describe_argument(args[i]);
    slots[i] = argument_slot(args[i], values[i]);  // an argument past the parameters: the count error is validation's
    if (i >= params.size()) continue;
    if (!bind_described(args[i], params[i], values[i], d)) {
      // The message-free binder said no: bind_argument says why.
      auto bound = bind_argument(args[i], params[i], function_->info().name);
      if (bound) [[unlikely]] {  // the two binders disagree: take the one that explains itself
        values[i] = *bound;
        d.size_bytes = bound->size;
        if (!params[i].is_buffer) d.scalar_type = params[i].type;
      } else {
        errors.append(bound.error());
        slots[i] = nullptr;
      }
    }
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return {};
}

// The steady path hands the driver a pointer to an Arg's 64-bit value for parameters narrower
// than 8 bytes too: their bytes come first only on a little-endian host.
static_assert(std::endian::native == std::endian::little, "the steady launch path assumes a little-endian host");

std::vector<Kernel::SteadyParam> Kernel::steady_params_for(const contract::KernelInfo& info, uint32_t& buffers) {
  const std::vector<SteadyDesc> descs = steady_descs_for(info);
  std::vector<SteadyParam> steady(info.params.size());
  buffers = 0;
  for (size_t i = 0; i < info.params.size(); ++i) {
    const auto& p = info.params[i];
    steady[i].type = p.type;
    steady[i].buffer = p.is_buffer;
    steady[i].steady = descs[i].word != 0;
    steady[i].access = access_mode(p.access);
    // A kernel of more buffers than a SteadyKey holds never uses its key (launch() checks).
    if (p.is_buffer) steady[i].buffer_index = static_cast<uint8_t>(buffers++ % SteadyKey::kMaxBuffers);
  }
  return steady;
}

std::vector<Kernel::SteadyDesc> Kernel::steady_descs_for(const contract::KernelInfo& info) {
  std::vector<SteadyDesc> steady(info.params.size());
  for (size_t i = 0; i < info.params.size(); ++i) {
    const auto& p = info.params[i];
    // The description bind_described leaves for an argument that matches the parameter exactly.
    contract::ArgumentDesc& d = steady[i].desc;
    if (p.is_buffer) {
      d.kind = contract::ArgumentDesc::Kind::buffer;
      d.size_bytes = 8;
    } else if (p.type == ir::Type::tensor_map) {  // Hopper: bound on the general path (word 0)
      d.kind = contract::ArgumentDesc::Kind::tensor_map;
      d.size_bytes = 128;
      continue;
    } else {
      d.kind = contract::ArgumentDesc::Kind::scalar;
      d.size_bytes = p.size_bytes != 0 ? p.size_bytes : ir::byte_size(p.type);
      d.scalar_type = p.type;
      // The slot points at the Arg's 8-byte little-endian value: only widths up to 8 bytes.
      if (d.size_bytes == 0 || d.size_bytes > 8) continue;
    }
    steady[i].word = validation::LaunchShape::argument_word(d);
  }
  return steady;
}

void Kernel::plan_header(contract::LaunchPlan& plan, const LaunchConfig& config, CUstream stream) const {
  plan.grid = config.grid;
  plan.block = config.block;
  plan.dynamic_shared_bytes = config.dynamic_shared_bytes;
  plan.cooperative = config.cooperative;
  plan.block_given = config.block_given;
  plan.arguments_known = true;
  plan.stream_policy = ctx_->stream_policy();
  plan.stream_is_null = stream == nullptr;
  plan.function_is_null = function_->handle() == nullptr;
  plan.required_elements.clear();
}

std::expected<void, diag::Diagnostics> Kernel::launch(const LaunchConfig& config, std::span<const Arg> args,
                                                      const Stream* stream) {
  // Steady path, one pass over the arguments: every argument matches its parameter exactly (a
  // buffer of this context, or untracked device memory, of the parameter's element type or
  // untyped; a scalar of the parameter's type), so the driver's slot is the Arg's own value and
  // the launch's shape is the configuration plus the buffers' sizes (a SteadyKey). The launch
  // cache's front holding that key launches it by ticket; another shape the cache knows becomes
  // the front; anything else takes the general path below, which explains itself.
  const size_t n = args.size();
  if (n == steady_.size() && n <= validation::LaunchShape::kMaxArguments &&
      (stream == nullptr || stream->context() == ctx_.get())) [[likely]] {
    const CUstream s = stream ? stream->handle() : nullptr;
    std::array<void*, validation::LaunchShape::kMaxArguments> slots;
    // Storage for the tracked accesses, not initialised (a zeroed array costs more than the launch).
    union Accesses {
      Accesses() {}
      BufferAccess items[validation::LaunchShape::kMaxArguments];
    } accesses;
    SteadyKey key;  // its arrays are written before they are read
    size_t tracked = 0;
    size_t i = 0;
    const Context* own = ctx_.get();
    const SteadyParam* params = steady_.data();
    for (; i < n; ++i) {
      const Arg& a = args[i];
      const SteadyParam p = params[i];
      if (p.buffer) {
        if (a.kind() != Arg::Kind::buffer || a.bits() == 0 || !element_type_fits(a.type(), p.type) ||
            (a.context() != nullptr && a.context() != own)) [[unlikely]]
          break;
        key.bytes[p.buffer_index] = a.buffer_bytes();
        if (BufferTrack* t = a.track()) std::construct_at(&accesses.items[tracked++], t, p.access);
      } else {
        if (a.kind() != Arg::Kind::scalar || a.type() != p.type || !p.steady) [[unlikely]]
          break;
      }
      slots[i] = const_cast<uint64_t*>(a.value_address());  // the driver only reads it
    }
    if (i == n) [[likely]] {
      const auto policy = ctx_->stream_policy();
      const uint32_t flags = (config.cooperative ? SteadyKey::kCooperative : 0) |
                             (config.block_given ? SteadyKey::kBlockGiven : 0) | (s == nullptr ? SteadyKey::kNullStream : 0) |
                             (policy == contract::StreamPolicy::require_explicit ? SteadyKey::kRequireExplicit : 0);
      key.buffers = steady_buffers_;
      const bool keyed = key.pack(config.grid, config.block, config.dynamic_shared_bytes, flags) &&
                         steady_buffers_ <= SteadyKey::kMaxBuffers;
      const std::span<void* const> slot_span(slots.data(), n);
      auto go = [&]() -> std::expected<void, diag::Diagnostics> {
        if (keyed) [[likely]]
          if (auto launched = LoadedFunction::launch_steady(*ctx_, *function_, key, slot_span, s)) [[likely]]
            return std::move(*launched);
        return launch_new_shape(config, args, keyed ? &key : nullptr, slot_span, s);
      };
      if (tracked == 0) return go();
      return ctx_->tracker().submit(s, std::span<const BufferAccess>(accesses.items, tracked), go);
    }
  }
  return launch_general(config, args, stream);
}

std::expected<void, diag::Diagnostics> Kernel::launch_new_shape(const LaunchConfig& config, std::span<const Arg> args,
                                                                const SteadyKey* key, std::span<void* const> slots,
                                                                CUstream s) {
  // The launch's LaunchShape, from the parameters' precomputed words: a shape the launch cache
  // knows launches at once; any other is validated through a plan of the same descriptions (so
  // the shape is not encoded again), then cached. Either way a launchable shape becomes the front.
  validation::LaunchShape shape;
  shape.start(config.grid, config.block, config.dynamic_shared_bytes,
              {config.cooperative, config.block_given, true, s == nullptr, ctx_->stream_policy(),
               function_->handle() == nullptr});
  uint64_t* words = shape.argument_words(args.size());  // args.size() <= kMaxArguments (launch checked)
  for (size_t k = 0; k < args.size(); ++k) {
    const uint64_t bytes = steady_[k].buffer ? args[k].buffer_bytes() : 0;
    words[2 * k] = bytes != 0 ? steady_descs_[k].word | validation::LaunchShape::kBufferBytesKnown
                              : steady_descs_[k].word;
    words[2 * k + 1] = bytes;
  }
  if (auto launched = LoadedFunction::launch_cached(*ctx_, *function_, shape, slots, s, key)) return std::move(*launched);
  contract::LaunchPlan& plan = thread_plan();
  plan_header(plan, config, s);
  plan.arguments.resize(args.size());
  for (size_t k = 0; k < args.size(); ++k) {
    plan.arguments[k] = steady_descs_[k].desc;
    if (steady_[k].buffer && args[k].buffer_bytes() != 0) plan.arguments[k].buffer_bytes = args[k].buffer_bytes();
  }
  return LoadedFunction::launch_with_shape(*ctx_, *function_, plan, shape, slots, s, nullptr, nullptr, key, true);
}

std::expected<void, diag::Diagnostics> Kernel::launch_general(const LaunchConfig& config, std::span<const Arg> args,
                                                              const Stream* stream) {
  // What the launch reads and writes, from the signature: tracked buffers only.
  boost::container::small_vector<BufferAccess, 8> accesses;
  bool across = false;
  if (auto ok = launch_objects(*ctx_, function_->info(), args, stream, &accesses, &across); !ok) [[unlikely]]
    return ok;
  CUstream s = stream ? stream->handle() : nullptr;
  if (across) [[unlikely]]
    return launch_across(config, args, s);
  if (accesses.empty()) return launch_on(config, args, s);
  return ctx_->tracker().submit(s, std::span<const BufferAccess>(accesses.data(), accesses.size()), [&] { return launch_on(config, args, s); });
}

std::expected<void, diag::Diagnostics> Kernel::launch_across(const LaunchConfig& config, std::span<const Arg> args,
                                                             CUstream s) {
  const auto& params = function_->info().params;
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
  const auto& params = function_->info().params;
  const size_t n = args.size();
  boost::container::small_vector<void*, kInlineArguments> slots(n);
  boost::container::small_vector<BoundSlot, kInlineArguments> values(n);

  // Steady path: bind every argument once while describing it; a shape the function's launch
  // cache knows (launch_cuda_function validated it before) relaunches by ticket, without a plan.
  if (n == params.size()) [[likely]] {
    validation::LaunchShape shape;
    shape.start(config.grid, config.block, config.dynamic_shared_bytes,
                {config.cooperative, config.block_given, true, s == nullptr, ctx_->stream_policy(),
                 function_->handle() == nullptr});
    bool bound = true;
    for (size_t i = 0; i < n && bound; ++i) {
      contract::ArgumentDesc d = describe_argument(args[i]);
      bound = bind_described(args[i], params[i], values[i], d);
      shape.add(d);
      slots[i] = argument_slot(args[i], values[i]);
    }
    if (bound)
      if (auto ticket = function_->cached_ticket(shape, n))
        return launch_cuda_function(*ctx_, *function_, *ticket, std::span<void* const>(slots.data(), n), s);
  }

  contract::LaunchPlan& plan = thread_plan();  // reused: no allocation once its vectors have grown
  if (auto ok = fill_plan(plan, config, args, s, slots.data(), values.data()); !ok) return ok;
  return launch_cuda_function(*ctx_, *function_, plan, std::span<void* const>(slots.data(), n), s);
}

validation::Verdict Kernel::check(const LaunchConfig& config, std::span<const Arg> args, const Stream* stream) {
  if (auto ok = launch_objects(*ctx_, function_->info(), args, stream, nullptr, nullptr); !ok) {
    validation::Verdict blocked;
    blocked.diagnostics = std::move(ok.error());
    return blocked;
  }
  CUstream s = stream ? stream->handle() : nullptr;
  std::vector<void*> slots(args.size());
  std::vector<BoundSlot> values(args.size());
  contract::LaunchPlan plan;
  auto bound = fill_plan(plan, config, args, s, slots.data(), values.data());
  plan.arguments_known = !args.empty();
  if (!plan.arguments_known) plan.arguments.clear();
  validation::Verdict v = validate_launch(*ctx_, *function_, plan, s);
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
  std::tie(target_, cubin_for_device_) = target_for(ctx_->caps());
  cache_ = std::make_unique<module_cache::ModuleCache>(options_.cache);
}

Runtime::~Runtime() = default;

void Runtime::adopt_context() {
  ctx_->tracker().set_enabled(options_.track_dependencies);
  ctx_->set_checked_launches(options_.checked_launches);
  if (options_.profile_launches) ctx_->enable_profiling();
  ctx_->set_stream_policy(options_.stream_policy);
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
  if (auto ok = ctx_->healthy("cuModuleLoadData", subject); !ok) return std::unexpected(ok.error());
  if (auto ok = ctx_->make_current(); !ok) return std::unexpected(ok.error());
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
  request.codegen.target = codegen::target_for_module(verified, target_);
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

}  // namespace ptxgate::backend
