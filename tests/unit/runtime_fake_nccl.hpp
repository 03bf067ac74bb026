// A fake NCCL table for backend unit tests: chosen results, an asynchronous error to report,
// and collectives logged into the fake driver's call log (so happens-before covers them).
#pragma once

#include <map>
#include <string>

#include "runtime_fake_driver.hpp"
#include "ptxgate/runtime/nccl_api.hpp"

namespace ptxgate::runtime::testing {

struct FakeNcclState {
  std::map<std::string, ncclResult_t> fail;  ///< entry point -> result to return
  ncclResult_t async_error = ncclSuccess;    ///< what ncclCommGetAsyncError reports
  int inits = 0, destroys = 0, aborts = 0, group_starts = 0, group_ends = 0, async_queries = 0;
  int last_count = -1, last_root = -1, last_op = -1;
  ncclDataType_t last_type = ncclInt8;
  ncclResult_t result_of(const char* name) const {
    auto it = fail.find(name);
    return it == fail.end() ? ncclSuccess : it->second;
  }
};

inline FakeNcclState& fake_nccl_state() {
  static FakeNcclState state;
  return state;
}

namespace detail {
inline ncclResult_t log_nccl(const char* name, const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                             int op, cudaStream_t s) {
  auto& n = fake_nccl_state();
  const ncclResult_t r = n.result_of(name);
  if (r != ncclSuccess) return r;
  n.last_count = static_cast<int>(count);
  n.last_type = type;
  n.last_root = root;
  n.last_op = op;
  FakeCall call;
  call.name = name;
  call.stream = s;
  call.src = reinterpret_cast<uint64_t>(send);
  call.dst = reinterpret_cast<uint64_t>(recv);
  call.bytes = count;
  fake_state().calls.push_back(std::move(call));
  return ncclSuccess;
}
}  // namespace detail

/// A complete fake table: every call succeeds unless fake_nccl_state().fail names it.
inline NcclApi make_fake_nccl() {
  NcclApi api;
  api.library = "fake";
  api.version = NCCL_VERSION_CODE;
  api.ncclGetVersion = [](int* v) { *v = NCCL_VERSION_CODE; return ncclSuccess; };
  api.ncclGetUniqueId = [](ncclUniqueId* id) {
    for (size_t i = 0; i < sizeof(id->internal); ++i) id->internal[i] = static_cast<char>(i * 7 + 1);
    return fake_nccl_state().result_of("ncclGetUniqueId");
  };
  api.ncclCommInitRank = [](ncclComm_t* c, int, ncclUniqueId, int rank) {
    *c = reinterpret_cast<ncclComm_t>(static_cast<uintptr_t>(0x1000 + rank));
    ++fake_nccl_state().inits;
    return fake_nccl_state().result_of("ncclCommInitRank");
  };
  api.ncclCommInitAll = [](ncclComm_t* c, int n, const int*) {
    for (int i = 0; i < n; ++i) c[i] = reinterpret_cast<ncclComm_t>(static_cast<uintptr_t>(0x2000 + i));
    fake_nccl_state().inits += n;
    return fake_nccl_state().result_of("ncclCommInitAll");
  };
  api.ncclCommDestroy = [](ncclComm_t) { ++fake_nccl_state().destroys; return ncclSuccess; };
  api.ncclCommAbort = [](ncclComm_t) { ++fake_nccl_state().aborts; return ncclSuccess; };
  api.ncclCommGetAsyncError = [](ncclComm_t, ncclResult_t* e) {
    ++fake_nccl_state().async_queries;
    *e = fake_nccl_state().async_error;
    return ncclSuccess;
  };
  api.ncclCommCount = [](const ncclComm_t, int* n) { *n = 1; return ncclSuccess; };
  api.ncclCommCuDevice = [](const ncclComm_t, int* d) { *d = 0; return ncclSuccess; };
  api.ncclCommUserRank = [](const ncclComm_t, int* r) { *r = 0; return ncclSuccess; };
  api.ncclGetErrorString = [](ncclResult_t r) -> const char* {
    return r == ncclRemoteError ? "remote process exited or there was a network error" : "fake NCCL error";
  };
  api.ncclGetLastError = [](ncclComm_t) -> const char* { return "fake last error"; };
  api.ncclAllReduce = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t, cudaStream_t st) {
    return detail::log_nccl("ncclAllReduce", s, r, n, t, -1, op, st);
  };
  api.ncclBroadcast = [](const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t, cudaStream_t st) {
    return detail::log_nccl("ncclBroadcast", s, r, n, t, root, -1, st);
  };
  api.ncclReduce = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t,
                      cudaStream_t st) { return detail::log_nccl("ncclReduce", s, r, n, t, root, op, st); };
  api.ncclAllGather = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t, cudaStream_t st) {
    return detail::log_nccl("ncclAllGather", s, r, n, t, -1, -1, st);
  };
  api.ncclReduceScatter = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t,
                             cudaStream_t st) { return detail::log_nccl("ncclReduceScatter", s, r, n, t, -1, op, st); };
  api.ncclSend = [](const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t, cudaStream_t st) {
    return detail::log_nccl("ncclSend", s, nullptr, n, t, peer, -1, st);
  };
  api.ncclRecv = [](void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t, cudaStream_t st) {
    return detail::log_nccl("ncclRecv", nullptr, r, n, t, peer, -1, st);
  };
  api.ncclCommSplit = [](ncclComm_t comm, int, int, ncclComm_t* out, ncclConfig_t*) {
    *out = reinterpret_cast<ncclComm_t>(reinterpret_cast<uintptr_t>(comm) + 0x100);
    ++fake_nccl_state().inits;
    return fake_nccl_state().result_of("ncclCommSplit");
  };
  api.ncclGroupStart = [] { ++fake_nccl_state().group_starts; return ncclSuccess; };
  api.ncclGroupEnd = [] { ++fake_nccl_state().group_ends; return fake_nccl_state().result_of("ncclGroupEnd"); };
  return api;
}

}  // namespace ptxgate::runtime::testing
