// Tensor maps on the GPU: ptxgate's verdict equals the driver's (cuTensorMapEncodeTiled/Im2col) for
// every rule at its limit and one past it, and encode_tensor_map blocks what the driver would reject.
#include <functional>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxgate/runtime/tensor_map.hpp"
#include "ptxgate/validation/tensor_map.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using validation::TensorMapDesc;

namespace {

struct Case {
  std::string name;
  std::function<void(TensorMapDesc&)> edit;
  /// A rule the driver documents but does not enforce: ptxgate refuses, the driver encodes.
  bool documented_only = false;
};

TensorMapDesc tiled_base() {
  TensorMapDesc d;
  d.type = validation::TmaType::bf16;
  d.dims = {256, 64};
  d.strides = {512};
  d.box = {64, 64};
  d.swizzle = validation::TmaSwizzle::b128;
  return d;
}

TensorMapDesc im2col_base() {
  TensorMapDesc d;
  d.kind = validation::TensorMapKind::im2col;
  d.type = validation::TmaType::f16;
  d.dims = {64, 8, 8, 2};
  d.strides = {128, 1024, 8192};
  d.lower_corner = {-1, -1};
  d.upper_corner = {-1, -1};
  d.channels_per_pixel = 64;
  d.pixels_per_column = 64;
  d.swizzle = validation::TmaSwizzle::b128;
  return d;
}

std::vector<Case> tiled_cases() {
  using validation::TmaInterleave;
  using validation::TmaOobFill;
  using validation::TmaSwizzle;
  using validation::TmaType;
  std::vector<Case> c;
  c.push_back({"base", [](TensorMapDesc&) {}});
  c.push_back({"rank 1", [](TensorMapDesc& d) { d.dims = {256}; d.strides = {}; d.box = {64}; }});
  c.push_back({"rank 5", [](TensorMapDesc& d) {
                 d.dims = {64, 2, 2, 2, 2}; d.strides = {128, 256, 512, 1024}; d.box = {64, 1, 1, 1, 1}; }});
  c.push_back({"address +16", [](TensorMapDesc& d) { d.address += 16; }});
  c.push_back({"address +8", [](TensorMapDesc& d) { d.address += 8; }});
  c.push_back({"address +1", [](TensorMapDesc& d) { d.address += 1; }});
  c.push_back({"dims 2^32", [](TensorMapDesc& d) { d.dims[1] = uint64_t{1} << 32; }});
  c.push_back({"dims 2^32+1", [](TensorMapDesc& d) { d.dims[1] = (uint64_t{1} << 32) + 1; }});
  c.push_back({"dims 0", [](TensorMapDesc& d) { d.dims[1] = 0; }});
  c.push_back({"stride 2^40-16", [](TensorMapDesc& d) { d.strides[0] = (uint64_t{1} << 40) - 16; }});
  c.push_back({"stride 2^40", [](TensorMapDesc& d) { d.strides[0] = uint64_t{1} << 40; }});
  c.push_back({"stride 520", [](TensorMapDesc& d) { d.strides[0] = 520; }});
  c.push_back({"stride 16 (rows overlap)", [](TensorMapDesc& d) { d.strides[0] = 16; }});
  c.push_back({"box 256", [](TensorMapDesc& d) { d.swizzle = TmaSwizzle::none; d.box = {256, 256}; }});
  c.push_back({"box 257", [](TensorMapDesc& d) { d.swizzle = TmaSwizzle::none; d.box = {256, 257}; }});
  c.push_back({"box 0", [](TensorMapDesc& d) { d.box = {64, 0}; }});
  c.push_back({"box inner 16 bytes", [](TensorMapDesc& d) { d.swizzle = TmaSwizzle::none; d.box = {8, 64}; }});
  c.push_back({"box inner 24 bytes", [](TensorMapDesc& d) { d.swizzle = TmaSwizzle::none; d.box = {12, 64}; }});
  c.push_back({"box inner 8 bytes", [](TensorMapDesc& d) { d.swizzle = TmaSwizzle::none; d.box = {4, 64}; }});
  c.push_back({"element stride 8", [](TensorMapDesc& d) { d.element_strides = {1, 8}; }});
  c.push_back({"element stride 9", [](TensorMapDesc& d) { d.element_strides = {1, 9}; }});
  c.push_back({"element stride 0", [](TensorMapDesc& d) { d.element_strides = {1, 0}; }});
  c.push_back({"element stride[0] 0", [](TensorMapDesc& d) { d.element_strides = {0, 1}; }});
  c.push_back({"element stride[0] 9", [](TensorMapDesc& d) { d.element_strides = {9, 1}; }});
  for (auto [sw, span] : {std::pair{TmaSwizzle::b32, 32u}, std::pair{TmaSwizzle::b64, 64u},
                          std::pair{TmaSwizzle::b128, 128u}, std::pair{TmaSwizzle::b128_atom32, 128u},
                          std::pair{TmaSwizzle::b128_atom32_flip8, 128u}, std::pair{TmaSwizzle::b128_atom64, 128u}}) {
    const std::string n = std::string(validation::name(sw));
    c.push_back({"swizzle " + n + " at span", [sw, span](TensorMapDesc& d) { d.swizzle = sw; d.box = {span / 2, 64}; }});
    c.push_back({"swizzle " + n + " past span",
                 [sw, span](TensorMapDesc& d) { d.swizzle = sw; d.box = {span / 2 + 8, 64}; }});
  }
  auto interleaved = [](TensorMapDesc& d, TmaInterleave il, TmaSwizzle sw) {
    d.type = TmaType::f16;
    d.dims = {16, 8, 8};
    d.strides = {64, 512};
    d.box = {16, 8, 8};
    d.interleave = il;
    d.swizzle = sw;
  };
  c.push_back({"interleave 16B", [=](TensorMapDesc& d) { interleaved(d, TmaInterleave::b16, TmaSwizzle::none); }});
  c.push_back({"interleave 16B rank 2", [=](TensorMapDesc& d) {
                 interleaved(d, TmaInterleave::b16, TmaSwizzle::none); d.dims = {16, 8}; d.strides = {64}; d.box = {16, 8}; }});
  c.push_back({"interleave 32B swizzle 32B", [=](TensorMapDesc& d) { interleaved(d, TmaInterleave::b32, TmaSwizzle::b32); }});
  c.push_back({"interleave 32B swizzle 64B", [=](TensorMapDesc& d) { interleaved(d, TmaInterleave::b32, TmaSwizzle::b64); },
               /*documented_only=*/true});
  c.push_back({"interleave 16B inner 20 bytes", [=](TensorMapDesc& d) {
                 interleaved(d, TmaInterleave::b16, TmaSwizzle::none); d.type = TmaType::f32; d.dims = {512, 8, 8};
                 d.strides = {2048, 16384}; d.box = {5, 8, 8}; }});
  c.push_back({"interleave 16B inner 16 bytes", [=](TensorMapDesc& d) {
                 interleaved(d, TmaInterleave::b16, TmaSwizzle::none); d.type = TmaType::f32; d.dims = {512, 8, 8};
                 d.strides = {2048, 16384}; d.box = {4, 8, 8}; }});
  c.push_back({"interleave 32B address +16", [=](TensorMapDesc& d) {
                 interleaved(d, TmaInterleave::b32, TmaSwizzle::b32); d.address += 16; }});
  c.push_back({"interleave 32B stride 48", [=](TensorMapDesc& d) {
                 interleaved(d, TmaInterleave::b32, TmaSwizzle::b32); d.strides = {48, 512}; }});
  c.push_back({"oob nan on bf16", [](TensorMapDesc& d) { d.oob_fill = TmaOobFill::nan_request_zero_fma; }});
  c.push_back({"oob nan on u16", [](TensorMapDesc& d) {
                 d.type = TmaType::u16; d.oob_fill = TmaOobFill::nan_request_zero_fma; }});
  for (auto t : {TmaType::u8, TmaType::u32, TmaType::i64, TmaType::f64, TmaType::f32_ftz, TmaType::tf32})
    c.push_back({"type " + std::string(validation::name(t)), [t](TensorMapDesc& d) {
                   d.type = t; d.swizzle = TmaSwizzle::none; d.box = {16, 16}; }});
  return c;
}

std::vector<Case> im2col_cases() {
  std::vector<Case> c;
  c.push_back({"im2col base", [](TensorMapDesc&) {}});
  c.push_back({"im2col rank 2", [](TensorMapDesc& d) { d.dims = {64, 8}; d.strides = {128}; d.lower_corner = {}; d.upper_corner = {}; }});
  c.push_back({"im2col channels 256", [](TensorMapDesc& d) {
                 d.channels_per_pixel = 256; d.swizzle = validation::TmaSwizzle::none; d.dims[0] = 256;
                 d.strides = {512, 4096, 32768}; }});
  c.push_back({"im2col channels 257", [](TensorMapDesc& d) { d.channels_per_pixel = 257; d.swizzle = validation::TmaSwizzle::none; }});
  c.push_back({"im2col channels 0", [](TensorMapDesc& d) { d.channels_per_pixel = 0; }});
  c.push_back({"im2col pixels 1024", [](TensorMapDesc& d) { d.pixels_per_column = 1024; }});
  c.push_back({"im2col pixels 1025", [](TensorMapDesc& d) { d.pixels_per_column = 1025; }});
  c.push_back({"im2col pixels 0", [](TensorMapDesc& d) { d.pixels_per_column = 0; }});
  c.push_back({"im2col corner 127", [](TensorMapDesc& d) { d.upper_corner = {127, 127}; }});
  c.push_back({"im2col corner 128", [](TensorMapDesc& d) { d.upper_corner = {128, 0}; }});
  c.push_back({"im2col corner -128", [](TensorMapDesc& d) { d.lower_corner = {-128, -128}; }});
  c.push_back({"im2col corner -129", [](TensorMapDesc& d) { d.lower_corner = {-129, 0}; }});
  c.push_back({"im2col rank 3 corner -32768", [](TensorMapDesc& d) {
                 d.dims = {64, 8, 2}; d.strides = {128, 1024}; d.lower_corner = {-32768}; d.upper_corner = {0}; }});
  c.push_back({"im2col rank 3 corner -32769", [](TensorMapDesc& d) {
                 d.dims = {64, 8, 2}; d.strides = {128, 1024}; d.lower_corner = {-32769}; d.upper_corner = {0}; }});
  c.push_back({"im2col rank 5 corner 15", [](TensorMapDesc& d) {
                 d.dims = {64, 4, 4, 4, 2}; d.strides = {128, 512, 2048, 8192}; d.lower_corner = {0, 0, 0};
                 d.upper_corner = {15, 15, 15}; }});
  c.push_back({"im2col rank 5 corner 16", [](TensorMapDesc& d) {
                 d.dims = {64, 4, 4, 4, 2}; d.strides = {128, 512, 2048, 8192}; d.lower_corner = {0, 0, 0};
                 d.upper_corner = {16, 0, 0}; }});
  c.push_back({"im2col empty box", [](TensorMapDesc& d) { d.dims = {64, 4, 4, 2}; d.lower_corner = {3, 0}; d.upper_corner = {-2, 0}; }});
  c.push_back({"im2col box of one pixel", [](TensorMapDesc& d) { d.dims = {64, 4, 4, 2}; d.lower_corner = {3, 0}; d.upper_corner = {-1, 0}; }});
  c.push_back({"im2col swizzle past span", [](TensorMapDesc& d) { d.swizzle = validation::TmaSwizzle::b64; }});
  return c;
}

}  // namespace

