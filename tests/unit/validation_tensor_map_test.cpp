// Unit tests for tensor-map checks: every rule at its limit (accepted) and one past it (the code),
// the parser's field errors, dense default strides, and the extent arithmetic.
#include <doctest/doctest.h>

#include <algorithm>

#include "ptxgate/commands/tensor_map_check.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "ptxgate/validation/tensor_map.hpp"

using namespace ptxgate;
using namespace ptxgate::validation;

namespace {

/// A legal tiled bf16 4096x4096 map with a 64x64 box and 128B swizzle (a GEMM operand tile).
TensorMapDesc gemm_tile() {
  TensorMapDesc d;
  d.type = TmaType::bf16;
  d.address = 0x7f0000000000;
  d.dims = {4096, 4096};
  d.strides = {8192};
  d.box = {64, 64};
  d.swizzle = TmaSwizzle::b128;
  return d;
}

/// A legal rank-4 NHWC f16 im2col map.
TensorMapDesc conv_input() {
  TensorMapDesc d;
  d.kind = TensorMapKind::im2col;
  d.type = TmaType::f16;
  d.address = 0x7f0000000000;
  d.dims = {64, 32, 32, 8};  // C, W, H, N
  d.strides = {128, 4096, 131072};
  d.lower_corner = {-1, -1};
  d.upper_corner = {-1, -1};
  d.channels_per_pixel = 64;
  d.pixels_per_column = 128;
  return d;
}

std::vector<diag::Code> codes(const diag::Diagnostics& d) {
  std::vector<diag::Code> out;
  for (const auto& x : d) out.push_back(x.code);
  return out;
}

/// Exactly one error, of `code`, whose message contains `text`.
void expect_only(const TensorMapDesc& d, diag::Code code, std::string_view text, const DeviceCaps* caps = nullptr) {
  auto diags = check_tensor_map(d, caps);
  REQUIRE_MESSAGE(diags.size() == 1, diag::render_text(diags));
  CHECK(diags.items()[0].code == code);
  CHECK_MESSAGE(diags.items()[0].message.find(text) != std::string::npos, diags.items()[0].message);
  CHECK_FALSE(diags.items()[0].fix.empty());
}

void expect_ok(const TensorMapDesc& d, const DeviceCaps* caps = nullptr) {
  auto diags = check_tensor_map(d, caps);
  CHECK_MESSAGE(diags.empty(), diag::render_text(diags));
}

}  // namespace

TEST_CASE("legal tiled and im2col maps pass, on sm_90 profiles too") {
  expect_ok(gemm_tile());
  expect_ok(conv_input());
  for (auto name : {"h100-sxm", "h200"}) {
    auto caps = load_profile(name);
    if (!caps) continue;  // a profile set without this device
    expect_ok(gemm_tile(), &*caps);
  }
}

TEST_CASE("a device below compute capability 9.0 is PG3701") {
  auto caps = load_profile("a100-sxm");
  REQUIRE(caps.has_value());
  expect_only(gemm_tile(), diag::Code::tensor_map_needs_sm90, "8.0", &*caps);
}

TEST_CASE("rank: 1..5 tiled, 3..5 im2col or interleaved, arrays of matching length (PG3702)") {
  auto d = gemm_tile();
  d.dims = {16};
  d.strides = {};
  d.box = {16};
  expect_ok(d);
  d.dims = {16, 2, 2, 2, 2};
  d.strides = {32, 64, 128, 256};
  d.box = {16, 1, 1, 1, 1};
  expect_ok(d);
  d.dims.push_back(2);
  d.strides.push_back(512);
  d.box.push_back(1);
  expect_only(d, diag::Code::tensor_map_rank, "rank 6");
  d = gemm_tile();
  d.dims.clear();
  expect_only(d, diag::Code::tensor_map_rank, "rank 0");
  d = gemm_tile();
  d.interleave = TmaInterleave::b16;
  d.swizzle = TmaSwizzle::none;
  expect_only(d, diag::Code::tensor_map_rank, "interleaved");
  auto c = conv_input();
  c.dims = {64, 32};
  c.strides = {128};
  c.lower_corner = c.upper_corner = {};
  expect_only(c, diag::Code::tensor_map_rank, "im2col");
  d = gemm_tile();
  d.box = {64};
  expect_only(d, diag::Code::tensor_map_rank, "box has 1 value");
  d = gemm_tile();
  d.strides = {8192, 16};
  expect_only(d, diag::Code::tensor_map_rank, "strides has 2 values");
}

