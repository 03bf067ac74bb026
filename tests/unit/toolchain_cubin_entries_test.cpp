// toolchain::read_cubin_entries: cubins assembled here by the toolkit's ptxas are read back, and
// what the reader finds (parameter sizes, launch bounds, registers, stack, shared memory, barriers)
// must equal what the same ptxas run reported with -v, on every architecture it assembles for.
// Malformed cubins are diagnostics, never reads outside the bytes.
#include <doctest/doctest.h>

#include <string>

#include "ptxgate/toolchain/cubin_entries.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "capi_test_support.hpp"
#include "cubin_forge.hpp"
#include "toolkit_test_support.hpp"

using namespace ptxgate;
using toolchain::read_cubin_entries;

namespace {

// Parameters of every size a cubin records (including a 24-byte struct), a .reqntid, a local
// array (stack frame), a shared array and a barrier.
constexpr std::string_view kMixedPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry mixed(.param .u64 p, .param .f32 x, .param .u32 n, .param .u64 count)
.reqntid 128, 1, 1
{
  .local .align 4 .b8 scratch[64];
  .shared .align 4 .b8 tile[3000];
  .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<4>;
  ld.param.u64 %rd1, [p];
  ld.param.f32 %f1, [x];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  and.b32 %r3, %r2, 15; shl.b32 %r3, %r3, 2;
  mov.u64 %rd4, scratch; cvt.u64.u32 %rd5, %r3; add.u64 %rd4, %rd4, %rd5;
  st.local.f32 [%rd4], %f1;
  mov.u32 %r4, tile; shl.b32 %r5, %r2, 2; add.u32 %r4, %r4, %r5;
  st.shared.f32 [%r4], %f1;
  bar.sync 0;
  ld.shared.f32 %f2, [%r4+4];
  ld.local.f32 %f3, [%rd4];
  add.f32 %f2, %f2, %f3;
  cvta.to.global.u64 %rd2, %rd1; mul.wide.u32 %rd3, %r2, 4; add.s64 %rd2, %rd2, %rd3;
  st.global.f32 [%rd2], %f2;
  ret;
}
.visible .entry by_value(.param .align 8 .b8 s[24], .param .u64 y)
.maxntid 256, 1, 1
{
  ret;
}
)";

std::vector<diag::Code> codes(const diag::Diagnostics& d) {
  std::vector<diag::Code> out;
  for (const auto& item : d) out.push_back(item.code);
  return out;
}

