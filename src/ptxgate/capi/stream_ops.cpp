// The C API's events, pinned host buffers, copies and fills, the stream-ordered pool and profiling.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptxgate/runtime/launch_profile.hpp"
#include "ptxgate/capi/internal/handles.hpp"

using namespace ptxgate;
using capi::fail;
using capi::done;
using capi::finish;
using capi::guarded;
using capi::null_argument;

namespace {

/// The context a copy or fill runs in: the stream's, else its first device end's.
runtime::Context* context_of(ptxgate_stream* stream, const runtime::CopyEnd& a, const runtime::CopyEnd* b) {
  if (stream != nullptr) return stream->legacy_default ? stream->legacy_default.get() : stream->stream.context();
  if (a.where == runtime::CopyEnd::Where::device && a.device != nullptr) return a.device->context();
  if (b != nullptr && b->where == runtime::CopyEnd::Where::device && b->device != nullptr) return b->device->context();
  if (a.where == runtime::CopyEnd::Where::pinned && a.pinned != nullptr) return a.pinned->context();
  if (b != nullptr && b->where == runtime::CopyEnd::Where::pinned && b->pinned != nullptr) return b->pinned->context();
  return nullptr;
}

diag::Diagnostics no_context(std::string_view call) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_argument_spec, fmt::format("{}: neither a stream nor a device or pinned end names a context", call),
        {}, "pass a stream, or at least one ptxgate_buffer or ptxgate_host_buffer end");
  return d;
}

/// A copy (or, `peer`, a peer copy) of the C ends on `stream`.
ptxgate_status copy(const char* call, ptxgate_stream* stream, const ptxgate_copy_end* dst, const ptxgate_copy_end* src,
                    bool peer, ptxgate_diagnostics** diagnostics) {
  auto d = capi::copy_end(dst, call, "destination");
  if (!d) return finish(diagnostics, std::move(d.error()), PTXGATE_USAGE);
  auto s = capi::copy_end(src, call, "source");
  if (!s) return finish(diagnostics, std::move(s.error()), PTXGATE_USAGE);
  if (auto same = capi::same_element_type(*d, *s, call); !same) return fail(diagnostics, std::move(same.error()));
  runtime::Context* ctx = context_of(stream, *d, &*s);
  if (ctx == nullptr) return finish(diagnostics, no_context(call), PTXGATE_USAGE);
  runtime::Stream legacy;
  auto on = capi::stream_object(stream, *ctx, peer ? "peer copy" : "copy", legacy);
  if (!on) return fail(diagnostics, std::move(on.error()));
  return done(diagnostics, peer ? runtime::copy_peer_async(**on, *d, *s) : runtime::copy_async(**on, *d, *s));
}

}  // namespace

extern "C" {

ptxgate_status ptxgate_event_create(ptxgate_runtime* runtime, ptxgate_event** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_event_create", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_event_create", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_event_create", "runtime");
    auto created = runtime::Event::create(runtime->runtime->shared_context());
    if (!created) return fail(diagnostics, std::move(created.error()));
    *out = new ptxgate_event{std::move(*created)};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_event_record(ptxgate_event* event, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_event_record", [&] {
    if (event == nullptr) return null_argument(diagnostics, "ptxgate_event_record", "event");
    return done(diagnostics, event->event.record(stream != nullptr ? stream->launch_stream() : nullptr));
  });
}

ptxgate_status ptxgate_event_synchronize(ptxgate_event* event, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_event_synchronize", [&] {
    if (event == nullptr) return null_argument(diagnostics, "ptxgate_event_synchronize", "event");
    return done(diagnostics, event->event.synchronize());
  });
}

ptxgate_status ptxgate_event_query(ptxgate_event* event, int32_t* complete, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_event_query", [&] {
    if (event == nullptr) return null_argument(diagnostics, "ptxgate_event_query", "event");
    if (complete == nullptr) return null_argument(diagnostics, "ptxgate_event_query", "complete");
    auto q = event->event.query();
    if (!q) return fail(diagnostics, std::move(q.error()));
    *complete = *q ? 1 : 0;
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_event_elapsed_ms(ptxgate_event* start, ptxgate_event* end, float* ms,
                                        ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_event_elapsed_ms", [&] {
    if (start == nullptr) return null_argument(diagnostics, "ptxgate_event_elapsed_ms", "start");
    if (end == nullptr) return null_argument(diagnostics, "ptxgate_event_elapsed_ms", "end");
    if (ms == nullptr) return null_argument(diagnostics, "ptxgate_event_elapsed_ms", "ms");
    auto elapsed = end->event.elapsed_ms_since(start->event);
    if (!elapsed) return fail(diagnostics, std::move(elapsed.error()));
    *ms = *elapsed;
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_stream_wait_event(ptxgate_stream* stream, ptxgate_event* event, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_stream_wait_event", [&] {
    if (event == nullptr) return null_argument(diagnostics, "ptxgate_stream_wait_event", "event");
    return done(diagnostics, event->event.wait_in(stream != nullptr ? stream->launch_stream() : nullptr));
  });
}

void ptxgate_event_free(ptxgate_event* event) { delete event; }

