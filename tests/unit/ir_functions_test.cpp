// Unit tests for device functions (`fn`): parsing and printing, the verifier's rules (arguments,
// buffers and access modes, returns, names, recursion, shared arrays, synchronisation through
// calls), kernel flags, the builder API, and what the generated code computes.
#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"
#include "ir_check_support.hpp"

using namespace ptxgate;

namespace {

using testing::Checked;

Checked check(const std::string& text) { return testing::check_module("f.pg", text); }

std::string compile(const std::string& text, unsigned opt_level = 3, bool llvm = false) {
  auto loaded = ir::load_module(diag::SourceFile("f.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options;
  options.opt_level = opt_level;
  if (llvm) {
    auto llvm_ir = codegen::emit_llvm_ir(loaded->module, options);
    if (!llvm_ir) FAIL(diag::render_text(llvm_ir.error()));
    return *llvm_ir;
  }
  auto compiled = codegen::compile(loaded->module, options);
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  return compiled->ptx;
}

/// The constant the kernel stores into y (one store only), as LLVM prints it.
std::string stored_constant(const std::string& text) {
  std::string llvm_ir = compile(text, 3, /*llvm=*/true);
  INFO(llvm_ir);
  static const std::regex kStore(R"(store (i32|i64|float|double|i8) ([^,]+), ptr addrspace\(1\) %y)");
  std::smatch match;
  REQUIRE(std::regex_search(llvm_ir, match, kStore));
  std::string rest = match.suffix();
  REQUIRE_FALSE(std::regex_search(rest, kStore));
  return match[2].str();
}

size_t occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

const ir::Kernel& kernel_named(const ir::Module& m, const std::string& name) {
  const ir::Kernel* k = m.find_kernel(name);
  REQUIRE(k != nullptr);
  return *k;
}

}  // namespace

TEST_CASE("functions: a module with functions before and after the kernel verifies and round-trips") {
  const std::string text = R"(const SCALE: f32 = 2.0;

kernel k(in x: f32[], inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    accumulate(y, i, square(x[i]));
    y[i] = y[i] + sum_range(x, 0, 4);
  }
}

fn square(v: f32) -> f32 {
  return v * v;
}

fn accumulate(inout acc: f32[], i: u32, v: f32) {
  acc[i] = acc[i] + v * SCALE;
}

fn sum_range(in x: f32[], lo: u32, hi: u32) -> f32 {
  var s = 0.0;
  for j in lo..hi {
    s = s + x[j];
  }
  return s;
}
)";
  auto c = check(text);
  INFO(diag::render_text(c.diags));
  REQUIRE_FALSE(c.diags.has_errors());
  REQUIRE(c.module.functions.size() == 3);
  CHECK(c.module.functions[0].result == ir::Type::f32);
  CHECK(c.module.functions[1].result == ir::Type::void_);
  // Canonical text: constants, functions, kernels; printing is a fixed point.
  std::string printed = ir::print(c.module);
  CHECK(printed.find("fn square(v: f32) -> f32 {") < printed.find("kernel k("));
  CHECK(printed.find("fn accumulate(inout acc: f32[], i: u32, v: f32) {") != std::string::npos);
  auto again = ir::parse(diag::SourceFile("p.pg", printed));
  REQUIRE_FALSE(again.diagnostics.has_errors());
  CHECK(ir::print(again.module) == printed);
}