const toolchain::PtxEntry* entry_named(const toolchain::PtxModuleSummary& m, std::string_view name) {
  for (const auto& e : m.entries)
    if (e.info.name == name) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("cubin entries: what ptxas -v reports, on every architecture, for nvcc's and a hand-written module") {
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  const std::pair<std::string, std::string> modules[] = {
      {"mixed.ptx", std::string(kMixedPtx)},
      {"nvcc_saxpy.ptx", testing::ptx_fixture("nvcc_saxpy.ptx")},
      {"nvcc_block_sum.ptx", testing::ptx_fixture("nvcc_block_sum.ptx")},
  };
  for (const auto& [name, ptx] : modules) {
    auto summary = toolchain::read_ptx_entries({name, ptx});
    REQUIRE(summary);
    for (const char* arch : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"}) {
      CAPTURE(name);
      CAPTURE(arch);
      if (std::string_view(arch) == "sm_75" && summary->target != "sm_75") continue;  // ptxas refuses newer PTX
      auto assembled = toolchain::assemble(ptx, arch, *toolkit);
      REQUIRE_MESSAGE(assembled, (assembled ? "" : diag::render_text(assembled.error())));
      auto read = read_cubin_entries({name + ".cubin", assembled->cubin});
      REQUIRE_MESSAGE(read, (read ? "" : diag::render_text(read.error())));
      CHECK(read->binary_arch == arch);
      CHECK(read->target.empty());
      for (const auto& from_ptx : summary->entries) {
        CAPTURE(from_ptx.info.name);
        const auto* e = entry_named(*read, from_ptx.info.name);
        REQUIRE(e != nullptr);
        REQUIRE(e->resources.has_value());
        const auto& ptxas = assembled->resources.at(from_ptx.info.name);
        CHECK(e->resources->registers_per_thread == ptxas.registers_per_thread);
        CHECK(e->resources->static_shared_bytes == ptxas.static_shared_bytes);
        CHECK(e->resources->local_bytes == ptxas.local_bytes);
        CHECK(e->resources->barriers == ptxas.barriers);
        CHECK(e->resources->max_threads_per_block == ptxas.max_threads_per_block);
        if (ptxas.constant_bytes != 0) CHECK(e->resources->constant_bytes == ptxas.constant_bytes);
        CHECK(e->info.static_shared_bytes == ptxas.static_shared_bytes);
        CHECK(e->info.required_block == from_ptx.info.required_block);
        CHECK(e->max_block == from_ptx.max_block);
        CHECK(e->unsupported.empty() == from_ptx.unsupported.empty());
        if (!from_ptx.unsupported.empty()) continue;
        // Sizes as the PTX declares them; an 8-byte parameter is a buffer of any type, a 4-byte one u32.
        REQUIRE(e->info.params.size() == from_ptx.info.params.size());
        for (size_t k = 0; k < e->info.params.size(); ++k) {
          const auto& p = e->info.params[k];
          CHECK(p.name == "param" + std::to_string(k));
          CHECK(p.index == k);
          CHECK(p.size_bytes == from_ptx.info.params[k].size_bytes);
          CHECK(p.is_buffer == (p.size_bytes == 8));
          CHECK(p.type == (p.size_bytes == 8 ? ir::Type::void_ : ir::Type::u32));
        }
      }
    }
  }
}

TEST_CASE("cubin entries: a by-value struct parameter is PG3007; ABI and architecture from the ELF header") {
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  auto assembled = toolchain::assemble(kMixedPtx, "sm_80", *toolkit);
  REQUIRE(assembled);
  auto read = read_cubin_entries({"m.cubin", assembled->cubin});
  REQUIRE(read);
  const auto* by_value = entry_named(*read, "by_value");
  REQUIRE(by_value != nullptr);
  CHECK(codes(by_value->unsupported) == std::vector{diag::Code::argument_size_mismatch});
  CHECK(by_value->unsupported.items()[0].message.find("parameter 0 is 24 bytes wide") != std::string::npos);
  auto required = toolchain::require_ptx_entry(*read, "by_value", "m.cubin");
  REQUIRE_FALSE(required);
  CHECK(codes(required.error()) == std::vector{diag::Code::argument_size_mismatch});
  const auto* mixed = entry_named(*read, "mixed");
  REQUIRE(mixed != nullptr);
  CHECK(mixed->info.required_block == std::array<uint32_t, 3>{128, 1, 1});
  CHECK(mixed->resources->max_threads_per_block == 128);
  CHECK(mixed->resources->local_bytes >= 64);
  CHECK(mixed->resources->static_shared_bytes == 3000);
  // An unknown name lists the cubin's kernels.
  auto missing = toolchain::require_ptx_entry(*read, "nope", "m.cubin");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().items()[0].fix.find("mixed") != std::string::npos);

  // The same bytes with ABI 7's layout (OSABI 0x33): the architecture comes from the low byte.
  std::string v7 = assembled->cubin;
  v7[7] = 0x33;
  v7[0x30] = 86;
  auto old_abi = read_cubin_entries({"v7.cubin", v7});
  REQUIRE(old_abi);
  CHECK(old_abi->binary_arch == "sm_86");
}

