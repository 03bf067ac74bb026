// A stand-in libnccl.so.2 for the loader's unit tests: every entry point the backend resolves,
// answering ncclSuccess; ncclGetVersion answers $PTXGATE_FAKE_NCCL_VERSION (default 22809).
#include <nccl.h>

#include <cstdlib>

extern "C" {
ncclResult_t ncclGetVersion(int* version) {
  const char* v = std::getenv("PTXGATE_FAKE_NCCL_VERSION");
  *version = v != nullptr ? std::atoi(v) : 22809;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId*) { return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int) { return ncclSuccess; }
ncclResult_t ncclCommInitAll(ncclComm_t*, int, const int*) { return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t) { return ncclSuccess; }
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) { return ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t) { return ncclSuccess; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* e) {
  *e = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t, int*) { return ncclSuccess; }
ncclResult_t ncclCommCuDevice(const ncclComm_t, int*) { return ncclSuccess; }
ncclResult_t ncclCommUserRank(const ncclComm_t, int*) { return ncclSuccess; }
const char* ncclGetErrorString(ncclResult_t) { return "fake"; }
const char* ncclGetLastError(ncclComm_t) { return "fake"; }
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }
}
