// Validated CUDA graphs: an explicit builder records launches, copies and fills, each validated as
// the direct call would be, with dependencies derived from access modes; instantiate, replay on a
// stream (joined into dependency tracking), and update kernel nodes validated before the driver.
#pragma once

#include <cstdint>
#include <expected>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// One node of a Graph: which graph, and its place in the order nodes were added.
struct GraphNode {
  uint64_t graph = 0;
  uint32_t index = 0;
};

struct GraphBuilderState;
struct GraphExecState;
class GraphExec;

/// A graph being built. Every launch is bound and validated exactly as Kernel::launch validates it
/// (validate_launch -> validation::check_launch, with the live caps and the driver's occupancy): a
/// launch Kernel::launch would block is blocked here with the same diagnostics, and never reaches
/// the driver. Dependencies come from access modes (the rule of src/ptxgate/runtime/tracking.hpp): a node that
/// reads a buffer waits for the node that last wrote it, a write waits for the last writer and the
/// readers since; independent nodes may run concurrently. A node using memory that is not tracked
/// (a raw device pointer, or a runtime without dependency tracking) is ordered after every earlier
/// node and before every later one. Move-only; not thread-safe.
class Graph {
 public:
  [[nodiscard]] static std::expected<Graph, diag::Diagnostics> create(std::shared_ptr<Context> ctx);
  Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();

  /// Adds a launch of `kernel` (of this graph's context: PG4008).
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> launch(Kernel& kernel, const LaunchConfig& config,
                                                                   std::span<const Arg> args);
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> launch(Kernel& kernel, const LaunchConfig& config,
                                                                   std::initializer_list<Arg> args) {
    return launch(kernel, config, std::span<const Arg>(args.begin(), args.size()));
  }
  /// Adds a copy, checked as copy_async checks it (PG4006, PG4007, PG4008): it reads its source
  /// and writes its destination. Pageable host memory is PG4031 (a replay reads or writes it long
  /// after this call): copy through a HostBuffer.
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> copy(const CopyEnd& dst, const CopyEnd& src);
  /// Adds a fill of `width`-byte elements (1, 2 or 4), checked as fill_async checks it.
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> fill(const CopyEnd& dst, uint32_t value, unsigned width);
  template <class T>
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> copy(DeviceSpan<T> dst, HostSpan<T> src) {
    return copy(CopyEnd::of(dst), CopyEnd::of(src));
  }
  template <class T>
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> copy(HostSpan<T> dst, DeviceSpan<T> src) {
    return copy(CopyEnd::of(dst), CopyEnd::of(src));
  }
  template <class T>
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> copy(DeviceSpan<T> dst, DeviceSpan<T> src) {
    return copy(CopyEnd::of(dst), CopyEnd::of(src));
  }
  template <class T>
  [[nodiscard]] std::expected<GraphNode, diag::Diagnostics> fill(DeviceSpan<T> dst, T value) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "fills set elements of 1, 2 or 4 bytes");
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return fill(CopyEnd::of(dst), bits, sizeof(T));
  }

  /// An executable graph of the nodes so far (cuGraphInstantiateWithFlags). The builder stays
  /// usable; each instantiation is independent.
  [[nodiscard]] std::expected<GraphExec, diag::Diagnostics> instantiate() const;

  size_t size() const;
  /// The graph's identity, as its nodes carry it (GraphNode::graph); 0 for a moved-from graph.
  uint64_t id() const;
  /// The nodes `node` waits for directly, by index.
  std::vector<uint32_t> dependencies(GraphNode node) const;
  Context* context() const;

 private:
  std::unique_ptr<GraphBuilderState> state_;
};

/// An instantiated graph. Replays are tracked operations on their stream: a replay waits for
/// conflicting work of other streams on every buffer the graph uses, and later work waits for it.
/// Move-only; not thread-safe.
class GraphExec {
 public:
  GraphExec();
  GraphExec(GraphExec&&) noexcept;
  GraphExec& operator=(GraphExec&&) noexcept;
  ~GraphExec();

  /// Replays the graph on `stream` (cuGraphLaunch). PG4030, before the driver, when a buffer the
  /// graph uses was destroyed; PG4008 for a stream of another context, PG3002 for a moved-from one.
  [[nodiscard]] std::expected<void, diag::Diagnostics> launch(const Stream& stream);

  /// New geometry and arguments for kernel node `node`, from the next replay on
  /// (cuGraphExecKernelNodeSetParams). Validated before the driver: the launch as Kernel::launch
  /// validates it (binding PG30xx, geometry PG31xx, shared memory, registers, residency); PG4032
  /// for a node that is not a kernel node of this graph; PG4033 for a change of cooperative mode
  /// or an untracked buffer where the node used tracked ones; PG4034 when a new buffer would make
  /// the node conflict with another node that the graph's dependencies do not order.
  [[nodiscard]] std::expected<void, diag::Diagnostics> update(GraphNode node, const LaunchConfig& config,
                                                              std::span<const Arg> args);
  [[nodiscard]] std::expected<void, diag::Diagnostics> update(GraphNode node, const LaunchConfig& config,
                                                              std::initializer_list<Arg> args) {
    return update(node, config, std::span<const Arg>(args.begin(), args.size()));
  }

  /// The kernel of kernel node `node` of this executable (null for a copy or fill node, or a node
  /// of another graph).
  const Kernel* kernel_of(GraphNode node) const;
  /// Replays so far.
  uint64_t replays() const;
  size_t size() const;

 private:
  friend class Graph;
  std::unique_ptr<GraphExecState> state_;
};

}  // namespace ptxgate::runtime