TEST_CASE("functions: arguments are checked like an intrinsic's") {
  const std::string fns = "fn f(a: f32, b: u32) -> f32 { return a; }\nfn g(in x: f32[]) -> f32 { return x[0]; }\n";
  SUBCASE("untyped literals take the parameter types") {
    auto c = check(fns + "kernel k(out y: f32[]) { y[0] = f(1, 2); }");
    INFO(diag::render_text(c.diags));
    CHECK_FALSE(c.diags.has_errors());
  }
  SUBCASE("count") {
    auto c = check(fns + "kernel k(out y: f32[]) { y[0] = f(1.0); }");
    CHECK(c.has(diag::Code::wrong_argument_count));
    CHECK(c.message(diag::Code::wrong_argument_count) == "function 'f' takes 2 arguments, 1 given");
  }
  SUBCASE("no implicit conversion") {
    auto c = check(fns + "kernel k(out y: f32[], n: i32) { y[0] = f(1.0, n); }");
    CHECK(c.has(diag::Code::type_mismatch));
    CHECK(c.message(diag::Code::type_mismatch) == "argument 2 of 'f' has type i32, but parameter 'b' has type u32");
  }
  SUBCASE("a literal out of the parameter's range") {
    auto c = check(fns + "kernel k(out y: f32[]) { y[0] = f(1.0, -1); }");
    CHECK(c.has(diag::Code::literal_out_of_range));
  }
  SUBCASE("the result has the declared type") {
    auto c = check(fns + "kernel k(out y: u32[]) { y[0] = f(1.0, 2); }");
    CHECK(c.has(diag::Code::type_mismatch));
  }
  SUBCASE("a buffer for a scalar parameter, a value for a buffer parameter") {
    auto c = check(fns + "kernel k(in x: f32[], out y: f32[]) { y[0] = f(x, 1); y[1] = g(x[0]); }");
    CHECK(c.has(diag::Code::buffer_as_value));
    CHECK(c.has(diag::Code::invalid_buffer_argument));
  }
  SUBCASE("a shared array or a local for a buffer parameter") {
    auto c = check(fns + "kernel k(out y: f32[]) { shared t: f32[32]; let v = 1.0; y[0] = g(t) + g(v); }");
    CHECK(c.count(diag::Code::invalid_buffer_argument) == 2);
    CHECK(c.message(diag::Code::invalid_buffer_argument).find("shared array 't'") != std::string::npos);
  }
  SUBCASE("a buffer of another element type") {
    auto c = check(fns + "kernel k(in x: f64[], out y: f32[]) { y[0] = g(x); }");
    CHECK(c.message(diag::Code::type_mismatch) == "buffer 'x' holds f64, but parameter 'x' of 'g' holds f32");
  }
}

TEST_CASE("functions: buffers pass through with their access mode") {
  const std::string fns =
      "fn read(in a: f32[]) -> f32 { return a[0]; }\n"
      "fn write(out a: f32[]) { a[0] = 1.0; }\n"
      "fn both(inout a: f32[]) { a[0] = a[0] + 1.0; }\n";
  SUBCASE("inout may be passed to in, out and inout") {
    auto c = check(fns + "kernel k(inout y: f32[]) { let v = read(y); write(y); both(y); }");
    INFO(diag::render_text(c.diags));
    CHECK_FALSE(c.diags.has_errors());
  }
  SUBCASE("an in buffer to a parameter that may write it") {
    auto c = check(fns + "kernel k(in x: f32[]) { write(x); both(x); }");
    CHECK(c.count(diag::Code::write_to_in_buffer) == 2);
  }
  SUBCASE("an out buffer to a parameter that may read it") {
    auto c = check(fns + "kernel k(out y: f32[]) { y[0] = read(y); both(y); }");
    CHECK(c.count(diag::Code::read_of_out_buffer) == 2);
  }
  SUBCASE("inside the function the kernel's access rules hold, atomics included") {
    auto c = check(
        "fn f(in a: u32[], out b: u32[]) { a[0] = 1; let v = b[0]; let o = atomic_add(a, 0, 1); }\n"
        "kernel k(inout y: u32[]) { f(y, y); }");
    CHECK(c.has(diag::Code::write_to_in_buffer));
    CHECK(c.has(diag::Code::read_of_out_buffer));
    CHECK(c.message(diag::Code::write_to_in_buffer) == "write to 'a', an 'in' buffer of function 'f' (read-only)");
  }
  SUBCASE("atomics on an inout buffer parameter") {
    auto c = check("fn bump(inout h: u32[], i: u32) -> u32 { return atomic_add(h, i, 1); }\n"
                   "kernel k(inout h: u32[]) { let old = bump(h, global_id.x % 16); }");
    INFO(diag::render_text(c.diags));
    CHECK_FALSE(c.diags.has_errors());
  }
}

