// Context: the retained primary context, its health, the error boundary, checked launches, barrier words.
#include "ptxgate/runtime/context.hpp"

#include <fmt/format.h>

#include "ptxgate/runtime/internal/checked_records.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/runtime/launch_profile.hpp"
#include "ptxgate/runtime/internal/peer_bridge.hpp"

namespace ptxgate::runtime {
namespace {

// The general-dynamic TLS model, not initial-exec: one initial-exec variable marks the whole library
// STATIC_TLS, and then its whole TLS block (several KiB of per-thread launch caches) must fit
// the static TLS that glibc keeps for libraries loaded later. It does not, so dlopen (Python's
// ctypes) failed with "cannot allocate memory in static TLS block". On x86-64 the accesses go
// through TLS descriptors (CMakeLists.txt, PTXGATE_TLS_OPTIONS): one load where the block is in
// static TLS (a library the program was linked with), glibc's dynamic path where it is not.
// The id of the Context current on this thread (not its CUcontext: a reset primary context may come
// back with the same handle, and must be made current again).
thread_local uint64_t tls_current_context = 0;
std::atomic<uint64_t> g_next_context_id{1};

// Errors while releasing resources are ignored: in a poisoned context every
// call fails, and a destructor must neither throw nor abort.
void ignore(CUresult) {}

/// Every context opened in this process, for a reset to retire those of its device.
std::mutex g_contexts_mutex;
std::vector<std::weak_ptr<Context>> g_contexts;

void register_context(const std::shared_ptr<Context>& ctx) {
  std::lock_guard lock(g_contexts_mutex);
  std::erase_if(g_contexts, [](const std::weak_ptr<Context>& w) { return w.expired(); });
  g_contexts.push_back(ctx);
}

/// The live, not yet retired contexts of device `ordinal` opened through `api`.
std::vector<std::shared_ptr<Context>> live_contexts(const DriverApi& api, int ordinal) {
  std::lock_guard lock(g_contexts_mutex);
  std::vector<std::shared_ptr<Context>> out;
  for (const auto& w : g_contexts)
    if (auto c = w.lock(); c && !c->retired() && c->ordinal() == ordinal && &c->api() == &api) out.push_back(c);
  return out;
}

/// A call of the refusing table: nothing reaches the driver.
template <class F>
struct Refuse;
template <class... A>
struct Refuse<CUresult (*)(A...)> {
  static CUresult call(A...) { return CUDA_ERROR_CONTEXT_IS_DESTROYED; }
};

/// A table that refuses every call but the error texts (those come from `real`).
DriverApi refusing_table(const DriverApi& real) {
  DriverApi t;
#define PTXGATE_REFUSE(name) t.name = &Refuse<decltype(t.name)>::call;
  PTXGATE_DRIVER_ENTRY_POINTS(PTXGATE_REFUSE)
#undef PTXGATE_REFUSE
  t.cuGetErrorName = real.cuGetErrorName;
  t.cuGetErrorString = real.cuGetErrorString;
  t.library = real.library + " (a retired context: every call refused)";
  return t;
}

}  // namespace

std::expected<std::shared_ptr<Context>, diag::Diagnostics> Context::open(int ordinal, const DriverApi* api) {
  if (api == nullptr) {
    auto loaded = driver();
    if (!loaded) return std::unexpected(loaded.error());
    api = *loaded;
  }
  auto live = query_device(*api, ordinal);
  if (!live) return std::unexpected(live.error());
  std::shared_ptr<Context> ctx(new Context());
  ctx->api_.store(api, std::memory_order_release);
  ctx->driver_ = api;
  ctx->id_ = g_next_context_id.fetch_add(1, std::memory_order_relaxed);
  ctx->live_ = std::move(*live);
  std::string subject = fmt::format("device {} ({})", ordinal, ctx->live_.caps.name);
  if (auto ok = PTXGATE_CU(*ctx, subject, cuDeviceGet, &ctx->device_, ordinal); !ok) return std::unexpected(ok.error());
  CUcontext retained = nullptr;
  if (auto ok = PTXGATE_CU(*ctx, subject, cuDevicePrimaryCtxRetain, &retained, ctx->device_); !ok)
    return std::unexpected(ok.error());
  ctx->context_ = retained;
  ctx->tracker_ = std::make_unique<Tracker>(*ctx);
  register_context(ctx);
  if (auto ok = ctx->make_current(); !ok) return std::unexpected(ok.error());
  return ctx;
}

Context::~Context() {
  if (context_ == nullptr) return;
  profiler_.reset();  // a retired context's objects go through the refusing table: nothing is freed twice
  checked_records_.reset();
  tracker_.reset();   // frees deferred buffers after their work
  forget_peer_bridge(*this);
  for (auto& [stream, word] : barrier_words_) ignore(api().cuMemFree(word));
  if (tls_current_context == id_) tls_current_context = 0;
  if (!retired()) ignore(api().cuDevicePrimaryCtxRelease(device_));  // a reset gave a retired one's back
}

void Context::retire() {
  refusing_ = std::make_unique<DriverApi>(refusing_table(*driver_));
  health_.retire(fmt::format("device {} ({})", live_.ordinal, live_.caps.name));
  api_.store(refusing_.get(), std::memory_order_release);
}

std::expected<std::shared_ptr<Context>, diag::Diagnostics> Context::reopen() {
  const DriverApi& real = *driver_;
  if (!retired()) {
    const std::string subject = fmt::format("device {} ({})", ordinal(), live_.caps.name);
    if (CUresult r = real.cuDevicePrimaryCtxReset(device_); r != CUDA_SUCCESS) {
      diag::Diagnostics d;  // nothing retired: the contexts stay as they were
      d.items().push_back(driver_call_error(real, r, "cuDevicePrimaryCtxReset", subject));
      d.items().back().fix = "the device could not be reset in this process: start a new process";
      return std::unexpected(std::move(d));
    }
    // What the contexts held is gone: from now on their objects are refused and released without a call.
    for (auto& c : live_contexts(real, ordinal())) {
      c->retire();
      ignore(real.cuDevicePrimaryCtxRelease(c->device_));
    }
  }
  // Whether the driver gives this process a context again: after a sticky fault an H100 with driver 580
  // answers cuDevicePrimaryCtxRetain (and cuCtxCreate) with the fault's error, reset or not.
  CUcontext probe = nullptr;
  if (CUresult r = real.cuDevicePrimaryCtxRetain(&probe, device_); r != CUDA_SUCCESS) {
    diag::Diagnostics d;
    if (!is_sticky_error(r)) {
      d.items().push_back(driver_call_error(real, r, "cuDevicePrimaryCtxRetain", fmt::format("device {} ({})", ordinal(), live_.caps.name)));
      return std::unexpected(std::move(d));
    }
    d.add(diag::Code::context_unrecoverable,
          fmt::format("device {} ({}) gives this process no new CUDA context after the fault: cuDevicePrimaryCtxRetain "
                      "failed after cuDevicePrimaryCtxReset with {} ({}): the driver keeps a sticky fault for the "
                      "whole process",
                      ordinal(), live_.caps.name, driver_error_name(real, r), static_cast<int>(r)),
          {},
          "start a new process (its first context works); to keep a program alive across kernel faults, run the work "
          "that may fault in a process of its own, as ptxgate's GPU test supervisor runs each case");
    d.items().back().notes.push_back("the objects of the old context stay retired: each use is PG4010, none is reused");
    return std::unexpected(std::move(d));
  }
  ignore(real.cuDevicePrimaryCtxRelease(device_));  // open() retains it for the new context
  return open(ordinal(), &real);
}

std::expected<void, diag::Diagnostics> Context::failed(CUresult r, std::string_view call, std::string_view subject) {
  if (health_.retired()) return health_.healthy(call, subject);  // the refusing table answered: PG4010
  auto out = health_.check(api(), r, call, subject);
  if (!is_sticky_error(r)) return out;
  auto suspects = launch_log_.in_flight();
  if (suspects.empty()) return out;
  return std::unexpected(kernel_fault(std::move(out.error()), suspects, false, r));
}

void Context::enable_profiling() {
  if (!profiler_) profiler_ = std::make_unique<Profiler>(*this);
}

std::expected<void, diag::Diagnostics> Context::complete_checked_launch(uint64_t sequence, CUstream stream) {
  const CUresult r = api().cuStreamSynchronize(stream);
  if (r == CUDA_SUCCESS) [[likely]] {
    launch_log_.stream_completed_through(stream, sequence);
    return {};
  }
  auto out = health_.check(api(), r, "cuStreamSynchronize", "a checked launch");
  if (!is_sticky_error(r)) return out;
  auto launch = launch_log_.find(sequence);
  if (!launch) return out;
  return std::unexpected(kernel_fault(std::move(out.error()), {*launch}, true, r));
}

std::expected<void, diag::Diagnostics> Context::make_current() {
  if (tls_current_context == id_) [[likely]] return {};
  if (auto ok = PTXGATE_CU(*this, "", cuCtxSetCurrent, context_); !ok) return ok;
  tls_current_context = id_;
  return {};
}

std::expected<void, diag::Diagnostics> Context::synchronize(std::string_view subject) {
  if (auto ok = enter("cuCtxSynchronize", subject); !ok) return ok;
  auto marks = tracker_->before_context_sync();
  const uint64_t launched = launch_log_.last();
  CheckedRecords* checked = checked_records_if_made();
  const uint64_t checked_mark = checked ? checked->mark() : 0;
  if (auto ok = PTXGATE_CU(*this, subject, cuCtxSynchronize); !ok) return ok;
  tracker_->after_context_sync(marks);
  launch_log_.completed_through(launched);
  // Checked launches report what they stopped now that they are complete (PG3804).
  if (checked) return checked->collect(nullptr, true, checked_mark);
  return {};
}

CheckedRecords& Context::checked_records() {
  if (CheckedRecords* made = checked_records_made_.load(std::memory_order_acquire)) [[likely]]
    return *made;
  std::lock_guard lock(barrier_mutex_);
  if (!checked_records_) {
    checked_records_ = std::make_unique<CheckedRecords>(*this);
    checked_records_made_.store(checked_records_.get(), std::memory_order_release);
  }
  return *checked_records_;
}

std::expected<void, diag::Diagnostics> Context::legacy_stream_allowed(std::string_view operation) const {
  if (stream_policy() == contract::StreamPolicy::allow_legacy_default) [[likely]] return {};
  diag::Diagnostics d;
  d.add(diag::Code::null_stream,
        fmt::format("{} runs on the null (legacy default) stream, which the stream policy of device {} ({}) forbids",
                    operation, device_, live_.caps.name),
        {},
        "pass a stream made by Runtime::create_stream (copies: copy_async / fill_async), or set "
        "RuntimeOptions::stream_policy to allow_legacy_default");
  return std::unexpected(std::move(d));
}

std::expected<void, diag::Diagnostics> Context::owns(const Stream& stream, std::string_view operation,
                                                     std::string_view anchor) const {
  if (stream.context() == this) [[likely]] return {};
  if (stream.context() == nullptr) return std::unexpected(moved_from_stream(operation));
  return std::unexpected(foreign_object(operation, "the stream", *stream.context(), anchor));
}

diag::Diagnostics moved_from_stream(std::string_view operation) {
  diag::Diagnostics d;
  d.add(diag::Code::null_stream, fmt::format("{} on a stream that was moved from or reset", operation), {},
        "pass a stream made by Runtime::create_stream");
  return d;
}

diag::Diagnostics Context::foreign_object(std::string_view operation, std::string_view object, const Context& owner,
                                          std::string_view anchor) const {
  if (owner.retired()) return owner.health().healthy(operation, object).error();
  diag::Diagnostics d;
  d.add(diag::Code::foreign_object,
        fmt::format("{}: {} belongs to the context of device {} ({}), but {} the context of device {} ({})", operation,
                    object, owner.device_, owner.live_.caps.name, anchor, device_, live_.caps.name),
        {}, "use streams, buffers and events made by one runtime (one device) together");
  return d;
}

std::expected<CUdeviceptr, diag::Diagnostics> Context::grid_barrier_word(CUstream stream) {
  std::lock_guard lock(barrier_mutex_);
  if (auto it = barrier_words_.find(stream); it != barrier_words_.end()) [[likely]] return it->second;
  auto word = allocate_barrier_word("grid barrier word");
  if (word) barrier_words_.emplace(stream, *word);
  return word;
}

std::expected<CUdeviceptr, diag::Diagnostics> Context::allocate_barrier_word(std::string_view owner) {
  if (auto ok = enter("cuMemAlloc", owner); !ok) return std::unexpected(ok.error());
  CUdeviceptr word = 0;
  if (auto ok = PTXGATE_CU(*this, owner, cuMemAlloc, &word, 4); !ok) return std::unexpected(ok.error());
  if (auto ok = PTXGATE_CU(*this, owner, cuMemsetD32, word, 0u, 1); !ok) {
    ignore(api().cuMemFree(word));
    return std::unexpected(ok.error());
  }
  return word;
}

}  // namespace ptxgate::runtime