ptxgate_status ptxgate_host_buffer_allocate(ptxgate_runtime* runtime, size_t bytes, ptxgate_host_buffer** out,
                                            ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_host_buffer_allocate", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_host_buffer_allocate", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_host_buffer_allocate", "runtime");
    auto allocated = runtime::HostBuffer::allocate(runtime->runtime->shared_context(), bytes);
    if (!allocated) return fail(diagnostics, std::move(allocated.error()));
    *out = new ptxgate_host_buffer{std::move(*allocated)};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

void* ptxgate_host_buffer_data(const ptxgate_host_buffer* buffer) { return buffer != nullptr ? buffer->buffer.data() : nullptr; }

size_t ptxgate_host_buffer_size(const ptxgate_host_buffer* buffer) { return buffer != nullptr ? buffer->buffer.size_bytes() : 0; }

ptxgate_status ptxgate_host_buffer_wait(ptxgate_host_buffer* buffer, int32_t for_write, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_host_buffer_wait", [&] {
    if (buffer == nullptr) return null_argument(diagnostics, "ptxgate_host_buffer_wait", "buffer");
    return done(diagnostics,
                buffer->buffer.wait_for_device(for_write != 0 ? runtime::AccessMode::write : runtime::AccessMode::read));
  });
}

void ptxgate_host_buffer_free(ptxgate_host_buffer* buffer) { delete buffer; }

ptxgate_status ptxgate_copy_async(ptxgate_stream* stream, const ptxgate_copy_end* dst, const ptxgate_copy_end* src,
                                  ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_copy_async",
                 [&] { return copy("ptxgate_copy_async", stream, dst, src, false, diagnostics); });
}

ptxgate_status ptxgate_copy_peer_async(ptxgate_stream* stream, const ptxgate_copy_end* dst, const ptxgate_copy_end* src,
                                       ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_copy_peer_async",
                 [&] { return copy("ptxgate_copy_peer_async", stream, dst, src, true, diagnostics); });
}

ptxgate_status ptxgate_fill_async(ptxgate_stream* stream, const ptxgate_copy_end* dst, uint32_t value, uint32_t width,
                                  ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_fill_async", [&] {
    auto d = capi::copy_end(dst, "ptxgate_fill_async", "destination");
    if (!d) return finish(diagnostics, std::move(d.error()), PTXGATE_USAGE);
    runtime::Context* ctx = context_of(stream, *d, nullptr);
    if (ctx == nullptr) return finish(diagnostics, no_context("ptxgate_fill_async"), PTXGATE_USAGE);
    runtime::Stream legacy;
    auto on = capi::stream_object(stream, *ctx, "fill", legacy);
    if (!on) return fail(diagnostics, std::move(on.error()));
    return done(diagnostics, runtime::fill_async(**on, *d, value, width));
  });
}

ptxgate_status ptxgate_runtime_pool_usage(ptxgate_runtime* runtime, ptxgate_pool_usage* out,
                                          ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_pool_usage", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_pool_usage", "runtime");
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_runtime_pool_usage", "out");
    auto pool = runtime->runtime->pool();
    if (!pool) return fail(diagnostics, std::move(pool.error()));
    auto usage = (*pool)->usage();
    if (!usage) return fail(diagnostics, std::move(usage.error()));
    *out = {usage->reserved_bytes, usage->reserved_peak_bytes, usage->used_bytes, usage->used_peak_bytes,
            usage->live_bytes,     usage->live_peak_bytes,     usage->allocations, (*pool)->limit_bytes()};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_runtime_pool_trim(ptxgate_runtime* runtime, uint64_t keep_bytes, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_pool_trim", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_pool_trim", "runtime");
    auto pool = runtime->runtime->pool();
    if (!pool) return fail(diagnostics, std::move(pool.error()));
    return done(diagnostics, (*pool)->trim(keep_bytes));
  });
}

ptxgate_status ptxgate_runtime_pool_reset_peaks(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_pool_reset_peaks", [&] {
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_pool_reset_peaks", "runtime");
    auto pool = runtime->runtime->pool();
    if (!pool) return fail(diagnostics, std::move(pool.error()));
    return done(diagnostics, (*pool)->reset_peaks());
  });
}

ptxgate_status ptxgate_runtime_profile(ptxgate_runtime* runtime, int32_t clear, ptxgate_text** out,
                                       ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_runtime_profile", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_runtime_profile", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_runtime_profile", "runtime");
    runtime::Profiler* profiler = runtime->runtime->profiler();
    if (profiler == nullptr) {
      diag::Diagnostics d;
      d.add(diag::Code::invalid_argument_spec, "ptxgate_runtime_profile: the runtime does not profile its launches", {},
            "make the runtime with profile_launches set");
      return finish(diagnostics, std::move(d), PTXGATE_USAGE);
    }
    auto launches = profiler->launches();
    if (!launches) return fail(diagnostics, std::move(launches.error()));
    auto summary = profiler->summary();
    if (!summary) return fail(diagnostics, std::move(summary.error()));
    nlohmann::json j;
    j["launches"] = nlohmann::json::array();
    for (const auto& l : *launches)
      j["launches"].push_back({{"sequence", l.sequence}, {"kernel", l.kernel}, {"device_ms", l.device_ms}});
    j["summary"] = nlohmann::json::array();
    for (const auto& k : *summary)
      j["summary"].push_back({{"kernel", k.kernel}, {"count", k.count}, {"total_ms", k.total_ms}, {"median_ms", k.median_ms},
                              {"min_ms", k.min_ms}, {"max_ms", k.max_ms}});
    if (clear != 0) profiler->clear();
    *out = new ptxgate_text{j.dump()};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

}  // extern "C"
