// .npy round trips and rejections; `--arg` buffer specs and scalar literals.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ptxgate/commands/arg_data.hpp"
#include "ptxgate/commands/npy.hpp"

using namespace ptxgate;
using namespace ptxgate::commands;

namespace {

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("ptxgate-npy-test-" + std::to_string(getpid()) + "-" + name);
}

std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

std::vector<std::byte> npy_with_header(const std::string& dict, size_t payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string s = std::string("\x93NUMPY\x01\x00", 8);
  s.push_back(static_cast<char>(header.size() & 0xff));
  s.push_back(static_cast<char>(header.size() >> 8));
  s += header;
  s.append(payload, '\x01');
  return bytes_of(s);
}

}  // namespace

TEST_CASE("backend npy: every supported dtype round-trips through a file") {
  for (ir::Type t : {ir::Type::f32, ir::Type::f64, ir::Type::i32, ir::Type::u32, ir::Type::i64, ir::Type::u64}) {
    auto a = make_buffer_data("random:37:5", t, "x");
    REQUIRE(a);
    auto path = temp_path(std::string(ir::type_name(t)) + ".npy");
    REQUIRE(write_npy(path, *a));
    auto b = read_npy(path);
    REQUIRE(b);
    CHECK(b->type == t);
    CHECK(b->count == 37);
    CHECK(b->bytes == a->bytes);
    std::filesystem::remove(path);
  }
}

TEST_CASE("backend npy: the header is padded to 64 bytes and says 1-D C order") {
  HostArray a;
  a.type = ir::Type::f32;
  a.count = 3;
  a.bytes.resize(12);
  auto enc = encode_npy(a);
  REQUIRE(enc);
  std::string s(reinterpret_cast<const char*>(enc->data()), enc->size());
  CHECK((s.size() - 12) % 64 == 0);
  CHECK(s.find("'descr': '<f4'") != std::string::npos);
  CHECK(s.find("'fortran_order': False") != std::string::npos);
  CHECK(s.find("'shape': (3,)") != std::string::npos);
}

TEST_CASE("backend npy: unsupported files are rejected with a reason") {
  auto check_rejects = [](const std::vector<std::byte>& bytes, std::string_view reason) {
    auto r = parse_npy(bytes, "in.npy");
    REQUIRE_FALSE(r);
    CHECK(r.error().items()[0].code == diag::Code::invalid_argument_spec);
    CHECK(r.error().items()[0].message.find(reason) != std::string::npos);
  };
  check_rejects(bytes_of("hello world, not numpy"), "not a .npy file");
  check_rejects(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", 16), "'>f4'");
  check_rejects(npy_with_header("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", 8), "'<f2'");
  check_rejects(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", 16), "Fortran");
  check_rejects(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16), "2 dimensions");
  check_rejects(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", 16), "the shape needs 32");
  auto ok = parse_npy(npy_with_header("{'descr': '<u4', 'fortran_order': False, 'shape': (4,), }", 16), "in.npy");
  REQUIRE(ok);
  CHECK(ok->as<uint32_t>()[3] == 0x01010101u);
}

TEST_CASE("backend arg spec: random is seeded, in range and not all zero") {
  auto a = make_buffer_data("random:1000:7", ir::Type::f32, "x");
  auto b = make_buffer_data("random:1000:7", ir::Type::f32, "x");
  auto c = make_buffer_data("random:1000:8", ir::Type::f32, "x");
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(a->bytes == b->bytes);
  CHECK(a->bytes != c->bytes);
  int zeros = 0;
  for (float v : a->as<float>()) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
    zeros += v == 0.0f;
  }
  CHECK(zeros == 0);
  auto u = make_buffer_data("random:500", ir::Type::u32, "n");
  REQUIRE(u);
  uint32_t max_value = 0;
  for (uint32_t v : u->as<uint32_t>()) max_value = std::max(max_value, v);
  CHECK(max_value <= 1000);
  CHECK(max_value > 0);
}

TEST_CASE("backend arg spec: fill and iota") {
  auto f = make_buffer_data("fill:5:-2.5", ir::Type::f64, "x");
  REQUIRE(f);
  CHECK(f->count == 5);
  for (double v : f->as<double>()) CHECK(v == -2.5);
  auto i = make_buffer_data("iota:4", ir::Type::i64, "x");
  REQUIRE(i);
  CHECK(i->as<int64_t>()[3] == 3);
  auto fi = make_buffer_data("iota:3", ir::Type::f32, "x");
  REQUIRE(fi);
  CHECK(fi->as<float>()[2] == 2.0f);
  CHECK(fi->format_element(2) == "2");
}

TEST_CASE("backend arg spec: malformed buffer specs are PG5002 naming the spec and the forms") {
  for (const char* bad : {"random:", "random:0", "fill:4", "fill:4:abc", "iota:x", "random:4:5:6"}) {
    auto r = make_buffer_data(bad, ir::Type::f32, "x");
    REQUIRE_FALSE(r);
    CHECK(r.error().items()[0].code == diag::Code::invalid_argument_spec);
    CHECK(r.error().items()[0].message.find(bad) != std::string::npos);
  }
  auto missing = make_buffer_data("no/such/file.bin", ir::Type::f32, "x");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().items()[0].code == diag::Code::cannot_read_file);
  CHECK(missing.error().items()[0].fix.find("random:COUNT") != std::string::npos);
}

