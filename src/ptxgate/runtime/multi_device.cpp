// DeviceSet: contexts per device, cuDeviceCanAccessPeer and cuCtxEnablePeerAccess; the devices JSON.
#include "ptxgate/runtime/multi_device.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ptxgate/runtime/driver_error.hpp"

namespace ptxgate::runtime {
namespace {

diag::Diagnostics setup_error(std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(diag::Code::device_set_setup, std::move(message), {}, std::move(fix));
  return d;
}

}  // namespace

std::expected<PeerMatrix, diag::Diagnostics> query_peer_matrix(const DriverApi& api, std::span<const int> ordinals) {
  ContextHealth health;  // device queries need no context; their errors are never sticky
  PeerMatrix m;
  m.ordinals.assign(ordinals.begin(), ordinals.end());
  const size_t n = ordinals.size();
  m.access.assign(n * n, 0);
  std::vector<CUdevice> devices(n);
  for (size_t i = 0; i < n; ++i)
    if (auto ok = health.check(api, api.cuDeviceGet(&devices[i], ordinals[i]), "cuDeviceGet",
                               fmt::format("device {}", ordinals[i]));
        !ok)
      return std::unexpected(ok.error());
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (i == j) {
        m.access[i * n + j] = 1;
        continue;
      }
      int can = 0;
      if (auto ok = health.check(api, api.cuDeviceCanAccessPeer(&can, devices[i], devices[j]), "cuDeviceCanAccessPeer",
                                 fmt::format("devices {} and {}", ordinals[i], ordinals[j]));
          !ok)
        return std::unexpected(ok.error());
      m.access[i * n + j] = can != 0 ? 1 : 0;
    }
  return m;
}

std::expected<PeerMatrix, diag::Diagnostics> live_peer_matrix(std::span<const LiveDevice> devices) {
  auto api = driver();
  if (!api) return std::unexpected(api.error());
  std::vector<int> ordinals;
  for (const auto& d : devices) ordinals.push_back(d.ordinal);
  return query_peer_matrix(**api, ordinals);
}

std::string format_peer_matrix(const PeerMatrix& peers) {
  std::string out = fmt::format("{:<14}", "PEER ACCESS");
  for (int o : peers.ordinals) out += fmt::format(" {:>5}", fmt::format("gpu{}", o));
  out += '\n';
  for (size_t i = 0; i < peers.size(); ++i) {
    out += fmt::format("{:<14}", fmt::format("gpu{} ->", peers.ordinals[i]));
    for (size_t j = 0; j < peers.size(); ++j)
      out += fmt::format(" {:>5}", i == j ? "-" : peers.can_access(i, j) ? "yes" : "no");
    out += '\n';
  }
  return out;
}

std::expected<std::unique_ptr<DeviceSet>, diag::Diagnostics> DeviceSet::open(DeviceSetOptions options,
                                                                             const DriverApi* api) {
  if (api == nullptr) {
    auto loaded = driver();
    if (!loaded) return std::unexpected(loaded.error());
    api = *loaded;
  }
  int count = 0;
  ContextHealth health;
  if (auto ok = health.check(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount", "device set"); !ok)
    return std::unexpected(ok.error());
  if (count <= 0) {
    diag::Diagnostics d;
    d.add(diag::Code::no_device, "the CUDA driver reports no device", {}, "check nvidia-smi and CUDA_VISIBLE_DEVICES");
    return std::unexpected(std::move(d));
  }
  std::vector<int> ordinals = options.devices;
  if (ordinals.empty())
    for (int i = 0; i < count; ++i) ordinals.push_back(i);
  diag::Diagnostics bad;
  for (size_t i = 0; i < ordinals.size(); ++i) {
    if (ordinals[i] < 0 || ordinals[i] >= count)
      bad.append(setup_error(fmt::format("device {} asked for, but the driver reports {} device{} (ordinals 0 to {})",
                                         ordinals[i], count, count == 1 ? "" : "s", count - 1),
                             "name devices the driver lists (ptxgate devices), or check CUDA_VISIBLE_DEVICES"));
    else if (std::find(ordinals.begin(), ordinals.begin() + static_cast<std::ptrdiff_t>(i), ordinals[i]) !=
             ordinals.begin() + static_cast<std::ptrdiff_t>(i))
      bad.append(setup_error(fmt::format("device {} named twice in the device set", ordinals[i]),
                             "name each device once: a device set has one context per device"));
  }
  if (bad.has_errors()) return std::unexpected(std::move(bad));

  std::unique_ptr<DeviceSet> set(new DeviceSet());
  auto peers = query_peer_matrix(*api, ordinals);
  if (!peers) return std::unexpected(peers.error());
  set->peers_ = std::move(*peers);
  for (int ordinal : ordinals) {
    auto ctx = Context::open(ordinal, api);
    if (!ctx) return std::unexpected(ctx.error());
    RuntimeOptions ro = options.runtime;
    ro.device = ordinal;
    set->runtimes_.push_back(std::make_unique<Runtime>(std::move(*ctx), std::move(ro)));
  }
  if (options.enable_peer_access) {
    for (size_t i = 0; i < ordinals.size(); ++i) {
      Context& from = set->context(i);
      for (size_t j = 0; j < ordinals.size(); ++j) {
        if (i == j || !set->peers_.can_access(i, j)) continue;
        Context& to = set->context(j);
        if (auto ok = from.make_current(); !ok) return std::unexpected(ok.error());
        const CUresult r = api->cuCtxEnablePeerAccess(to.handle(), 0);
        if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
          if (auto ok = from.check(r, "cuCtxEnablePeerAccess",
                                   fmt::format("peer access from device {} to device {}", from.ordinal(), to.ordinal()));
              !ok)
            return std::unexpected(ok.error());
        from.record_peer_access(to.ordinal());
      }
    }
  }
  return set;
}

std::vector<std::shared_ptr<Context>> DeviceSet::contexts() const {
  std::vector<std::shared_ptr<Context>> out;
  for (const auto& r : runtimes_) out.push_back(r->shared_context());
  return out;
}

}  // namespace ptxgate::runtime
