// Several ranks in one test process, one thread each: a fake driver whose device memory is real
// host memory and whose streams run their work in order, and a fake NCCL whose communicators pair
// every rank's sends with receives and collectives with collectives, moving the data — and hang,
// as NCCL does, when ranks call different things, until aborted. For checked mode and the watchdog.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime_fake_driver.hpp"
#include "ptxgate/runtime/nccl_api.hpp"

namespace ptxgate::runtime::testing {

class FakeCluster {
 public:
  struct Comm;
  /// One NCCL operation of one rank: a collective, a send or a receive.
  struct Op {
    std::string name;  ///< "ncclAllReduce", "ncclSend", ...
    int rank = 0;
    const void* send = nullptr;
    void* recv = nullptr;
    size_t count = 0;
    ncclDataType_t type = ncclUint8;
    int op = 0, root = 0;  ///< root for rooted collectives, peer for sends and receives
    size_t index = 0;      ///< its place in the transport's order (per rank, or per pair)
    bool started = false, complete = false;
    Comm* comm = nullptr;
  };
  /// The ranks of one communicator: what each posted, in order.
  struct Transport {
    int nranks = 0;
    std::vector<std::vector<std::shared_ptr<Op>>> collectives;         ///< per rank
    std::map<std::pair<int, int>, std::vector<std::shared_ptr<Op>>> sends, recvs;  ///< (from, to)
    std::map<int, Transport*> children;  ///< ncclCommSplit's, by the ranks' split count
  };
  /// One rank of a fake communicator (what an ncclComm_t points at).
  struct Comm {
    Transport* transport = nullptr;
    int rank = 0;
    bool blocking = true, aborted = false, destroyed = false;
    int in_progress_polls = 0;          ///< ncclCommGetAsyncError answers ncclInProgress this often
    ncclResult_t async_error = ncclSuccess;
    int splits = 0;
    std::vector<std::string> posted;    ///< every operation posted, by name
    std::vector<std::shared_ptr<Op>> ops;
  };

  std::recursive_mutex mutex;
  int aborts = 0, destroys = 0;
  /// Collectives never complete (a link or a rank failing inside one); sends and receives still do.
  bool stall_collectives = false;

  /// Forgets every communicator, stream, event and allocation.
  void reset() {
    std::lock_guard lock(mutex);
    for (auto& [p, bytes] : memory_) std::free(reinterpret_cast<void*>(p));
    memory_.clear();
    streams_.clear();
    events_.clear();
    comms_.clear();
    transports_.clear();
    by_id_.clear();
    aborts = destroys = 0;
    stall_collectives = false;
    next_handle_ = 0x70000000;
  }
  Comm* comm(ncclComm_t c) { return reinterpret_cast<Comm*>(c); }
  /// Operations of `c` whose name starts with "nccl" and that are not sends or receives.
  size_t collectives_posted(ncclComm_t c) {
    std::lock_guard lock(mutex);
    size_t n = 0;
    for (const auto& name : comm(c)->posted) n += name != "ncclSend" && name != "ncclRecv";
    return n;
  }

