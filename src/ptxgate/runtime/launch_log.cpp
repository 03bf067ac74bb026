// LaunchLog: a ring of the last launches, each slot a sequence lock with one writer at a time; PG4050 fault reports.
#include "ptxgate/runtime/launch_log.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace ptxgate::runtime {

std::string LaunchRecord::describe() const {
  return fmt::format("launch #{} of kernel '{}' grid=({},{},{}) block=({},{},{}) shared={}{} on {}", sequence, kernel,
                     grid[0], grid[1], grid[2], block[0], block[1], block[2], dynamic_shared_bytes,
                     cooperative ? " cooperative" : "",
                     stream == nullptr ? std::string("the legacy default stream")
                                       : fmt::format("stream {}", static_cast<const void*>(stream)));
}

uint32_t LaunchLog::intern(std::string_view kernel) {
  std::lock_guard lock(names_mutex_);
  if (auto it = name_numbers_.find(kernel); it != name_numbers_.end()) return it->second;
  names_.emplace_back(kernel);
  const auto number = static_cast<uint32_t>(names_.size());
  name_numbers_.emplace(names_.back(), number);
  return number;
}

std::string LaunchLog::name_of(uint32_t kernel) const {
  std::lock_guard lock(names_mutex_);
  return kernel != 0 && kernel <= names_.size() ? names_[kernel - 1] : std::string("?");
}

uint64_t LaunchLog::record(uint32_t kernel, const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
                           unsigned dynamic_shared_bytes, bool cooperative, CUstream stream) noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;
  const uint64_t seq = next_.fetch_add(1, std::memory_order_acq_rel) + 1;
  Slot& s = slots_[seq % kSlots];
  // Take the slot: wait out another writer of it; a newer launch already in it keeps it (this one
  // is older than what the log holds).
  uint64_t held = s.sequence.load(relaxed);
  for (;;) {
    if (held == Slot::kWriting) {  // a writer holds it for a few stores (unless it was preempted)
      std::this_thread::yield();
      held = s.sequence.load(relaxed);
      continue;
    }
    if (held > seq) return seq;
    if (s.sequence.compare_exchange_weak(held, Slot::kWriting, std::memory_order_acquire, relaxed)) break;
  }
  s.kernel.store(kernel, relaxed);
  for (size_t i = 0; i < 3; ++i) {
    s.grid[i].store(grid[i], relaxed);
    s.block[i].store(block[i], relaxed);
  }
  s.dynamic_shared_bytes.store(dynamic_shared_bytes, relaxed);
  s.cooperative.store(cooperative, relaxed);
  s.stream.store(stream, relaxed);
  s.done.store(false, relaxed);
  s.sequence.store(seq, std::memory_order_release);
  return seq;
}

bool LaunchLog::read(const Slot& s, LaunchRecord& out) const {
  constexpr auto relaxed = std::memory_order_relaxed;
  const uint64_t before = s.sequence.load(std::memory_order_acquire);
  if (before == 0 || before == Slot::kWriting) return false;
  out.sequence = before;
  const uint32_t kernel = s.kernel.load(relaxed);
  for (size_t i = 0; i < 3; ++i) {
    out.grid[i] = s.grid[i].load(relaxed);
    out.block[i] = s.block[i].load(relaxed);
  }
  out.dynamic_shared_bytes = s.dynamic_shared_bytes.load(relaxed);
  out.cooperative = s.cooperative.load(relaxed);
  out.stream = s.stream.load(relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.sequence.load(relaxed) != before) return false;
  out.kernel = name_of(kernel);
  return true;
}

void LaunchLog::completed_through(uint64_t sequence) noexcept {
  uint64_t c = completed_.load(std::memory_order_relaxed);
  while (sequence > c && !completed_.compare_exchange_weak(c, sequence, std::memory_order_relaxed)) {
  }
}

void LaunchLog::stream_completed_through(CUstream stream, uint64_t sequence) noexcept {
  for (Slot& s : slots_) {
    const uint64_t seq = s.sequence.load(std::memory_order_acquire);
    if (seq != 0 && seq != Slot::kWriting && seq <= sequence && s.stream.load(std::memory_order_relaxed) == stream)
      s.done.store(true, std::memory_order_relaxed);
  }
}

std::vector<LaunchRecord> LaunchLog::in_flight() const {
  std::vector<LaunchRecord> out;
  const uint64_t completed = completed_.load(std::memory_order_relaxed);
  for (const Slot& s : slots_) {
    LaunchRecord r;
    if (read(s, r) && r.sequence > completed && !s.done.load(std::memory_order_relaxed)) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
  return out;
}

std::optional<LaunchRecord> LaunchLog::find(uint64_t sequence) const {
  LaunchRecord r;
  if (sequence != 0 && read(slots_[sequence % kSlots], r) && r.sequence == sequence) return r;
  return std::nullopt;
}

diag::Diagnostics kernel_fault(diag::Diagnostics driver_error, const std::vector<LaunchRecord>& suspects,
                               bool culprit_known, CUresult result) {
  if (suspects.empty() || driver_error.items().empty()) return driver_error;
  diag::Diagnostic& d = driver_error.items().front();
  const std::string driver_message = d.message;
  d.code = diag::Code::kernel_fault;
  // A failed assert(...) is a fault the kernel raised itself: say so, and where its message is.
  const bool asserted = result == CUDA_ERROR_ASSERT;
  const std::string_view what = asserted ? "failed a device assert()" : "faulted";
  if (asserted)
    d.fix = "the driver printed the failing assert's file, line, condition, block and thread on standard error; "
            "fix the kernel or its input. The CUDA context is now unusable: start a new process";
  if (culprit_known || suspects.size() == 1) {
    d.message = fmt::format("{} {}: {}", suspects.back().describe(), what, driver_message);
  } else {
    d.message = fmt::format("a kernel {} while {} launches were in flight, the last {}: {}", what, suspects.size(),
                            suspects.back().describe(), driver_message);
    const size_t shown = std::min<size_t>(suspects.size(), 8);
    for (size_t i = suspects.size() - shown; i < suspects.size(); ++i)
      d.notes.push_back(fmt::format("in flight: {}", suspects[i].describe()));
    d.notes.push_back(
        "set RuntimeOptions::checked_launches to synchronise after each launch and name the faulting one");
  }
  return driver_error;
}

}  // namespace ptxgate::runtime
