// Dependency tracking across contexts: an operation on one context's stream that uses buffers of
// other contexts (peer memory, or another context of the same device) is ordered by both trackers.
#pragma once

#include <cuda.h>

#include <expected>
#include <functional>
#include <span>
#include <string_view>

#include "ptxgate/runtime/tracking.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

class Context;

/// A buffer of another context (its `owner`) that an operation uses.
struct ForeignAccess {
  Context* owner = nullptr;
  BufferTrack* track = nullptr;  ///< null: not tracked (nothing to order)
  AccessMode mode = AccessMode::read;
};

/// Submits `op` (the driver call) on `stream` of `local`. Local buffers are ordered by `local`'s
/// tracker as Tracker::submit does. For each other context owning a tracked buffer, a bridge
/// stream of that context stands in for `stream`: it waits for the owner's conflicting work, an
/// event hands that point to `stream`, and after `op` an event of `stream` is waited for by the
/// bridge, where the owner's tracker records the access, so the owner's later work that conflicts
/// waits for `op`. Peer submissions are serialised by one process-wide mutex.
[[nodiscard]] std::expected<void, diag::Diagnostics> submit_across(
    Context& local, CUstream stream, std::span<const BufferAccess> local_accesses,
    std::span<const ForeignAccess> foreign, const std::function<std::expected<void, diag::Diagnostics>()>& op);

/// Destroys the bridge stream and event kept for `ctx`, if any (~Context, before the release).
void forget_peer_bridge(Context& ctx) noexcept;

/// PG4070 into `out` unless `local` may use memory of `owner`'s device (same device, or peer access
/// enabled): `what` names the operation and the buffer ("launch of kernel 'k': buffer parameter 'x'").
void check_peer_access(const Context& local, const Context& owner, std::string_view what, diag::Diagnostics& out);

}  // namespace ptxgate::runtime
