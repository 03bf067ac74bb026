// Tensor maps (TMA descriptors): a description, and the driver's documented rules checked before
// anything is encoded — online against the live device or offline against a device profile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/device_caps.hpp"

namespace ptxgate::validation {

/// Element types of a tensor map. The numeric values are the driver's CUtensorMapDataType values
/// (the backend asserts this where it sees cuda.h). The packed 4- and 6-bit types are not offered.
enum class TmaType : uint8_t { u8 = 0, u16, u32, i32, u64, i64, f16, f32, f64, bf16, f32_ftz, tf32, tf32_ftz };
/// CUtensorMapInterleave.
enum class TmaInterleave : uint8_t { none = 0, b16, b32 };
/// CUtensorMapSwizzle: 16-byte chunks within a 32/64/128-byte span; the atom variants move 32/64-byte chunks.
enum class TmaSwizzle : uint8_t { none = 0, b32, b64, b128, b128_atom32, b128_atom32_flip8, b128_atom64 };
/// CUtensorMapL2promotion.
enum class TmaL2Promotion : uint8_t { none = 0, b64, b128, b256 };
/// CUtensorMapFloatOOBfill.
enum class TmaOobFill : uint8_t { none = 0, nan_request_zero_fma };

enum class TensorMapKind : uint8_t { tiled, im2col };

/// Everything cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col take, in the driver's order:
/// dimension 0 is the innermost (contiguous) one; strides are in bytes, one per outer dimension.
struct TensorMapDesc {
  TensorMapKind kind = TensorMapKind::tiled;
  TmaType type = TmaType::f32;
  /// Start of the tensor in device memory. Offline: the allocation's base is taken as 256-byte
  /// aligned (what cuMemAlloc returns), so only the offset into the allocation matters.
  uint64_t address = 0;
  std::vector<uint64_t> dims;              ///< rank values
  std::vector<uint64_t> strides;           ///< rank - 1 values, bytes
  std::vector<uint32_t> box;               ///< tiled: rank values
  std::vector<uint32_t> element_strides;   ///< rank values (empty: all 1)
  TmaInterleave interleave = TmaInterleave::none;
  TmaSwizzle swizzle = TmaSwizzle::none;
  TmaL2Promotion l2_promotion = TmaL2Promotion::none;
  TmaOobFill oob_fill = TmaOobFill::none;
  // im2col only
  std::vector<int32_t> lower_corner;       ///< rank - 2 values (D, H, W offsets, innermost first)
  std::vector<int32_t> upper_corner;       ///< rank - 2 values
  uint32_t channels_per_pixel = 0;
  uint32_t pixels_per_column = 0;
  /// Bytes available from `address` to the end of the buffer it lies in, when known: the tensor's
  /// extent must fit (the driver does not check this; a map past its buffer faults on the GPU).
  std::optional<uint64_t> buffer_bytes;

  size_t rank() const { return dims.size(); }
};

/// Bytes of one element of `t`.
uint32_t element_bytes(TmaType t);
bool is_float(TmaType t);
/// Names as the CLI and the docs spell them ("bf16", "128B", "none", ...), and back.
std::string_view name(TmaType t);
std::string_view name(TmaInterleave v);
std::string_view name(TmaSwizzle v);
std::string_view name(TmaL2Promotion v);
std::string_view name(TmaOobFill v);
std::optional<TmaType> tma_type_from_name(std::string_view s);
std::optional<TmaInterleave> interleave_from_name(std::string_view s);
std::optional<TmaSwizzle> swizzle_from_name(std::string_view s);
std::optional<TmaL2Promotion> l2_promotion_from_name(std::string_view s);
std::optional<TmaOobFill> oob_fill_from_name(std::string_view s);
/// Every name of each kind, comma-separated, for messages ("none, 16B, 32B").
std::string tma_type_names();
std::string interleave_names();
std::string swizzle_names();
std::string l2_promotion_names();
std::string oob_fill_names();

/// Bytes from the first to one past the last byte the tensor covers (0 for an empty description).
uint64_t tensor_extent_bytes(const TensorMapDesc& d);

/// Every rule of the driver's documentation for the encode call of `d.kind`, each violation one
/// error naming the field, its value and the limit (PG3701-PG3712); `caps` (a live device or a
/// profile) adds the compute-capability rule. Empty when the map may be encoded.
[[nodiscard]] diag::Diagnostics check_tensor_map(const TensorMapDesc& d, const DeviceCaps* caps);

/// One line describing `d` for messages: "tiled bf16 tensor 4096x4096, box 64x64, swizzle 128B".
std::string describe(const TensorMapDesc& d);

}  // namespace ptxgate::validation