TEST_CASE("cubin entries: truncated, forged and foreign binaries are PG5001, never a read past the bytes") {
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  auto assembled = toolchain::assemble(testing::ptx_fixture("nvcc_block_sum.ptx"), "sm_90", *toolkit);
  REQUIRE(assembled);
  const std::string& good = assembled->cubin;
  // Every truncation is an error (the program headers, the last table, describe every byte), under
  // ASan never a stray read; the last byte cut too (issue 25, D18).
  for (size_t n = 0; n < good.size(); n += 7) {
    CAPTURE(n);
    auto r = read_cubin_entries({"t.cubin", good.substr(0, n)});
    REQUIRE_FALSE(r);
    CHECK(codes(r.error()) == std::vector{diag::Code::cannot_read_file});
  }
  auto cut = read_cubin_entries({"t.cubin", good.substr(0, good.size() - 1)});
  REQUIRE_FALSE(cut);
  CHECK(cut.error().items()[0].message.find("outside the file") != std::string::npos);
  auto with = [&](size_t at, std::string bytes) {
    std::string s = good;
    s.replace(at, bytes.size(), bytes);
    return read_cubin_entries({"f.cubin", s});
  };
  auto not_cuda = with(0x12, std::string("\x3e\x00", 2));  // EM_X86_64
  REQUIRE_FALSE(not_cuda);
  CHECK(not_cuda.error().items()[0].message.find("ELF machine is 62, not CUDA (190)") != std::string::npos);
  auto far_sections = with(0x28, std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8));  // e_shoff
  REQUIRE_FALSE(far_sections);
  CHECK(codes(far_sections.error()) == std::vector{diag::Code::cannot_read_file});
  auto big_endian = with(5, std::string("\x02", 1));
  REQUIRE_FALSE(big_endian);
  CHECK(big_endian.error().items()[0].message.find("little-endian 64-bit") != std::string::npos);
  auto header_only = read_cubin_entries({"h.cubin", std::string("\x7f" "ELF\x02\x01\x01\x00", 8)});
  REQUIRE_FALSE(header_only);
  CHECK(header_only.error().items()[0].message.find("8 bytes long, shorter than an ELF header") != std::string::npos);
  // Every byte of the section header table overwritten in turn: never a crash.
  const uint64_t shoff = static_cast<unsigned char>(good[0x28]) | (static_cast<unsigned char>(good[0x29]) << 8) |
                         (static_cast<unsigned char>(good[0x2a]) << 16);
  for (size_t at = shoff; at < good.size(); ++at) {
    std::string s = good;
    s[at] = static_cast<char>(s[at] ^ 0xa5);
    auto r = read_cubin_entries({"x.cubin", s});
    if (!r) CHECK_FALSE(r.error().items().empty());
  }
}

TEST_CASE("cubin entries: records no ptxas writes are PG5001 (thread bound 0, stack, shared, barriers)") {
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  auto assembled = toolchain::assemble(testing::ptx_fixture("nvcc_block_sum.ptx"), "sm_90", *toolkit);
  REQUIRE(assembled);
  const std::string& good = assembled->cubin;
  const std::string info = ".nv.info._Z9block_sumPKfPfm";
  REQUIRE(read_cubin_entries({"g.cubin", good}));
  auto forged = [&](auto&& edit) {
    std::string s = good;
    edit(s);
    auto r = read_cubin_entries({"f.cubin", s});
    REQUIRE_FALSE(r);
    CHECK(codes(r.error()) == std::vector{diag::Code::cannot_read_file});
    return r.error().items()[0].message;
  };
  // .maxntid 256 recorded as 0x4x1: a bound with a 0 axis is no bound of 1024.
  auto bound = testing::attribute_at(good, info, 0x04, 0x05);
  REQUIRE(bound);
  CHECK(forged([&](std::string& s) {
          testing::write_le(s, *bound, 0, 4);
          testing::write_le(s, *bound + 4, 4, 4);
        }).find("thread bound of 0\u00d74\u00d71") != std::string::npos);
  // A 4 GiB stack frame.
  auto frame = testing::attribute_at(good, ".nv.info", 0x04, 0x11);
  REQUIRE(frame);
  CHECK(forged([&](std::string& s) { testing::write_le(s, *frame + 4, 0xffffffff, 4); })
            .find("stack frame of 4294967295 bytes per thread") != std::string::npos);
  // 227 KiB of static shared memory (the opt-in limit of dynamic shared memory, not of static).
  auto shared = testing::section_header(good, ".nv.shared._Z9block_sumPKfPfm");
  REQUIRE(shared);
  CHECK(forged([&](std::string& s) { testing::write_le(s, *shared + 0x20, 1024 + 232448, 8); })
            .find("232448 bytes of static shared memory") != std::string::npos);
  // 255 named barriers (a block has 16).
  auto barriers = testing::attribute_at(good, info, 0x02, 0x4c);
  REQUIRE(barriers);
  CHECK(forged([&](std::string& s) { testing::write_le(s, *barriers, 255, 2); }).find("255 named barriers") !=
        std::string::npos);
  // Registers above the device's limit stay readable: the launch check blocks them (PG3301).
  auto registers = testing::attribute_at(good, ".nv.info", 0x04, 0x2f);
  REQUIRE(registers);
  std::string many = good;
  testing::write_le(many, *registers + 4, 300, 4);
  auto read = read_cubin_entries({"r.cubin", many});
  REQUIRE(read);
  CHECK(read->entries.at(0).resources->registers_per_thread == 300);
}