TEST_CASE("backend arg spec: .npy dtype must match the element type; raw files are element-sized") {
  auto a = make_buffer_data("iota:8", ir::Type::i32, "x");
  auto npy = temp_path("i32.npy");
  REQUIRE(write_npy(npy, *a));
  CHECK(make_buffer_data(npy.string(), ir::Type::i32, "x"));
  auto mismatch = make_buffer_data(npy.string(), ir::Type::f32, "x");
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().items()[0].message.find("<f4") != std::string::npos);
  std::filesystem::remove(npy);

  auto raw = temp_path("raw.bin");
  {
    std::ofstream out(raw, std::ios::binary);
    out.write("\0\0\x80\x3f\0\0\0\x40", 8);
  }
  auto r = make_buffer_data(raw.string(), ir::Type::f32, "x");
  REQUIRE(r);
  CHECK(r->as<float>()[0] == 1.0f);
  CHECK(r->as<float>()[1] == 2.0f);
  auto as_f64 = make_buffer_data(raw.string(), ir::Type::f64, "x");
  REQUIRE(as_f64);
  CHECK(as_f64->count == 1);
  {
    std::ofstream out(raw, std::ios::binary);
    out.write("\0\0\x80\x3f\0\0", 6);
  }
  auto odd = make_buffer_data(raw.string(), ir::Type::f32, "x");
  REQUIRE_FALSE(odd);
  CHECK(odd.error().items()[0].message.find("multiple of 4") != std::string::npos);
  std::filesystem::remove(raw);
}

TEST_CASE("backend arg spec: scalar literals are parsed per parameter type") {
  auto f = parse_scalar("2.5f", ir::Type::f32, "a");
  REQUIRE(f);
  CHECK(f->type() == ir::Type::f32);
  auto n = parse_scalar("0x10", ir::Type::u32, "n");
  REQUIRE(n);
  CHECK(n->bits() == 16);
  auto m = parse_scalar("-5", ir::Type::i32, "m");
  REQUIRE(m);
  CHECK(static_cast<int32_t>(m->bits()) == -5);
  CHECK(parse_scalar("true", ir::Type::bool_, "b"));
  for (auto [spec, type] : std::initializer_list<std::pair<const char*, ir::Type>>{
           {"-1", ir::Type::u32}, {"4294967296", ir::Type::u32}, {"2147483648", ir::Type::i32},
           {"1.5", ir::Type::i64}, {"abc", ir::Type::f32}, {"1e39", ir::Type::f32}, {"yes", ir::Type::bool_}}) {
    auto r = parse_scalar(spec, type, "p");
    REQUIRE_FALSE(r);
    CHECK(r.error().items()[0].code == diag::Code::invalid_argument_spec);
    CHECK(r.error().items()[0].message.find(spec) != std::string::npos);
    CHECK(r.error().items()[0].message.find(ir::type_name(type)) != std::string::npos);
  }
  auto split = split_assignment("x=random:4", "--arg");
  REQUIRE(split);
  CHECK(split->first == "x");
  CHECK(split->second == "random:4");
  CHECK_FALSE(split_assignment("=3", "--arg"));
  CHECK_FALSE(split_assignment("x", "--arg"));
}
