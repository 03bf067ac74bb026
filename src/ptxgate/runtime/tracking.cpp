// Stream tracking: submission numbers per stream, one lazily re-recorded event per stream, waits
// deduplicated per (stream, point), deferred and stream-ordered frees.
#include "ptxgate/runtime/tracking.hpp"

#include <algorithm>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/runtime/internal/access_history.hpp"

namespace ptxgate::runtime {
namespace {

/// A point of one stream's work: its `seq`-th tracked submission (from 1).
struct Use {
  uint32_t stream = 0;
  uint64_t seq = 0;
};

bool same_stream(const Use& earlier, const Use& later) { return earlier.stream == later.stream; }

}  // namespace

// Aligned to a cache line, `alive` and the history first: a graph replay's check of the buffer and
// a write to it read and write one line of it (the flag, the writer and the readers' count), a read two.
struct alignas(64) BufferTrack : std::enable_shared_from_this<BufferTrack> {
  std::atomic<bool> alive{true};
  MemoryKind kind = MemoryKind::device;
  AccessHistory<Use> history;  ///< guarded by the tracker's mutex
  uint64_t address = 0;
};

bool track_alive(const BufferTrack& track) { return track.alive.load(std::memory_order_acquire); }

std::shared_ptr<BufferTrack> share_track(BufferTrack& track) { return track.shared_from_this(); }

/// One stream as the tracker knows it.
struct Tracker::Slot {
  uint32_t id = 0;
  CUstream stream = nullptr;
  bool retired = false;    ///< the stream was destroyed; its last point stays recorded
  uint64_t submitted = 0;  ///< tracked submissions so far
  uint64_t recorded = 0;   ///< `event` marks the stream's work up to this submission
  uint64_t completed = 0;  ///< known complete up to this submission
  CUevent event = nullptr; ///< created on first need, re-recorded when a later point is needed
  /// Points of other streams this stream already waits for: (slot id, submission).
  boost::container::small_vector<std::pair<uint32_t, uint64_t>, 4> waited;