TEST_CASE("functions: returns and void calls") {
  SUBCASE("a result must be returned on every path") {
    auto c = check("fn f(x: f32) -> f32 { if (x > 0.0) { return x; } }\nkernel k(out y: f32[]) { y[0] = f(1.0); }");
    CHECK(c.has(diag::Code::missing_return));
  }
  SUBCASE("if/else both returning counts; a loop does not") {
    auto ok = check("fn f(x: f32) -> f32 { if (x > 0.0) { return x; } else { return -x; } }\n"
                    "kernel k(out y: f32[]) { y[0] = f(1.0); }");
    CHECK_FALSE(ok.diags.has_errors());
    auto loop = check("fn f(n: u32) -> u32 { for i in 0..n { return i; } }\n"
                      "kernel k(out y: u32[]) { y[0] = f(3); }");
    CHECK(loop.has(diag::Code::missing_return));
  }
  SUBCASE("return without a value in a function with a result, and with one in a function without") {
    auto c = check("fn f() -> u32 { return; }\nfn g() { return 1; }\nkernel k(out y: u32[]) { y[0] = f(); g(); }");
    CHECK(c.count(diag::Code::invalid_return) == 2);
  }
  SUBCASE("the returned value has the result type") {
    auto c = check("fn f(x: f32) -> u32 { return x; }\nkernel k(out y: u32[]) { y[0] = f(1.0); }");
    CHECK(c.has(diag::Code::type_mismatch));
  }
  SUBCASE("a void result is not a value") {
    auto c = check("fn g() { }\nkernel k(out y: u32[]) { let v = g(); }");
    CHECK(c.has(diag::Code::not_a_value));
  }
  SUBCASE("a call as a statement discards its result without a warning") {
    auto c = check("fn f(inout h: u32[]) -> u32 { return atomic_add(h, 0, 1); }\nkernel k(inout h: u32[]) { f(h); }");
    CHECK(c.diags.empty());
  }
}

TEST_CASE("functions: names, recursion and shared arrays") {
  SUBCASE("name clashes") {
    auto c = check("fn k() { }\nfn sqrt(x: f32) -> f32 { return x; }\nfn f32() { }\nfn lane_id() { }\n"
                   "fn h() { }\nfn h() { }\nkernel k(out y: f32[]) { }");
    CHECK(c.count(diag::Code::function_name_clash) == 5);
  }
  SUBCASE("direct recursion") {
    auto c = check("fn f(n: u32) -> u32 { if (n == 0) { return 0; } return f(n - 1); }\n"
                   "kernel k(out y: u32[]) { y[0] = f(3); }");
    CHECK(c.message(diag::Code::recursive_function) ==
          "function 'f' calls itself; device functions cannot be recursive");
  }
  SUBCASE("mutual recursion names the cycle once") {
    auto c = check("fn a(n: u32) -> u32 { return b(n); }\nfn b(n: u32) -> u32 { return c(n); }\n"
                   "fn c(n: u32) -> u32 { return a(n); }\nkernel k(out y: u32[]) { y[0] = a(1); }");
    CHECK(c.count(diag::Code::recursive_function) == 1);
    CHECK(c.message(diag::Code::recursive_function).find("'a' -> 'b' -> 'c' -> 'a'") != std::string::npos);
  }
  SUBCASE("shared arrays stay in kernels") {
    auto c = check("fn f() { shared t: f32[32]; }\nkernel k(out y: f32[]) { f(); }");
    CHECK(c.has(diag::Code::shared_in_function));
  }
  SUBCASE("an unknown function suggests a declared one") {
    auto c = check("fn square(x: f32) -> f32 { return x * x; }\nkernel k(out y: f32[]) { y[0] = sqare(2.0); }");
    REQUIRE(c.has(diag::Code::unknown_function));
    CHECK(c.diags.items()[0].fix == "did you mean 'square'?");
  }
}

