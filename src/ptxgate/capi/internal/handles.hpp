// The C API's opaque handles and the one boundary where C++ results become C statuses.
#pragma once

#include <exception>
#include <expected>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "ptxgate/runtime/tensor_map.hpp"
#include "ptxgate/capi/ptxgate.h"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/commands/offline_check.hpp"

struct ptxgate_diagnostics {
  ptxgate::diag::Diagnostics list;
  std::string rendered;  ///< the last ptxgate_diagnostics_render result
};

struct ptxgate_module {
  ptxgate::module_cache::CacheEntry entry;
  std::string kernels_json;
};

struct ptxgate_verdict {
  ptxgate::commands::OfflineCheck check;
  ptxgate_diagnostics diagnostics;
  std::string json;
  std::string summary;
};

struct ptxgate_runtime {
  /// Owned alone, or (a device set's runtime) sharing the set's ownership.
  std::shared_ptr<ptxgate::runtime::Runtime> runtime;
  int device = 0;
  std::string target;  ///< the runtime's codegen target, spelled for ptxgate_runtime_target
  std::string json;    ///< ptxgate_runtime_json's document
};

struct ptxgate_kernel {
  std::shared_ptr<ptxgate::runtime::Kernel> kernel;
  int device = 0;
  std::string json;
};

struct ptxgate_buffer {
  ptxgate::runtime::DeviceBuffer buffer;
};

struct ptxgate_stream {
  /// The stream; for the legacy default stream (a wrapped 0) a borrowed null handle of the context,
  /// for the calls that take a stream object (copies, replays, collectives).
  ptxgate::runtime::Stream stream;
  std::shared_ptr<ptxgate::runtime::Context> legacy_default;  ///< the context, for the legacy default stream

  /// What a launch takes: the stream, or null for the legacy default stream.
  const ptxgate::runtime::Stream* launch_stream() const { return legacy_default ? nullptr : &stream; }
};

struct ptxgate_event {
  ptxgate::runtime::Event event;
};

struct ptxgate_host_buffer {
  ptxgate::runtime::HostBuffer buffer;
};

struct ptxgate_graph {
  ptxgate::runtime::Graph graph;
};

struct ptxgate_graph_exec {
  ptxgate::runtime::GraphExec exec;
  uint64_t graph_id = 0;  ///< the builder's id, which its nodes carry
  int device = 0;         ///< the graph's device
};

struct ptxgate_tensor_map {
  ptxgate::runtime::TensorMap map;
  std::string description;
};

struct ptxgate_device_set {
  std::shared_ptr<ptxgate::runtime::DeviceSet> set;
  ptxgate::runtime::RuntimeOptions options;  ///< what each runtime was opened with
};

struct ptxgate_communicator {
  std::unique_ptr<ptxgate::runtime::Communicator> comm;
};

struct ptxgate_group {
  ptxgate::runtime::Group group;
};

struct ptxgate_text {
  std::string text;
};

namespace ptxgate::capi {

/// Hands `d` to the caller (when it asked for diagnostics) and answers `status`.
inline ptxgate_status finish(ptxgate_diagnostics** out, diag::Diagnostics d, ptxgate_status status) {
  if (out != nullptr) {
    *out = nullptr;
    auto list = std::unique_ptr<ptxgate_diagnostics>(new (std::nothrow) ptxgate_diagnostics{});
    if (list) {
      list->list = std::move(d);
      *out = list.release();
    }
  }
  return status;
}

inline ptxgate_status fail(ptxgate_diagnostics** out, diag::Diagnostics d) {
  return finish(out, std::move(d), PTXGATE_ERROR);
}

/// OK with no diagnostics when `ok` holds, else its diagnostics (PTXGATE_ERROR).
inline ptxgate_status done(ptxgate_diagnostics** out, std::expected<void, diag::Diagnostics> ok) {
  if (!ok) return fail(out, std::move(ok.error()));
  return finish(out, {}, PTXGATE_OK);
}

/// One error record with its fix line: `code` (PG5002, a usage error of the C API, unless named).
inline diag::Diagnostics usage_error(std::string message, std::string fix,
                                     diag::Code code = diag::Code::invalid_argument_spec) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// PG5002 naming the call and the parameter that was null.
inline ptxgate_status null_argument(ptxgate_diagnostics** out, std::string_view call, std::string_view parameter) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_argument_spec, fmt::format("{}: '{}' is null", call, parameter), {},
        fmt::format("pass a valid '{}'", parameter));
  return finish(out, std::move(d), PTXGATE_USAGE);
}

/// Runs `body` (returning a ptxgate_status) so that nothing throws across the C boundary: an
/// escaping exception (out of memory) becomes PG9000.
template <class F>
ptxgate_status guarded(ptxgate_diagnostics** out, std::string_view call, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error, fmt::format("{}: {}", call, e.what()));
    return fail(out, std::move(d));
  } catch (...) {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error, fmt::format("{}: unknown exception", call));
    return fail(out, std::move(d));
  }
}

/// A loaded kernel's signature and driver-reported resources, as ptxgate_kernel_json gives them.
inline std::string kernel_json(const runtime::Kernel& k) {
  nlohmann::json j = contract::to_json(k.info());
  j["resources"] = module_cache::resources_to_json(k.resources());
  return j.dump();
}

/// The streams a stream-taking call uses: `stream` itself, or (null, or a wrapped 0) the legacy
/// default stream of `ctx` as a borrowed null handle, after the context's stream policy allows it
/// for `operation` (PG3002).
std::expected<const runtime::Stream*, diag::Diagnostics> stream_object(ptxgate_stream* stream, runtime::Context& ctx,
                                                                       std::string_view operation,
                                                                       runtime::Stream& legacy);

/// Keeps `failure` (null: none) for ptxgate_take_last_diagnostics on this thread.
void set_last_failure(ptxgate_diagnostics* failure);

/// A C handle of `runtime` opened with `options` (src/ptxgate/capi/runtime.cpp).
ptxgate_runtime* runtime_handle(std::shared_ptr<runtime::Runtime> runtime, const runtime::RuntimeOptions& options);
/// The C options (NULL: the defaults) as the backend's; PG5002 for a value out of range.
std::expected<runtime::RuntimeOptions, diag::Diagnostics> options_of(const ptxgate_runtime_options* options);

/// The C dtype as an IR type (UNKNOWN: void_); nullopt for a value that is no ptxgate_dtype.
std::optional<ir::Type> ir_type_of(int32_t dtype);
/// The C dtype of an IR type (void_: UNKNOWN).
int32_t dtype_of(ir::Type type);

/// A C copy end as the backend's (PG5002 for an unknown memory kind or a missing object).
std::expected<runtime::CopyEnd, diag::Diagnostics> copy_end(const ptxgate_copy_end* end, std::string_view call,
                                                           std::string_view role);

/// PG4009 when both ends of a copy state element types and they differ (a C caller's types are not
/// checked by a compiler as C++'s DeviceSpan<T> are).
std::expected<void, diag::Diagnostics> same_element_type(const runtime::CopyEnd& dst, const runtime::CopyEnd& src,
                                                         std::string_view call);

/// A C string, or `fallback` when null.
inline std::string text_or(const char* s, std::string_view fallback) { return s != nullptr ? std::string(s) : std::string(fallback); }

}  // namespace ptxgate::capi
