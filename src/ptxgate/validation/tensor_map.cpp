// The rules of cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col as the CUDA 13 driver API documents
// them (cuda.h), checked one by one so every violation is reported with its value and limit.
#include "ptxgate/validation/tensor_map.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace ptxgate::validation {
namespace {

using diag::Code;

constexpr std::array<std::pair<TmaType, std::string_view>, 13> kTypes{{
    {TmaType::u8, "u8"}, {TmaType::u16, "u16"}, {TmaType::u32, "u32"}, {TmaType::i32, "i32"},
    {TmaType::u64, "u64"}, {TmaType::i64, "i64"}, {TmaType::f16, "f16"}, {TmaType::f32, "f32"},
    {TmaType::f64, "f64"}, {TmaType::bf16, "bf16"}, {TmaType::f32_ftz, "f32_ftz"}, {TmaType::tf32, "tf32"},
    {TmaType::tf32_ftz, "tf32_ftz"},
}};
constexpr std::array<std::pair<TmaInterleave, std::string_view>, 3> kInterleaves{{
    {TmaInterleave::none, "none"}, {TmaInterleave::b16, "16B"}, {TmaInterleave::b32, "32B"}}};
constexpr std::array<std::pair<TmaSwizzle, std::string_view>, 7> kSwizzles{{
    {TmaSwizzle::none, "none"}, {TmaSwizzle::b32, "32B"}, {TmaSwizzle::b64, "64B"}, {TmaSwizzle::b128, "128B"},
    {TmaSwizzle::b128_atom32, "128B_atom_32B"}, {TmaSwizzle::b128_atom32_flip8, "128B_atom_32B_flip_8B"},
    {TmaSwizzle::b128_atom64, "128B_atom_64B"}}};
constexpr std::array<std::pair<TmaL2Promotion, std::string_view>, 4> kL2{{
    {TmaL2Promotion::none, "none"}, {TmaL2Promotion::b64, "64B"}, {TmaL2Promotion::b128, "128B"},
    {TmaL2Promotion::b256, "256B"}}};
constexpr std::array<std::pair<TmaOobFill, std::string_view>, 2> kOob{{
    {TmaOobFill::none, "none"}, {TmaOobFill::nan_request_zero_fma, "nan"}}};

template <class E, size_t N>
std::string_view lookup(const std::array<std::pair<E, std::string_view>, N>& table, E v) {
  for (const auto& [e, n] : table)
    if (e == v) return n;
  return "?";
}
template <class E, size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [e, n] : table)
    if (n == s) return e;
  return std::nullopt;
}
/// "none, 16B, 32B": every name of a table, for messages.
template <class E, size_t N>
std::string names(const std::array<std::pair<E, std::string_view>, N>& table) {
  std::string out;
  for (const auto& [e, n] : table) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
  return out;
}

constexpr uint64_t kMaxDim = uint64_t{1} << 32;
constexpr uint64_t kStrideLimit = uint64_t{1} << 40;
constexpr uint32_t kMaxBox = 256;
constexpr uint32_t kMaxElementStride = 8;
constexpr uint32_t kMaxChannels = 256;
constexpr uint32_t kMaxPixels = 1024;

/// Bytes of the span a swizzle mode permutes within (0 for none).
uint32_t swizzle_span(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::none: return 0;
    case TmaSwizzle::b32: return 32;
    case TmaSwizzle::b64: return 64;
    default: return 128;
  }
}

/// The im2col corner range for a tensor of `rank` dimensions (3: one offset of 16 bits, 4: two of
/// 8 bits, 5: three of 5 bits).
std::pair<int32_t, int32_t> corner_range(size_t rank) {
  if (rank == 3) return {-32768, 32767};
  if (rank == 4) return {-128, 127};
  return {-16, 15};
}

class Checker {
 public:
  explicit Checker(const TensorMapDesc& d) : d_(d) {}

  void add(Code code, std::string message, std::string fix) {
    diags_.add(code, fmt::format("{}: {}", describe(d_), message), {}, std::move(fix));
  }
  diag::Diagnostics take() { return std::move(diags_); }

 private:
  const TensorMapDesc& d_;
  diag::Diagnostics diags_;
};

// "64×1024": a multiplication sign, so that "0×1024" does not read as the hex number 0x1024.
std::string joined(const auto& v) { return fmt::format("{}", fmt::join(v, "\u00d7")); }

}  // namespace