TEST_CASE("cubin entries: a cluster shape (EIATTR_CTA_PER_CLUSTER) and an explicit cluster are read") {
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry c() .explicitcluster .reqnctapercluster 4, 2, 1 { ret; }\n"
                          ".visible .entry e() .explicitcluster { ret; }\n"
                          ".visible .entry p() { ret; }\n";
  auto text = toolchain::read_ptx_entries({"c.ptx", ptx});
  REQUIRE(text);
  auto assembled = toolchain::assemble(ptx, "sm_90", *toolkit);
  REQUIRE(assembled);
  auto binary = read_cubin_entries({"c.cubin", assembled->cubin});
  REQUIRE(binary);
  for (const auto* m : {&*text, &*binary}) {
    CHECK(entry_named(*m, "c")->info.cluster_dims == std::array<uint32_t, 3>{4, 2, 1});
    CHECK(entry_named(*m, "e")->info.explicit_cluster);
    CHECK_FALSE(entry_named(*m, "e")->info.has_cluster_dims());
    CHECK_FALSE(entry_named(*m, "p")->info.explicit_cluster);
    CHECK_FALSE(entry_named(*m, "p")->info.has_cluster_dims());
  }
  // A cluster shape with a 0 axis is forged.
  auto shape = testing::attribute_at(assembled->cubin, ".nv.info.c", 0x04, 0x3d);
  REQUIRE(shape);
  std::string zero = assembled->cubin;
  testing::write_le(zero, *shape + 4, 0, 4);
  auto r = read_cubin_entries({"z.cubin", zero});
  REQUIRE_FALSE(r);
  CHECK(r.error().items()[0].message.find("cluster shape of 4\u00d70\u00d71") != std::string::npos);
}

TEST_CASE("kernel entries: one reader for PTX text, cubins and fatbins") {
  auto ptx = toolchain::read_kernel_entries({"s.ptx", testing::ptx_fixture("nvcc_saxpy.ptx")});
  REQUIRE(ptx);
  CHECK(ptx->binary_arch.empty());
  CHECK(ptx->entries.at(0).info.params.at(0).name == "_Z5saxpyifPKfPf_param_0");
  auto fatbin = toolchain::read_kernel_entries({"k.fatbin", std::string("\x50\xed\x55\xba\x01\x00\x10\x00", 8)});
  REQUIRE_FALSE(fatbin);
  CHECK(codes(fatbin.error()) == std::vector{diag::Code::cannot_read_file});
  CHECK(fatbin.error().items()[0].fix.find("cuobjdump -xelf") != std::string::npos);
}