  uint64_t waited_for(uint32_t other) const {
    for (const auto& [id, seq] : waited)
      if (id == other) return seq;
    return 0;
  }
  void set_waited(uint32_t other, uint64_t seq) {
    for (auto& [id, s] : waited)
      if (id == other) {
        s = std::max(s, seq);
        return;
      }
    waited.emplace_back(other, seq);
  }
};

struct Tracker::UndoLog {
  AccessHistory<Use>::Undo entries[kUndoCapacity];
};

/// A freed buffer whose memory waits for the work still using it.
struct Tracker::Deferred {
  std::shared_ptr<BufferTrack> track;
  boost::container::small_vector<Use, 2> pending;
};

Tracker::Tracker(Context& ctx) : undo_(std::make_unique<UndoLog>()), ctx_(ctx) {
  slots_.push_back(std::make_unique<Slot>());  // id 0: the legacy default stream
  live_.emplace_back(nullptr, 0);
}

Tracker::~Tracker() {
  std::lock_guard lock(mutex_);
  ctx_.enter_to_release();
  for (auto& d : deferred_) {
    for (const Use& u : d->pending) {
      Slot& s = *slots_[u.stream];
      if (s.event != nullptr && s.recorded >= u.seq) (void)ctx_.api().cuEventSynchronize(s.event);
    }
    free_now(*d->track, nullptr);
  }
  deferred_.clear();
  for (auto& s : slots_)
    if (s->event != nullptr) (void)ctx_.api().cuEventDestroy(s->event);
}

std::shared_ptr<BufferTrack> Tracker::track(MemoryKind kind, uint64_t address) {
  if (!enabled()) return nullptr;
  auto t = std::make_shared<BufferTrack>();
  t->kind = kind;
  t->address = address;
  return t;
}

void Tracker::Lock::lock_contended() {
  // Held: mark it as having sleepers and sleep until it is let go (the holder's unlock wakes one).
  while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
}

uint32_t Tracker::stream_locked(CUstream stream) {
  if (stream == last_stream_) return last_id_;
  uint32_t id = 0;
  auto it = std::find_if(live_.begin(), live_.end(), [&](const auto& e) { return e.first == stream; });
  if (it != live_.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(slots_.size());
    auto slot = std::make_unique<Slot>();
    slot->id = id;
    slot->stream = stream;
    slots_.push_back(std::move(slot));
    live_.emplace_back(stream, id);
  }
  last_stream_ = stream;
  last_id_ = id;
  return id;
}

std::expected<void, diag::Diagnostics> Tracker::point_locked(uint32_t id, uint64_t seq) {
  Slot& s = *slots_[id];
  if (s.recorded >= seq || s.retired) return {};
  if (auto ok = ctx_.make_current(); !ok) return ok;
  if (s.event == nullptr)
    if (auto ok = PTXGATE_CU(ctx_, "dependency tracking", cuEventCreate, &s.event, CU_EVENT_DISABLE_TIMING); !ok)
      return ok;
  if (auto ok = PTXGATE_CU(ctx_, "dependency tracking", cuEventRecord, s.event, s.stream); !ok) return ok;
  s.recorded = s.submitted;
  ++counters_.events_recorded;
  return {};
}

std::expected<void, diag::Diagnostics> Tracker::depend_locked(uint32_t id, uint32_t on, uint64_t seq) {
  Slot& t = *slots_[on];
  if (seq <= t.completed) return {};
  Slot& s = *slots_[id];
  if (s.waited_for(on) >= seq) return {};
  if (auto ok = point_locked(on, seq); !ok) return ok;
  if (t.recorded < seq) return {};  // a destroyed stream whose last point could not be recorded
  if (auto ok = ctx_.make_current(); !ok) return ok;
  if (auto ok = PTXGATE_CU(ctx_, "dependency tracking", cuStreamWaitEvent, s.stream, t.event, 0); !ok) return ok;
  s.set_waited(on, t.recorded);
  ++counters_.stream_waits;
  return {};
}

// Inline (used in this file only): an exported member of the shared library would be called
// through the PLT, not inlined, on the one-pass path.
inline bool Tracker::ordered_locked(const Slot& self, uint32_t stream, uint64_t seq) const {
  return stream == self.id || seq <= slots_[stream]->completed || self.waited_for(stream) >= seq;
}

std::expected<void, diag::Diagnostics> Tracker::wait_locked(uint32_t id, std::span<const BufferAccess> accesses) {
  // The common case needs no driver call: every earlier use of the buffers is on this stream,
  // known complete, or a point this stream already waits for (what depend_locked checks first).
  const Slot& self = *slots_[id];
  bool ordered = true;
  for (const BufferAccess& a : accesses)
    if (a.track != nullptr)
      a.track->history.for_each_dependency(
          a.mode, [&](const Use& u) { ordered = ordered && ordered_locked(self, u.stream, u.seq); });
  if (ordered) [[likely]]
    return {};
  for (const BufferAccess& a : accesses) {
    if (a.track == nullptr) continue;
    std::expected<void, diag::Diagnostics> status;
    a.track->history.for_each_dependency(a.mode, [&](const Use& u) {
      if (u.stream != id && status) status = depend_locked(id, u.stream, u.seq);
    });
    if (!status) return status;
  }
  return {};
}

void Tracker::record_locked(uint32_t id, std::span<const BufferAccess> accesses) {
  const uint64_t seq = ++slots_[id]->submitted;
  ++counters_.submissions;
  for (const BufferAccess& a : accesses)
    if (a.track != nullptr) a.track->history.record(a.mode, Use{id, seq}, same_stream);
  if (!deferred_.empty()) count_for_reclaim_locked();
}

void Tracker::count_for_reclaim_locked() {
  if (++since_reclaim_ >= 64) reclaim_locked();
}

bool Tracker::order_and_record_locked(uint32_t id, std::span<const BufferAccess> accesses) {
  // wait_locked's test of an earlier use and record_locked's change of the history, in one pass
  // over the accesses; what each access replaced goes into `undo_`. An access that needs a wait
  // (or a history with more readers than an undo entry keeps) takes back what the pass did so far.
  Slot& self = *slots_[id];
  const Use use{id, self.submitted + 1};
  const auto ordered = [&](const Use& u) { return ordered_locked(self, u.stream, u.seq); };
  AccessHistory<Use>::Undo* const undo = undo_->entries;  // read once: the histories' byte stores may alias it
  const size_t n = accesses.size();
  size_t k = 0;
  for (; k < n; ++k) {
    const BufferAccess& a = accesses[k];
    if (a.track != nullptr && !a.track->history.record_ordered(a.mode, use, ordered, same_stream, undo[k])) break;
  }
  if (k != accesses.size()) [[unlikely]] {
    undo_locked(id, accesses.first(k), false);
    return false;
  }
  self.submitted = use.seq;
  ++counters_.submissions;
  return true;
}

void Tracker::undo_locked(uint32_t id, std::span<const BufferAccess> accesses, bool counted) noexcept {
  // In reverse: a buffer passed twice gets back what its first access found.
  for (size_t k = accesses.size(); k-- > 0;)
    if (const BufferAccess& a = accesses[k]; a.track != nullptr) a.track->history.undo(a.mode, undo_->entries[k]);
  if (!counted) return;
  // The operation failed after the pass: its submission is not counted either.
  --slots_[id]->submitted;
  --counters_.submissions;
}

std::expected<void, diag::Diagnostics> Tracker::host_access(BufferTrack& track, AccessMode mode,
                                                            std::string_view what) {
  struct Wait {
    uint32_t slot;
    CUevent event;
    uint64_t point;
  };
  boost::container::small_vector<Wait, 4> waits;
  {
    std::lock_guard lock(mutex_);
    std::expected<void, diag::Diagnostics> status;
    track.history.for_each_dependency(mode, [&](const Use& u) {
      if (!status || u.seq <= slots_[u.stream]->completed) return;
      status = point_locked(u.stream, u.seq);
      const Slot& s = *slots_[u.stream];
      if (status && s.recorded >= u.seq) waits.push_back({u.stream, s.event, s.recorded});
    });
    if (!status) return status;
  }
  // Waiting happens outside the lock: other threads keep submitting meanwhile. An event
  // re-recorded by them in between only makes this wait longer, never too short.
  for (const Wait& w : waits)
    if (auto ok = PTXGATE_CU(ctx_, what, cuEventSynchronize, w.event); !ok) return ok;
  std::lock_guard lock(mutex_);
  counters_.host_waits += waits.size();
  for (const Wait& w : waits) slots_[w.slot]->completed = std::max(slots_[w.slot]->completed, w.point);
  reclaim_locked();
  return {};
}

void Tracker::free_now(const BufferTrack& track, CUstream stream) noexcept {
  ctx_.enter_to_release();
  const auto& api = ctx_.api();
  switch (track.kind) {
    case MemoryKind::device: (void)api.cuMemFree(track.address); break;
    case MemoryKind::stream_ordered: (void)api.cuMemFreeAsync(track.address, stream); break;
    case MemoryKind::pinned_host: (void)api.cuMemFreeHost(reinterpret_cast<void*>(track.address)); break;
  }
}

void Tracker::release(std::shared_ptr<BufferTrack> track) noexcept {
  if (!track) return;
  std::lock_guard lock(mutex_);
  track->alive.store(false, std::memory_order_release);
  boost::container::small_vector<Use, 2> pending;
  track->history.for_each_dependency(AccessMode::write, [&](const Use& u) {
    if (u.seq > slots_[u.stream]->completed) pending.push_back(u);
  });
  track->history.clear();
  if (pending.empty()) {
    free_now(*track, nullptr);
    return;
  }
  if (track->kind == MemoryKind::stream_ordered) {
    // Freed on a stream that waits for every other stream using the buffer: the pool may hand
    // the memory out again only after that work.
    uint32_t on = 0;
    for (const Use& u : pending)
      if (!slots_[u.stream]->retired) {
        on = u.stream;
        break;
      }
    for (const Use& u : pending)
      if (u.stream != on) (void)depend_locked(on, u.stream, u.seq);
    free_now(*track, slots_[on]->stream);
    ++counters_.ordered_frees;
    return;
  }
  for (const Use& u : pending) (void)point_locked(u.stream, u.seq);
  auto d = std::make_unique<Deferred>();
  d->track = std::move(track);
  d->pending.assign(pending.begin(), pending.end());
  deferred_.push_back(std::move(d));
  ++counters_.deferred_frees;
}

void Tracker::reclaim_locked() {
  since_reclaim_ = 0;
  if (deferred_.empty()) return;
  auto complete = [&](const Use& u) {
    Slot& s = *slots_[u.stream];
    if (u.seq <= s.completed) return true;
    if (s.recorded < u.seq) return s.retired;  // no point of it exists: nothing can be waited for
    if (ctx_.api().cuEventQuery(s.event) != CUDA_SUCCESS) return false;
    s.completed = std::max(s.completed, s.recorded);
    return true;
  };
  ctx_.enter_to_release();
  std::erase_if(deferred_, [&](std::unique_ptr<Deferred>& d) {
    d->pending.erase(std::remove_if(d->pending.begin(), d->pending.end(), complete), d->pending.end());
    if (!d->pending.empty()) return false;
    free_now(*d->track, nullptr);
    return true;
  });
}

void Tracker::reclaim() {
  std::lock_guard lock(mutex_);
  reclaim_locked();
}

uint64_t Tracker::before_sync(CUstream stream) {
  std::lock_guard lock(mutex_);
  return slots_[stream_locked(stream)]->submitted;
}

void Tracker::after_sync(CUstream stream, uint64_t mark) {
  std::lock_guard lock(mutex_);
  Slot& s = *slots_[stream_locked(stream)];
  s.completed = std::max(s.completed, mark);
  reclaim_locked();
}

std::vector<uint64_t> Tracker::before_context_sync() {
  std::lock_guard lock(mutex_);
  std::vector<uint64_t> marks;
  marks.reserve(slots_.size());
  for (const auto& s : slots_) marks.push_back(s->submitted);
  return marks;
}

void Tracker::after_context_sync(const std::vector<uint64_t>& marks) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < marks.size() && i < slots_.size(); ++i)
    slots_[i]->completed = std::max(slots_[i]->completed, marks[i]);
  reclaim_locked();
}

void Tracker::stream_destroyed(CUstream stream) noexcept {
  if (stream == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = std::find_if(live_.begin(), live_.end(), [&](const auto& e) { return e.first == stream; });
  if (it == live_.end()) return;
  Slot& s = *slots_[it->second];
  live_.erase(it);
  last_stream_ = nullptr;
  last_id_ = 0;
  // Keep a point of the stream's pending work, so later waits and deferred frees can refer to it.
  if (s.submitted > s.completed && !point_locked(s.id, s.submitted)) s.completed = s.submitted;
  s.retired = true;
}

size_t Tracker::deferred() const {
  std::lock_guard lock(mutex_);
  return deferred_.size();
}

TrackerCounters Tracker::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace ptxgate::runtime