TEST_CASE("address: 16-byte aligned, 32 with interleave 32B (PG3703)") {
  auto d = gemm_tile();
  d.address += 16;
  expect_ok(d);
  d.address += 8;
  expect_only(d, diag::Code::tensor_map_address_alignment, "not a multiple of 16");
  auto c = conv_input();
  c.interleave = TmaInterleave::b32;
  c.swizzle = TmaSwizzle::b32;
  c.channels_per_pixel = 16;
  c.strides = {128, 4096, 131072};
  c.address += 32;
  expect_ok(c);
  c.address += 16;
  expect_only(c, diag::Code::tensor_map_address_alignment, "not a multiple of 32");
}

TEST_CASE("dimensions: 1..2^32 (PG3704)") {
  auto d = gemm_tile();
  d.dims = {4096, uint64_t{1} << 32};
  expect_ok(d);
  d.dims[1] += 1;
  expect_only(d, diag::Code::tensor_map_dim, "dims[1] = 4294967297");
  d.dims[1] = 0;
  expect_only(d, diag::Code::tensor_map_dim, "dims[1] = 0");
}

TEST_CASE("strides: multiples of 16 (32 interleaved) and below 2^40 (PG3705)") {
  auto d = gemm_tile();
  d.strides = {(uint64_t{1} << 40) - 16};
  expect_ok(d);
  d.strides = {uint64_t{1} << 40};
  expect_only(d, diag::Code::tensor_map_stride, "not below 2^40");
  d.strides = {8200};
  expect_only(d, diag::Code::tensor_map_stride, "not a multiple of 16");
  auto c = conv_input();
  c.interleave = TmaInterleave::b32;
  c.swizzle = TmaSwizzle::b32;
  c.channels_per_pixel = 16;
  c.strides = {144, 4096, 131072};
  expect_only(c, diag::Code::tensor_map_stride, "not a multiple of 32");
}

TEST_CASE("box: 1..256 per dimension, inner bytes a multiple of 16 (PG3706)") {
  auto d = gemm_tile();
  d.swizzle = TmaSwizzle::none;
  d.box = {256, 256};
  expect_ok(d);
  d.box = {256, 257};
  expect_only(d, diag::Code::tensor_map_box, "box[1] = 257");
  d.box = {64, 0};
  expect_only(d, diag::Code::tensor_map_box, "box[1] = 0");
  d.box = {8, 64};  // 16 bytes
  expect_ok(d);
  d.box = {12, 64};  // 24 bytes
  expect_only(d, diag::Code::tensor_map_box, "24 bytes");
  // With interleave too (the driver enforces it there, though the documentation names only none).
  auto c = conv_input();
  c.kind = TensorMapKind::tiled;
  c.type = TmaType::f32;
  c.dims = {512, 8, 8};
  c.strides = {2048, 16384};
  c.box = {4, 8, 8};
  c.lower_corner = c.upper_corner = {};
  c.interleave = TmaInterleave::b16;
  c.swizzle = TmaSwizzle::none;
  expect_ok(c);
  c.box = {5, 8, 8};
  expect_only(c, diag::Code::tensor_map_box, "20 bytes");
}

TEST_CASE("element strides: 1..8 (PG3707)") {
  auto d = gemm_tile();
  d.element_strides = {1, 8};
  expect_ok(d);
  d.element_strides = {1, 9};
  expect_only(d, diag::Code::tensor_map_element_stride, "element_strides[1] = 9");
  d.element_strides = {0, 1};
  expect_only(d, diag::Code::tensor_map_element_stride, "element_strides[0] = 0");
}