  // ---- the driver side ----
  CUresult mem_alloc(CUdeviceptr* p, size_t bytes) {
    std::lock_guard lock(mutex);
    void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = reinterpret_cast<CUdeviceptr>(m);
    memory_[*p] = bytes;
    return CUDA_SUCCESS;
  }
  CUresult mem_free(CUdeviceptr p) {
    std::lock_guard lock(mutex);
    if (memory_.erase(p) == 1) std::free(reinterpret_cast<void*>(p));
    return CUDA_SUCCESS;
  }
  CUresult enqueue_copy(void* dst, const void* src, size_t n, CUstream s) {
    std::lock_guard lock(mutex);
    Item it;
    it.kind = Item::copy, it.dst = dst, it.src = src, it.bytes = n;
    return enqueue(s, std::move(it));
  }
  CUresult enqueue_memset(void* dst, uint32_t value, size_t n, size_t width, CUstream s) {
    std::lock_guard lock(mutex);
    Item it;
    it.kind = Item::memset, it.dst = dst, it.value = value, it.bytes = n, it.width = width;
    return enqueue(s, std::move(it));
  }
  CUresult stream_create(CUstream* s) {
    std::lock_guard lock(mutex);
    *s = reinterpret_cast<CUstream>(next_handle_ += 0x10);
    streams_[*s].context = current_context();
    return CUDA_SUCCESS;
  }
  CUresult stream_destroy(CUstream s) {
    std::lock_guard lock(mutex);
    streams_.erase(s);
    return CUDA_SUCCESS;
  }
  CUresult stream_query(CUstream s) {
    std::lock_guard lock(mutex);
    progress();
    auto it = streams_.find(s);
    return it == streams_.end() || it->second.items.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  }
  CUresult event_create(CUevent* e) {
    std::lock_guard lock(mutex);
    *e = reinterpret_cast<CUevent>(next_handle_ += 0x10);
    events_[*e].context = current_context();
    return CUDA_SUCCESS;
  }
  CUresult event_destroy(CUevent e) {
    std::lock_guard lock(mutex);
    events_.erase(e);
    return CUDA_SUCCESS;
  }
  CUresult event_record(CUevent e, CUstream s) {
    std::lock_guard lock(mutex);
    // As the driver: an event is recorded only on a stream of its own context.
    if (s != nullptr && streams_.count(s) != 0 && streams_[s].context != events_[e].context)
      return CUDA_ERROR_INVALID_HANDLE;
    Item it;
    it.kind = Item::mark, it.event = e, it.generation = ++events_[e].recorded;
    return enqueue(s, std::move(it));
  }
  CUresult event_query(CUevent e) {
    std::lock_guard lock(mutex);
    progress();
    const EventState& ev = events_[e];
    return ev.reached >= ev.recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  }
  CUresult stream_wait_event(CUstream s, CUevent e) {
    std::lock_guard lock(mutex);
    Item it;
    it.kind = Item::wait, it.event = e, it.generation = events_[e].recorded;
    return enqueue(s, std::move(it));
  }
  /// Host waits: progress, and let the other ranks' threads run meanwhile.
  template <class Done>
  CUresult wait_until(Done done) {
    for (;;) {
      {
        std::lock_guard lock(mutex);
        progress();
        if (done()) return CUDA_SUCCESS;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // ---- the NCCL side ----
  ncclComm_t new_comm(Transport* t, int rank, bool blocking) {
    auto c = std::make_unique<Comm>();
    c->transport = t;
    c->rank = rank;
    c->blocking = blocking;
    if (!blocking) c->in_progress_polls = 1;
    comms_.push_back(std::move(c));
    return reinterpret_cast<ncclComm_t>(comms_.back().get());
  }
  Transport* new_transport(int nranks) {
    auto t = std::make_unique<Transport>();
    t->nranks = nranks;
    t->collectives.resize(static_cast<size_t>(nranks));
    transports_.push_back(std::move(t));
    return transports_.back().get();
  }
  Transport* transport_for(const ncclUniqueId& id, int nranks) {
    const std::string key(id.internal, sizeof(id.internal));
    auto it = by_id_.find(key);
    if (it != by_id_.end()) return it->second;
    return by_id_[key] = new_transport(nranks);
  }
  ncclResult_t split(ncclComm_t parent, ncclComm_t* out, const ncclConfig_t* config) {
    std::lock_guard lock(mutex);
    Comm* p = comm(parent);
    Transport*& child = p->transport->children[p->splits++];
    if (child == nullptr) child = new_transport(p->transport->nranks);
    *out = new_comm(child, p->rank, config == nullptr || config->blocking != 0);
    return ncclSuccess;
  }
  ncclResult_t post(const char* name, ncclComm_t c, const void* send, void* recv, size_t count, ncclDataType_t type,
                    int op, int root, CUstream s) {
    std::lock_guard lock(mutex);
    Comm* rank = comm(c);
    auto o = std::make_shared<Op>();
    o->name = name, o->rank = rank->rank, o->send = send, o->recv = recv, o->count = count, o->type = type;
    o->op = op, o->root = root, o->comm = rank;
    rank->posted.push_back(name);
    Transport& t = *rank->transport;
    if (o->name == "ncclSend") {
      auto& list = t.sends[{rank->rank, root}];
      o->index = list.size();
      list.push_back(o);
    } else if (o->name == "ncclRecv") {
      auto& list = t.recvs[{root, rank->rank}];
      o->index = list.size();
      list.push_back(o);
    } else {
      auto& list = t.collectives[static_cast<size_t>(rank->rank)];
      o->index = list.size();
      list.push_back(o);
    }
    rank->ops.push_back(o);
    if (rank->aborted) o->complete = true;
    if (group_depth() > 0) {
      group_ops().push_back({s, o});
      return ncclSuccess;
    }
    Item it;
    it.kind = Item::nccl;
    it.ops.push_back(o);
    enqueue(s, std::move(it));
    return ncclSuccess;
  }
  ncclResult_t group_start() {
    ++group_depth();
    return ncclSuccess;
  }
  ncclResult_t group_end() {
    std::lock_guard lock(mutex);
    if (--group_depth() > 0) return ncclSuccess;
    // One item per stream: the group's operations on it start together (one kernel).
    std::vector<std::pair<CUstream, Item>> items;
    bool nonblocking = false;
    for (auto& [s, o] : group_ops()) {
      auto it = std::find_if(items.begin(), items.end(), [&](const auto& p) { return p.first == s; });
      if (it == items.end()) {
        items.push_back({s, Item{}});
        it = items.end() - 1;
        it->second.kind = Item::nccl;
      }
      it->second.ops.push_back(o);
      if (!o->comm->blocking) {
        nonblocking = true;
        o->comm->in_progress_polls = 1;
      }
    }
    group_ops().clear();
    for (auto& [s, it] : items) enqueue(s, std::move(it));
    return nonblocking ? ncclInProgress : ncclSuccess;
  }
  ncclResult_t abort(ncclComm_t c) {
    std::lock_guard lock(mutex);
    Comm* rank = comm(c);
    rank->aborted = true;
    ++aborts;
    for (auto& o : rank->ops) o->complete = true;  // its kernels end
    progress();
    return ncclSuccess;
  }
  ncclResult_t async_error(ncclComm_t c, ncclResult_t* e) {
    std::lock_guard lock(mutex);
    Comm* rank = comm(c);
    if (rank->in_progress_polls > 0) {
      --rank->in_progress_polls;
      *e = ncclInProgress;
    } else {
      *e = rank->async_error;
    }
    return ncclSuccess;
  }

 private:
  struct Item {
    enum Kind { copy, memset, mark, wait, nccl } kind = copy;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0, width = 1;
    uint32_t value = 0;
    CUevent event = nullptr;
    uint64_t generation = 0;
    std::vector<std::shared_ptr<Op>> ops;
  };
  struct EventState {
    uint64_t recorded = 0, reached = 0;
    CUcontext context = nullptr;
  };
  struct StreamState {
    CUcontext context = nullptr;
    std::deque<Item> items;
  };
  static CUcontext& current_context() {
    thread_local CUcontext current = nullptr;
    return current;
  }

 public:
  /// Device `ordinal`'s (fake) primary context: one per device, as the driver's.
  static CUcontext context_of(int ordinal) { return reinterpret_cast<CUcontext>(uintptr_t{0x1000} + 0x10 * ordinal); }
  static void set_current(CUcontext c) { current_context() = c; }
  static CUcontext current() { return current_context(); }

 private:
  static int& group_depth() {
    thread_local int depth = 0;
    return depth;
  }
  static std::vector<std::pair<CUstream, std::shared_ptr<Op>>>& group_ops() {
    thread_local std::vector<std::pair<CUstream, std::shared_ptr<Op>>> ops;
    return ops;
  }

  CUresult enqueue(CUstream s, Item it) {
    if (s == nullptr) {  // the legacy stream: synchronous here
      streams_[nullptr].items.push_back(std::move(it));
      progress();
      return CUDA_SUCCESS;
    }
    auto found = streams_.find(s);
    if (found == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
    found->second.items.push_back(std::move(it));
    progress();
    return CUDA_SUCCESS;
  }
  void progress() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [s, st] : streams_)
        while (!st.items.empty() && runnable(st.items.front())) {
          run(st.items.front());
          st.items.pop_front();
          changed = true;
        }
    }
  }
  bool runnable(Item& it) {
    if (it.kind == Item::wait) return events_[it.event].reached >= it.generation;
    if (it.kind != Item::nccl) return true;
    bool all = true;
    for (auto& o : it.ops) {
      if (!o->started) {
        o->started = true;
        match(o);
      }
      all = all && o->complete;
    }
    return all;
  }
  void run(Item& it) {
    switch (it.kind) {
      case Item::copy: std::memmove(it.dst, it.src, it.bytes); break;
      case Item::memset:
        for (size_t i = 0; i < it.bytes; ++i)
          std::memcpy(static_cast<char*>(it.dst) + i * it.width, &it.value, it.width);
        break;
      case Item::mark: {
        auto& ev = events_[it.event];
        ev.reached = std::max(ev.reached, it.generation);
        break;
      }
      default: break;
    }
  }
  void match(const std::shared_ptr<Op>& o) {
    if (o->complete) return;
    Transport& t = *o->comm->transport;
    if (o->name == "ncclSend" || o->name == "ncclRecv") {
      const bool is_send = o->name == "ncclSend";
      const std::pair<int, int> key = is_send ? std::pair{o->rank, o->root} : std::pair{o->root, o->rank};
      auto& others = is_send ? t.recvs[key] : t.sends[key];
      if (o->index >= others.size()) return;
      auto partner = others[o->index];
      if (!partner->started || partner->complete) return;
      Op& s = is_send ? *o : *partner;
      Op& r = is_send ? *partner : *o;
      const size_t bytes = std::min(s.count * size_of(s.type), r.count * size_of(r.type));
      std::memcpy(r.recv, s.send, bytes);
      s.complete = r.complete = true;
      return;
    }
    if (stall_collectives) return;
    std::vector<Op*> all;
    for (auto& list : t.collectives) {
      if (o->index >= list.size() || !list[o->index]->started) return;
      all.push_back(list[o->index].get());
    }
    for (Op* x : all)
      if (x->name != o->name || x->count != o->count || x->type != o->type || x->op != o->op || x->root != o->root)
        return;  // ranks called different things: NCCL hangs (or corrupts); the fake hangs
    execute(all);
    for (Op* x : all) x->complete = true;
  }
  static size_t size_of(ncclDataType_t t) {
    switch (t) {
      case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
      case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
      default: return 1;
    }
  }
  template <class T>
  static void combine(T* acc, const T* in, size_t n, int op) {
    for (size_t i = 0; i < n; ++i) {
      switch (op) {
        case ncclProd: acc[i] = acc[i] * in[i]; break;
        case ncclMax: acc[i] = std::max(acc[i], in[i]); break;
        case ncclMin: acc[i] = std::min(acc[i], in[i]); break;
        default: acc[i] = acc[i] + in[i]; break;
      }
    }
  }
  /// The reduction over ranks of `count` elements at element `first` of each rank's send buffer.
  template <class T>
  static std::vector<T> reduced(const std::vector<Op*>& all, size_t first, size_t count) {
    std::vector<T> acc(count);
    std::memcpy(acc.data(), static_cast<const T*>(all[0]->send) + first, count * sizeof(T));
    for (size_t r = 1; r < all.size(); ++r) combine(acc.data(), static_cast<const T*>(all[r]->send) + first, count, all[0]->op);
    if (all[0]->op == ncclAvg)
      for (auto& v : acc) v = static_cast<T>(v / static_cast<T>(all.size()));
    return acc;
  }
  template <class T>
  static void execute_as(const std::vector<Op*>& all) {
    const Op& o = *all[0];
    const size_t n = o.count;
    if (o.name == "ncclAllReduce") {
      const auto v = reduced<T>(all, 0, n);
      for (Op* x : all) std::memcpy(x->recv, v.data(), n * sizeof(T));
    } else if (o.name == "ncclReduce") {
      const auto v = reduced<T>(all, 0, n);
      std::memcpy(all[static_cast<size_t>(o.root)]->recv, v.data(), n * sizeof(T));
    } else if (o.name == "ncclBroadcast") {
      std::vector<T> v(n);
      std::memcpy(v.data(), all[static_cast<size_t>(o.root)]->send, n * sizeof(T));
      for (Op* x : all) std::memcpy(x->recv, v.data(), n * sizeof(T));
    } else if (o.name == "ncclAllGather") {
      std::vector<T> v(n * all.size());
      for (size_t r = 0; r < all.size(); ++r) std::memcpy(v.data() + r * n, all[r]->send, n * sizeof(T));
      for (Op* x : all) std::memcpy(x->recv, v.data(), v.size() * sizeof(T));
    } else if (o.name == "ncclReduceScatter") {
      std::vector<std::vector<T>> parts;
      for (size_t r = 0; r < all.size(); ++r) parts.push_back(reduced<T>(all, r * n, n));
      for (size_t r = 0; r < all.size(); ++r) std::memcpy(all[r]->recv, parts[r].data(), n * sizeof(T));
    }
  }
  static void execute(const std::vector<Op*>& all) {
    switch (all[0]->type) {
      case ncclInt32: execute_as<int32_t>(all); break;
      case ncclUint32: execute_as<uint32_t>(all); break;
      case ncclInt64: execute_as<int64_t>(all); break;
      case ncclUint64: execute_as<uint64_t>(all); break;
      case ncclFloat32: execute_as<float>(all); break;
      case ncclFloat64: execute_as<double>(all); break;
      default: execute_as<uint8_t>(all); break;
    }
  }

  std::map<CUdeviceptr, size_t> memory_;
  std::map<CUstream, StreamState> streams_;
  std::map<CUevent, EventState> events_;
  std::vector<std::unique_ptr<Comm>> comms_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::map<std::string, Transport*> by_id_;
  uintptr_t next_handle_ = 0x70000000;
};

inline FakeCluster& fake_cluster() {
  static FakeCluster cluster;
  return cluster;
}

namespace detail {
inline DriverApi& cluster_base_driver() {
  static DriverApi base = make_fake_driver();
  return base;
}
/// Every other entry point of the fake driver, under the cluster's lock (it records shared state).
template <class F>
struct ClusterLocked;
template <class R, class... A>
struct ClusterLocked<R (*)(A...)> {
  template <auto Member>
  static R call(A... a) {
    std::lock_guard lock(fake_cluster().mutex);
    return (cluster_base_driver().*Member)(a...);
  }
};
}  // namespace detail

/// The driver of the simulated ranks: real memory, in-order streams, thread-safe.
inline DriverApi make_cluster_driver() {
  DriverApi api;
  api.library = "fake cluster";
#define PTXGATE_CLUSTER_LOCKED(name) \
  api.name = &detail::ClusterLocked<decltype(api.name)>::template call<&DriverApi::name>;
  PTXGATE_DRIVER_ENTRY_POINTS(PTXGATE_CLUSTER_LOCKED)
#undef PTXGATE_CLUSTER_LOCKED
  api.cuMemAlloc = [](CUdeviceptr* p, size_t n) { return fake_cluster().mem_alloc(p, n); };
  api.cuMemFree = [](CUdeviceptr p) { return fake_cluster().mem_free(p); };
  api.cuMemcpyHtoD = [](CUdeviceptr d, const void* s, size_t n) {
    return fake_cluster().enqueue_copy(reinterpret_cast<void*>(d), s, n, nullptr);
  };
  api.cuMemcpyDtoH = [](void* d, CUdeviceptr s, size_t n) {
    return fake_cluster().enqueue_copy(d, reinterpret_cast<const void*>(s), n, nullptr);
  };
  api.cuMemcpyHtoDAsync = [](CUdeviceptr d, const void* s, size_t n, CUstream st) {
    return fake_cluster().enqueue_copy(reinterpret_cast<void*>(d), s, n, st);
  };
  api.cuMemcpyDtoHAsync = [](void* d, CUdeviceptr s, size_t n, CUstream st) {
    return fake_cluster().enqueue_copy(d, reinterpret_cast<const void*>(s), n, st);
  };
  api.cuMemcpyDtoDAsync = [](CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    return fake_cluster().enqueue_copy(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n, st);
  };
  api.cuMemsetD8 = [](CUdeviceptr d, unsigned char v, size_t n) {
    return fake_cluster().enqueue_memset(reinterpret_cast<void*>(d), v, n, 1, nullptr);
  };
  api.cuMemsetD32 = [](CUdeviceptr d, unsigned v, size_t n) {
    return fake_cluster().enqueue_memset(reinterpret_cast<void*>(d), v, n, 4, nullptr);
  };
  api.cuMemsetD8Async = [](CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
    return fake_cluster().enqueue_memset(reinterpret_cast<void*>(d), v, n, 1, st);
  };
  api.cuMemsetD32Async = [](CUdeviceptr d, unsigned v, size_t n, CUstream st) {
    return fake_cluster().enqueue_memset(reinterpret_cast<void*>(d), v, n, 4, st);
  };
  api.cuStreamCreate = [](CUstream* s, unsigned) { return fake_cluster().stream_create(s); };
  api.cuStreamDestroy = [](CUstream s) { return fake_cluster().stream_destroy(s); };
  api.cuStreamQuery = [](CUstream s) { return fake_cluster().stream_query(s); };
  api.cuStreamSynchronize = [](CUstream s) {
    return fake_cluster().wait_until([s] { return fake_cluster().stream_query(s) == CUDA_SUCCESS; });
  };
  api.cuCtxSynchronize = [] { return CUDA_SUCCESS; };
  api.cuDevicePrimaryCtxRetain = [](CUcontext* ctx, CUdevice d) {
    *ctx = FakeCluster::context_of(d);
    return CUDA_SUCCESS;
  };
  api.cuCtxSetCurrent = [](CUcontext ctx) {
    FakeCluster::set_current(ctx);
    return CUDA_SUCCESS;
  };
  api.cuCtxGetCurrent = [](CUcontext* ctx) {
    *ctx = FakeCluster::current();
    return CUDA_SUCCESS;
  };
  api.cuEventCreate = [](CUevent* e, unsigned) { return fake_cluster().event_create(e); };
  api.cuEventDestroy = [](CUevent e) { return fake_cluster().event_destroy(e); };
  api.cuEventRecord = [](CUevent e, CUstream s) { return fake_cluster().event_record(e, s); };
  api.cuEventQuery = [](CUevent e) { return fake_cluster().event_query(e); };
  api.cuEventSynchronize = [](CUevent e) {
    return fake_cluster().wait_until([e] { return fake_cluster().event_query(e) == CUDA_SUCCESS; });
  };
  api.cuStreamWaitEvent = [](CUstream s, CUevent e, unsigned) {
    if (s != nullptr) return fake_cluster().stream_wait_event(s, e);
    return fake_cluster().wait_until([e] { return fake_cluster().event_query(e) == CUDA_SUCCESS; });
  };
  return api;
}

/// The NCCL of the simulated ranks.
inline NcclApi make_cluster_nccl() {
  NcclApi api;
  api.library = "fake cluster";
  api.version = NCCL_VERSION_CODE;
  api.ncclGetVersion = [](int* v) { *v = NCCL_VERSION_CODE; return ncclSuccess; };
  api.ncclGetUniqueId = [](ncclUniqueId* id) {
    static std::atomic<uint64_t> next{1};
    std::memset(id->internal, 0, sizeof(id->internal));
    const uint64_t n = next++;
    std::memcpy(id->internal, &n, sizeof(n));
    return ncclSuccess;
  };
  api.ncclCommInitRank = [](ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
    std::lock_guard lock(fake_cluster().mutex);
    *comm = fake_cluster().new_comm(fake_cluster().transport_for(id, nranks), rank, true);
    return ncclSuccess;
  };
  api.ncclCommInitAll = [](ncclComm_t* comms, int n, const int*) {
    std::lock_guard lock(fake_cluster().mutex);
    auto* t = fake_cluster().new_transport(n);
    for (int i = 0; i < n; ++i) comms[i] = fake_cluster().new_comm(t, i, true);
    return ncclSuccess;
  };
  api.ncclCommSplit = [](ncclComm_t parent, int, int, ncclComm_t* out, ncclConfig_t* config) {
    return fake_cluster().split(parent, out, config);
  };
  api.ncclCommDestroy = [](ncclComm_t comm) {
    std::lock_guard lock(fake_cluster().mutex);
    fake_cluster().comm(comm)->destroyed = true;
    ++fake_cluster().destroys;
    return ncclSuccess;
  };
  api.ncclCommAbort = [](ncclComm_t comm) { return fake_cluster().abort(comm); };
  api.ncclCommGetAsyncError = [](ncclComm_t comm, ncclResult_t* e) { return fake_cluster().async_error(comm, e); };
  api.ncclCommCount = [](const ncclComm_t comm, int* n) { *n = fake_cluster().comm(comm)->transport->nranks; return ncclSuccess; };
  api.ncclCommCuDevice = [](const ncclComm_t comm, int* d) { *d = fake_cluster().comm(comm)->rank; return ncclSuccess; };
  api.ncclCommUserRank = [](const ncclComm_t comm, int* r) { *r = fake_cluster().comm(comm)->rank; return ncclSuccess; };
  api.ncclGetErrorString = [](ncclResult_t r) -> const char* {
    return r == ncclRemoteError ? "remote process exited or there was a network error" : "fake NCCL error";
  };
  api.ncclGetLastError = [](ncclComm_t) -> const char* { return "fake last error"; };
  api.ncclAllReduce = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                         cudaStream_t st) { return fake_cluster().post("ncclAllReduce", comm, s, r, n, t, op, 0, st); };
  api.ncclBroadcast = [](const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st) {
    return fake_cluster().post("ncclBroadcast", comm, s, r, n, t, 0, root, st);
  };
  api.ncclReduce = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
                      cudaStream_t st) { return fake_cluster().post("ncclReduce", comm, s, r, n, t, op, root, st); };
  api.ncclAllGather = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t st) {
    return fake_cluster().post("ncclAllGather", comm, s, r, n, t, 0, 0, st);
  };
  api.ncclReduceScatter = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                             cudaStream_t st) { return fake_cluster().post("ncclReduceScatter", comm, s, r, n, t, op, 0, st); };
  api.ncclSend = [](const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t st) {
    return fake_cluster().post("ncclSend", comm, s, nullptr, n, t, 0, peer, st);
  };
  api.ncclRecv = [](void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t st) {
    return fake_cluster().post("ncclRecv", comm, nullptr, r, n, t, 0, peer, st);
  };
  api.ncclGroupStart = [] { return fake_cluster().group_start(); };
  api.ncclGroupEnd = [] { return fake_cluster().group_end(); };
  return api;
}

}  // namespace ptxgate::runtime::testing
