// The NCCL entry points, loaded at run time (dlopen + dlsym); nothing links libnccl.
#pragma once

#include <nccl.h>

#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// Every NCCL entry point the backend uses. `X(name)` is expanded once per entry; the member
/// type is the prototype of the toolkit's nccl.h (NCCL_MAJOR.NCCL_MINOR).
#define PTXGATE_NCCL_ENTRY_POINTS(X)                                                                \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommInitAll) X(ncclCommDestroy)   \
  X(ncclCommAbort) X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommCuDevice)                  \
  X(ncclCommUserRank) X(ncclGetErrorString) X(ncclGetLastError) X(ncclAllReduce) X(ncclBroadcast) \
  X(ncclReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart)   \
  X(ncclGroupEnd) X(ncclCommSplit)

/// One table of NCCL function pointers. Filled from libnccl by load_nccl(), or by hand in
/// tests (a fake NCCL); a null entry means "not available".
struct NcclApi {
#define PTXGATE_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  PTXGATE_NCCL_ENTRY_POINTS(PTXGATE_NCCL_MEMBER)
#undef PTXGATE_NCCL_MEMBER
  std::string library;  ///< where the table came from ("libnccl.so.2", a path, "fake")
  int version = 0;      ///< ncclGetVersion's answer (e.g. 22809 for 2.28.9)
};

/// The library load_nccl() opens when $PTXGATE_NCCL_LIBRARY is unset or empty.
inline constexpr const char* kDefaultNcclLibrary = "libnccl.so.2";

/// "2.28.9" from an NCCL version code (major*10000 + minor*100 + patch since NCCL 2.9;
/// major*1000 + minor*100 + patch before).
std::string nccl_version_text(int code);

/// Loads `library`, resolves every entry point by name and checks that the library's major
/// version is the header's (NCCL_MAJOR). PG4201 when the library or an entry point is missing,
/// PG4202 when the version differs.
[[nodiscard]] std::expected<NcclApi, diag::Diagnostics> load_nccl(const char* library = kDefaultNcclLibrary);

/// The process-wide NCCL table, loaded once (thread-safe) from $PTXGATE_NCCL_LIBRARY, else
/// libnccl.so.2 on the library path. A table installed by install_nccl_for_testing() wins.
[[nodiscard]] std::expected<const NcclApi*, diag::Diagnostics> nccl();

/// Replaces the process-wide table (tests only: a fake NCCL). Pass nullptr to go back to the
/// real one. Not thread-safe against concurrent nccl() calls.
void install_nccl_for_testing(const NcclApi* fake);

}  // namespace ptxgate::runtime
