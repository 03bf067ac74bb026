// encode_tensor_map: checks first, then cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col.
#include "ptxgate/runtime/tensor_map.hpp"

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace ptxgate::runtime {
namespace {

using validation::TensorMapDesc;
using validation::TensorMapKind;

// The validation layer's enums carry the driver's values; keep them in step with cuda.h.
static_assert(static_cast<int>(validation::TmaType::u8) == CU_TENSOR_MAP_DATA_TYPE_UINT8);
static_assert(static_cast<int>(validation::TmaType::f16) == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
static_assert(static_cast<int>(validation::TmaType::bf16) == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(static_cast<int>(validation::TmaType::tf32_ftz) == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ);
static_assert(static_cast<int>(validation::TmaInterleave::b32) == CU_TENSOR_MAP_INTERLEAVE_32B);
static_assert(static_cast<int>(validation::TmaSwizzle::b128) == CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(static_cast<int>(validation::TmaSwizzle::b128_atom64) == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B);
static_assert(static_cast<int>(validation::TmaL2Promotion::b256) == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
static_assert(static_cast<int>(validation::TmaOobFill::nan_request_zero_fma) ==
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
static_assert(sizeof(TensorMap::words) == sizeof(CUtensorMap));

}  // namespace

CUresult encode_tensor_map_unchecked(const DriverApi& api, const TensorMapDesc& d, TensorMap& out) {
  const auto rank = static_cast<cuuint32_t>(d.rank());
  std::vector<cuuint64_t> dims(d.dims.begin(), d.dims.end());
  std::vector<cuuint64_t> strides(d.strides.begin(), d.strides.end());
  // A rank-1 map has no strides, but the driver rejects a null array: pass one unused element.
  if (strides.empty()) strides.push_back(0);
  std::vector<cuuint32_t> estrides(d.element_strides.begin(), d.element_strides.end());
  if (estrides.empty()) estrides.assign(rank, 1);
  // The driver writes 128 bytes aligned to 64; CUtensorMap is declared with 64-byte alignment.
  alignas(128) CUtensorMap map{};
  CUresult r = CUDA_ERROR_NOT_SUPPORTED;
  void* address = reinterpret_cast<void*>(static_cast<uintptr_t>(d.address));
  const auto type = static_cast<CUtensorMapDataType>(d.type);
  const auto interleave = static_cast<CUtensorMapInterleave>(d.interleave);
  const auto swizzle = static_cast<CUtensorMapSwizzle>(d.swizzle);
  const auto l2 = static_cast<CUtensorMapL2promotion>(d.l2_promotion);
  const auto oob = static_cast<CUtensorMapFloatOOBfill>(d.oob_fill);
  if (d.kind == TensorMapKind::tiled) {
    if (api.cuTensorMapEncodeTiled == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    std::vector<cuuint32_t> box(d.box.begin(), d.box.end());
    r = api.cuTensorMapEncodeTiled(&map, type, rank, address, dims.data(), strides.data(), box.data(),
                                   estrides.data(), interleave, swizzle, l2, oob);
  } else {
    if (api.cuTensorMapEncodeIm2col == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    std::vector<int> lower(d.lower_corner.begin(), d.lower_corner.end());
    std::vector<int> upper(d.upper_corner.begin(), d.upper_corner.end());
    r = api.cuTensorMapEncodeIm2col(&map, type, rank, address, dims.data(), strides.data(), lower.data(),
                                    upper.data(), d.channels_per_pixel, d.pixels_per_column, estrides.data(),
                                    interleave, swizzle, l2, oob);
  }
  if (r == CUDA_SUCCESS) std::memcpy(out.words.data(), &map, sizeof(map));
  return r;
}

std::expected<TensorMap, diag::Diagnostics> encode_tensor_map(const DeviceBuffer& buffer, uint64_t offset_bytes,
                                                              TensorMapDesc desc) {
  Context* ctx = buffer.context();
  if (ctx == nullptr || buffer.pointer() == 0) {
    diag::Diagnostics d;
    d.add(diag::Code::tensor_map_outside_buffer,
          fmt::format("{}: the buffer is empty (moved from or never allocated)", validation::describe(desc)), {},
          "encode the tensor map over an allocated DeviceBuffer");
    return std::unexpected(std::move(d));
  }
  if (offset_bytes > buffer.size_bytes()) {
    diag::Diagnostics d;
    d.add(diag::Code::tensor_map_outside_buffer,
          fmt::format("{}: offset {} is past the end of its {}-byte buffer", validation::describe(desc), offset_bytes,
                      buffer.size_bytes()),
          {}, "start the tensor inside its buffer");
    return std::unexpected(std::move(d));
  }
  return encode_tensor_map(*ctx, buffer.pointer() + offset_bytes, buffer.size_bytes() - offset_bytes, std::move(desc));
}

std::expected<TensorMap, diag::Diagnostics> encode_tensor_map(Context& ctx, uint64_t address, uint64_t buffer_bytes,
                                                              TensorMapDesc desc) {
  desc.address = address;
  if (buffer_bytes != 0)
    desc.buffer_bytes = buffer_bytes;
  else
    desc.buffer_bytes.reset();
  if (auto diags = validation::check_tensor_map(desc, &ctx.caps()); diags.has_errors())
    return std::unexpected(std::move(diags));
  if (auto ok = ctx.enter("cuTensorMapEncode", validation::describe(desc)); !ok)
    return std::unexpected(std::move(ok.error()));
  TensorMap out;
  out.desc = desc;
  const CUresult r = encode_tensor_map_unchecked(ctx.api(), desc, out);
  if (auto ok = ctx.check(r, desc.kind == TensorMapKind::tiled ? "cuTensorMapEncodeTiled" : "cuTensorMapEncodeIm2col",
                           validation::describe(desc));
      !ok) {
    ok.error().items().back().notes.push_back(
        "ptxgate's tensor-map checks passed this description; please report the driver's rule they missed");
    return std::unexpected(std::move(ok.error()));
  }
  return out;
}

}  // namespace ptxgate::runtime
