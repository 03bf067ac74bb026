// CheckedRecords: the ring of checked launches' device records, read back at synchronisation (PG3804).
#include "ptxgate/runtime/internal/checked_records.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/launch_log.hpp"
#include "ptxgate/validation/checked_report.hpp"

namespace ptxgate::runtime {

using contract::CheckedRecord;

CheckedRecords::~CheckedRecords() {
  if (ring_ == 0) return;
  (void)ctx_.make_current();
  (void)ctx_.api().cuMemFree(ring_);  // errors ignored: the context may be poisoned
}

std::expected<CUdeviceptr, diag::Diagnostics> CheckedRecords::zeroed(size_t bytes, std::string_view what) {
  if (auto ok = ctx_.make_current(); !ok) return std::unexpected(std::move(ok.error()));
  CUdeviceptr memory = 0;
  if (auto ok = PTXGATE_CU(ctx_, what, cuMemAlloc, &memory, bytes); !ok) return std::unexpected(std::move(ok.error()));
  if (auto ok = PTXGATE_CU(ctx_, what, cuMemsetD8, memory, 0, bytes); !ok) {
    (void)ctx_.api().cuMemFree(memory);
    return std::unexpected(std::move(ok.error()));
  }
  return memory;
}

std::expected<void, diag::Diagnostics> CheckedRecords::allocate() {
  auto ring = zeroed(size_t{kSlots} * CheckedRecord::kSlotBytes, "checked-mode records");
  if (!ring) return std::unexpected(std::move(ring.error()));
  ring_ = *ring;
  taken_.assign(kSlots, 0);
  return {};
}

std::expected<CUdeviceptr, diag::Diagnostics> CheckedRecords::node_record() {
  return zeroed(CheckedRecord::kSlotBytes, "graph checked-mode record");
}

std::expected<CheckedRecords::Slot, diag::Diagnostics> CheckedRecords::reserve() {
  std::lock_guard lock(mutex_);
  if (ring_ == 0)
    if (auto ok = allocate(); !ok) return std::unexpected(ok.error());
  if (taken_[cursor_]) {
    // Every slot is in use: complete the launches in flight and read them, oldest streams first.
    std::vector<CUstream> streams;
    std::vector<size_t> ring_entries;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i].slot < 0) continue;
      ring_entries.push_back(i);
      if (std::find(streams.begin(), streams.end(), pending_[i].stream) == streams.end())
        streams.push_back(pending_[i].stream);
    }
    if (auto ok = ctx_.make_current(); !ok) return std::unexpected(ok.error());
    for (CUstream s : streams)
      if (auto ok = PTXGATE_CU(ctx_, "checked-mode records", cuStreamSynchronize, s); !ok)
        return std::unexpected(ok.error());
    auto reports = read(std::move(ring_entries));
    if (!reports) return std::unexpected(reports.error());
    for (auto& r : *reports) kept_.push_back(std::move(r));
  }
  for (uint32_t n = 0; n < kSlots; ++n, cursor_ = (cursor_ + 1) % kSlots) {
    if (taken_[cursor_]) continue;  // reserved by a launch on another thread, not yet made
    const uint32_t slot = cursor_;
    taken_[slot] = 1;
    cursor_ = (cursor_ + 1) % kSlots;
    return Slot{slot, ring_ + CUdeviceptr{slot} * CheckedRecord::kSlotBytes};
  }
  diag::Diagnostics d;
  d.add(diag::Code::launch_failed,
        fmt::format("checked mode: all {} launch records are reserved by launches being made on other threads", kSlots),
        {}, "launch from fewer threads at once in checked mode");
  return std::unexpected(std::move(d));
}

void CheckedRecords::launched(uint32_t slot, uint64_t sequence, CUstream stream, CheckedLaunch launch) {
  std::lock_guard lock(mutex_);
  Pending p;
  p.address = ring_ + CUdeviceptr{slot} * CheckedRecord::kSlotBytes;
  p.slot = slot;
  p.sequence = sequence;
  p.stream = stream;
  p.order = ++order_;
  p.launch = std::move(launch);
  pending_.push_back(std::move(p));
}

void CheckedRecords::release(uint32_t slot) {
  std::lock_guard lock(mutex_);
  if (slot < taken_.size()) taken_[slot] = 0;
}

void CheckedRecords::replayed(CUdeviceptr record, CUstream stream, std::string describe, CheckedLaunch launch) {
  std::lock_guard lock(mutex_);
  for (Pending& p : pending_)
    if (p.slot < 0 && p.address == record && p.stream == stream) {  // replayed again before a synchronisation
      p.order = ++order_;
      p.describe = std::move(describe);
      return;
    }
  Pending p;
  p.address = record;
  p.stream = stream;
  p.order = ++order_;
  p.describe = std::move(describe);
  p.launch = std::move(launch);
  pending_.push_back(std::move(p));
}