TEST_CASE("functions: synchronisation through calls") {
  SUBCASE("a call that reaches barrier() under thread-dependent control, named at the call") {
    auto c = check("fn inner() { barrier(); }\nfn outer() { inner(); }\n"
                   "kernel k(out y: f32[]) { if (thread_id.x < 4) { outer(); } }");
    REQUIRE(c.count(diag::Code::divergent_barrier) == 1);
    std::string message = c.message(diag::Code::divergent_barrier);
    CHECK(message.find("call of 'outer' in kernel 'k' may be reached by only some threads of the block, and 'outer' "
                       "reaches barrier() at line 1 in 'inner'") != std::string::npos);
    CHECK(c.diags.items()[0].location.line == 3);
  }
  SUBCASE("a uniform call is fine and sets the kernel's flags") {
    auto c = check("fn sync() { barrier(); }\nfn vote(p: bool) -> u32 { return ballot(p); }\n"
                   "@workgroup(64)\nkernel k(out y: u32[]) { sync(); y[0] = vote(thread_id.x < 3); }");
    INFO(diag::render_text(c.diags));
    REQUIRE_FALSE(c.diags.has_errors());
    const ir::Kernel& k = kernel_named(c.module, "k");
    CHECK(k.uses_barrier);
    CHECK(k.uses_warp_operations);
    CHECK_FALSE(k.uses_grid_sync);
  }
  SUBCASE("parameters count as thread-varying inside the function") {
    auto c = check("fn f(n: u32) { if (n > 0) { barrier(); } }\nkernel k(out y: f32[]) { f(4); }");
    CHECK(c.has(diag::Code::divergent_barrier));
    CHECK(c.message(diag::Code::divergent_barrier).find("its caller's argument") != std::string::npos);
  }
  SUBCASE("warp operations under lane-dependent control through a call") {
    auto c = check("fn total(v: f32) -> f32 { return warp_sum(v); }\n"
                   "@workgroup(64)\nkernel k(out y: f32[]) { if (lane_id < 8) { y[0] = total(1.0); } }");
    CHECK(c.has(diag::Code::divergent_warp_operation));
    CHECK_FALSE(c.has(diag::Code::divergent_barrier));
  }
  SUBCASE("grid_sync through a call needs a cooperative kernel") {
    auto c = check("fn g() { grid_sync(); }\nkernel k(out y: f32[]) { g(); }");
    CHECK(c.has(diag::Code::grid_sync_not_cooperative));
    auto ok = check("fn g() { grid_sync(); }\n@cooperative\nkernel k(out y: f32[]) { g(); }");
    REQUIRE_FALSE(ok.diags.has_errors());
    CHECK(kernel_named(ok.module, "k").uses_grid_sync);
  }
  SUBCASE("a call's result on uniform arguments is uniform when the function uses no thread-varying value") {
    auto c = check("fn half(n: u32) -> u32 { return n / 2; }\n"
                   "kernel k(out y: f32[], n: u32) { for i in 0..half(n) { barrier(); } }");
    INFO(diag::render_text(c.diags));
    CHECK_FALSE(c.diags.has_errors());
  }
  SUBCASE("a call's result varies with a varying argument or a varying source inside") {
    auto arg = check("fn half(n: u32) -> u32 { return n / 2; }\n"
                     "kernel k(out y: f32[]) { for i in 0..half(thread_id.x) { barrier(); } }");
    CHECK(arg.has(diag::Code::divergent_barrier));
    auto load = check("fn first(in x: u32[]) -> u32 { return x[0]; }\n"
                      "kernel k(in x: u32[]) { if (first(x) > 0) { barrier(); } }");
    CHECK(load.has(diag::Code::divergent_barrier));
    CHECK(load.message(diag::Code::divergent_barrier).find("the result of first()") != std::string::npos);
    auto lane = check("fn my_lane() -> u32 { return lane_id; }\n"
                      "kernel k(out y: f32[]) { if (my_lane() > 0) { barrier(); } }");
    CHECK(lane.has(diag::Code::divergent_barrier));
  }
}

TEST_CASE("functions: the builder makes the same module as the text") {
  ir::ModuleBuilder mb;
  auto& f = mb.function("scale");
  f.scalar("v", ir::Type::f32).buffer("w", ir::Access::in, ir::Type::f32).returns(ir::Type::f32);
  f.return_(f.name("v") * f.index("w", 0));
  auto& g = mb.function("store");
  g.buffer("y", ir::Access::out, ir::Type::f32).scalar("v", ir::Type::f32);
  g.assign(g.index("y", 0), g.name("v"));
  auto& k = mb.kernel("k");
  k.buffer("y", ir::Access::out, ir::Type::f32).buffer("w", ir::Access::in, ir::Type::f32);
  k.expr(k.call("store", {k.name("y"), k.call("scale", {2.0, k.name("w")})}));
  ir::Module m = mb.take();
  auto diags = ir::verify(m, nullptr);
  INFO(diag::render_text(diags));
  REQUIRE_FALSE(diags.has_errors());
  CHECK(ir::print(m) ==
        "fn scale(v: f32, in w: f32[]) -> f32 {\n  return v * w[0];\n}\n\n"
        "fn store(out y: f32[], v: f32) {\n  y[0] = v;\n}\n\n"
        "kernel k(out y: f32[], in w: f32[]) {\n  store(y, scale(2.0, w));\n}\n");
}

TEST_CASE("functions: calls compute what the body says") {
  CHECK(stored_constant("fn square(x: i32) -> i32 { return x * x; }\n"
                        "kernel k(out y: i32[]) { y[0] = square(-7); }") == "49");
  CHECK(stored_constant("fn pick(c: bool, a: u32, b: u32) -> u32 { if (c) { return a; } return b; }\n"
                        "kernel k(out y: u32[]) { y[0] = pick(false, 3, 4) * 10 + pick(true, 3, 4); }") == "43");
  // Arguments are converted to nothing: a u8 parameter keeps 8 bits, the result widens explicitly.
  CHECK(stored_constant("fn wrap(x: u8) -> u8 { return x + 200; }\n"
                        "kernel k(out y: u32[]) { y[0] = u32(wrap(100)); }") == "44");
  // A void function writing through an out buffer, called twice; and nested calls.
  CHECK(stored_constant("fn put(out y: f32[], v: f32) { y[0] = v; }\nfn twice(v: f32) -> f32 { return v + v; }\n"
                        "kernel k(out y: f32[]) { put(y, twice(twice(1.5))); }") == "6.000000e+00");
}

