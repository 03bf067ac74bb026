// CUresult -> diagnostic (PG4002), sticky-error detection and context poisoning (PG4003).
#include "ptxgate/runtime/driver_error.hpp"

#include <fmt/format.h>

namespace ptxgate::runtime {

bool is_sticky_error(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

std::string driver_error_name(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(result, &name) == CUDA_SUCCESS && name) return name;
  return fmt::format("CUresult {}", static_cast<int>(result));
}

std::string driver_error_text(const DriverApi& api, CUresult result) {
  const char* text = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text) return text;
  return "unknown error";
}

diag::Diagnostic driver_call_error(const DriverApi& api, CUresult result, std::string_view call,
                                   std::string_view subject) {
  diag::Diagnostic d;
  d.code = diag::Code::driver_call_failed;
  d.severity = diag::Severity::error;
  d.message = fmt::format("{} failed{}{}: {} ({}): {}", call, subject.empty() ? "" : " for ", subject,
                          driver_error_name(api, result), static_cast<int>(result), driver_error_text(api, result));
  if (is_sticky_error(result)) {
    d.fix = "a kernel faulted; the CUDA context is now unusable: fix the kernel or its arguments "
            "(run under compute-sanitizer to find the faulting access) and start a new process (Runtime::reset() "
            "gives a fresh context only where the driver allows one; an H100 with driver 580 does not)";
  } else if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    d.fix = "free device memory or use smaller buffers";
  } else {
    d.fix = "see the driver's message above";
  }
  return d;
}

std::expected<void, diag::Diagnostics> ContextHealth::check(const DriverApi& api, CUresult result,
                                                            std::string_view call, std::string_view subject) {
  if (result == CUDA_SUCCESS) return {};
  if (retired()) return healthy(call, subject);  // the call went to the retired table: say why
  diag::Diagnostics out;
  out.items().push_back(driver_call_error(api, result, call, subject));
  if (is_sticky_error(result)) {
    std::lock_guard lock(mutex_);
    if (!poisoned_.load(std::memory_order_relaxed)) {
      reason_ = fmt::format("{} in {}{}{}", driver_error_name(api, result), call, subject.empty() ? "" : " for ",
                            subject);
      poisoned_.store(true, std::memory_order_release);
    }
    out.items().back().notes.push_back("the CUDA context is poisoned: every later call on it fails with PG4003");
  }
  return std::unexpected(std::move(out));
}

std::expected<void, diag::Diagnostics> ContextHealth::healthy(std::string_view call, std::string_view subject) const {
  if (!poisoned_.load(std::memory_order_acquire)) return {};
  diag::Diagnostics out;
  if (retired()) {
    out.add(diag::Code::context_reset,
            fmt::format("{}{}{} not attempted: it belongs to a CUDA context that Runtime::reset retired ({})", call,
                        subject.empty() ? "" : " for ", subject, poison_reason()),
            {},
            "make kernels, buffers, streams, events, graphs and pools again from the runtime after its reset; "
            "objects of the old context are never reused");
    return std::unexpected(std::move(out));
  }
  out.add(diag::Code::context_poisoned,
          fmt::format("{}{}{} not attempted: the CUDA context was poisoned by {}", call, subject.empty() ? "" : " for ",
                      subject, poison_reason()),
          {}, "fix the earlier fault and start a new process; a poisoned context cannot recover (Runtime::reset() "
              "gives a fresh one only where the driver allows it; an H100 with driver 580 does not)");
  return std::unexpected(std::move(out));
}

void ContextHealth::retire(std::string device) {
  std::lock_guard lock(mutex_);
  reason_ = poisoned_.load(std::memory_order_relaxed) ? fmt::format("{}, poisoned by {}", device, reason_)
                                                      : fmt::format("{}, not poisoned", device);
  retired_.store(true, std::memory_order_release);
  poisoned_.store(true, std::memory_order_release);
}

std::string ContextHealth::poison_reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

}  // namespace ptxgate::runtime
