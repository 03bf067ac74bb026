// Profiler: reusable timing events around launches, NVTX ranges, device times and their summary.
#include "ptxgate/runtime/launch_profile.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include "ptxgate/runtime/context.hpp"

namespace ptxgate::runtime {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }

Profiler::~Profiler() {
  ctx_.enter_to_release();
  for (CUevent e : free_) (void)ctx_.api().cuEventDestroy(e);
  for (const Pending& p : pending_) {
    (void)ctx_.api().cuEventDestroy(p.start);
    (void)ctx_.api().cuEventDestroy(p.end);
  }
}

CUevent Profiler::take_event() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      CUevent e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  CUevent e = nullptr;
  if (ctx_.api().cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  return e;
}

CUevent Profiler::begin(std::string_view kernel, CUstream stream) noexcept {
  CUevent start = take_event();
  if (start != nullptr && ctx_.api().cuEventRecord(start, stream) != CUDA_SUCCESS) {
    cancel(start);
    start = nullptr;
  }
  if (start != nullptr) {
    char name[64];
    const size_t n = std::min(kernel.size(), sizeof name - 1);
    std::copy_n(kernel.data(), n, name);
    name[n] = '\0';
    nvtxRangePushA(name);
  }
  return start;
}

void Profiler::end(CUevent start, uint64_t sequence, std::string_view kernel, CUstream stream) noexcept {
  if (start == nullptr) return;
  nvtxRangePop();
  CUevent stop = take_event();
  if (stop == nullptr || ctx_.api().cuEventRecord(stop, stream) != CUDA_SUCCESS) {
    cancel(start);
    if (stop != nullptr) cancel(stop);
    return;
  }
  std::lock_guard lock(mutex_);
  pending_.push_back({sequence, std::string(kernel), start, stop});
}

void Profiler::cancel(CUevent start) noexcept {
  if (start == nullptr) return;
  std::lock_guard lock(mutex_);
  free_.push_back(start);
}

std::expected<void, diag::Diagnostics> Profiler::resolve_locked() {
  if (pending_.empty()) return {};
  if (auto ok = ctx_.enter("cuEventElapsedTime", "launch profile"); !ok) return ok;
  size_t resolved = 0;
  std::expected<void, diag::Diagnostics> status;
  for (; resolved < pending_.size() && status; ++resolved) {
    const Pending& p = pending_[resolved];
    const std::string subject = fmt::format("profile of launch #{} of kernel '{}'", p.sequence, p.kernel);
    float ms = 0;
    status = PTXGATE_CU(ctx_, subject, cuEventSynchronize, p.end);
    if (status) status = PTXGATE_CU(ctx_, subject, cuEventElapsedTime, &ms, p.start, p.end);
    if (!status) break;
    done_.push_back({p.sequence, p.kernel, static_cast<double>(ms)});
    free_.push_back(p.start);
    free_.push_back(p.end);
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(resolved));
  return status;
}

std::expected<std::vector<LaunchTiming>, diag::Diagnostics> Profiler::launches() {
  std::lock_guard lock(mutex_);
  if (auto ok = resolve_locked(); !ok) return std::unexpected(ok.error());
  std::vector<LaunchTiming> out = done_;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
  return out;
}

std::expected<std::vector<KernelProfile>, diag::Diagnostics> Profiler::summary() {
  auto all = launches();
  if (!all) return std::unexpected(all.error());
  std::vector<KernelProfile> out;
  std::vector<std::vector<double>> times;
  for (const LaunchTiming& t : *all) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& k) { return k.kernel == t.kernel; });
    if (it == out.end()) {
      out.push_back({t.kernel, 0, 0, 0, t.device_ms, t.device_ms});
      times.emplace_back();
      it = out.end() - 1;
    }
    const size_t i = static_cast<size_t>(it - out.begin());
    it->count += 1;
    it->total_ms += t.device_ms;
    it->min_ms = std::min(it->min_ms, t.device_ms);
    it->max_ms = std::max(it->max_ms, t.device_ms);
    times[i].push_back(t.device_ms);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    auto& v = times[i];
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    out[i].median_ms = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  return out;
}

void Profiler::clear() {
  std::lock_guard lock(mutex_);
  (void)resolve_locked();
  done_.clear();
}

}  // namespace ptxgate::runtime
