// Fake-driver entry points for programs: memory pools (counters the pool reads back) and CUDA
// graphs (nodes, dependencies, instantiation, replay and kernel-node updates kept in memory).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "runtime_fake_driver.hpp"

namespace ptxgate::runtime::testing {

/// A node added to a fake graph, or the parameters an executable's kernel node was updated to.
struct FakeGraphNode {
  std::string kind;                ///< "kernel", "memcpy", "memset"
  CUgraph graph = nullptr;
  std::vector<size_t> deps;        ///< indices of the nodes it depends on
  unsigned grid[3] = {}, block[3] = {};
  unsigned shared = 0;
  std::vector<uint64_t> params;    ///< the first fake_state().param_sizes slots, zero-extended
  int cooperative = 0;
  uint64_t dst = 0, src = 0, bytes = 0, value = 0, element_size = 0;  ///< copies and fills
};

/// What the fake pools and graphs hold.
struct FakeProgramsState {
  int pools_supported = 1;                ///< CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
  int pools_created = 0, pools_destroyed = 0;
  std::map<CUmemPool_attribute, cuuint64_t> pool_attributes;  ///< as set; *_CURRENT/HIGH come from `used`
  std::map<CUdeviceptr, uint64_t> pool_live;  ///< allocations from a pool not yet freed, with their sizes
  uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
  std::vector<uint64_t> trims;            ///< cuMemPoolTrimTo targets
  int graphs_created = 0, graphs_destroyed = 0, execs_created = 0, execs_destroyed = 0;
  std::vector<FakeGraphNode> nodes;       ///< every node added, by handle (index + 1)
  std::vector<std::pair<size_t, FakeGraphNode>> updates;  ///< (node index, new kernel parameters)

