// Tensor maps in the runtime: a TMA descriptor over a device buffer, checked against the driver's
// documented rules (validation/tensor_map) and the buffer's extent before cuTensorMapEncode* sees it.
#pragma once

#include <array>
#include <cstdint>
#include <expected>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/tensor_map.hpp"

namespace ptxgate::runtime {

/// An encoded tensor map: the driver's opaque 128-byte descriptor (CUtensorMap, 64-byte aligned as
/// the driver requires) and the description it was made from. A kernel receives `words` by value
/// (a __grid_constant__ parameter). The buffer must outlive every launch that uses the map.
struct TensorMap {
  alignas(64) std::array<uint64_t, 16> words{};
  validation::TensorMapDesc desc;
};

/// Encodes `desc` over `buffer`, starting `offset_bytes` into it: `desc.address` and
/// `desc.buffer_bytes` are set from the buffer, every rule is checked against the buffer's device
/// (PG3701-PG3711, all violations at once), and only a description that passes reaches the driver.
/// A driver rejection after that is PG4002 naming the description (ptxgate's checks missed a rule).
[[nodiscard]] std::expected<TensorMap, diag::Diagnostics> encode_tensor_map(const DeviceBuffer& buffer,
                                                                            uint64_t offset_bytes,
                                                                            validation::TensorMapDesc desc);

/// The same over device memory made elsewhere (a PyTorch or CuPy tensor) in `ctx`: the tensor
/// starts at `address`, and `buffer_bytes` (0: unknown) are available from there to the end of
/// its memory. The caller vouches that the memory is of `ctx`'s device.
[[nodiscard]] std::expected<TensorMap, diag::Diagnostics> encode_tensor_map(Context& ctx, uint64_t address,
                                                                            uint64_t buffer_bytes,
                                                                            validation::TensorMapDesc desc);

/// The driver call alone, without ptxgate's checks, for the agreement tests that compare both
/// verdicts: CUDA_SUCCESS or the driver's error for `desc` as given (its address included).
CUresult encode_tensor_map_unchecked(const DriverApi& api, const validation::TensorMapDesc& desc, TensorMap& out);

}  // namespace ptxgate::runtime
