// Context: the retained primary context, its health, the error boundary, checked launches, barrier words.
#include "ptxgate/backend/context.hpp"

#include <fmt/format.h>

#include "ptxgate/backend/stream.hpp"
#include "ptxgate/backend/profile.hpp"
#include "ptxgate/backend/internal/peer_bridge.hpp"

namespace ptxgate::backend {
namespace {

// The default TLS model, not initial-exec: one initial-exec variable marks the whole library
// STATIC_TLS, and then its whole TLS block (several KiB of per-thread launch caches) must fit
// the static TLS that glibc keeps for libraries loaded later. It does not, so dlopen (Python's
// ctypes) failed with "cannot allocate memory in static TLS block".
thread_local CUcontext tls_current_context = nullptr;

// Errors while releasing resources are ignored: in a poisoned context every
// call fails, and a destructor must neither throw nor abort.
void ignore(CUresult) {}

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
  ctx->api_ = api;
  ctx->live_ = std::move(*live);
  std::string subject = fmt::format("device {} ({})", ordinal, ctx->live_.caps.name);
  if (auto ok = PTXGATE_CU(*ctx, subject, cuDeviceGet, &ctx->device_, ordinal); !ok) return std::unexpected(ok.error());
  CUcontext retained = nullptr;
  if (auto ok = PTXGATE_CU(*ctx, subject, cuDevicePrimaryCtxRetain, &retained, ctx->device_); !ok)
    return std::unexpected(ok.error());
  ctx->context_ = retained;
  ctx->tracker_ = std::make_unique<Tracker>(*ctx);
  if (auto ok = ctx->make_current(); !ok) return std::unexpected(ok.error());
  return ctx;
}

Context::~Context() {
  if (context_ == nullptr) return;
  profiler_.reset();
  tracker_.reset();  // frees deferred buffers after their work
  forget_peer_bridge(*this);
  for (auto& [stream, word] : barrier_words_) ignore(api_->cuMemFree(word));
  if (tls_current_context == context_) tls_current_context = nullptr;
  ignore(api_->cuDevicePrimaryCtxRelease(device_));
}

std::expected<void, diag::Diagnostics> Context::failed(CUresult r, std::string_view call, std::string_view subject) {
  auto out = health_.check(*api_, r, call, subject);
  if (!is_sticky_error(r)) return out;
  auto suspects = launch_log_.in_flight();
  if (suspects.empty()) return out;
  return std::unexpected(kernel_fault(std::move(out.error()), suspects, false, r));
}

void Context::enable_profiling() {
  if (!profiler_) profiler_ = std::make_unique<Profiler>(*this);
}

std::expected<void, diag::Diagnostics> Context::complete_checked_launch(uint64_t sequence, CUstream stream) {
  const CUresult r = api_->cuStreamSynchronize(stream);
  if (r == CUDA_SUCCESS) [[likely]] {
    launch_log_.stream_completed_through(stream, sequence);
    return {};
  }
  auto out = health_.check(*api_, r, "cuStreamSynchronize", "a checked launch");
  if (!is_sticky_error(r)) return out;
  auto launch = launch_log_.find(sequence);
  if (!launch) return out;
  return std::unexpected(kernel_fault(std::move(out.error()), {*launch}, true, r));
}

std::expected<void, diag::Diagnostics> Context::make_current() {
  if (tls_current_context == context_) [[likely]] return {};
  if (auto ok = PTXGATE_CU(*this, "", cuCtxSetCurrent, context_); !ok) return ok;
  tls_current_context = context_;
  return {};
}

std::expected<void, diag::Diagnostics> Context::synchronize(std::string_view subject) {
  if (auto ok = enter("cuCtxSynchronize", subject); !ok) return ok;
  auto marks = tracker_->before_context_sync();
  const uint64_t launched = launch_log_.last();
  if (auto ok = PTXGATE_CU(*this, subject, cuCtxSynchronize); !ok) return ok;
  tracker_->after_context_sync(marks);
  launch_log_.completed_through(launched);
  return {};
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
    ignore(api_->cuMemFree(word));
    return std::unexpected(ok.error());
  }
  return word;
}

}  // namespace ptxgate::backend