uint32_t element_bytes(TmaType t) {
  switch (t) {
    case TmaType::u8: return 1;
    case TmaType::u16: case TmaType::f16: case TmaType::bf16: return 2;
    case TmaType::u64: case TmaType::i64: case TmaType::f64: return 8;
    default: return 4;
  }
}

bool is_float(TmaType t) {
  switch (t) {
    case TmaType::f16: case TmaType::f32: case TmaType::f64: case TmaType::bf16:
    case TmaType::f32_ftz: case TmaType::tf32: case TmaType::tf32_ftz: return true;
    default: return false;
  }
}

std::string_view name(TmaType t) { return lookup(kTypes, t); }
std::string_view name(TmaInterleave v) { return lookup(kInterleaves, v); }
std::string_view name(TmaSwizzle v) { return lookup(kSwizzles, v); }
std::string_view name(TmaL2Promotion v) { return lookup(kL2, v); }
std::string_view name(TmaOobFill v) { return lookup(kOob, v); }
std::optional<TmaType> tma_type_from_name(std::string_view s) { return lookup(kTypes, s); }
std::optional<TmaInterleave> interleave_from_name(std::string_view s) { return lookup(kInterleaves, s); }
std::optional<TmaSwizzle> swizzle_from_name(std::string_view s) { return lookup(kSwizzles, s); }
std::optional<TmaL2Promotion> l2_promotion_from_name(std::string_view s) { return lookup(kL2, s); }
std::optional<TmaOobFill> oob_fill_from_name(std::string_view s) { return lookup(kOob, s); }
std::string tma_type_names() { return names(kTypes); }
std::string interleave_names() { return names(kInterleaves); }
std::string swizzle_names() { return names(kSwizzles); }
std::string l2_promotion_names() { return names(kL2); }
std::string oob_fill_names() { return names(kOob); }

std::string describe(const TensorMapDesc& d) {
  std::string s = fmt::format("{} {} tensor {}", d.kind == TensorMapKind::tiled ? "tiled" : "im2col", name(d.type),
                              d.dims.empty() ? std::string("(rank 0)") : joined(d.dims));
  if (d.kind == TensorMapKind::tiled && !d.box.empty()) s += fmt::format(", box {}", joined(d.box));
  if (d.swizzle != TmaSwizzle::none) s += fmt::format(", swizzle {}", name(d.swizzle));
  if (d.interleave != TmaInterleave::none) s += fmt::format(", interleave {}", name(d.interleave));
  return s;
}

uint64_t tensor_extent_bytes(const TensorMapDesc& d) {
  if (d.dims.empty() || d.strides.size() + 1 != d.dims.size()) return 0;
  // Saturating: an extent past 2^64 is past every buffer.
  auto mul = [](uint64_t a, uint64_t b) { return (b != 0 && a > UINT64_MAX / b) ? UINT64_MAX : a * b; };
  auto add = [](uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; };
  uint64_t extent = mul(d.dims[0], element_bytes(d.type));
  for (size_t i = 1; i < d.dims.size(); ++i) {
    if (d.dims[i] == 0) return 0;
    extent = add(extent, mul(d.dims[i] - 1, d.strides[i - 1]));
  }
  return extent;
}

