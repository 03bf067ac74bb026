// Graph building (kernel nodes bound and validated as Kernel::launch does, dependencies from access
// modes), instantiation, tracked replay, and kernel-node updates validated before the driver.
#include "ptxgate/runtime/graph.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "ptxgate/runtime/internal/access_history.hpp"
#include "ptxgate/runtime/internal/checked_records.hpp"
#include "ptxgate/runtime/internal/launch_path.hpp"

namespace ptxgate::runtime {
namespace {

std::atomic<uint64_t> next_graph_id{1};

/// One buffer a node uses, kept alive for the liveness check of a replay.
struct TrackedUse {
  std::shared_ptr<BufferTrack> track;
  AccessMode mode = AccessMode::read;
  std::string what;  ///< "its parameter 'dst'" (messages)
};

std::string geometry(const LaunchConfig& c, const std::array<uint64_t, 3>& block) {
  return fmt::format("grid=({},{},{}) block=({},{},{}) shared={}{}", c.grid[0], c.grid[1], c.grid[2], block[0],
                     block[1], block[2], c.dynamic_shared_bytes, c.cooperative ? " cooperative" : "");
}

const char* verb(AccessMode m) { return m == AccessMode::write ? "writes" : "reads"; }

}  // namespace

/// What the graph keeps for its whole life and its executables': the context, the driver graph,
/// the modules of its kernels, and the grid-barrier word of its cooperative nodes.
struct GraphResources {
  std::shared_ptr<Context> ctx;
  uint64_t id = 0;
  CUgraph graph = nullptr;
  internal::HiddenArguments hidden;  ///< the values of its nodes' hidden arguments (the grid-barrier word)
  /// Checked mode: each checked kernel node's record (contract::CheckedRecord), read when a
  /// stream the graph was replayed on synchronises.
  std::vector<CUdeviceptr> checked_records;
  std::vector<std::shared_ptr<Kernel>> kernels;  ///< keep their modules loaded

  ~GraphResources() {
    if (!ctx) return;
    ctx->enter_to_release();
    if (graph != nullptr) (void)ctx->api().cuGraphDestroy(graph);
    if (hidden.barrier_word != 0) (void)ctx->api().cuMemFree(hidden.barrier_word);
    for (CUdeviceptr record : checked_records) (void)ctx->api().cuMemFree(record);
  }
};

struct GraphNodeRecord {
  enum class Kind : uint8_t { kernel, copy, fill };
  Kind kind = Kind::kernel;
  CUgraphNode handle = nullptr;
  std::vector<uint32_t> deps;     ///< direct predecessors, by index
  std::vector<TrackedUse> uses;   ///< tracked buffers and how the node uses them
  bool untracked = false;         ///< uses memory without a history: ordered with every other node
  std::string describe;           ///< "kernel 'copy' grid=(...) block=(...)"
  std::shared_ptr<Kernel> kernel; ///< kernel nodes
  bool cooperative = false;
  CUdeviceptr checked_record = 0; ///< kernel nodes of checked kernels: the node's record
};

struct GraphBuilderState {
  std::shared_ptr<GraphResources> resources;
  std::vector<GraphNodeRecord> nodes;
  std::unordered_map<const BufferTrack*, AccessHistory<uint32_t>> histories;
  std::optional<uint32_t> last_untracked;  ///< every later node is ordered after it
};

struct GraphExecState {
  std::shared_ptr<GraphResources> resources;
  std::vector<GraphNodeRecord> nodes;
  CUgraphExec exec = nullptr;
  uint64_t replays = 0;
  std::vector<std::shared_ptr<BufferTrack>> tracks;  ///< every tracked buffer of the graph, once
  std::vector<BufferAccess> accesses;                ///< the same, with the strongest use of any node

  ~GraphExecState() {
    if (exec == nullptr || !resources) return;
    resources->ctx->enter_to_release();
    (void)resources->ctx->api().cuGraphExecDestroy(exec);
  }

