// toolchain::read_ptx_entries: signatures, launch bounds and shared memory of PTX from nvcc,
// NVRTC and Triton (fixtures in tests/unit/ptx/), and the diagnostics for PTX a launch cannot take.
#include <doctest/doctest.h>

#include <string>

#include "ptxgate/toolchain/ptx_entries.hpp"
#include "capi_test_support.hpp"

using namespace ptxgate;
using toolchain::read_ptx_entries;

namespace {

diag::SourceFile fixture(const std::string& name) { return {name, testing::ptx_fixture(name)}; }

diag::SourceFile text(std::string body) { return {"k.ptx", std::move(body)}; }

std::vector<diag::Code> codes(const diag::Diagnostics& d) {
  std::vector<diag::Code> out;
  for (const auto& item : d) out.push_back(item.code);
  return out;
}

}  // namespace

TEST_CASE("ptx entries: nvcc declares pointers as .u64 and converts them with cvta.to.global") {
  auto m = read_ptx_entries(fixture("nvcc_saxpy.ptx"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  CHECK(m->isa_major == 8);
  CHECK(m->isa_minor == 4);
  CHECK(m->target == "sm_80");
  REQUIRE(m->entries.size() == 1);
  const auto& e = m->entries[0];
  CHECK(e.info.name == "_Z5saxpyifPKfPf");
  CHECK(e.location.line == 15);
  REQUIRE(e.info.params.size() == 4);
  CHECK_FALSE(e.info.params[0].is_buffer);
  CHECK(e.info.params[0].type == ir::Type::u32);
  CHECK(e.info.params[0].size_bytes == 4);
  CHECK(e.info.params[1].type == ir::Type::f32);
  for (int i : {2, 3}) {
    CHECK(e.info.params[i].is_buffer);
    CHECK(e.info.params[i].type == ir::Type::void_);
    CHECK(e.info.params[i].access == ir::Access::inout);
    CHECK(e.info.params[i].size_bytes == 8);
    CHECK(e.info.params[i].index == static_cast<uint32_t>(i));
  }
  CHECK(e.info.params[3].name == "_Z5saxpyifPKfPf_param_3");
  CHECK_FALSE(e.info.has_required_block());
  CHECK(e.max_block == std::array<uint32_t, 3>{0, 0, 0});
  CHECK(e.info.static_shared_bytes == 0);
}

TEST_CASE("ptx entries: a 64-bit value that is never an address stays an integer; .maxntid and static shared") {
  auto m = read_ptx_entries(fixture("nvcc_block_sum.ptx"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  const auto& e = m->entries.at(0);
  REQUIRE(e.info.params.size() == 3);
  CHECK(e.info.params[0].is_buffer);  // read through cvta.to.global
  CHECK(e.info.params[1].is_buffer);  // atom.global on its converted value
  CHECK_FALSE(e.info.params[2].is_buffer);
  CHECK(e.info.params[2].type == ir::Type::u64);
  CHECK(e.max_block == std::array<uint32_t, 3>{256, 1, 1});
  CHECK_FALSE(e.info.has_required_block());
  CHECK(e.info.static_shared_bytes == 1024);
}

TEST_CASE("ptx entries: Triton marks pointers .ptr and fixes the block with .reqntid") {
  auto m = read_ptx_entries(fixture("triton_add.ptx"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  CHECK(m->target == "sm_90a");
  const auto& e = m->entries.at(0);
  CHECK(e.info.name == "add_kernel");
  REQUIRE(e.info.params.size() == 5);
  CHECK(e.info.params[0].is_buffer);
  CHECK(e.info.params[1].is_buffer);
  CHECK(e.info.params[2].is_buffer);
  CHECK_FALSE(e.info.params[3].is_buffer);
  CHECK(e.info.params[3].type == ir::Type::u32);
  CHECK(e.info.params[4].is_buffer);  // Triton's trailing scratch pointer, unused in the body
  CHECK(e.info.required_block == std::array<uint32_t, 3>{128, 1, 1});
  CHECK(e.info.static_shared_bytes == 0);  // global_smem is extern: dynamic
}

TEST_CASE("ptx entries: several entries, declarations skipped, a direct global address is a pointer, line info skipped") {
  auto m = read_ptx_entries(text(R"(.version 7.0
.target sm_75, debug
.address_size 64
.extern .entry declared(.param .u64 p);
.visible .func helper(.param .b64 x) { ret; }
.entry first(.param .u64 p, .param .s64 n, .param .f64 x, .param .s32 i)
{
  .reg .b64 %rd<3>;
  .loc 1 10 0
  ld.param.u64 %rd1, [p];
  .loc 1 11 0
  ld.param.s64 %rd2, [n];
  .loc 1 12 0
$L__tmp0:
  @!%p1 st.global.u32 [%rd1+4], 0;
  ret;
}
.entry second
{
  ret;
}
)"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  CHECK(m->target == "sm_75");
  REQUIRE(m->entries.size() == 2);
  const auto& p = m->entries[0].info.params;
  REQUIRE(p.size() == 4);
  CHECK(p[0].is_buffer);
  CHECK(p[1].type == ir::Type::i64);
  CHECK_FALSE(p[1].is_buffer);
  CHECK(p[2].type == ir::Type::f64);
  CHECK(p[3].type == ir::Type::i32);
  CHECK(m->entries[1].info.name == "second");
  CHECK(m->entries[1].info.params.empty());
  auto found = toolchain::require_ptx_entry(*m, "second", "k.ptx");
  REQUIRE(found);
  CHECK((*found)->info.name == "second");
  auto missing = toolchain::require_ptx_entry(*m, "third", "k.ptx");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().items()[0].code == diag::Code::kernel_not_found);
  CHECK(missing.error().items()[0].fix == "kernels in this module: first, second");
}

TEST_CASE("ptx entries: parameters a launch cannot pass are PG3007, each located") {
  auto m = read_ptx_entries(text(".version 8.0\n.target sm_80\n"
                                 ".entry k(.param .align 8 .b8 k_param_0[16], .param .u16 k_param_1, .param .u32 k_param_2)\n"
                                 "{ ret; }\n.entry fine(.param .u32 n) { ret; }\n"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  REQUIRE(m->entries.size() == 2);
  auto k = toolchain::require_ptx_entry(*m, "k", "k.ptx");
  REQUIRE_FALSE(k);
  CHECK(codes(k.error()) == std::vector<diag::Code>{diag::Code::argument_size_mismatch, diag::Code::argument_size_mismatch});
  CHECK(k.error().items()[0].message.find("'k_param_0' is an array of .b8") != std::string::npos);
  CHECK(k.error().items()[1].message.find("'k_param_1' is .u16") != std::string::npos);
  CHECK(k.error().items()[0].location.line == 3);
  CHECK(k.error().items()[0].location.column == 10);
  // Another entry of the same module stays launchable.
  auto fine = toolchain::require_ptx_entry(*m, "fine", "k.ptx");
  REQUIRE(fine);
  CHECK((*fine)->info.params.size() == 1);
}

TEST_CASE("ptx entries: not PTX, no entry, malformed entries and binary modules are diagnostics") {
  auto not_ptx = read_ptx_entries(text("kernel k(inout y: f32[]) {}\n"));
  REQUIRE_FALSE(not_ptx);
  CHECK(codes(not_ptx.error()) == std::vector<diag::Code>{diag::Code::expected_token});
  CHECK(not_ptx.error().items()[0].message.find("no .version") != std::string::npos);

  auto only_funcs = read_ptx_entries(text(".version 8.0\n.target sm_80\n.func f() { ret; }\n"));
  REQUIRE_FALSE(only_funcs);
  CHECK(codes(only_funcs.error()) == std::vector<diag::Code>{diag::Code::kernel_not_found});

  for (const char* bad : {".version 8.0\n.target sm_80\n.entry k(.param .u32 a\n",
                          ".version 8.0\n.target sm_80\n.entry k(.reg .u32 a) { ret; }\n",
                          ".version 8.0\n.target sm_80\n.entry k(.param .u32 a) { ret;\n",
                          ".version 8.0\n.target sm_80\n.entry k() .reqntid 0 { ret; }\n",
                          ".version 8.0\n.target sm_80\n.entry k() .maxntid 2048 { ret; }\n",
                          ".version 8.0\n.target sm_80\n.entry (.param .u32 a) { ret; }\n",
                          ".version 8.0\n.target sm_80\n.entry k(.param a) { ret; }\n",
                          ".version eight\n.target sm_80\n.entry k() { ret; }\n"}) {
    auto m = read_ptx_entries(text(bad));
    REQUIRE_FALSE_MESSAGE(m, bad);
    CHECK_MESSAGE(m.error().items()[0].code == diag::Code::expected_token, bad);
  }

  auto cubin = read_ptx_entries(text(std::string("\x7f" "ELF\x02\x01\x01", 7)));
  REQUIRE_FALSE(cubin);
  CHECK(codes(cubin.error()) == std::vector<diag::Code>{diag::Code::cannot_read_file});
  CHECK(cubin.error().items()[0].message.find("cubin") != std::string::npos);
  auto fatbin = read_ptx_entries(text(std::string("\x50\xed\x55\xba\x01\x00", 6)));
  REQUIRE_FALSE(fatbin);
  CHECK(codes(fatbin.error()) == std::vector<diag::Code>{diag::Code::cannot_read_file});
}

TEST_CASE("ptx entries: comments and strings do not hide or invent entries") {
  auto m = read_ptx_entries(text(".version 8.0 // .entry fake(\n.target sm_80 /* .entry also_fake() { } */\n"
                                 ".file 1 \".entry in_a_string\"\n.entry real() { ret; }\n"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  REQUIRE(m->entries.size() == 1);
  CHECK(m->entries[0].info.name == "real");
}

TEST_CASE("ptx entries: a PTX target runs on its own and newer architectures, an 'a' target only on its own") {
  CHECK(toolchain::check_ptx_target("sm_80", "sm_90"));
  CHECK(toolchain::check_ptx_target("sm_90", "sm_90"));
  CHECK(toolchain::check_ptx_target("sm_90a", "sm_90"));
  auto newer = toolchain::check_ptx_target("sm_90", "sm_80");
  REQUIRE_FALSE(newer);
  CHECK(newer.error().items()[0].code == diag::Code::unknown_target);
  CHECK(newer.error().items()[0].message == "PTX for sm_90 cannot run on a device of sm_80");
  auto specific = toolchain::check_ptx_target("sm_90a", "sm_100");
  REQUIRE_FALSE(specific);
  CHECK(specific.error().items()[0].message.find("architecture-specific") != std::string::npos);
}

TEST_CASE("ptx entries: 20000 entries on one line cost memory in proportion to the text") {
  // Each entry's location used to copy the whole 670 KB line: 13 GB, std::bad_alloc.
  std::string ptx = ".version 8.0 .target sm_90 .address_size 64 ";
  for (int i = 0; i < 20000; ++i) ptx += ".visible .entry k" + std::to_string(i) + "() { ret; } ";
  auto m = read_ptx_entries(text(ptx));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  REQUIRE(m->entries.size() == 20000);
  size_t kept = 0;
  for (const auto& e : m->entries) kept += e.location.source_line.size();
  CHECK(kept <= 20000 * (diag::kMaxExcerptBytes + 6));
  CHECK(m->entries.back().info.name == "k19999");
  CHECK(m->entries.back().location.column == ptx.rfind("k19999") + 1);
}

TEST_CASE("ptx entries: a 128-byte parameter aligned to 64 is a tensor map; other byte arrays stay PG3007") {
  auto m = read_ptx_entries(text(".version 8.0\n.target sm_90a\n"
                                 ".entry tma(.param .align 64 .b8 tma_param_0[128], .param .u64 y)\n{ ret; }\n"
                                 ".entry loose(.param .align 8 .b8 s[128])\n{ ret; }\n"
                                 ".entry short(.param .align 64 .b8 s[64])\n{ ret; }\n"));
  REQUIRE_MESSAGE(m, (m ? "" : diag::render_text(m.error())));
  auto tma = toolchain::require_ptx_entry(*m, "tma", "k.ptx");
  REQUIRE(tma);
  REQUIRE((*tma)->info.params.size() == 2);
  CHECK((*tma)->info.params[0].type == ir::Type::tensor_map);
  CHECK((*tma)->info.params[0].size_bytes == 128);
  CHECK_FALSE((*tma)->info.params[0].is_buffer);
  CHECK((*tma)->info.params[1].type == ir::Type::u64);  // never used as an address in the body: a scalar
  for (const char* name : {"loose", "short"}) {
    auto refused = toolchain::require_ptx_entry(*m, name, "k.ptx");
    REQUIRE_FALSE(refused);
    CHECK(codes(refused.error()) == std::vector<diag::Code>{diag::Code::argument_size_mismatch});
  }
}