diag::Diagnostics check_tensor_map(const TensorMapDesc& d, const DeviceCaps* caps) {
  Checker c(d);
  const bool tiled = d.kind == TensorMapKind::tiled;
  const size_t rank = d.rank();
  const uint32_t esize = element_bytes(d.type);

  if (caps != nullptr && caps->cc_major < 9)
    c.add(Code::tensor_map_needs_sm90,
          fmt::format("{} has compute capability {}.{}; the Tensor Memory Accelerator needs 9.0 or later",
                      caps->name.empty() ? caps->profile : caps->name, caps->cc_major, caps->cc_minor),
          "use a Hopper (sm_90) or later device, or copy with ordinary loads");

  // Rank, and the length of every per-dimension array.
  const size_t min_rank = (!tiled || d.interleave != TmaInterleave::none) ? 3 : 1;
  if (rank < min_rank || rank > 5) {
    std::string why = !tiled ? "an im2col tensor map has rank 3 to 5"
                      : d.interleave != TmaInterleave::none ? "an interleaved tensor map has rank 3 to 5"
                                                            : "a tiled tensor map has rank 1 to 5";
    c.add(Code::tensor_map_rank, fmt::format("rank {} is out of range: {}", rank, why),
          "describe the tensor with 1 to 5 dimensions (3 to 5 for im2col or interleaved layouts)");
    return c.take();  // every other rule is per dimension
  }
  auto length = [&](std::string_view field, size_t have, size_t want) {
    if (have == want) return true;
    c.add(Code::tensor_map_rank,
          fmt::format("{} has {} value{}; a rank-{} tensor needs {}", field, have, have == 1 ? "" : "s", rank, want),
          fmt::format("give {} value{} for {}", want, want == 1 ? "" : "s", field));
    return false;
  };
  bool lengths_ok = length("strides", d.strides.size(), rank - 1);
  if (tiled) lengths_ok &= length("box", d.box.size(), rank);
  if (!d.element_strides.empty()) lengths_ok &= length("element strides", d.element_strides.size(), rank);
  if (!tiled) {
    lengths_ok &= length("lower corner", d.lower_corner.size(), rank - 2);
    lengths_ok &= length("upper corner", d.upper_corner.size(), rank - 2);
  }
  if (!lengths_ok) return c.take();

  // Address.
  const uint64_t align = d.interleave == TmaInterleave::b32 ? 32 : 16;
  if (d.address % align != 0)
    c.add(Code::tensor_map_address_alignment,
          fmt::format("global address 0x{:x} is not a multiple of {} bytes ({} from the last aligned address){}",
                      d.address, align, d.address % align, align == 32 ? " (interleave 32B needs 32)" : ""),
          fmt::format("start the tensor at a {}-byte aligned offset of its allocation", align));

  // Dimensions.
  for (size_t i = 0; i < rank; ++i)
    if (d.dims[i] == 0 || d.dims[i] > kMaxDim)
      c.add(Code::tensor_map_dim,
            fmt::format("dims[{}] = {} is out of range 1..{} (2^32)", i, d.dims[i], kMaxDim),
            "split the tensor into maps of at most 2^32 elements per dimension");

  // Strides.
  const uint64_t stride_multiple = d.interleave == TmaInterleave::b32 ? 32 : 16;
  for (size_t i = 0; i + 1 < rank; ++i) {
    const uint64_t s = d.strides[i];
    if (s % stride_multiple != 0)
      c.add(Code::tensor_map_stride,
            fmt::format("strides[{}] = {} bytes is not a multiple of {}{}", i, s, stride_multiple,
                        stride_multiple == 32 ? " (interleave 32B)" : ""),
            fmt::format("pad each row of dimension {} to a multiple of {} bytes", i + 1, stride_multiple));
    if (s >= kStrideLimit)
      c.add(Code::tensor_map_stride, fmt::format("strides[{}] = {} bytes is not below 2^40 ({})", i, s, kStrideLimit),
            "use a smaller stride (a tensor map addresses at most 1 TiB per step)");
  }

  // Box (tiled) or channels and pixels (im2col), and the inner box bytes they make.
  uint64_t inner_bytes = 0;
  if (tiled) {
    for (size_t i = 0; i < rank; ++i)
      if (d.box[i] == 0 || d.box[i] > kMaxBox)
        c.add(Code::tensor_map_box, fmt::format("box[{}] = {} is out of range 1..{}", i, d.box[i], kMaxBox),
              "use box dimensions of 1 to 256 elements");
    inner_bytes = uint64_t{d.box[0]} * esize;
    // The documentation states this for interleave none only; the driver (580, sm_90) enforces it
    // for every interleave, and so does ptxgate.
    if (inner_bytes % 16 != 0)
      c.add(Code::tensor_map_box,
            fmt::format("the box's inner dimension is {} bytes (box[0] = {} x {} bytes), not a multiple of 16",
                        inner_bytes, d.box[0], esize),
            fmt::format("make box[0] a multiple of {} elements", 16 / std::min<uint32_t>(esize, 16)));
  } else {
    if (d.channels_per_pixel == 0 || d.channels_per_pixel > kMaxChannels)
      c.add(Code::tensor_map_im2col,
            fmt::format("channels per pixel = {} is out of range 1..{}", d.channels_per_pixel, kMaxChannels),
            "load 1 to 256 channels per pixel");
    if (d.pixels_per_column == 0 || d.pixels_per_column > kMaxPixels)
      c.add(Code::tensor_map_im2col,
            fmt::format("pixels per column = {} is out of range 1..{}", d.pixels_per_column, kMaxPixels),
            "load 1 to 1024 pixels per column");
    const auto [lo, hi] = corner_range(rank);
    for (size_t i = 0; i + 2 < rank; ++i) {
      for (auto [field, v] : {std::pair{"lower corner", d.lower_corner[i]}, std::pair{"upper corner", d.upper_corner[i]}})
        if (v < lo || v > hi)
          c.add(Code::tensor_map_im2col,
                fmt::format("{}[{}] = {} is out of range {}..{} for a rank-{} tensor", field, i, v, lo, hi, rank),
                fmt::format("keep corner offsets within {}..{}", lo, hi));
      // The box spans dims[i+1] + upper - lower pixels along spatial dimension i (W is dims[1]).
      const int64_t span = static_cast<int64_t>(d.dims[i + 1]) + d.upper_corner[i] - d.lower_corner[i];
      if (d.dims[i + 1] != 0 && span <= 0)
        c.add(Code::tensor_map_im2col,
              fmt::format("the bounding box is empty along spatial dimension {}: dims[{}] {} + upper {} - lower {} = {}",
                          i, i + 1, d.dims[i + 1], d.upper_corner[i], d.lower_corner[i], span),
              "choose corners that leave at least one pixel");
    }
    inner_bytes = uint64_t{d.channels_per_pixel} * esize;
  }

  // Element strides.
  for (size_t i = 0; i < d.element_strides.size(); ++i)
    if (d.element_strides[i] == 0 || d.element_strides[i] > kMaxElementStride)
      c.add(Code::tensor_map_element_stride,
            fmt::format("element_strides[{}] = {} is out of range 1..{}", i, d.element_strides[i], kMaxElementStride),
            "use element strides of 1 to 8");

  // Swizzle against the device, the inner box bytes and the interleave.
  const bool atom_swizzle = d.swizzle == TmaSwizzle::b128_atom32 || d.swizzle == TmaSwizzle::b128_atom32_flip8 ||
                            d.swizzle == TmaSwizzle::b128_atom64;
  if (atom_swizzle && caps != nullptr && caps->cc_major < 10)
    c.add(Code::tensor_map_swizzle,
          fmt::format("swizzle {} moves 32/64-byte atoms, which needs compute capability 10.0 or later; {} has {}.{}",
                      name(d.swizzle), caps->name.empty() ? caps->profile : caps->name, caps->cc_major, caps->cc_minor),
          "use swizzle 32B, 64B or 128B on this device");
  // Documented, though the driver (580) encodes other swizzles with interleave 32B too.
  if (d.interleave == TmaInterleave::b32 && d.swizzle != TmaSwizzle::b32)
    c.add(Code::tensor_map_swizzle,
          fmt::format("interleave 32B needs swizzle 32B, not {}", name(d.swizzle)), "use swizzle 32B");
  if (d.interleave == TmaInterleave::none && d.swizzle != TmaSwizzle::none && inner_bytes > swizzle_span(d.swizzle))
    c.add(Code::tensor_map_swizzle,
          fmt::format("the {} inner dimension is {} bytes; swizzle {} allows at most {}",
                      tiled ? "box's" : "pixel's", inner_bytes, name(d.swizzle), swizzle_span(d.swizzle)),
          inner_bytes <= 128 ? "use a wider swizzle or a narrower box" : "narrow the box's inner dimension to 128 bytes");

  if (d.oob_fill == TmaOobFill::nan_request_zero_fma && !is_float(d.type))
    c.add(Code::tensor_map_oob_fill,
          fmt::format("out-of-bounds NaN fill needs a floating-point element type, not {}", name(d.type)),
          "use oob fill 'none' (zeros) for integer tensors");

  if (d.buffer_bytes) {
    const uint64_t extent = tensor_extent_bytes(d);
    if (extent > *d.buffer_bytes)
      c.add(Code::tensor_map_outside_buffer,
            fmt::format("the tensor spans {} bytes from its start but its buffer has {} bytes from there", extent,
                        *d.buffer_bytes),
            "shrink the dimensions or strides, or describe a larger buffer");
  }
  return c.take();
}

}  // namespace ptxgate::validation
