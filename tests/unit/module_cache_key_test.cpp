// Unit tests for cache key derivation, content hashes, and the memoised libdevice fingerprint.
#include <doctest/doctest.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <future>
#include <sys/stat.h>
#include <functional>
#include <set>
#include <unistd.h>

#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "module_cache_test_support.hpp"

using namespace ptxgate::module_cache;

namespace {

CacheKeyInputs base_inputs() {
  CacheKeyInputs in;
  in.canonical_module_text = "kernel saxpy(y: buffer<f32>, a: f32) { y[gid()] = a; }\n";
  in.target_arch = "sm_90";
  in.ptx_isa_version = 78;
  in.codegen_options = "opt_level=3";
  in.ptxgate_version = "0.1.0";
  in.llvm_version = "19.1.7";
  in.libdevice_hash = "0123456789abcdef0123456789abcdef";
  in.ptxas_version = "Cuda compilation tools, release 13.0, V13.0.48";
  in.driver_version = "13000";
  return in;
}

bool is_lower_hex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST_CASE("cache key: same inputs give the same 32-hex-digit key") {
  auto a = derive_key(base_inputs());
  auto b = derive_key(base_inputs());
  CHECK(a == b);
  CHECK(a.hex.size() == 32);
  CHECK(is_lower_hex(a.hex));
  CHECK(CacheKey::from_hex(a.hex) == a);
}

TEST_CASE("cache key: every input field changes the key") {
  struct Change {
    const char* field;
    std::function<void(CacheKeyInputs&)> apply;
  };
  const Change changes[] = {
      {"canonical_module_text", [](auto& in) { in.canonical_module_text += " "; }},
      {"target_arch", [](auto& in) { in.target_arch = "sm_80"; }},
      {"ptx_isa_version", [](auto& in) { in.ptx_isa_version = 80; }},
      {"codegen_options", [](auto& in) { in.codegen_options = "opt_level=2"; }},
      {"ptxgate_version", [](auto& in) { in.ptxgate_version = "0.1.1"; }},
      {"llvm_version", [](auto& in) { in.llvm_version = "19.1.6"; }},
      {"libdevice_hash", [](auto& in) { in.libdevice_hash[0] = '1'; }},
      {"ptxas_version", [](auto& in) { in.ptxas_version = ""; }},
      {"driver_version", [](auto& in) { in.driver_version = "12080"; }},
  };
  const auto base = derive_key(base_inputs());
  std::set<std::string> seen{base.hex};
  for (const auto& change : changes) {
    CAPTURE(change.field);
    auto in = base_inputs();
    change.apply(in);
    auto key = derive_key(in);
    CHECK(key != base);
    CHECK(seen.insert(key.hex).second);
  }
}

TEST_CASE("cache key: bytes moved across a field boundary change the key") {
  auto left = base_inputs();
  left.canonical_module_text = "ab";
  left.target_arch = "c";
  auto right = base_inputs();
  right.canonical_module_text = "a";
  right.target_arch = "bc";
  CHECK(derive_key(left) != derive_key(right));

  auto empty_first = base_inputs();
  empty_first.ptxas_version = "";
  empty_first.driver_version = "x";
  auto empty_second = base_inputs();
  empty_second.ptxas_version = "x";
  empty_second.driver_version = "";
  CHECK(derive_key(empty_first) != derive_key(empty_second));
}

TEST_CASE("cache key: from_hex accepts only 32 lowercase hex digits") {
  CHECK(CacheKey::from_hex(std::string(32, 'a')).has_value());
  CHECK_FALSE(CacheKey::from_hex(std::string(31, 'a')).has_value());
  CHECK_FALSE(CacheKey::from_hex(std::string(33, 'a')).has_value());
  CHECK_FALSE(CacheKey::from_hex(std::string(32, 'A')).has_value());
  CHECK_FALSE(CacheKey::from_hex("../" + std::string(29, 'a')).has_value());
}

TEST_CASE("cache key: the inputs summary records every field but the module text") {
  auto in = base_inputs();
  auto s = in.summary();
  CHECK(s["target_arch"] == "sm_90");
  CHECK(s["ptxas_version"] == in.ptxas_version);
  CHECK(s["module_text_bytes"] == in.canonical_module_text.size());
  CHECK(s["module_text_xxh3_128"] == content_hash(in.canonical_module_text));
  CHECK_FALSE(s.contains("canonical_module_text"));
}

TEST_CASE("cache key: content_hash distinguishes single-byte changes") {
  std::string bytes(4096, 'x');
  auto h = content_hash(bytes);
  bytes[2048] = 'y';
  CHECK(content_hash(bytes) != h);
  CHECK(content_hash("") != content_hash(std::string(1, '\0')));
}

TEST_CASE("cache key: libdevice_hash hashes the file once and marks a missing file") {
  auto dir = testing::scratch_dir();
  auto path = (dir.path() / "libdevice.10.bc").string();
  CHECK(libdevice_hash(path).starts_with("missing:"));
  { std::ofstream(path, std::ios::binary) << "BC\xc0\xde first"; }
  auto first = libdevice_hash(path);
  CHECK(first == content_hash("BC\xc0\xde first"));
  { std::ofstream(path, std::ios::binary) << "changed"; }
  CHECK(libdevice_hash(path) == first);  // memoised for the process
}

TEST_CASE("cache key: libdevice_hash of a FIFO or a directory is 'missing', without blocking") {
  auto dir = testing::scratch_dir();
  auto fifo = (dir.path() / "libdevice.fifo.bc").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto result = std::async(std::launch::async, [&] { return libdevice_hash(fifo); });
  const bool in_time = result.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  CHECK_MESSAGE(in_time, "libdevice_hash blocked on a FIFO");
  if (!in_time) {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  CHECK(result.get() == "missing:" + fifo);
  CHECK(libdevice_hash(dir.path().string()) == "missing:" + dir.path().string());
}

TEST_CASE("cache key: key_inputs_for fills versions and keeps the cubin fields optional") {
  ptxgate::ir::Module module;
  CompileRequest request;
  request.codegen.target = ptxgate::ir::Target(80);
  request.produce_cubin = false;
  request.driver_version = "13000";
  auto in = key_inputs_for(module, request, request.toolkit());
  CHECK(in.target_arch == "sm_80");
  CHECK(in.ptxas_version.empty());
  CHECK(in.driver_version == "13000");
  CHECK(in.llvm_version == ptxgate::codegen::llvm_version());
  // The release and the code generator's fingerprint (16 hex digits of a hash of the src/ptxgate/ir/,
  // src/ptxgate/codegen/ and src/ptxgate/support/ sources), so that PTX cached by another build is never served.
  CHECK(in.ptxgate_version == ptxgate_version());
  const auto plus = in.ptxgate_version.find('+');
  REQUIRE(plus != std::string::npos);
  const std::string fingerprint = in.ptxgate_version.substr(plus + 1);
  CHECK(fingerprint.size() == 16);
  CHECK(fingerprint.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK_FALSE(in.libdevice_hash.empty());
  request.codegen.opt_level = 2;
  CHECK(derive_key(key_inputs_for(module, request, request.toolkit())) != derive_key(in));
  // LLVM's standard pipeline instead of ptxgate's kernel pipeline is another key.
  request.codegen.opt_level = 3;
  CHECK(derive_key(key_inputs_for(module, request, request.toolkit())) == derive_key(in));
  request.codegen.llvm_pipeline = true;
  CHECK(derive_key(key_inputs_for(module, request, request.toolkit())) != derive_key(in));
  CHECK(codegen_options_text(request.codegen) == "opt_level=3;pipeline=llvm");
  request.codegen.llvm_pipeline = false;
  CHECK(codegen_options_text(request.codegen) == "opt_level=3;pipeline=kernel-1");
  request.codegen.opt_level = 1;
  CHECK(codegen_options_text(request.codegen) == "opt_level=1");
}
