// The ordering rule of automatic dependencies, once: a read waits for the last writer; a write waits
// for the last writer and every reader since. Used by stream tracking and by graph building.
#pragma once

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

  bool empty() const { return !writer && readers.empty(); }
  void clear() {
    writer.reset();
    readers.clear();
  }
};

}  // namespace ptxgate::runtime