TEST_CASE("swizzle: inner box bytes within the swizzle span; interleave 32B needs swizzle 32B (PG3708)") {
  auto d = gemm_tile();
  for (auto [sw, span] : {std::pair{TmaSwizzle::b32, 32u}, std::pair{TmaSwizzle::b64, 64u},
                          std::pair{TmaSwizzle::b128, 128u}, std::pair{TmaSwizzle::b128_atom64, 128u}}) {
    d.swizzle = sw;
    d.box = {span / 2, 64};
    expect_ok(d);
    d.box = {span / 2 + 8, 64};
    expect_only(d, diag::Code::tensor_map_swizzle, "allows at most " + std::to_string(span));
  }
  auto c = conv_input();
  c.channels_per_pixel = 16;
  c.interleave = TmaInterleave::b32;
  c.swizzle = TmaSwizzle::b64;
  expect_only(c, diag::Code::tensor_map_swizzle, "needs swizzle 32B");
  // The 32/64-byte atom swizzles are Blackwell's: refused on sm_90, allowed on sm_100.
  auto hopper = load_profile("h100-sxm");
  auto blackwell = load_profile("b200");
  REQUIRE(hopper.has_value());
  REQUIRE(blackwell.has_value());
  d = gemm_tile();
  d.swizzle = TmaSwizzle::b128_atom64;
  expect_only(d, diag::Code::tensor_map_swizzle, "compute capability 10.0", &*hopper);
  expect_ok(d, &*blackwell);
  expect_ok(d);  // no device: nothing to compare with
}

TEST_CASE("NaN out-of-bounds fill needs a floating-point type (PG3709)") {
  auto d = gemm_tile();
  d.oob_fill = TmaOobFill::nan_request_zero_fma;
  expect_ok(d);
  d.type = TmaType::u16;
  expect_only(d, diag::Code::tensor_map_oob_fill, "not u16");
}

TEST_CASE("im2col: channels 1..256, pixels 1..1024, corners in the rank's range, a non-empty box (PG3710)") {
  auto c = conv_input();
  c.channels_per_pixel = 256;
  c.pixels_per_column = 1024;
  expect_ok(c);
  c.pixels_per_column = 1025;
  expect_only(c, diag::Code::tensor_map_im2col, "pixels per column = 1025");
  c = conv_input();
  c.channels_per_pixel = 257;
  expect_only(c, diag::Code::tensor_map_im2col, "channels per pixel = 257");
  c = conv_input();
  c.lower_corner = {-128, -128};
  c.upper_corner = {127, 127};
  expect_ok(c);
  c.lower_corner = {-129, 0};
  expect_only(c, diag::Code::tensor_map_im2col, "-128..127");
  c = conv_input();
  c.dims = {64, 32, 32, 2, 8};
  c.strides = {128, 4096, 131072, 262144};
  c.lower_corner = {-16, 0, 0};
  c.upper_corner = {15, 0, 0};
  expect_ok(c);
  c.upper_corner = {16, 0, 0};
  expect_only(c, diag::Code::tensor_map_im2col, "-16..15");
  c = conv_input();
  c.dims = {64, 4, 32, 8};
  c.lower_corner = {2, 0};
  c.upper_corner = {-2, 0};
  expect_only(c, diag::Code::tensor_map_im2col, "empty along spatial dimension 0");
}

TEST_CASE("the tensor's extent must fit its buffer (PG3711)") {
  auto d = gemm_tile();
  CHECK(tensor_extent_bytes(d) == uint64_t{4096} * 4096 * 2);
  d.buffer_bytes = uint64_t{4096} * 4096 * 2;
  expect_ok(d);
  *d.buffer_bytes -= 1;
  expect_only(d, diag::Code::tensor_map_outside_buffer, "33554432 bytes");
  // A padded layout: the last row starts at 4095 * 8320.
  d.strides = {8320};
  d.buffer_bytes = uint64_t{4095} * 8320 + 8192;
  expect_ok(d);
  // Saturates instead of wrapping.
  d.dims = {uint64_t{1} << 32, uint64_t{1} << 32};
  d.strides = {(uint64_t{1} << 40) - 16};
  CHECK(tensor_extent_bytes(d) > (uint64_t{1} << 62));
}

