// Unit tests for the builder API: it builds the same modules as the parser.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"

using namespace ptxgate;
using namespace ptxgate::ir;

namespace {

std::string canonical_example(const std::string& name) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  diag::SourceFile file(name, ss.str());
  ParseResult r = parse(file);
  REQUIRE(r.diagnostics.empty());
  return print(r.module);
}

}  // namespace

TEST_CASE("builder: saxpy prints like the parsed example") {
  ModuleBuilder mb;
  auto& k = mb.kernel("saxpy");
  k.workgroup(256)
      .buffer("y", Access::inout, Type::f32)
      .buffer("x", Access::in, Type::f32)
      .scalar("a", Type::f32)
      .scalar("n", Type::u32);
  Ex i = k.let_("i", k.global_id());
  k.if_(i < k.name("n"), [&](BlockBuilder& b) {
    b.assign(b.index("y", i), b.name("a") * b.index("x", i) + b.index("y", i));
  });
  Module m = mb.take();
  CHECK(m.path == "<builder>");
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].params.size() == 4);
  CHECK(print(m) == canonical_example("saxpy.pg"));
}

TEST_CASE("builder: block_sum prints like the parsed example") {
  ModuleBuilder mb;
  auto& k = mb.kernel("block_sum");
  k.workgroup(256).buffer("total", Access::inout, Type::f32).buffer("x", Access::in, Type::f32).scalar("n", Type::u32);
  Ex partial = k.shared("partial", Type::f32, 256);
  Ex t = k.let_("t", k.thread_id());
  Ex i = k.let_("i", k.global_id());
  Ex v = k.var_("v", 0.0, Type::f32);
  k.if_(i < k.name("n"), [&](BlockBuilder& b) { b.assign(v, b.index("x", i)); });
  k.assign(k.index("partial", t), v);
  k.barrier();
  Ex stride = k.var_("stride", 128, Type::u32);
  k.while_(stride > 0, [&](BlockBuilder& b) {
    b.if_(t < stride, [&](BlockBuilder& c) {
      c.assign(c.index("partial", t), c.index("partial", t) + c.index("partial", t + stride));
    });
    b.barrier();
    b.assign(stride, stride / 2);
  });
  k.if_(t == 0, [&](BlockBuilder& b) {
    b.expr(b.atomic(Intrinsic::atomic_add, "total", 0, b.index("partial", 0)));
  });
  CHECK(partial.expr().name == "partial");
  CHECK(print(mb.take()) == canonical_example("block_sum.pg"));
}

TEST_CASE("builder: normalize prints like the parsed example") {
  ModuleBuilder mb;
  auto& k = mb.kernel("normalize");
  k.cooperative().workgroup(256);
  k.buffer("x", Access::inout, Type::f32).buffer("acc", Access::inout, Type::f32).scalar("n", Type::u32);
  Ex stride = k.let_("stride", k.grid_dim() * k.block_dim());
  k.for_("j", k.global_id(), k.name("n"), stride, [&](BlockBuilder& b) {
    b.expr(b.atomic(Intrinsic::atomic_add, "acc", b.name("j"), b.index("x", b.name("j"))));
  });
  k.grid_sync();
  Ex total = k.let_("total", k.index("acc", 0));
  k.for_("j", k.global_id(), k.name("n"), stride, [&](BlockBuilder& b) {
    Ex j = b.name("j");
    b.assign(b.index("x", j), b.index("x", j) / total);
  });
  Module m = mb.take();
  // The example accumulates into acc[0]; this one into acc[j]: the texts must differ only there.
  std::string built = print(m);
  std::string expected = canonical_example("normalize.pg");
  size_t at = expected.find("atomic_add(acc, 0,");
  REQUIRE(at != std::string::npos);
  expected.replace(at, 18, "atomic_add(acc, j,");
  CHECK(built == expected);
}

TEST_CASE("builder: expression handles, literals and control flow") {
  ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.buffer("o", Access::out, Type::i64).scalar("s", Type::i32);
  Ex s = k.name("s");
  Ex twice = s + s;  // a handle can be used more than once
  CHECK(twice.expr().operands.size() == 2);
  Ex neg = -3;
  CHECK(neg.expr().kind == ExprKind::unary);
  CHECK(neg.expr().operands[0]->int_value == 3);
  Ex big = INT64_MIN;
  CHECK(big.expr().operands[0]->int_value == 9223372036854775808ull);
  Ex flag = true;
  CHECK(flag.expr().kind == ExprKind::bool_literal);
  k.var_("acc", Type::i64);
  k.if_(s < 0, [](BlockBuilder& b) { b.assign("acc", 1); })
      .else_if(s == 0, [](BlockBuilder& b) { b.assign("acc", 2); })
      .else_([](BlockBuilder& b) { b.return_(); });
  k.for_("i", 0, 10, [&](BlockBuilder& b) {
    b.if_(b.name("i") % 2 == 1, [](BlockBuilder& c) { c.continue_(); });
    b.block([](BlockBuilder& c) { c.break_(); });
  });
  k.assign(k.index("o", 0), k.cast(Type::i64, k.select(!(s > 1) && flag, k.call(Intrinsic::abs, {s}), ~s << 2)));
  k.expr(k.call("mystery", {1.5}));
  k.expr(k.atomic_cas("o", 1, 0, 5));
  Module m = mb.take();
  std::string text = print(m);
  CHECK(text ==
        "kernel k(out o: i64[], s: i32) {\n"
        "  var acc: i64;\n"
        "  if (s < 0) {\n"
        "    acc = 1;\n"
        "  } else if (s == 0) {\n"
        "    acc = 2;\n"
        "  } else {\n"
        "    return;\n"
        "  }\n"
        "  for i in 0..10 {\n"
        "    if (i % 2 == 1) {\n"
        "      continue;\n"
        "    }\n"
        "    {\n"
        "      break;\n"
        "    }\n"
        "  }\n"
        "  o[0] = i64(select(!(s > 1) && true, abs(s), ~s << 2));\n"
        "  mystery(1.5);\n"
        "  atomic_cas(o, 1, 0, 5);\n"
        "}\n");
  const Expr& unknown = *m.kernels[0].body[4]->value;
  CHECK_FALSE(unknown.intrinsic.has_value());
  CHECK(m.kernels[0].body[5]->value->intrinsic == Intrinsic::atomic_cas);
  diag::SourceFile file("b.pg", text);
  ParseResult reparsed = parse(file);
  CHECK(reparsed.diagnostics.empty());
  CHECK(print(reparsed.module) == text);
}

TEST_CASE("builder: unroll marks the loop appended last") {
  ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.buffer("y", Access::inout, Type::f32).scalar("n", Type::u32);
  k.for_("i", 0, 8, [](BlockBuilder& b) { b.assign(b.index("y", b.name("i")), 1.0); }).unroll();
  k.for_("j", 0, k.name("n"), 2, [](BlockBuilder& b) { b.assign(b.index("y", b.name("j")), 2.0); }).unroll(4);
  CHECK(print(mb.take()) ==
        "kernel k(inout y: f32[], n: u32) {\n"
        "  for i in 0..8 unroll {\n"
        "    y[i] = 1.0;\n"
        "  }\n"
        "  for j in 0..n step 2 unroll(4) {\n"
        "    y[j] = 2.0;\n"
        "  }\n"
        "}\n");
  ModuleBuilder other;
  auto& k2 = other.kernel("k");
  k2.var_("x", Type::f32);
  CHECK_THROWS_AS(k2.unroll(), std::logic_error);
}
