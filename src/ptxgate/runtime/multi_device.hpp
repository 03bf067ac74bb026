// Several GPUs in one process: one context and Runtime per device, the peer-access matrix, and
// peer access enabled where the topology allows it.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ptxgate/runtime/device.hpp"
#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// Which devices can map each other's memory (cuDeviceCanAccessPeer), by position in `ordinals`.
struct PeerMatrix {
  std::vector<int> ordinals;
  std::vector<uint8_t> access;  ///< n×n, row-major: device i can access device j's memory (1 on the diagonal)

  size_t size() const { return ordinals.size(); }
  bool can_access(size_t i, size_t j) const { return access[i * ordinals.size() + j] != 0; }
};

/// cuDeviceCanAccessPeer for every ordered pair of `ordinals` (no context needed).
[[nodiscard]] std::expected<PeerMatrix, diag::Diagnostics> query_peer_matrix(const DriverApi& api,
                                                                             std::span<const int> ordinals);

/// The peer matrix of `devices` (list_live_devices()) through the process-wide driver.
[[nodiscard]] std::expected<PeerMatrix, diag::Diagnostics> live_peer_matrix(std::span<const LiveDevice> devices);

/// The peer matrix as a text table: a row per device, "yes"/"no" for access to each column's
/// device, "-" on the diagonal.
std::string format_peer_matrix(const PeerMatrix& peers);

struct DeviceSetOptions {
  std::vector<int> devices;          ///< ordinals, in rank order; empty: every device of the machine
  RuntimeOptions runtime;            ///< for each device's Runtime (its `device` field is set per device)
  bool enable_peer_access = true;    ///< cuCtxEnablePeerAccess for each pair the topology allows
};

/// One Runtime (context, module cache, loaded modules) per device, opened together, with peer
/// access enabled and recorded in each context (Context::can_access) where cuDeviceCanAccessPeer
/// allows it. Launches and copies then accept buffers of a peer device and refuse others (PG4070);
/// copy_peer_async moves data between any two. Communicator::init_all(contexts()) makes one NCCL
/// rank per device.
class DeviceSet {
 public:
  /// PG4071 for an ordinal the driver does not have or one named twice; PG4004 without devices.
  [[nodiscard]] static std::expected<std::unique_ptr<DeviceSet>, diag::Diagnostics> open(
      DeviceSetOptions options = {}, const DriverApi* api = nullptr);

  size_t size() const { return runtimes_.size(); }
  Runtime& runtime(size_t i) const { return *runtimes_[i]; }
  Context& context(size_t i) const { return runtimes_[i]->context(); }
  /// The contexts in rank order (for Communicator::init_all).
  std::vector<std::shared_ptr<Context>> contexts() const;
  /// What the topology allows (by position in the set).
  const PeerMatrix& peers() const { return peers_; }
  /// Whether peer access from device i to device j was enabled (positions in the set).
  bool peer_enabled(size_t i, size_t j) const { return context(i).can_access(context(j).ordinal()); }

 private:
  DeviceSet() = default;
  std::vector<std::unique_ptr<Runtime>> runtimes_;
  PeerMatrix peers_;
};

}  // namespace ptxgate::runtime