TEST_CASE("every violation is reported at once, each naming the description") {
  auto d = gemm_tile();
  d.address += 4;
  d.box = {304, 0};  // 608 inner bytes: a multiple of 16, past the swizzle span
  d.element_strides = {9, 1};
  auto diags = check_tensor_map(d, nullptr);
  auto got = codes(diags);
  CHECK(std::count(got.begin(), got.end(), diag::Code::tensor_map_address_alignment) == 1);
  CHECK(std::count(got.begin(), got.end(), diag::Code::tensor_map_box) == 2);
  CHECK(std::count(got.begin(), got.end(), diag::Code::tensor_map_element_stride) == 1);
  CHECK(std::count(got.begin(), got.end(), diag::Code::tensor_map_swizzle) == 1);
  for (const auto& x : diags) CHECK(x.message.rfind("tiled bf16 tensor 4096×4096, box 304×0, swizzle 128B: ", 0) == 0);
}

TEST_CASE("parse_tensor_map (the tensormap command's grammar): names, lists, dense default strides, and PG5004 per bad field") {
  commands::TensorMapText t;
  t.type = "bf16";
  t.dims = "4096,1024,3";
  t.box = "64,64,1";
  t.swizzle = "128B";
  t.offset = "256";
  t.buffer_bytes = "25165824";
  auto d = commands::parse_tensor_map(t);
  REQUIRE_MESSAGE(d.has_value(), diag::render_text(d.error()));
  CHECK(d->dims == std::vector<uint64_t>{4096, 1024, 3});
  CHECK(d->strides == std::vector<uint64_t>{8192, 8192 * 1024});
  CHECK(d->address == 256);
  CHECK(d->buffer_bytes == 25165824 - 256);
  CHECK(d->swizzle == TmaSwizzle::b128);
  CHECK(check_tensor_map(*d, nullptr).size() == 1);  // 24 MiB + 256 offset overruns by 256 bytes

  commands::TensorMapText bad;
  bad.type = "f128";
  bad.dims = "4,-1";
  bad.box = "0x10";
  bad.swizzle = "256B";
  bad.channels = "4";
  auto e = commands::parse_tensor_map(bad);
  REQUIRE_FALSE(e.has_value());
  for (const auto& x : e.error()) CHECK(x.code == diag::Code::invalid_launch_option);
  std::string text = diag::render_text(e.error());
  for (auto flag : {"--type 'f128'", "--dims '4,-1'", "--box '0x10'", "--swizzle '256B'", "--channels '4'"})
    CHECK_MESSAGE(text.find(flag) != std::string::npos, text);

  commands::TensorMapText im;
  im.im2col = true;
  im.type = "f16";
  im.dims = "64,32,32,8";
  im.lower_corner = "-1,-1";
  im.upper_corner = "-1,-1";
  im.channels = "64";
  im.pixels = "128";
  auto i = commands::parse_tensor_map(im);
  REQUIRE(i.has_value());
  CHECK(i->lower_corner == std::vector<int32_t>{-1, -1});
  CHECK(check_tensor_map(*i, nullptr).empty());
}

TEST_CASE("support: signed integers and lists") {
  CHECK(support::parse_integer("-32768", -32768, 32767) == -32768);
  CHECK_FALSE(support::parse_integer("-32769", -32768, 32767).has_value());
  CHECK(support::parse_integer("-9223372036854775808", INT64_MIN, INT64_MAX) == INT64_MIN);
  CHECK_FALSE(support::parse_integer("9223372036854775808", INT64_MIN, INT64_MAX).has_value());
  CHECK_FALSE(support::parse_integer("+1", -5, 5).has_value());
  CHECK_FALSE(support::parse_integer("-", -5, 5).has_value());
  CHECK_FALSE(support::parse_integer("--1", -5, 5).has_value());
  CHECK(support::parse_count_list("1,2,3,4,5", 5) == std::vector<uint64_t>{1, 2, 3, 4, 5});
  CHECK_FALSE(support::parse_count_list("1,2,3,4,5,6", 5).has_value());
  CHECK_FALSE(support::parse_count_list("1,,2", 5).has_value());
  CHECK_FALSE(support::parse_count_list("", 5).has_value());
  CHECK(support::parse_integer_list("-1,0,1", 3, -1, 1) == std::vector<int64_t>{-1, 0, 1});
}
