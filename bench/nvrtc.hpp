// NVRTC, the peer of the compile benchmarks: CUDA C++ -> PTX or cubin in-process, opened at run time.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace ptxgate::bench {

/// The toolkit's libnvrtc (toolchain::find_toolkit_library), opened once per process; nothing links it.
class Nvrtc {
 public:
  /// Opens it, or says why not (not found, a symbol missing).
  [[nodiscard]] static std::expected<const Nvrtc*, std::string> get();

  /// Compiles `source` (named `name` in messages) for `-arch=compute_XX` (PTX) or `-arch=sm_XX`
  /// (cubin, NVRTC's in-process ptxas), with the toolkit's include directory; the product or the log.
  [[nodiscard]] std::expected<std::string, std::string> compile(const std::string& source, const std::string& name,
                                                                const std::string& arch, bool cubin) const;

  std::string version;        ///< "13.0"
  std::string include_dir;    ///< the toolkit's include/ (cuda_fp16.h, cuda_bf16.h)

  struct Api;                 ///< the entry points, resolved once

 private:
  const Api* api_ = nullptr;
};

/// `source` with one more empty kernel, named by `tag` and by a number drawn once per process, so that
/// no cache answers the compile: neither one inside NVRTC keyed by the source (on the H100 machine
/// NVRTC -> cubin of sgemm took 26 ms in repeated rounds, 300 ms on the cold path) nor, should it be
/// on, the CUDA compute cache on disk (~/.nv/ComputeCache: the benchmarks set CUDA_CACHE_DISABLE),
/// which NVRTC 13 fills: a second run of compile-compare with the same sources took 16-48 ms for
/// every twin's NVRTC -> PTX and -> cubin on the H200.
std::string uncached_source(const std::string& source, std::string_view tag);

/// The architecture number a CUDA C++ twin is compiled for: what its "// nvcc-arch: sm_XX" line
/// names (e.g. "90a" for wgmma and TMA), else "90"; NVRTC takes "compute_" or "sm_" before it.
std::string twin_arch(const std::string& source);

}  // namespace ptxgate::bench