TEST_CASE("apply_signature: restates a cubin's parameter types, checked against their sizes") {
  toolchain::PtxEntry e;
  e.info.name = "k";
  for (uint32_t size : {8u, 4u, 8u, 4u}) {
    contract::ParamInfo p;
    p.name = "param" + std::to_string(e.info.params.size());
    p.index = static_cast<uint32_t>(e.info.params.size());
    p.size_bytes = size;
    p.is_buffer = size == 8;
    p.type = size == 8 ? ir::Type::void_ : ir::Type::u32;
    e.info.params.push_back(p);
  }
  SUBCASE("types of the right sizes") {
    REQUIRE(toolchain::apply_signature(e, " f32[] , f32, u64,i32 "));
    CHECK(e.info.params[0].is_buffer);
    CHECK(e.info.params[0].type == ir::Type::f32);
    CHECK(e.info.params[1].type == ir::Type::f32);
    CHECK_FALSE(e.info.params[1].is_buffer);
    CHECK_FALSE(e.info.params[2].is_buffer);
    CHECK(e.info.params[2].type == ir::Type::u64);
    CHECK(e.info.params[3].type == ir::Type::i32);
    CHECK(e.info.params[2].name == "param2");  // names stay
  }
  SUBCASE("[] is a buffer of any element type") {
    REQUIRE(toolchain::apply_signature(e, "[], u32, f64, f32"));
    CHECK(e.info.params[0].is_buffer);
    CHECK(e.info.params[0].type == ir::Type::void_);
    CHECK(e.info.params[2].type == ir::Type::f64);
  }
  SUBCASE("wrong size, wrong count, not a type: the entry is left as it was") {
    const auto before = e.info.params;
    auto size = toolchain::apply_signature(e, "f32[], f64, u64, i32");
    REQUIRE_FALSE(size);
    CHECK(codes(size.error()) == std::vector{diag::Code::argument_size_mismatch});
    CHECK(size.error().items()[0].message == "signature item 1 'f64' is 8 bytes but parameter 1 of kernel 'k' is 4 bytes");
    auto count = toolchain::apply_signature(e, "f32[], f32");
    REQUIRE_FALSE(count);
    CHECK(codes(count.error()) == std::vector{diag::Code::argument_count_mismatch});
    auto empty = toolchain::apply_signature(e, "  ");
    REQUIRE_FALSE(empty);
    CHECK(empty.error().items()[0].message.find("names 0 parameters") != std::string::npos);
    auto word = toolchain::apply_signature(e, "float*, f32, u64, i32");
    REQUIRE_FALSE(word);
    CHECK(codes(word.error()) == std::vector{diag::Code::expected_token});
    auto boolean = toolchain::apply_signature(e, "f32[], bool, u64, i32");
    REQUIRE_FALSE(boolean);
    CHECK(codes(boolean.error()) == std::vector{diag::Code::expected_token});
    CHECK(e.info.params.size() == before.size());
    for (size_t k = 0; k < before.size(); ++k) CHECK(e.info.params[k].type == before[k].type);
  }
}

TEST_CASE("check_cubin_target: a cubin runs on its own major architecture, same or newer minor") {
  CHECK(toolchain::check_cubin_target("sm_80", "sm_80"));
  CHECK(toolchain::check_cubin_target("sm_80", "sm_86"));
  CHECK(toolchain::check_cubin_target("sm_80", "sm_89"));
  CHECK(toolchain::check_cubin_target("sm_90", "sm_90a"));
  auto older_minor = toolchain::check_cubin_target("sm_86", "sm_80");
  REQUIRE_FALSE(older_minor);
  CHECK(codes(older_minor.error()) == std::vector{diag::Code::unknown_target});
  auto other_major = toolchain::check_cubin_target("sm_80", "sm_90");
  REQUIRE_FALSE(other_major);
  CHECK(other_major.error().items()[0].message.find("a cubin for sm_80 cannot run on a device of sm_90") == 0);
  CHECK(other_major.error().items()[0].fix.find("ptxas -arch=sm_90") != std::string::npos);
  CHECK_FALSE(toolchain::check_cubin_target("sm_120", "sm_100"));
}

TEST_CASE("cubin entries: a 128-byte parameter (a CUtensorMap by value) is a tensor map parameter") {
  auto toolkit = testing::toolkit_with_ptxas();
  if (!toolkit) return;
  constexpr std::string_view kTmaPtx = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry tma(.param .align 64 .b8 m[128], .param .u64 y)
{
  ret;
}
)";
  auto assembled = toolchain::assemble(kTmaPtx, "sm_90a", *toolkit);
  REQUIRE(assembled);
  auto read = read_cubin_entries({"t.cubin", assembled->cubin});
  REQUIRE(read);
  auto tma = toolchain::require_ptx_entry(*read, "tma", "t.cubin");
  REQUIRE_MESSAGE(tma, (tma ? "" : diag::render_text(tma.error())));
  REQUIRE((*tma)->info.params.size() == 2);
  CHECK((*tma)->info.params[0].type == ir::Type::tensor_map);
  CHECK((*tma)->info.params[0].size_bytes == 128);
  CHECK_FALSE((*tma)->info.params[0].is_buffer);
  CHECK((*tma)->info.params[1].is_buffer);
}

