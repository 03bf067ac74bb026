// The one boundary where a CUresult becomes a diagnostic, and the per-context poison state.
#pragma once

#include <atomic>
#include <expected>
#include <mutex>
#include <string>
#include <string_view>

#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// Errors after which the context is unusable: every later call fails (illegal
/// address, device assert, launch failure, illegal instruction, ...).
bool is_sticky_error(CUresult result);

/// "CUDA_ERROR_ILLEGAL_ADDRESS" (via cuGetErrorName; a number when unknown).
std::string driver_error_name(const DriverApi& api, CUresult result);
/// The driver's description of `result` (cuGetErrorString).
std::string driver_error_text(const DriverApi& api, CUresult result);

/// PG4002 for a failed call: the call's name, the error's name and text, and the
/// launch or module it concerned (`subject`, may be empty).
diag::Diagnostic driver_call_error(const DriverApi& api, CUresult result, std::string_view call,
                                   std::string_view subject);

/// Whether a context has seen a sticky error, and which, or was replaced by Runtime::reset. Thread-safe.
class ContextHealth {
 public:
  /// Success passes through; a failure becomes PG4002 (and, when sticky, poisons
  /// this context with a note saying so).
  [[nodiscard]] std::expected<void, diag::Diagnostics> check(const DriverApi& api, CUresult result, std::string_view call,
                                               std::string_view subject);
  /// PG4003 naming the original error when poisoned, PG4010 when retired; otherwise success.
  [[nodiscard]] std::expected<void, diag::Diagnostics> healthy(std::string_view call, std::string_view subject) const;
  bool poisoned() const { return poisoned_.load(std::memory_order_acquire); }
  /// Marks the context as replaced (Runtime::reset): poisoned, and every later check is PG4010 naming
  /// `device` and what the context had seen (its poisoning error, if any).
  void retire(std::string device);
  bool retired() const { return retired_.load(std::memory_order_acquire); }
  /// Description of the poisoning error ("CUDA_ERROR_ILLEGAL_ADDRESS in cuCtxSynchronize (saxpy)").
  std::string poison_reason() const;

 private:
  std::atomic<bool> poisoned_{false};
  std::atomic<bool> retired_{false};
  mutable std::mutex mutex_;
  std::string reason_;
};

}  // namespace ptxgate::runtime