  static CUgraphNode handle_of(size_t index) { return reinterpret_cast<CUgraphNode>(index + 1); }
  static size_t index_of(CUgraphNode node) { return reinterpret_cast<size_t>(node) - 1; }
};

inline FakeProgramsState& fake_programs() {
  static FakeProgramsState state;
  return state;
}

namespace detail {
inline decltype(DriverApi::cuDeviceGetAttribute) base_device_attribute = nullptr;
inline decltype(DriverApi::cuMemFreeAsync) base_free_async = nullptr;
inline decltype(DriverApi::cuMemAllocFromPoolAsync) base_alloc_from_pool = nullptr;
}  // namespace detail

/// The fake's view of a kernel node's parameters.
inline FakeGraphNode fake_kernel_node(const CUDA_KERNEL_NODE_PARAMS* p) {
  FakeGraphNode n;
  n.kind = "kernel";
  n.grid[0] = p->gridDimX, n.grid[1] = p->gridDimY, n.grid[2] = p->gridDimZ;
  n.block[0] = p->blockDimX, n.block[1] = p->blockDimY, n.block[2] = p->blockDimZ;
  n.shared = p->sharedMemBytes;
  const auto& sizes = fake_state().param_sizes;
  for (size_t i = 0; i < sizes.size(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, p->kernelParams[i], sizes[i]);
    n.params.push_back(v);
  }
  return n;
}

/// Adds a node with its dependencies to the fake graph state.
inline CUresult fake_add_node(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t count,
                              FakeGraphNode n, const char* entry) {
  CUresult r = fake_state().result_of(entry);
  if (r != CUDA_SUCCESS) return r;
  auto& p = fake_programs();
  n.graph = graph;
  for (size_t i = 0; i < count; ++i) n.deps.push_back(FakeProgramsState::index_of(deps[i]));
  p.nodes.push_back(std::move(n));
  *node = FakeProgramsState::handle_of(p.nodes.size() - 1);
  return CUDA_SUCCESS;
}

/// Adds the pool and graph entry points to a fake table from make_fake_driver(), and resets their state.
inline void add_fake_programs(DriverApi& api) {
  fake_programs() = FakeProgramsState{};
  detail::base_device_attribute = api.cuDeviceGetAttribute;
  detail::base_free_async = api.cuMemFreeAsync;
  detail::base_alloc_from_pool = api.cuMemAllocFromPoolAsync;
  api.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice d) {
    if (a == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) {
      *v = fake_programs().pools_supported;
      return fake_state().result_of("cuDeviceGetAttribute");
    }
    return detail::base_device_attribute(v, a, d);
  };
  api.cuMemPoolCreate = [](CUmemoryPool* pool, const CUmemPoolProps* props) {
    CUresult r = fake_state().result_of("cuMemPoolCreate");
    if (r != CUDA_SUCCESS) return r;
    if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
      return CUDA_ERROR_INVALID_VALUE;
    *pool = reinterpret_cast<CUmemoryPool>(0x7000 + 0x10 * ++fake_programs().pools_created);
    return CUDA_SUCCESS;
  };
  api.cuMemPoolDestroy = [](CUmemoryPool) {
    ++fake_programs().pools_destroyed;
    return fake_state().log({"cuMemPoolDestroy", nullptr, nullptr, 0, 0, 0, {}});
  };
  api.cuMemPoolSetAttribute = [](CUmemoryPool, CUmemPool_attribute a, void* value) {
    auto& p = fake_programs();
    const cuuint64_t v = *static_cast<cuuint64_t*>(value);
    if (a == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      p.used_high = p.used;
    } else if (a == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      p.reserved_high = p.reserved;
    } else {
      p.pool_attributes[a] = v;
    }
    return fake_state().result_of("cuMemPoolSetAttribute");
  };
  api.cuMemPoolGetAttribute = [](CUmemoryPool, CUmemPool_attribute a, void* value) {
    auto& p = fake_programs();
    cuuint64_t v = a == CU_MEMPOOL_ATTR_USED_MEM_CURRENT       ? p.used
                   : a == CU_MEMPOOL_ATTR_USED_MEM_HIGH        ? p.used_high
                   : a == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? p.reserved
                   : a == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH    ? p.reserved_high
                                                               : p.pool_attributes[a];
    *static_cast<cuuint64_t*>(value) = v;
    return fake_state().result_of("cuMemPoolGetAttribute");
  };
  api.cuMemPoolTrimTo = [](CUmemoryPool, size_t keep) {
    auto& p = fake_programs();
    p.trims.push_back(keep);
    p.reserved = std::max<uint64_t>(p.used, std::min<uint64_t>(p.reserved, keep));
    return fake_state().log({"cuMemPoolTrimTo", nullptr, nullptr, 0, 0, keep, {}});
  };
  // Pool allocations count as used (and reserve memory) until their free runs; the fake runs it at once.
  api.cuMemAllocFromPoolAsync = [](CUdeviceptr* ptr, size_t bytes, CUmemoryPool pool, CUstream s) {
    CUresult r = detail::base_alloc_from_pool(ptr, bytes, pool, s);
    if (r != CUDA_SUCCESS) return r;
    auto& p = fake_programs();
    p.pool_live[*ptr] = bytes;
    p.used += bytes;
    p.used_high = std::max(p.used_high, p.used);
    p.reserved = std::max(p.reserved, p.used);
    p.reserved_high = std::max(p.reserved_high, p.reserved);
    return CUDA_SUCCESS;
  };
  api.cuGraphCreate = [](CUgraph* g, unsigned) {
    CUresult r = fake_state().result_of("cuGraphCreate");
    if (r == CUDA_SUCCESS) *g = reinterpret_cast<CUgraph>(0x9000 + 0x10 * ++fake_programs().graphs_created);
    return r;
  };
  api.cuGraphDestroy = [](CUgraph) {
    ++fake_programs().graphs_destroyed;
    return CUDA_SUCCESS;
  };
  api.cuGraphAddKernelNode = [](CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                const CUDA_KERNEL_NODE_PARAMS* params) {
    return fake_add_node(node, g, deps, n, fake_kernel_node(params), "cuGraphAddKernelNode");
  };
  api.cuGraphKernelNodeSetAttribute = [](CUgraphNode node, CUkernelNodeAttrID id, const CUkernelNodeAttrValue* v) {
    if (id == CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE)
      fake_programs().nodes[FakeProgramsState::index_of(node)].cooperative = v->cooperative;
    return fake_state().result_of("cuGraphKernelNodeSetAttribute");
  };
  api.cuGraphAddMemcpyNode = [](CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                const CUDA_MEMCPY3D* copy, CUcontext) {
    FakeGraphNode f;
    f.kind = "memcpy";
    f.dst = copy->dstMemoryType == CU_MEMORYTYPE_DEVICE ? copy->dstDevice : reinterpret_cast<uint64_t>(copy->dstHost);
    f.src = copy->srcMemoryType == CU_MEMORYTYPE_DEVICE ? copy->srcDevice
                                                        : reinterpret_cast<uint64_t>(copy->srcHost);
    f.bytes = copy->WidthInBytes * copy->Height * copy->Depth;
    return fake_add_node(node, g, deps, n, std::move(f), "cuGraphAddMemcpyNode");
  };
  api.cuGraphAddMemsetNode = [](CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                const CUDA_MEMSET_NODE_PARAMS* set, CUcontext) {
    FakeGraphNode f;
    f.kind = "memset";
    f.dst = set->dst;
    f.value = set->value;
    f.element_size = set->elementSize;
    f.bytes = set->width * set->elementSize * set->height;
    return fake_add_node(node, g, deps, n, std::move(f), "cuGraphAddMemsetNode");
  };
  api.cuGraphInstantiateWithFlags = [](CUgraphExec* e, CUgraph, unsigned long long) {
    CUresult r = fake_state().result_of("cuGraphInstantiateWithFlags");
    if (r == CUDA_SUCCESS) *e = reinterpret_cast<CUgraphExec>(0xA000 + 0x10 * ++fake_programs().execs_created);
    return r;
  };
  api.cuGraphExecDestroy = [](CUgraphExec) {
    ++fake_programs().execs_destroyed;
    return CUDA_SUCCESS;
  };
  api.cuGraphLaunch = [](CUgraphExec e, CUstream s) {
    return fake_state().log({"cuGraphLaunch", s, nullptr, reinterpret_cast<uint64_t>(e), 0, 0, {}});
  };
  api.cuGraphExecKernelNodeSetParams = [](CUgraphExec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params) {
    CUresult r = fake_state().result_of("cuGraphExecKernelNodeSetParams");
    if (r == CUDA_SUCCESS) fake_programs().updates.emplace_back(FakeProgramsState::index_of(node), fake_kernel_node(params));
    return r;
  };
  api.cuMemFreeAsync = [](CUdeviceptr ptr, CUstream s) {
    CUresult r = detail::base_free_async(ptr, s);
    auto& p = fake_programs();
    if (r == CUDA_SUCCESS)
      if (auto it = p.pool_live.find(ptr); it != p.pool_live.end()) {
        p.used -= it->second;
        p.pool_live.erase(it);
      }
    return r;
  };
}

}  // namespace ptxgate::runtime::testing