TEST_CASE("tensor maps: ptxgate's verdict equals the driver's at and one past every limit") {
  auto& rt = gpu_runtime();
  const auto& caps = rt.context().caps();
  if (caps.cc_major < 9) {
    auto d = tiled_base();
    REQUIRE_FALSE(validation::check_tensor_map(d, &caps).empty());  // PG3701: no tensor maps before sm_90
    skip_case("device is sm_" + std::to_string(caps.cc_major) + std::to_string(caps.cc_minor) +
              ": tensor maps need sm_90 (only PG3701 checked)");
    return;
  }
  auto buffer = rt.allocate(1 << 20);
  PG_REQUIRE_OK(buffer);
  size_t agree = 0, total = 0, documented = 0;
  auto run = [&](const TensorMapDesc& base, const std::vector<Case>& cases) {
    for (const auto& c : cases) {
      TensorMapDesc d = base;
      d.address = buffer->pointer();
      c.edit(d);
      const bool ours = validation::check_tensor_map(d, &caps).empty();
      runtime::TensorMap out;
      const CUresult r = runtime::encode_tensor_map_unchecked(rt.context().api(), d, out);
      const bool driver = r == CUDA_SUCCESS;
      ++total;
      if (c.documented_only && !ours && driver) {
        ++documented;
        MESSAGE("documented rule the driver does not enforce: '" << c.name << "' (ptxgate refuses, the driver encodes)");
        continue;
      }
      if (ours == driver) {
        ++agree;
      } else {
        const std::string why = "disagreement on '" + c.name + "' (" + validation::describe(d) + "): ptxgate " +
                                (ours ? "accepts" : "rejects") + ", driver returns " + std::to_string(r);
        FAIL_CHECK(why);
      }
    }
  };
  run(tiled_base(), tiled_cases());
  run(im2col_base(), im2col_cases());
  MESSAGE("tensor-map agreement: " << agree << "/" << total - documented << " cases (" << documented
                                     << " documented rules the driver does not enforce)");
  CHECK(agree + documented == total);
}

