// Checked mode in the runtime: the device-side records of checked launches (a ring per context, a
// slot per launch in flight, and graph nodes' own records), read back when the launch's stream
// synchronises and reported as PG3804; a record with a violation is zeroed for its next launch.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/contract/checked.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

class Context;

/// What a report names of the launch a record belongs to.
struct CheckedLaunch {
  std::shared_ptr<const contract::CheckedInfo> sites;
  std::string kernel;  ///< the kernel's name
  std::string file;    ///< its source file (the diagnostic's path)
  std::array<unsigned, 3> grid{0, 0, 0}, block{0, 0, 0};
  unsigned dynamic_shared_bytes = 0;
};

/// The records of one context's checked launches. Thread-safe.
class CheckedRecords {
 public:
  /// Ring slots: launches in flight between two synchronisations, each with its own record.
  static constexpr uint32_t kSlots = 1024;

  explicit CheckedRecords(Context& ctx) : ctx_(ctx) {}
  ~CheckedRecords();
  CheckedRecords(const CheckedRecords&) = delete;
  CheckedRecords& operator=(const CheckedRecords&) = delete;

  /// A zeroed record for the next checked launch: a ring slot and its device address. When every
  /// slot belongs to a launch not yet read, those launches' streams are synchronised and their
  /// records read first (what they report waits for their streams' next synchronisation).
  struct Slot {
    uint32_t index = 0;
    CUdeviceptr address = 0;
  };
  [[nodiscard]] std::expected<Slot, diag::Diagnostics> reserve();
  /// The launch `sequence` on `stream` (its number in the context's LaunchLog) took `slot`.
  void launched(uint32_t slot, uint64_t sequence, CUstream stream, CheckedLaunch launch);
  /// The launch that reserved `slot` did not reach the driver: the slot is free again.
  void release(uint32_t slot);
  /// A new zeroed record (CheckedRecord::kSlotBytes) for a graph node; the graph frees it.
  [[nodiscard]] std::expected<CUdeviceptr, diag::Diagnostics> node_record();
  /// A graph node's own record slot (CheckedRecord::kSlotBytes, zeroed), read when a stream it was
  /// replayed on synchronises.
  void replayed(CUdeviceptr record, CUstream stream, std::string describe, CheckedLaunch launch);

  /// A mark of the records registered so far: taken before a synchronisation, so that collect
  /// reads only launches the synchronisation waited for.
  uint64_t mark() const;
  /// After `stream` synchronised (every stream when `all`): reads the records of the launches and
  /// replays on it registered up to `through` (mark()), PG3804 for each one with a violation (and
  /// for reports kept for it by reserve), zeroes those records and frees their slots.
  [[nodiscard]] std::expected<void, diag::Diagnostics> collect(CUstream stream, bool all, uint64_t through);
  /// Checked-launch mode: reads the one record of a launch whose stream just synchronised.
  [[nodiscard]] std::expected<void, diag::Diagnostics> collect_slot(uint32_t slot);

  /// Records not read yet (tests).
  size_t pending() const;

 private:
  struct Pending {
    CUdeviceptr address = 0;
    int64_t slot = -1;       ///< ring slot, -1 for a graph node's record
    uint64_t sequence = 0;   ///< launch number (ring slots)
    uint64_t order = 0;      ///< registration order (mark())
    CUstream stream = nullptr;
    std::string describe;    ///< graph nodes: "graph node #2 (kernel 'k' ...) replayed on stream 0x..."
    CheckedLaunch launch;
  };
  struct Report {
    CUstream stream = nullptr;
    diag::Diagnostics diagnostics;
  };
  /// `bytes` of device memory set to zero (`what` names it in errors).
  [[nodiscard]] std::expected<CUdeviceptr, diag::Diagnostics> zeroed(size_t bytes, std::string_view what);
  /// Allocates and zeroes the ring (under mutex_).
  [[nodiscard]] std::expected<void, diag::Diagnostics> allocate();
  /// Reads the records of `which` (entries of pending_, under mutex_): a report per violation,
  /// the violated records zeroed, their ring slots freed and the entries removed.
  [[nodiscard]] std::expected<std::vector<Report>, diag::Diagnostics> read(std::vector<size_t> which);
  std::string describe(const Pending& p) const;

  Context& ctx_;
  mutable std::mutex mutex_;
  CUdeviceptr ring_ = 0;
  uint32_t cursor_ = 0;
  uint64_t order_ = 0;
  std::vector<int8_t> taken_;      ///< per slot: reserved or launched, not yet read
  std::vector<Pending> pending_;   ///< launched, not yet read
  std::vector<Report> kept_;       ///< read early (ring full), reported at their stream's synchronisation
};

}  // namespace ptxgate::runtime
