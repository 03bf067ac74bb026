// The one --arg grammar (commands/arg_spec): the same spec means the same thing to check and run.
#include <doctest/doctest.h>

#include "ptxgate/commands/arg_data.hpp"
#include "ptxgate/commands/arg_spec.hpp"

using namespace ptxgate;
using commands::ArgSpec;

namespace {
contract::ParamInfo param(const char* name, ir::Type type, bool buffer) {
  contract::ParamInfo p;
  p.name = name;
  p.type = type;
  p.is_buffer = buffer;
  return p;
}
}  // namespace

TEST_CASE("validation arg spec: forms are classified without materialising data") {
  auto y = param("y", ir::Type::f32, true);
  auto big = commands::parse_arg_spec("random:17179869184:3", &y, "y");
  REQUIRE(big);
  CHECK(big->kind == ArgSpec::Kind::random);
  CHECK(big->count == 17179869184ull);
  CHECK(big->seed == 3);
  CHECK(big->known_bytes() == 17179869184ull * 4);
  auto null = commands::parse_arg_spec("null", &y, "y");
  REQUIRE(null);
  CHECK(commands::describe_argument(*null).pointer_is_null);
  auto bytes = commands::parse_arg_spec("buffer:4000", &y, "y");
  REQUIRE(bytes);
  CHECK(commands::describe_argument(*bytes).buffer_bytes == 4000u);
  auto npy = commands::parse_arg_spec("data.npy", &y, "y");
  REQUIRE(npy);
  CHECK(npy->kind == ArgSpec::Kind::npy_file);
  auto raw = commands::parse_arg_spec("./1", &y, "y");
  REQUIRE(raw);
  CHECK(raw->kind == ArgSpec::Kind::raw_file);
  auto literal = commands::parse_arg_spec("1", &y, "y");  // a scalar in a buffer slot: the launch check reports it
  REQUIRE(literal);
  CHECK(literal->kind == ArgSpec::Kind::scalar);
  CHECK(commands::describe_argument(*literal).scalar_type == ir::Type::i32);
  auto typed = commands::parse_arg_spec("f64:2", &y, "y");
  REQUIRE(typed);
  CHECK(commands::describe_argument(*typed).size_bytes == 8);
}

TEST_CASE("validation arg spec: bad values are PG5002 whichever command asks") {
  auto a = param("a", ir::Type::f32, false);
  auto n = param("n", ir::Type::u32, false);
  auto y = param("y", ir::Type::f32, true);
  struct Case {
    const char* spec;
    const contract::ParamInfo* p;
  } cases[] = {{"hello", &a},          {"-5", &n},           {"f32:zzz", &a},       {"f128:1", &a},
               {"u32:99999999999999999999999", &n}, {"random:0x10", &y}, {"random:-1", &y},
               {"random:17179869185", &y}, {"buffer:-1", &y},   {"buffer:0x10", &y},   {"random:4:0x1", &y},
               {"fill:4:abc", &y},      {"random:4", &n},     {"", &a},              {"nonsense", nullptr}};
  for (const auto& c : cases) {
    CAPTURE(c.spec);
    auto r = commands::parse_arg_spec(c.spec, c.p, "p");
    REQUIRE_FALSE(r);
    CHECK(r.error().items()[0].code == diag::Code::invalid_argument_spec);
    // run's entry points reject the same spec the same way.
    if (c.p != nullptr && !c.p->is_buffer) CHECK_FALSE(commands::parse_scalar(c.spec, c.p->type, "p"));
    if (c.p != nullptr && c.p->is_buffer) CHECK_FALSE(commands::make_buffer_data(c.spec, c.p->type, "p"));
  }
}

TEST_CASE("backend arg spec: a directory or a device as an argument file is a located PG5001, never a crash") {
  for (const char* path : {"/", "/dev/zero", "/dev/null"}) {
    CAPTURE(path);
    auto r = commands::make_buffer_data(path, ir::Type::f32, "y");
    REQUIRE_FALSE(r);
    CHECK(r.error().items()[0].code == diag::Code::cannot_read_file);
    CHECK(r.error().items()[0].location.file == path);
  }
  auto npy = commands::make_buffer_data("/dev/zero.npy", ir::Type::f32, "y");
  REQUIRE_FALSE(npy);
  auto dir_npy = commands::read_npy("/");
  REQUIRE_FALSE(dir_npy);
  CHECK(dir_npy.error().items()[0].code == diag::Code::cannot_read_file);
}