uint64_t CheckedRecords::mark() const {
  std::lock_guard lock(mutex_);
  return order_;
}

size_t CheckedRecords::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

std::string CheckedRecords::describe(const Pending& p) const {
  if (!p.describe.empty()) return p.describe;
  LaunchRecord r;
  r.sequence = p.sequence;
  r.kernel = p.launch.kernel;
  r.grid = p.launch.grid;
  r.block = p.launch.block;
  r.dynamic_shared_bytes = p.launch.dynamic_shared_bytes;
  r.stream = p.stream;
  return r.describe();
}

std::expected<std::vector<CheckedRecords::Report>, diag::Diagnostics> CheckedRecords::read(std::vector<size_t> which) {
  std::vector<Report> reports;
  if (which.empty()) return reports;
  if (auto ok = ctx_.make_current(); !ok) return std::unexpected(ok.error());
  // The ring's slots in one copy (the span from the lowest to the highest slot read).
  int64_t lo = -1, hi = -1;
  for (size_t i : which)
    if (pending_[i].slot >= 0) {
      lo = lo < 0 ? pending_[i].slot : std::min(lo, pending_[i].slot);
      hi = std::max(hi, pending_[i].slot);
    }
  std::vector<std::byte> ring;
  if (lo >= 0) {
    ring.resize(static_cast<size_t>(hi - lo + 1) * CheckedRecord::kSlotBytes);
    if (auto ok = PTXGATE_CU(ctx_, "checked-mode records", cuMemcpyDtoH, ring.data(),
                             ring_ + static_cast<CUdeviceptr>(lo) * CheckedRecord::kSlotBytes, ring.size());
        !ok)
      return std::unexpected(ok.error());
  }
  std::array<std::byte, CheckedRecord::kBytes> own{};
  for (size_t i : which) {
    const Pending& p = pending_[i];
    const std::byte* bytes = nullptr;
    if (p.slot >= 0) {
      bytes = ring.data() + static_cast<size_t>(p.slot - lo) * CheckedRecord::kSlotBytes;
    } else {
      if (auto ok = PTXGATE_CU(ctx_, "checked-mode records", cuMemcpyDtoH, own.data(), p.address, own.size()); !ok)
        return std::unexpected(ok.error());
      bytes = own.data();
    }
    const CheckedRecord record = CheckedRecord::decode(std::span<const std::byte, CheckedRecord::kBytes>(bytes, CheckedRecord::kBytes));
    if (record.count == 0) continue;
    Report report;
    report.stream = p.stream;
    const contract::CheckedInfo none;
    validation::report_checked_violation(report.diagnostics, p.launch.sites ? *p.launch.sites : none, record,
                                         p.launch.kernel, describe(p), p.launch.file);
    // Zeroed for the record's next launch (its launch is complete: nothing else writes it now).
    if (auto ok = PTXGATE_CU(ctx_, "checked-mode records", cuMemsetD8, p.address, 0, CheckedRecord::kBytes); !ok)
      return std::unexpected(ok.error());
    reports.push_back(std::move(report));
  }
  // Read: their slots are free, their entries gone.
  std::sort(which.begin(), which.end());
  for (auto it = which.rbegin(); it != which.rend(); ++it) {
    if (pending_[*it].slot >= 0) taken_[static_cast<size_t>(pending_[*it].slot)] = 0;
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(*it));
  }
  return reports;
}

std::expected<void, diag::Diagnostics> CheckedRecords::collect(CUstream stream, bool all, uint64_t through) {
  std::lock_guard lock(mutex_);
  std::vector<size_t> which;
  for (size_t i = 0; i < pending_.size(); ++i)
    if ((all || pending_[i].stream == stream) && pending_[i].order <= through) which.push_back(i);
  diag::Diagnostics out;
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (all || it->stream == stream) {
      out.append(it->diagnostics);
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
  auto reports = read(std::move(which));
  if (!reports) return std::unexpected(reports.error());
  for (const Report& r : *reports) out.append(r.diagnostics);
  if (out.empty()) return {};
  return std::unexpected(std::move(out));
}

std::expected<void, diag::Diagnostics> CheckedRecords::collect_slot(uint32_t slot) {
  std::lock_guard lock(mutex_);
  std::vector<size_t> which;
  for (size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i].slot == static_cast<int64_t>(slot)) which.push_back(i);
  auto reports = read(std::move(which));
  if (!reports) return std::unexpected(reports.error());
  diag::Diagnostics out;
  for (const Report& r : *reports) out.append(r.diagnostics);
  if (out.empty()) return {};
  return std::unexpected(std::move(out));
}

}  // namespace ptxgate::runtime