TEST_CASE("functions: a small helper is inlined; a large one called twice stays a working .func") {
  SUBCASE("inlined: no call remains in the PTX") {
    std::string ptx = compile("fn square(x: f32) -> f32 { return x * x; }\n"
                              "kernel k(inout y: f32[]) { let i = global_id.x; y[i] = square(y[i]); }");
    CHECK(ptx.find("call") == std::string::npos);
    CHECK(ptx.find(".func") == std::string::npos);
    CHECK(ptx.find("mul.rn.f32") != std::string::npos);
  }
  SUBCASE("not inlined: a .func called from two places") {
    // A body far above the inliner's threshold (NVPTX multiplies LLVM's by 11), called twice.
    std::string body;
    for (int r = 0; r < 150; ++r)
      body += "  h = (h * 2654435761 + x[(i + " + std::to_string(r) + ") % n]) ^ (h >> " +
              std::to_string(r % 13 + 3) + ");\n";
    std::string text = "fn heavy(in x: u32[], n: u32, i: u32) -> u32 {\n  var h: u32 = i;\n" + body +
                       "  return h;\n}\n"
                       "kernel k(in x: u32[], out z: u32[], n: u32) {\n"
                       "  let i = global_id.x;\n  z[i] = heavy(x, n, i) + heavy(x, n, i + 1);\n}\n";
    std::string ptx = compile(text);
    CHECK(occurrences(ptx, ".func  (.param .b32 func_retval0) heavy(") == 1);
    CHECK(occurrences(ptx, "call.uni (retval0),") == 2);
  }
  SUBCASE("at -O0 nothing is inlined: bool, u8 and f16 parameters pass to a .func") {
    std::string ptx = compile("fn pick(b: bool, x: u8, h: f16) -> bool { return b && x > 3 && h > f16(1.0); }\n"
                              "kernel k(out y: u8[], in x: u8[], flag: bool) {\n"
                              "  let i = global_id.x;\n  y[i] = select(pick(flag, x[i], f16(2.0)), u8(1), u8(0));\n}\n",
                              /*opt_level=*/0);
    CHECK(occurrences(ptx, ".func  (.param .b32 func_retval0) pick(") == 1);
    CHECK(occurrences(ptx, "call.uni (retval0),") == 1);
  }
  SUBCASE("an uncalled function is dropped") {
    std::string ptx = compile("fn unused(x: f32) -> f32 { return x; }\nkernel k(out y: f32[]) { y[0] = 1.0; }");
    CHECK(ptx.find("unused") == std::string::npos);
  }
}

TEST_CASE("functions: grid_sync inside a function gets the kernel's barrier word") {
  std::string ptx = compile("fn step() { grid_sync(); }\n@cooperative\nkernel k(inout y: f32[]) { step(); y[0] = 1.0; }");
  // The kernel's hidden barrier-word parameter is there, and the inlined grid barrier uses it.
  CHECK(ptx.find(".param .u64 k_param_1") != std::string::npos);
  CHECK(ptx.find("[k_param_1]") != std::string::npos);
  CHECK(ptx.find("atom.global.add.u32") != std::string::npos);
}

TEST_CASE("functions: parse errors and limits") {
  SUBCASE("a missing result type after ->") {
    auto c = check("fn f() -> { }\nkernel k(out y: f32[]) { }");
    CHECK(c.has(diag::Code::expected_type));
  }
  SUBCASE("too many parameters") {
    std::string params;
    for (int i = 0; i < 257; ++i) params += (i ? ", p" : "p") + std::to_string(i) + ": u32";
    auto c = check("fn f(" + params + ") { }\nkernel k(out y: f32[]) { }");
    CHECK(c.has(diag::Code::too_many_function_parameters));
  }
  SUBCASE("too many functions") {
    ir::Limits limits;
    limits.max_functions = 3;
    std::string text;
    for (int i = 0; i < 5; ++i) text += "fn f" + std::to_string(i) + "() { }\n";
    auto parsed = ir::parse(diag::SourceFile("f.pg", text + "kernel k(out y: f32[]) { }"), limits);
    REQUIRE(parsed.diagnostics.size() == 1);
    CHECK(parsed.diagnostics.items()[0].code == diag::Code::too_many_functions);
  }
}
