// Unit tests for the printer: canonical text, minimal parentheses, float spelling, round trips.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"

using namespace ptxgate;
using namespace ptxgate::ir;

namespace {

ParseResult parse_text(std::string text) {
  diag::SourceFile file("t.pg", std::move(text));
  return parse(file);
}

/// print(parse(text)), requiring a clean parse.
std::string canonical(const std::string& text) {
  ParseResult r = parse_text(text);
  INFO(diag::render_text(r.diagnostics));
  REQUIRE(r.diagnostics.empty());
  return print(r.module);
}

/// The canonical text of one expression, via a `let` in a kernel.
std::string expr_text(const std::string& expr) {
  std::string printed = canonical("kernel k() { let r = " + expr + "; }");
  size_t begin = printed.find("let r = ") + 8;
  return printed.substr(begin, printed.find(";\n", begin) - begin);
}

}  // namespace

TEST_CASE("printer: print . parse is a fixed point on every example") {
  size_t examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PTXGATE_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".pg") continue;
    ++examples;
    CAPTURE(entry.path().filename().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string once = canonical(ss.str());
    CHECK_FALSE(once.empty());
    std::string twice = canonical(once);
    CHECK(once == twice);
  }
  CHECK(examples >= 3);
}

TEST_CASE("printer: canonical layout") {
  std::string messy =
      "@workgroup( 64 )   @cooperative kernel   k( inout a : u32 [ ] , n:u32 ){ if(n>0){a[0]=1;}else if(n<0){}"
      "else{ a[0] = 2 ; } for i in 0..n step 2 { continue; } while (false) { break; } { return; } "
      "var v: f32; shared s: f32[4]; }";
  std::string expected =
      "@workgroup(64)\n"
      "@cooperative\n"
      "kernel k(inout a: u32[], n: u32) {\n"
      "  if (n > 0) {\n"
      "    a[0] = 1;\n"
      "  } else if (n < 0) {\n"
      "  } else {\n"
      "    a[0] = 2;\n"
      "  }\n"
      "  for i in 0..n step 2 {\n"
      "    continue;\n"
      "  }\n"
      "  while (false) {\n"
      "    break;\n"
      "  }\n"
      "  {\n"
      "    return;\n"
      "  }\n"
      "  var v: f32;\n"
      "  shared s: f32[4];\n"
      "}\n";
  CHECK(canonical(messy) == expected);
  CHECK(canonical("kernel a() {} kernel b() {}") == "kernel a() {\n}\n\nkernel b() {\n}\n");
}

TEST_CASE("printer: parentheses only where the tree needs them") {
  CHECK(expr_text("(a + b) * c") == "(a + b) * c");
  CHECK(expr_text("a + (b * c)") == "a + b * c");
  CHECK(expr_text("(a - b) - c") == "a - b - c");
  CHECK(expr_text("a - (b - c)") == "a - (b - c)");
  CHECK(expr_text("((a))") == "a");
  CHECK(expr_text("-(a + b)") == "-(a + b)");
  CHECK(expr_text("(-a) * b") == "-a * b");
  CHECK(expr_text("!(a && b) || c") == "!(a && b) || c");
  CHECK(expr_text("(a | b) & c") == "(a | b) & c");
  CHECK(expr_text("a << (b + c)") == "a << b + c");
  CHECK(expr_text("(a << b) + c") == "(a << b) + c");
  CHECK(expr_text("x[(i + 1)] * f32((n))") == "x[i + 1] * f32(n)");
  CHECK(expr_text("-(-1)") == "- -1");
  CHECK(expr_text("!(!b)") == "! !b");
  CHECK(expr_text("min(a, (b))") == "min(a, b)");
}

TEST_CASE("printer: literals keep their spelling; built floats stay floats") {
  CHECK(expr_text("0xFF + 1_000 + 2.50 + 1e-3") == "0xFF + 1_000 + 2.50 + 1e-3");
  ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.let_("a", 1.0);
  k.let_("b", 1e-5);
  k.let_("c", 0.1);
  k.let_("d", 1e300);
  k.let_("e", -2.5);
  k.let_("f", 0.0);
  Module m = mb.take();
  std::string text = print(m);
  CHECK(text.find("let a = 1.0;") != std::string::npos);
  CHECK(text.find("let f = 0.0;") != std::string::npos);
  CHECK(text.find("let e = -2.5;") != std::string::npos);
  ParseResult r = parse_text(text);
  REQUIRE(r.diagnostics.empty());
  const auto& body = r.module.kernels.at(0).body;
  const double values[] = {1.0, 1e-5, 0.1, 1e300};
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(body[i]->value->kind == ExprKind::float_literal);
    CHECK(body[i]->value->float_value == values[i]);
  }
  CHECK(print(r.module) == text);
}

TEST_CASE("printer: unroll and unroll(N) after the bounds and the step") {
  CHECK(canonical("kernel k(n: u32) { for i in 0..8  unroll {} for j in 0..n step 2 unroll( 4 ) {} }") ==
        "kernel k(n: u32) {\n"
        "  for i in 0..8 unroll {\n"
        "  }\n"
        "  for j in 0..n step 2 unroll(4) {\n"
        "  }\n"
        "}\n");
  // A loop bound may still be a variable named unroll.
  CHECK(canonical("kernel k(unroll: u32) { for i in 0..unroll unroll(unroll) {} }") ==
        "kernel k(unroll: u32) {\n  for i in 0..unroll unroll(unroll) {\n  }\n}\n");
}
