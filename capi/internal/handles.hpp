// The C API's opaque handles and the one boundary where C++ results become C statuses.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/backend/runtime.hpp"
#include "ptxgate/capi/ptxgate.h"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/pipeline/offline_check.hpp"

struct ptxgate_diagnostics {
  ptxgate::diag::Diagnostics list;
  std::string rendered;  ///< the last ptxgate_diagnostics_render result
};

struct ptxgate_module {
  ptxgate::module_cache::CacheEntry entry;
  std::string kernels_json;
};

struct ptxgate_verdict {
  ptxgate::pipeline::OfflineCheck check;
  ptxgate_diagnostics diagnostics;
  std::string json;
  std::string summary;
};

struct ptxgate_runtime {
  std::unique_ptr<ptxgate::backend::Runtime> runtime;
  int device = 0;
};

struct ptxgate_kernel {
  std::shared_ptr<ptxgate::backend::Kernel> kernel;
  int device = 0;
  std::string json;
};

struct ptxgate_buffer {
  ptxgate::backend::DeviceBuffer buffer;
};

struct ptxgate_stream {
  ptxgate::backend::Stream stream;  ///< empty for the legacy default stream (a wrapped 0)
  std::shared_ptr<ptxgate::backend::Context> legacy_default;  ///< the context, for the legacy default stream

  /// What a launch takes: the stream, or null for the legacy default stream.
  const ptxgate::backend::Stream* launch_stream() const { return legacy_default ? nullptr : &stream; }
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
inline std::string kernel_json(const backend::Kernel& k) {
  nlohmann::json j = contract::to_json(k.info());
  j["resources"] = module_cache::resources_to_json(k.resources());
  return j.dump();
}

/// A C string, or `fallback` when null.
inline std::string text_or(const char* s, std::string_view fallback) { return s != nullptr ? std::string(s) : std::string(fallback); }

}  // namespace ptxgate::capi
