// Operations across contexts: the PG4070 rule, and bridge streams that carry dependency tracking
// from one context's tracker to another's (src/ptxgate/runtime/internal/peer_bridge.hpp).
#include <algorithm>
#include <map>
#include <mutex>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/internal/peer_bridge.hpp"

namespace ptxgate::runtime {
namespace {

/// One context's stand-in stream for operations of other contexts, and an event of that context.
struct Bridge {
  CUstream stream = nullptr;
  CUevent event = nullptr;
};

std::mutex& bridge_mutex() {
  static std::mutex m;
  return m;
}

std::map<const Context*, Bridge>& bridges() {
  static std::map<const Context*, Bridge> b;
  return b;
}

std::expected<Bridge*, diag::Diagnostics> bridge_locked(Context& ctx) {
  auto& all = bridges();
  if (auto it = all.find(&ctx); it != all.end()) return &it->second;
  if (auto ok = ctx.make_current(); !ok) return std::unexpected(ok.error());
  Bridge b;
  if (auto ok = PTXGATE_CU(ctx, "peer bridge stream", cuStreamCreate, &b.stream, CU_STREAM_NON_BLOCKING); !ok)
    return std::unexpected(ok.error());
  if (auto ok = PTXGATE_CU(ctx, "peer bridge event", cuEventCreate, &b.event, CU_EVENT_DISABLE_TIMING); !ok) {
    (void)ctx.api().cuStreamDestroy(b.stream);
    return std::unexpected(ok.error());
  }
  return &all.emplace(&ctx, b).first->second;
}

}  // namespace

void check_peer_access(const Context& local, const Context& owner, std::string_view what, diag::Diagnostics& out) {
  if (local.can_access(owner.ordinal())) return;
  out.add(diag::Code::peer_not_accessible,
          fmt::format("{} lives on device {} ({}), but the operation runs in the context of device {} ({}), which has "
                      "no peer access to device {}",
                      what, owner.ordinal(), owner.caps().name, local.ordinal(), local.caps().name, owner.ordinal()),
          {},
          fmt::format("open both devices in a DeviceSet (it enables peer access where cuDeviceCanAccessPeer allows), "
                      "move the data with copy_peer_async, or allocate the buffer on device {}",
                      local.ordinal()));
}

std::expected<void, diag::Diagnostics> submit_across(
    Context& local, CUstream stream, std::span<const BufferAccess> local_accesses,
    std::span<const ForeignAccess> foreign, const std::function<std::expected<void, diag::Diagnostics>()>& op) {
  boost::container::small_vector<Context*, 4> owners;
  for (const ForeignAccess& f : foreign)
    if (f.track != nullptr && f.owner != &local && std::find(owners.begin(), owners.end(), f.owner) == owners.end())
      owners.push_back(f.owner);
  if (owners.empty()) {
    if (auto ok = local.make_current(); !ok) return ok;
    return local.tracker().submit(stream, local_accesses, op);
  }
  std::lock_guard lock(bridge_mutex());
  auto local_bridge = bridge_locked(local);
  if (!local_bridge) return std::unexpected(local_bridge.error());
  const CUevent done = (*local_bridge)->event;
  // Nested per owner: owner i's tracker submits on its bridge around the rest.
  std::function<std::expected<void, diag::Diagnostics>(size_t)> step =
      [&](size_t i) -> std::expected<void, diag::Diagnostics> {
    if (i == owners.size()) {
      if (auto ok = local.make_current(); !ok) return ok;
      return local.tracker().submit(stream, local_accesses, op);
    }
    Context& owner = *owners[i];
    auto bridge = bridge_locked(owner);
    if (!bridge) return std::unexpected(bridge.error());
    const Bridge b = **bridge;
    boost::container::small_vector<BufferAccess, 4> accesses;
    for (const ForeignAccess& f : foreign)
      if (f.owner == &owner && f.track != nullptr) accesses.push_back({f.track, f.mode});
    if (auto ok = owner.make_current(); !ok) return ok;
    return owner.tracker().submit(b.stream, std::span<const BufferAccess>(accesses.data(), accesses.size()), [&]() -> std::expected<void, diag::Diagnostics> {
      // The bridge now follows the owner's conflicting work: hand that point to `stream`.
      if (auto ok = owner.make_current(); !ok) return ok;
      if (auto ok = PTXGATE_CU(owner, "peer ordering", cuEventRecord, b.event, b.stream); !ok) return ok;
      if (auto ok = local.make_current(); !ok) return ok;
      if (auto ok = PTXGATE_CU(local, "peer ordering", cuStreamWaitEvent, stream, b.event, 0); !ok) return ok;
      if (auto ok = step(i + 1); !ok) return ok;
      // ... and the bridge follows the operation: the owner's tracker records the access there.
      if (auto ok = local.make_current(); !ok) return ok;
      if (auto ok = PTXGATE_CU(local, "peer ordering", cuEventRecord, done, stream); !ok) return ok;
      if (auto ok = owner.make_current(); !ok) return ok;
      return PTXGATE_CU(owner, "peer ordering", cuStreamWaitEvent, b.stream, done, 0);
    });
  };
  return step(0);
}

void forget_peer_bridge(Context& ctx) noexcept {
  std::lock_guard lock(bridge_mutex());
  auto& all = bridges();
  auto it = all.find(&ctx);
  if (it == all.end()) return;
  ctx.enter_to_release();
  (void)ctx.api().cuStreamDestroy(it->second.stream);
  (void)ctx.api().cuEventDestroy(it->second.event);
  all.erase(it);
}

}  // namespace ptxgate::runtime