  /// The union of the nodes' uses, each buffer once with its strongest mode: what a replay submits.
  void refresh_accesses() {
    tracks.clear();
    accesses.clear();
    for (const auto& n : nodes)
      for (const auto& u : n.uses) {
        auto it = std::find(tracks.begin(), tracks.end(), u.track);
        if (it == tracks.end()) {
          tracks.push_back(u.track);
          accesses.push_back({u.track.get(), u.mode});
        } else if (u.mode == AccessMode::write) {
          accesses[static_cast<size_t>(it - tracks.begin())].mode = AccessMode::write;
        }
      }
  }

  /// Whether node `a` runs before node `b` in every replay (a path of dependencies a -> b).
  bool ordered(uint32_t a, uint32_t b) const {
    if (a >= b) return false;
    std::vector<bool> seen(b + 1, false);
    std::vector<uint32_t> todo{b};
    while (!todo.empty()) {
      const uint32_t i = todo.back();
      todo.pop_back();
      for (uint32_t p : nodes[i].deps) {
        if (p == a) return true;
        if (p > a && !seen[p]) {
          seen[p] = true;
          todo.push_back(p);
        }
      }
    }
    return false;
  }
};

namespace {

/// A kernel launch bound and validated for a graph node, with the argument table the driver copies.
struct PreparedLaunch {
  std::array<uint64_t, 3> block{0, 0, 0};
  std::vector<BoundSlot> values;
  std::vector<void*> slots;
  std::vector<TrackedUse> uses;
  bool untracked = false;
  std::string describe;
  /// Checked kernels: the node's hidden values (the graph's barrier word, the buffers' lengths and
  /// the node's record), which the slots point at until the driver copies them.
  std::unique_ptr<internal::HiddenArguments> checked;
};

/// Binds and admits a kernel node's launch through the steps Kernel::launch takes (the binder,
/// then internal::LaunchPath::admit: the launch cache's verdict or a validation, the same
/// diagnostics), then checks its buffers' addresses (PG3011: a node's addresses are fixed) and
/// appends the graph's hidden arguments. A node never runs on a null stream. `record`: a checked
/// node's record when it has one (an update), else 0 (one is made).
std::expected<PreparedLaunch, diag::Diagnostics> prepare(Kernel& kernel, const LaunchConfig& config,
                                                         std::span<const Arg> args, GraphResources& res,
                                                         CUdeviceptr record = 0) {
  using internal::LaunchPath;
  Context& ctx = kernel.context();
  internal::FunctionState& fn = LaunchPath::state(kernel.function());
  PreparedLaunch p;
  p.values.resize(args.size());
  p.slots.resize(args.size());
  contract::LaunchPlan plan;
  LaunchPath::plan_header(plan, config, ctx, fn, /*stream_is_null=*/false);
  if (auto bound = fn.binder.bind(fn.info, args, plan.arguments, p.slots.data(), p.values.data()); !bound)
    return std::unexpected(std::move(bound.error()));
  const validation::LaunchShape shape = validation::LaunchShape::of(plan);
  auto admitted = LaunchPath::admit(ctx, fn, plan, shape, nullptr);
  if (!admitted) return std::unexpected(std::move(admitted.error()));
  if (auto aligned = LaunchPath::check_addresses(fn, p.slots); !aligned) return std::unexpected(std::move(aligned.error()));
  p.block = {admitted->block[0], admitted->block[1], admitted->block[2]};
  if (fn.info.hidden_grid_barrier_param && res.hidden.barrier_word == 0) {
    auto word = ctx.allocate_barrier_word("graph grid barrier word");
    if (!word) return std::unexpected(std::move(word.error()));
    res.hidden.barrier_word = *word;
  }
  if (fn.checked) {
    p.checked = std::make_unique<internal::HiddenArguments>(res.hidden);
    internal::ArgumentBinder::checked_lengths(shape, *p.checked);
    if (auto complete = internal::checked_lengths_complete(fn.info, *p.checked); !complete)
      return std::unexpected(std::move(complete.error()));
    if (record == 0) {
      auto made = ctx.checked_records().node_record();
      if (!made) return std::unexpected(std::move(made.error()));
      record = *made;
      res.checked_records.push_back(record);
    }
    p.checked->checked_record = record;
  }
  internal::ArgumentBinder::append_hidden(fn.info, p.checked ? *p.checked : res.hidden, p.slots);
  const auto& params = fn.info.params;
  for (size_t i = 0; i < args.size() && i < params.size(); ++i) {
    if (!params[i].is_buffer) continue;
    if (BufferTrack* t = args[i].track(); t != nullptr)
      p.uses.push_back({share_track(*t), access_mode(params[i].access), fmt::format("its parameter '{}'", params[i].name)});
    else
      p.untracked = true;
  }
  p.describe = fmt::format("kernel '{}' {}", fn.info.name, geometry(config, p.block));
  return p;
}

CUDA_KERNEL_NODE_PARAMS node_params(Kernel& kernel, const LaunchConfig& config, PreparedLaunch& p) {
  // A launchable verdict bounds every dimension by the device's limits (< 2^32).
  const auto u = [](uint64_t v) { return static_cast<unsigned>(v); };
  CUDA_KERNEL_NODE_PARAMS n{};
  n.func = kernel.function().handle();
  n.gridDimX = u(config.grid[0]);
  n.gridDimY = u(config.grid[1]);
  n.gridDimZ = u(config.grid[2]);
  n.blockDimX = u(p.block[0]);
  n.blockDimY = u(p.block[1]);
  n.blockDimZ = u(p.block[2]);
  n.sharedMemBytes = u(config.dynamic_shared_bytes);
  n.kernelParams = p.slots.data();
  return n;
}

}  // namespace

/// Adds `record` to the graph after the nodes the access-mode rule says it waits for (untracked
/// nodes are ordered with every node), through `add(handle, deps, count, subject)`, the driver call.
template <class Add>
std::expected<GraphNode, diag::Diagnostics> add_node(GraphBuilderState& st, GraphNodeRecord record, Add&& add) {
  const auto index = static_cast<uint32_t>(st.nodes.size());
  std::vector<uint32_t> deps;
  if (record.untracked) {
    const uint32_t first = st.last_untracked ? *st.last_untracked : 0;
    for (uint32_t i = first; i < index; ++i) deps.push_back(i);
  } else {
    for (const auto& u : record.uses)
      if (auto it = st.histories.find(u.track.get()); it != st.histories.end())
        it->second.for_each_dependency(u.mode, [&](uint32_t n) { deps.push_back(n); });
    if (st.last_untracked) deps.push_back(*st.last_untracked);
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  std::vector<CUgraphNode> handles;
  for (uint32_t d : deps) handles.push_back(st.nodes[d].handle);
  if (auto ok = add(&record.handle, handles.data(), handles.size(), record.describe); !ok)
    return std::unexpected(std::move(ok.error()));
  record.deps = std::move(deps);
  if (record.untracked) {
    st.histories.clear();  // everything before is ordered before this node, and it before everything after
    st.last_untracked = index;
  } else {
    for (const auto& u : record.uses)
      st.histories[u.track.get()].record(u.mode, index, [](uint32_t, uint32_t) { return false; });
  }
  st.nodes.push_back(std::move(record));
  return GraphNode{st.resources->id, index};
}

// ---- Graph ----

Graph::Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

std::expected<Graph, diag::Diagnostics> Graph::create(std::shared_ptr<Context> ctx) {
  if (auto ok = ctx->enter("cuGraphCreate", "graph"); !ok) return std::unexpected(ok.error());
  auto res = std::make_shared<GraphResources>();
  if (auto ok = PTXGATE_CU(*ctx, "graph", cuGraphCreate, &res->graph, 0); !ok) return std::unexpected(ok.error());
  res->ctx = std::move(ctx);
  res->id = next_graph_id.fetch_add(1, std::memory_order_relaxed);
  Graph g;
  g.state_ = std::make_unique<GraphBuilderState>();
  g.state_->resources = std::move(res);
  return g;
}

size_t Graph::size() const { return state_ ? state_->nodes.size() : 0; }
uint64_t Graph::id() const { return state_ ? state_->resources->id : 0; }
Context* Graph::context() const { return state_ ? state_->resources->ctx.get() : nullptr; }

std::vector<uint32_t> Graph::dependencies(GraphNode node) const {
  if (!state_ || node.graph != state_->resources->id || node.index >= state_->nodes.size()) return {};
  return state_->nodes[node.index].deps;
}

std::expected<GraphNode, diag::Diagnostics> Graph::launch(Kernel& kernel, const LaunchConfig& config,
                                                          std::span<const Arg> args) {
  GraphBuilderState& st = *state_;
  GraphResources& res = *st.resources;
  Context& ctx = *res.ctx;
  Context& kernel_ctx = kernel.context();
  if (&kernel_ctx != &ctx) {
    diag::Diagnostics d;
    d.add(diag::Code::foreign_object,
          fmt::format("graph of device {} ({}): kernel '{}' is loaded in the context of device {} ({})", ctx.device(),
                      ctx.caps().name, kernel.info().name, kernel_ctx.device(), kernel_ctx.caps().name),
          {}, "build the graph in the kernel's own context (Graph::create(runtime.shared_context()))");
    return std::unexpected(std::move(d));
  }
  if (auto ok = ctx.enter("cuGraphAddKernelNode", kernel.info().name); !ok) return std::unexpected(ok.error());
  auto prepared = prepare(kernel, config, args, res);
  if (!prepared) return std::unexpected(std::move(prepared.error()));

  GraphNodeRecord record;
  record.kind = GraphNodeRecord::Kind::kernel;
  record.uses = std::move(prepared->uses);
  record.untracked = prepared->untracked;
  record.describe = prepared->describe;
  record.cooperative = config.cooperative;
  record.checked_record = prepared->checked ? prepared->checked->checked_record : 0;

  CUDA_KERNEL_NODE_PARAMS params = node_params(kernel, config, *prepared);
  const bool cooperative = config.cooperative;
  auto node = add_node(st, std::move(record), [&](CUgraphNode* handle, const CUgraphNode* deps, size_t count,
                                                  const std::string& subject) -> std::expected<void, diag::Diagnostics> {
    if (auto ok = PTXGATE_CU(ctx, subject, cuGraphAddKernelNode, handle, res.graph, deps, count, &params); !ok) return ok;
    if (!cooperative) return {};
    CUkernelNodeAttrValue value{};
    value.cooperative = 1;
    return PTXGATE_CU(ctx, subject, cuGraphKernelNodeSetAttribute, *handle, CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE,
                      &value);
  });
  if (!node) return node;
  GraphNodeRecord& added = st.nodes.back();
  added.kernel = std::make_shared<Kernel>(kernel);
  if (std::find_if(res.kernels.begin(), res.kernels.end(), [&](const auto& k) {
        return &k->function() == &kernel.function();
      }) == res.kernels.end())
    res.kernels.push_back(added.kernel);
  return node;
}

namespace {

/// A copy end's history (null: untracked memory).
BufferTrack* track_of(const CopyEnd& e) {
  if (e.where == CopyEnd::Where::device) return e.device->track();
  if (e.where == CopyEnd::Where::pinned) return e.pinned->track();
  return nullptr;
}

void set_end(const CopyEnd& e, CUmemorytype& type, CUdeviceptr& device, void*& host) {
  if (e.where == CopyEnd::Where::device) {
    type = CU_MEMORYTYPE_DEVICE;
    device = e.device->pointer() + e.offset;
  } else {
    type = CU_MEMORYTYPE_HOST;
    host = e.pinned->data() + e.offset;
  }
}

}  // namespace

std::expected<GraphNode, diag::Diagnostics> Graph::copy(const CopyEnd& dst, const CopyEnd& src) {
  GraphBuilderState& st = *state_;
  Context& ctx = *st.resources->ctx;
  diag::Diagnostics d = check_copy(ctx, dst, src);
  for (const CopyEnd* e : {&dst, &src})
    if (e->where == CopyEnd::Where::pageable)
      d.add(diag::Code::graph_pageable_memory,
            fmt::format("graph copy of {} bytes with ordinary host memory as its {}: every replay would use that "
                        "memory long after this call",
                        src.bytes, e == &dst ? "destination" : "source"),
            {}, "copy through a pinned HostBuffer (HostSpan) in a graph");
  if (d.has_errors()) return std::unexpected(std::move(d));
  if (auto ok = ctx.enter("cuGraphAddMemcpyNode", "graph copy"); !ok) return std::unexpected(ok.error());
  CUDA_MEMCPY3D p{};
  void* dst_host = nullptr;
  void* src_host = nullptr;
  set_end(dst, p.dstMemoryType, p.dstDevice, dst_host);
  set_end(src, p.srcMemoryType, p.srcDevice, src_host);
  p.dstHost = dst_host;
  p.srcHost = src_host;
  p.WidthInBytes = dst.bytes;
  p.Height = 1;
  p.Depth = 1;
  GraphNodeRecord record;
  record.kind = GraphNodeRecord::Kind::copy;
  record.describe = fmt::format("copy of {} bytes", dst.bytes);
  const std::pair<const CopyEnd*, AccessMode> ends[] = {{&src, AccessMode::read}, {&dst, AccessMode::write}};
  for (const auto& [e, mode] : ends) {
    if (BufferTrack* t = track_of(*e); t != nullptr)
      record.uses.push_back({share_track(*t), mode, e == &dst ? "its destination" : "its source"});
    else
      record.untracked = true;
  }
  return add_node(st, std::move(record), [&](CUgraphNode* handle, const CUgraphNode* deps, size_t count,
                                             const std::string& subject) {
    return PTXGATE_CU(ctx, subject, cuGraphAddMemcpyNode, handle, st.resources->graph, deps, count, &p, ctx.handle());
  });
}

std::expected<GraphNode, diag::Diagnostics> Graph::fill(const CopyEnd& dst, uint32_t value, unsigned width) {
  GraphBuilderState& st = *state_;
  Context& ctx = *st.resources->ctx;
  diag::Diagnostics d = check_fill(ctx, dst, width);
  if (d.has_errors()) return std::unexpected(std::move(d));
  if (auto ok = ctx.enter("cuGraphAddMemsetNode", "graph fill"); !ok) return std::unexpected(ok.error());
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = dst.device->pointer() + dst.offset;
  p.value = value;
  p.elementSize = width;
  p.width = dst.bytes / width;
  p.height = 1;
  GraphNodeRecord record;
  record.kind = GraphNodeRecord::Kind::fill;
  record.describe = fmt::format("fill of {} bytes", dst.bytes);
  if (BufferTrack* t = dst.device->track(); t != nullptr)
    record.uses.push_back({share_track(*t), AccessMode::write, "its destination"});
  else
    record.untracked = true;
  return add_node(st, std::move(record), [&](CUgraphNode* handle, const CUgraphNode* deps, size_t count,
                                             const std::string& subject) {
    return PTXGATE_CU(ctx, subject, cuGraphAddMemsetNode, handle, st.resources->graph, deps, count, &p, ctx.handle());
  });
}

std::expected<GraphExec, diag::Diagnostics> Graph::instantiate() const {
  const GraphBuilderState& st = *state_;
  Context& ctx = *st.resources->ctx;
  const std::string subject = fmt::format("graph of {} nodes", st.nodes.size());
  if (auto ok = ctx.enter("cuGraphInstantiateWithFlags", subject); !ok) return std::unexpected(ok.error());
  auto es = std::make_unique<GraphExecState>();
  if (auto ok = PTXGATE_CU(ctx, subject, cuGraphInstantiateWithFlags, &es->exec, st.resources->graph, 0); !ok)
    return std::unexpected(ok.error());
  es->resources = st.resources;
  es->nodes = st.nodes;
  es->refresh_accesses();
  GraphExec e;
  e.state_ = std::move(es);
  return e;
}

// ---- GraphExec ----

GraphExec::GraphExec() = default;
GraphExec::GraphExec(GraphExec&&) noexcept = default;
GraphExec& GraphExec::operator=(GraphExec&&) noexcept = default;
GraphExec::~GraphExec() = default;

const Kernel* GraphExec::kernel_of(GraphNode node) const {
  if (!state_ || node.graph != state_->resources->id || node.index >= state_->nodes.size()) return nullptr;
  return state_->nodes[node.index].kernel.get();
}

uint64_t GraphExec::replays() const { return state_ ? state_->replays : 0; }
size_t GraphExec::size() const { return state_ ? state_->nodes.size() : 0; }

std::expected<void, diag::Diagnostics> GraphExec::launch(const Stream& stream) {
  GraphExecState& st = *state_;
  Context& ctx = *st.resources->ctx;
  diag::Diagnostics d;
  if (stream.context() == nullptr) {
    d.add(diag::Code::null_stream, "graph replay on a stream that was moved from or reset", {},
          "replay on a stream made by Runtime::create_stream");
    return std::unexpected(std::move(d));
  }
  if (stream.context() != &ctx) {
    d.add(diag::Code::foreign_object,
          fmt::format("replay of a graph of device {} ({}) on a stream of device {} ({})", ctx.device(),
                      ctx.caps().name, stream.context()->device(), stream.context()->caps().name),
          {}, "replay on a stream of the graph's own runtime");
    return std::unexpected(std::move(d));
  }
  for (const auto& t : st.tracks) {
    if (track_alive(*t)) [[likely]]
      continue;
    for (size_t i = 0; i < st.nodes.size(); ++i)
      for (const auto& u : st.nodes[i].uses)
        if (u.track == t && !d.has_errors())
          d.add(diag::Code::graph_buffer_released,
                fmt::format("graph node #{} ({}) uses the buffer of {}, which was destroyed after the node was added",
                            i, st.nodes[i].describe, u.what),
                {}, "keep every buffer a graph uses alive while it is replayed, or update the node to a live buffer");
    return std::unexpected(std::move(d));
  }
  // The subject names the replay in diagnostics only: formatted when one is made, not per replay.
  auto subject = [&] { return fmt::format("replay of a graph of {} nodes", st.nodes.size()); };
  if (auto ok = ctx.enter_with("cuGraphLaunch", subject); !ok) return ok;
  CUstream s = stream.handle();
  auto launched = ctx.tracker().submit(s, st.accesses, [&]() -> std::expected<void, diag::Diagnostics> {
    const CUresult r = ctx.api().cuGraphLaunch(st.exec, s);
    if (r == CUDA_SUCCESS) [[likely]]
      return {};
    return ctx.check(r, "cuGraphLaunch", subject());
  });
  if (launched) {
    ++st.replays;
    // Checked kernel nodes: their records are read when the stream synchronises (PG3804).
    for (size_t i = 0; i < st.nodes.size(); ++i) {
      const GraphNodeRecord& n = st.nodes[i];
      if (n.checked_record == 0) continue;
      const LoadedFunction& fn = n.kernel->function();
      ctx.checked_records().replayed(n.checked_record, s,
                                     fmt::format("graph node #{} ({}) of replay {} on stream {}", i, n.describe,
                                                 st.replays, static_cast<const void*>(s)),
                                     {fn.info().checked, fn.info().name, fn.location().file, {}, {}, 0});
    }
  }
  return launched;
}

std::expected<void, diag::Diagnostics> GraphExec::update(GraphNode node, const LaunchConfig& config,
                                                         std::span<const Arg> args) {
  GraphExecState& st = *state_;
  Context& ctx = *st.resources->ctx;
  diag::Diagnostics d;
  if (node.graph != st.resources->id || node.index >= st.nodes.size() ||
      st.nodes[node.index].kind != GraphNodeRecord::Kind::kernel) {
    const std::string which =
        node.graph != st.resources->id ? "a node of another graph"
        : node.index >= st.nodes.size()
            ? fmt::format("node #{}, past the graph's {} nodes", node.index, st.nodes.size())
            : fmt::format("node #{} ({}), which is not a kernel node", node.index, st.nodes[node.index].describe);
    d.add(diag::Code::graph_update_node, fmt::format("graph update of {}", which), {},
          "update a GraphNode that Graph::launch returned for the graph this executable was instantiated from");
    return std::unexpected(std::move(d));
  }
  GraphNodeRecord& rec = st.nodes[node.index];
  Kernel& kernel = *rec.kernel;
  if (config.cooperative != rec.cooperative) {
    d.add(diag::Code::graph_update_fixed,
          fmt::format("graph update of node #{} ({}) turns cooperative mode {}: an instantiated graph keeps it",
                      node.index, rec.describe, config.cooperative ? "on" : "off"),
          {}, "build and instantiate a graph with the launch in the mode it needs");
    return std::unexpected(std::move(d));
  }
  if (auto ok = ctx.enter("cuGraphExecKernelNodeSetParams", rec.describe); !ok) return ok;
  auto prepared = prepare(kernel, config, args, *st.resources, rec.checked_record);
  if (!prepared) {
    auto errors = std::move(prepared.error());
    for (auto& item : errors.items())
      item.notes.push_back(fmt::format("in the update of graph node #{} ({})", node.index, rec.describe));
    return std::unexpected(std::move(errors));
  }
  if (prepared->untracked && !rec.untracked) {
    d.add(diag::Code::graph_update_fixed,
          fmt::format("graph update of node #{} ({}) passes a buffer without an access history (a raw device pointer): "
                      "the graph ordered this node by its buffers",
                      node.index, rec.describe),
          {}, "pass DeviceBuffers or DeviceSpans, or build a new graph");
    return std::unexpected(std::move(d));
  }
  // Every conflict the new buffers create must already be ordered by the graph's dependencies.
  if (!rec.untracked)
    for (const auto& mine : prepared->uses)
      for (uint32_t other = 0; other < st.nodes.size() && !d.has_errors(); ++other) {
        if (other == node.index || st.nodes[other].untracked) continue;
        for (const auto& theirs : st.nodes[other].uses) {
          if (theirs.track != mine.track || (mine.mode == AccessMode::read && theirs.mode == AccessMode::read)) continue;
          if (st.ordered(std::min(other, node.index), std::max(other, node.index))) continue;
          d.add(diag::Code::graph_update_race,
                fmt::format("graph update of node #{} ({}): the buffer of {} is one node #{} ({}) {} through {}, and "
                            "the graph does not order the two nodes (the node {} it)",
                            node.index, prepared->describe, mine.what, other, st.nodes[other].describe,
                            verb(theirs.mode), theirs.what, verb(mine.mode)),
                {}, "update to buffers the graph's dependencies already order, or build a new graph, which derives "
                    "the order from the buffers");
          break;
        }
      }
  if (d.has_errors()) return std::unexpected(std::move(d));
  CUDA_KERNEL_NODE_PARAMS params = node_params(kernel, config, *prepared);
  if (auto ok = PTXGATE_CU(ctx, prepared->describe, cuGraphExecKernelNodeSetParams, st.exec, rec.handle, &params); !ok)
    return ok;
  rec.uses = std::move(prepared->uses);
  rec.describe = std::move(prepared->describe);
  st.refresh_accesses();
  return {};
}

}  // namespace ptxgate::runtime
