// The ordering rule of automatic dependencies, once: a read waits for the last writer; a write waits
// for the last writer and every reader since. Used by stream tracking and by graph building.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <boost/container/small_vector.hpp>

#include "ptxgate/runtime/tracking.hpp"

namespace ptxgate::runtime {

/// One buffer's history of uses: the last write and the reads since. `Use` is a point of work:
/// (stream, submission number) for streams, a node for graphs.
template <class Use>
struct AccessHistory {
  std::optional<Use> writer;
  boost::container::small_vector<Use, 2> readers;

  /// Calls `f(use)` for every earlier use an access of `mode` must come after.
  template <class F>
  void for_each_dependency(AccessMode mode, F&& f) const {
    if (writer) f(*writer);
    if (mode == AccessMode::write)
      for (const Use& r : readers) f(r);
  }

  /// Records an access of `mode` at `use` (already ordered after its dependencies). A write
  /// replaces the history; a read replaces an earlier read that `supersedes(earlier, use)` says it
  /// covers (a later point of the same stream), or joins the readers.
  template <class Supersedes>
  void record(AccessMode mode, const Use& use, Supersedes&& supersedes) {
    if (mode == AccessMode::write) {
      writer = use;
      readers.clear();
      return;
    }
    for (Use& r : readers)
      if (supersedes(r, use)) {
        r = use;
        return;
      }
    readers.push_back(use);
  }

  /// What one record_ordered() replaced, so that undo() gives the history back.
  struct Undo {
    static constexpr size_t kReaders = 2;  ///< a write clears at most this many readers undoably
    Use writer_was;                        ///< a write: the writer it replaced (when `had_writer`)
    Use readers_were[kReaders];            ///< a write: the readers it cleared; a read: the one it replaced
    bool had_writer;
    uint8_t readers;  ///< a write: how many it cleared; a read: kJoined, else the index it replaced
    static constexpr uint8_t kJoined = 0xFF;
    Undo() {}  // NOLINT: left uninitialised (record_ordered writes what undo reads)
  };

  /// record() of an access of `mode` at `use` when every earlier use it depends on
  /// (for_each_dependency) is `ordered(earlier)`, with what it replaced in `undo`; false with the
  /// history unchanged when one is not, or when a write would clear more than Undo::kReaders
  /// readers. A read replaces an earlier read that `supersedes(earlier, use)` says it covers.
  template <class Ordered, class Supersedes>
  bool record_ordered(AccessMode mode, const Use& use, Ordered&& ordered, Supersedes&& supersedes, Undo& undo) {
    if (writer && !ordered(*writer)) return false;
    if (mode == AccessMode::write) {
      const size_t n = readers.size();
      if (n > Undo::kReaders) return false;
      bool all = true;
      for (size_t r = 0; r < n; ++r) {
        all = all && ordered(readers[r]);
        undo.readers_were[r] = readers[r];
      }
      if (!all) return false;
      undo.readers = static_cast<uint8_t>(n);
      undo.had_writer = writer.has_value();
      if (undo.had_writer) undo.writer_was = *writer;
      writer = use;
      readers.clear();
      return true;
    }
    undo.readers = Undo::kJoined;
    for (size_t r = 0; r < readers.size(); ++r)
      if (supersedes(readers[r], use)) {
        undo.readers = static_cast<uint8_t>(r);
        undo.readers_were[0] = readers[r];
        readers[r] = use;
        return true;
      }
    readers.push_back(use);
    return true;
  }
  /// Takes back the record_ordered(mode, ...) that filled `undo`, the latest change of this history.
  void undo(AccessMode mode, const Undo& undo) noexcept {
    if (mode == AccessMode::write) {
      writer = undo.had_writer ? std::optional<Use>(undo.writer_was) : std::nullopt;
      readers.clear();
      readers.resize(undo.readers);  // at most Undo::kReaders: within the readers' inline room
      for (size_t r = 0; r < undo.readers; ++r) readers[r] = undo.readers_were[r];
    } else if (undo.readers == Undo::kJoined) {
      readers.pop_back();
    } else {
      readers[undo.readers] = undo.readers_were[0];
    }
  }

  bool empty() const { return !writer && readers.empty(); }
  void clear() {
    writer.reset();
    readers.clear();
  }
};

}  // namespace ptxgate::runtime