TEST_CASE("tensor maps: encode_tensor_map encodes a legal map and blocks an illegal one before the driver") {
  auto& rt = gpu_runtime();
  if (const auto& caps = rt.context().caps(); caps.cc_major < 9) {
    skip_case("device is sm_" + std::to_string(caps.cc_major) + std::to_string(caps.cc_minor) + ": tensor maps need sm_90");
    return;
  }
  auto buffer = rt.allocate(256 * 64 * 2);
  PG_REQUIRE_OK(buffer);
  auto ok = runtime::encode_tensor_map(*buffer, 0, tiled_base());
  PG_REQUIRE_OK(ok);
  bool nonzero = false;
  for (auto w : ok->words) nonzero |= w != 0;
  CHECK(nonzero);
  // One row past the buffer: only ptxgate knows the buffer's size.
  auto past = tiled_base();
  past.dims[1] = 65;
  auto blocked = runtime::encode_tensor_map(*buffer, 0, past);
  REQUIRE_FALSE(blocked.has_value());
  CHECK(blocked.error().items()[0].code == diag::Code::tensor_map_outside_buffer);
  auto misaligned = runtime::encode_tensor_map(*buffer, 8, tiled_base());
  REQUIRE_FALSE(misaligned.has_value());
  CHECK(misaligned.error().items()[0].code == diag::Code::tensor_map_address_alignment);
}
