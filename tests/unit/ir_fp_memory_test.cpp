// Unit tests for the floating-point modes (contract, exact, fast; @fp), the added math functions,
// memory fences, atomics with a memory order and scope, and assert: typing, diagnostics, printing,
// the builder API, the PTX each lowers to, and the module-cache key.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/toolchain/build.hpp"

using namespace ptxgate;

namespace {

struct Checked {
  ir::Module module;
  diag::Diagnostics diags;
  bool has(diag::Code code) const {
    return std::any_of(diags.begin(), diags.end(), [&](const diag::Diagnostic& d) { return d.code == code; });
  }
};

Checked check(const std::string& text) {
  diag::SourceFile file("f.pg", text);
  ir::ParseResult parsed = ir::parse(file);
  Checked c;
  if (parsed.diagnostics.has_errors()) {
    c.diags = std::move(parsed.diagnostics);
    return c;
  }
  c.module = std::move(parsed.module);
  c.diags = ir::verify(c.module, &file);
  return c;
}

std::string ptx_of(const std::string& text, ir::FpMode mode = ir::FpMode::contract) {
  auto loaded = ir::load_module(diag::SourceFile("f.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options = toolchain::with_toolkit({}, toolchain::discover());
  options.fp_mode = mode;
  auto compiled = codegen::compile(loaded->module, options);
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  return compiled->ptx;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const char* kAxpy = R"(
kernel k(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
)";

}  // namespace

TEST_CASE("fp: a * b + c is one fma in the contract mode and two roundings in the exact mode") {
  const std::string contracted = ptx_of(kAxpy);
  CHECK(contains(contracted, "fma.rn.f32"));
  CHECK_FALSE(contains(contracted, "mul.rn.f32"));
  const std::string exact = ptx_of(kAxpy, ir::FpMode::exact);
  CHECK_FALSE(contains(exact, "fma.rn.f32"));
  CHECK(contains(exact, "mul.rn.f32"));
  CHECK(contains(exact, "add.rn.f32"));
  // f64 too; half types never contract (computed as written, one rounding per operation).
  CHECK(contains(ptx_of("kernel k(inout y: f64[], a: f64) { y[0] = a * y[1] + y[2]; }"), "fma.rn.f64"));
  const std::string half = ptx_of("kernel k(inout y: f16[]) { y[0] = y[3] * y[1] + y[2]; }");
  CHECK_FALSE(contains(half, "fma.rn.f16"));
}

TEST_CASE("fp: @fp on a kernel overrides the compile option") {
  const std::string text = std::string("@fp(exact)\n") + (kAxpy + 1);
  CHECK_FALSE(contains(ptx_of(text), "fma.rn.f32"));
  const std::string two = std::string(kAxpy) + "@fp(contract)\nkernel c(inout y: f32[], a: f32) { y[0] = a * y[1] + y[2]; }\n";
  const std::string ptx = ptx_of(two, ir::FpMode::exact);
  // k follows the option (exact), c its attribute (contract).
  const size_t c_start = ptx.find(".entry c(");
  REQUIRE(c_start != std::string::npos);
  CHECK_FALSE(contains(ptx.substr(0, c_start), "fma.rn.f32"));
  CHECK(contains(ptx.substr(c_start), "fma.rn.f32"));
}

TEST_CASE("fp: the fast mode approximates division, square root and transcendentals and flushes denormals") {
  const std::string text = R"(
kernel k(inout y: f32[], inout d: f64[]) {
  y[0] = y[1] / y[2];
  y[3] = sqrt(y[4]);
  y[5] = exp(y[6]) + exp2(y[7]) + sin(y[8]);
  y[9] = y[10] * y[11];
  d[0] = d[1] / d[2];
}
)";
  const std::string fast = ptx_of(text, ir::FpMode::fast);
  CHECK(contains(fast, "div.full.ftz.f32"));
  CHECK(contains(fast, "sqrt.approx.ftz.f32"));
  CHECK(contains(fast, "ex2.approx.ftz.f32"));
  CHECK(contains(fast, "sin.approx"));
  CHECK(contains(fast, "mul.rn.ftz.f32"));
  CHECK(contains(fast, "div.rn.f64"));  // f64 keeps IEEE division
  const std::string contract = ptx_of(text);
  CHECK(contains(contract, "div.rn.f32"));
  CHECK(contains(contract, "sqrt.rn.f32"));
  CHECK_FALSE(contains(contract, "mul.rn.ftz.f32"));
  CHECK_FALSE(contains(contract, "add.rn.ftz.f32"));
  CHECK_FALSE(contains(contract, "sin.approx"));
}

TEST_CASE("fp: @fp takes one known mode") {
  CHECK(check("@fp(fast)\nkernel k(inout y: f32[]) { y[0] = 1.0; }").diags.items().empty());
  for (const char* bad : {"@fp(quick)", "@fp", "@fp(exact, fast)", "@fp(1)", "@fp(exact)\n@fp(fast)"}) {
    CAPTURE(bad);
    Checked c = check(std::string(bad) + "\nkernel k(inout y: f32[]) { y[0] = 1.0; }");
    CHECK(c.has(diag::Code::invalid_attribute_argument));
  }
  Checked typo = check("@fp(exat)\nkernel k(inout y: f32[]) { y[0] = 1.0; }");
  REQUIRE(typo.has(diag::Code::invalid_attribute_argument));
  CHECK(contains(typo.diags.items().front().fix, "@fp(exact)"));
}

TEST_CASE("math: exp2, log2, log10, erf, tan, asin, acos, atan, sinh, cosh and atan2 call libdevice") {
  const std::string ptx = ptx_of(R"(
kernel k(inout y: f32[], inout d: f64[]) {
  y[0] = exp2(y[1]) + log2(y[2]) + log10(y[3]) + erf(y[4]) + tan(y[5]) + asin(y[6]) + acos(y[7]) + atan(y[8]) +
         sinh(y[9]) + cosh(y[10]) + atan2(y[11], y[12]);
  d[0] = atan2(d[1], d[2]) + erf(d[3]);
}
)");
  CHECK(contains(ptx, ".entry k("));
  CHECK_FALSE(contains(ptx, "__nv_"));  // inlined and internalised
  CHECK(check("kernel k(inout y: f32[]) { y[0] = atan2(y[1]); }").has(diag::Code::wrong_argument_count));
  CHECK(check("kernel k(inout y: f16[]) { y[0] = erf(y[1]); }").has(diag::Code::invalid_operand));
  CHECK(check("kernel k(inout y: u32[]) { y[0] = log2(y[1]); }").has(diag::Code::invalid_operand));
}

TEST_CASE("fences: statements that lower to membar.cta, membar.gl and membar.sys") {
  const std::string ptx = ptx_of("kernel k(inout y: u32[]) { y[0] = 1; fence_block(); fence_device(); fence_system(); }");
  CHECK(contains(ptx, "membar.cta"));
  CHECK(contains(ptx, "membar.gl"));
  CHECK(contains(ptx, "membar.sys"));
  CHECK(check("kernel k(inout y: u32[]) { let a = fence_device(); }").has(diag::Code::not_a_value));
  CHECK(check("kernel k(inout y: u32[]) { fence_block(1); }").has(diag::Code::wrong_argument_count));
  // No convergence rule: a fence under a thread-dependent branch is fine.
  CHECK(check("kernel k(inout y: u32[]) { if (thread_id.x == 0) { y[0] = 1; fence_device(); } }").diags.items().empty());
}

TEST_CASE("atomics: a memory order and scope after the operands") {
  const std::string text = R"(
kernel k(inout flag: u32[], inout data: f32[], inout big: i64[], inout h: f16[]) {
  shared s: i32[32];
  data[global_id.x] = 1.0;
  atomic_exch(flag, 0, 1, release, device);
  let seen = atomic_add(flag, 1, 0, acquire);
  let x = atomic_add(data, 2, 1.5, acq_rel, system);
  let m = atomic_min(big, 0, -5, block);
  let c = atomic_cas(flag, 2, 0, seen, acq_rel, block);
  let l = atomic_sub(s, 0, 3, relaxed, block);
  let hv = atomic_add(h, 0, f16(1.0), release);
  atomic_add(flag, 3, 1);
}
)";
  Checked c = check(text);
  REQUIRE_MESSAGE(c.diags.items().empty(), diag::render_text(c.diags));
  const std::string ptx = ptx_of(text);
  CHECK(contains(ptx, "atom.release.gpu.global.exch.b32"));
  CHECK(contains(ptx, "atom.acquire.gpu.global.add.u32"));
  CHECK(contains(ptx, "atom.acq_rel.sys.global.add.f32"));
  CHECK(contains(ptx, "atom.relaxed.cta.global.min.s64"));
  CHECK(contains(ptx, "atom.acq_rel.cta.global.cas.b32"));
  CHECK(contains(ptx, "atom.relaxed.cta.shared.add.u32"));
  CHECK(contains(ptx, "atom.release.gpu.global.add.noftz.f16"));
  CHECK(contains(ptx, "atom.global.add.u32"));  // the unqualified default stays LLVM's atomicrmw
  // The printer writes what differs from the default, and the text round-trips.
  const std::string printed = ir::print(c.module);
  CHECK(contains(printed, "atomic_exch(flag, 0, 1, release)"));
  CHECK(contains(printed, "atomic_add(data, 2, 1.5, acq_rel, system)"));
  CHECK(contains(printed, "atomic_sub(s, 0, 3, block)"));
  CHECK(contains(printed, "atomic_add(flag, 3, 1)"));
  Checked again = check(printed);
  REQUIRE(again.diags.items().empty());
  CHECK(ir::print(again.module) == printed);
}

TEST_CASE("atomics: an unknown, repeated or misplaced order or scope is PG1225") {
  auto code_of = [](const std::string& call) {
    return check("kernel k(inout a: u32[]) { let o = " + call + "; }");
  };
  CHECK(code_of("atomic_add(a, 0, 1, acq_rell)").has(diag::Code::invalid_memory_order));
  CHECK(code_of("atomic_add(a, 0, 1, acquire, release)").has(diag::Code::invalid_memory_order));
  CHECK(code_of("atomic_add(a, 0, 1, block, device)").has(diag::Code::invalid_memory_order));
  CHECK(code_of("atomic_add(a, 0, 1, device, acquire)").has(diag::Code::invalid_memory_order));
  // Only names past the operands are orders: a variable named like a scope is a value.
  CHECK(check("kernel k(inout a: u32[]) { let device: u32 = 2; let o = atomic_add(a, 0, device); }").diags.items().empty());
}

TEST_CASE("assert: a bool condition, a statement, and __assertfail with the source line and text") {
  const std::string text = "kernel k(inout y: u32[], n: u32) {\n  let i = global_id.x;\n  assert(i <   n &&\n   y[i] != 7);\n  y[i] = 1;\n}\n";
  Checked c = check(text);
  REQUIRE(c.diags.items().empty());
  CHECK(c.module.kernels[0].uses_assert);
  CHECK(ir::assert_sites(c.module) == "f.pg:3: i < n && y[i] != 7\n");
  const std::string ptx = ptx_of(text);
  CHECK(contains(ptx, "__assertfail"));
  CHECK(contains(ptx, "trap;"));
  CHECK(check("kernel k(inout y: u32[]) { assert(y[0]); }").has(diag::Code::condition_not_bool));
  CHECK(check("kernel k(inout y: u32[]) { let a = assert(true); }").has(diag::Code::not_a_value));
  CHECK(check("kernel k(inout y: u32[]) { assert(); }").has(diag::Code::wrong_argument_count));
  // Without asserts there are no sites and no __assertfail.
  CHECK(ir::assert_sites(check(kAxpy).module).empty());
  CHECK_FALSE(contains(ptx_of(kAxpy), "__assertfail"));
}

TEST_CASE("builder: fences, ordered atomics, assert and @fp print like the text") {
  ir::ModuleBuilder mb("f.pg");
  auto& k = mb.kernel("k");
  k.fp(ir::FpMode::exact).buffer("a", ir::Access::inout, ir::Type::u32);
  k.expr(k.atomic(ir::Intrinsic::atomic_exch, "a", k.lit(0), k.lit(1), ir::MemoryOrder::release));
  k.fence(ir::MemoryScope::system);
  k.assert_(k.binary(ir::BinaryOp::lt, k.index("a", k.lit(1)), k.lit(4)));
  ir::Module m = mb.take();
  const std::string printed = ir::print(m);
  CHECK(printed ==
        "@fp(exact)\nkernel k(inout a: u32[]) {\n  atomic_exch(a, 0, 1, release);\n  fence_system();\n  assert(a[1] < 4);\n}\n");
  CHECK(ir::verify(m, nullptr).items().empty());
  CHECK(m.kernels[0].fp_mode == ir::FpMode::exact);
  CHECK(ir::assert_sites(m) == "f.pg:0: a[1] < 4\n");
}

TEST_CASE("cache key: the fp mode and the assert sites are part of a module's key") {
  auto key = [](const std::string& text, ir::FpMode mode, const std::string& path = "f.pg") {
    auto loaded = ir::load_module(diag::SourceFile(path, text));
    REQUIRE(loaded);
    module_cache::CompileRequest request;
    request.codegen.fp_mode = mode;
    request.produce_cubin = false;
    return module_cache::derive_key(module_cache::key_inputs_for(loaded->module, request, request.toolkit())).hex;
  };
  CHECK(key(kAxpy, ir::FpMode::contract) != key(kAxpy, ir::FpMode::exact));
  CHECK(key(kAxpy, ir::FpMode::exact) != key(kAxpy, ir::FpMode::fast));
  CHECK(key(kAxpy, ir::FpMode::contract) == key(kAxpy, ir::FpMode::contract));
  CHECK(key(kAxpy, ir::FpMode::contract, "a.pg") == key(kAxpy, ir::FpMode::contract, "b.pg"));
  // The same canonical text with the assert on another line, or in another file: another key.
  const std::string one = "kernel k(inout y: u32[]) { assert(y[0] == 1); }\n";
  const std::string two = "kernel k(inout y: u32[]) {\n assert(y[0] == 1); }\n";
  CHECK(key(one, ir::FpMode::contract) != key(two, ir::FpMode::contract));
  CHECK(key(one, ir::FpMode::contract, "a.pg") != key(one, ir::FpMode::contract, "b.pg"));
}
