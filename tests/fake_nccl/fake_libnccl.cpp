// A stand-in libnccl.so.2 for the loader's unit tests and the Python package's tests: every entry
// point the backend resolves. ncclGetVersion answers $PTXGATE_FAKE_NCCL_VERSION (default 22809).
// Communicators are small host objects knowing their rank and size; a communicator of one rank
// moves data as NCCL would (host-backed memory, as the stand-in libcuda gives), one of more ranks
// moves none (the other ranks' data is not here). ptxgate_fake_nccl_calls counts the collectives.
// $PTXGATE_FAKE_NCCL_TOUCH_BYTES=N makes every ncclGroupEnd, and every collective outside a group,
// first touch N bytes of memory of its own, as NCCL's microseconds of work do: the caller's data is
// then evicted from the L1 cache between calls (bench/nccl_callgrind.sh cache).
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct FakeComm {
  int rank = 0;
  int nranks = 1;
  int device = 0;
};

int collectives = 0;
int group_depth = 0;

/// Touches $PTXGATE_FAKE_NCCL_TOUCH_BYTES bytes, one write per 64-byte line (nothing when unset).
void touch_nccl_memory() {
  static std::vector<unsigned char> memory = [] {
    const char* bytes = std::getenv("PTXGATE_FAKE_NCCL_TOUCH_BYTES");
    return std::vector<unsigned char>(bytes != nullptr ? std::strtoull(bytes, nullptr, 10) : 0);
  }();
  for (size_t i = 0; i < memory.size(); i += 64) memory[i] = static_cast<unsigned char>(memory[i] + 1);
}

size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

/// A one-rank collective's result: the reduction over one rank is its own data.
ncclResult_t move(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm) {
  ++collectives;
  if (group_depth == 0) touch_nccl_memory();
  const auto* c = reinterpret_cast<const FakeComm*>(comm);
  if (c != nullptr && c->nranks == 1 && send != nullptr && recv != nullptr && send != recv)
    std::memmove(recv, send, count * type_bytes(type));
  return ncclSuccess;
}

}  // namespace

extern "C" {
ncclResult_t ncclGetVersion(int* version) {
  const char* v = std::getenv("PTXGATE_FAKE_NCCL_VERSION");
  *version = v != nullptr ? std::atoi(v) : 22809;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  for (size_t i = 0; i < sizeof(id->internal); ++i) id->internal[i] = static_cast<char>(i * 3 + 1);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  *comm = reinterpret_cast<ncclComm_t>(new FakeComm{rank, nranks, 0});
  return ncclSuccess;
}
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int n, const int* devices) {
  for (int i = 0; i < n; ++i) comms[i] = reinterpret_cast<ncclComm_t>(new FakeComm{i, n, devices != nullptr ? devices[i] : i});
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete reinterpret_cast<FakeComm*>(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* out, ncclConfig_t*) {
  // A rank that asks for no colour gets no communicator; any other gets one like its parent.
  const auto* parent = reinterpret_cast<FakeComm*>(comm);
  *out = color == NCCL_SPLIT_NOCOLOR || parent == nullptr ? nullptr : reinterpret_cast<ncclComm_t>(new FakeComm(*parent));
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete reinterpret_cast<FakeComm*>(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* e) {
  *e = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int* n) {
  *n = comm != nullptr ? reinterpret_cast<const FakeComm*>(comm)->nranks : 0;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  *device = comm != nullptr ? reinterpret_cast<const FakeComm*>(comm)->device : 0;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm != nullptr ? reinterpret_cast<const FakeComm*>(comm)->rank : 0;
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t) { return "fake"; }
const char* ncclGetLastError(ncclComm_t) { return "fake"; }
ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t c, cudaStream_t) {
  return move(s, r, n, t, c);
}
ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int, ncclComm_t c, cudaStream_t) {
  return move(s, r, n, t, c);
}
ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t, int, ncclComm_t c,
                        cudaStream_t) {
  return move(s, r, n, t, c);
}
ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t) {
  return move(s, r, n, t, c);
}
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                               cudaStream_t) {
  return move(s, r, n, t, c);
}
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  ++collectives;
  return ncclSuccess;
}
ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  ++collectives;
  return ncclSuccess;
}
ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (group_depth > 0 && --group_depth == 0) touch_nccl_memory();
  return ncclSuccess;
}
__attribute__((visibility("default"))) int ptxgate_fake_nccl_calls(void) { return collectives; }
}
