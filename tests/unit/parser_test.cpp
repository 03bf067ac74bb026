// Unit tests for the parser: every construct, precedence, recovery and input limits.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/parser.hpp"

using namespace ptxgate;
using namespace ptxgate::ir;

namespace {

ParseResult parse_text(std::string text, const Limits& limits = {}) {
  diag::SourceFile file("t.pg", std::move(text));
  return parse(file, limits);
}

std::vector<diag::Code> codes(const ParseResult& r) {
  std::vector<diag::Code> out;
  for (const auto& d : r.diagnostics) out.push_back(d.code);
  return out;
}

std::string read_example(const std::string& name) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("parser accepts every example") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PTXGATE_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".pg") continue;
    CAPTURE(entry.path().filename().string());
    ParseResult r = parse_text(read_example(entry.path().filename().string()));
    CHECK(r.diagnostics.empty());
    CHECK_FALSE(r.module.kernels.empty());
  }
}
