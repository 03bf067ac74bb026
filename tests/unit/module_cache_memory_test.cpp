// Unit tests for the in-process pieces: LRU eviction, single-flight, OnceLruCache and ModuleCache tiers.
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>

#include "ptxgate/module_cache/lru_cache.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "module_cache_test_support.hpp"

using namespace ptxgate::module_cache;
using namespace ptxgate::module_cache::testing;
using ptxgate::diag::Code;
using ptxgate::diag::Diagnostics;

namespace {

CacheKey key_of(const std::string& text) {
  CacheKeyInputs in;
  in.canonical_module_text = text;
  in.target_arch = "sm_90";
  return derive_key(in);
}

}  // namespace

TEST_CASE("lru cache: evicts the least recently used entry, one at a time") {
  LruCache<int, std::string> lru(3);
  lru.put(1, "one");
  lru.put(2, "two");
  lru.put(3, "three");
  CHECK(lru.get(1) == "one");  // 1 becomes most recent; 2 is now the oldest
  lru.put(4, "four");
  CHECK(lru.size() == 3);
  CHECK_FALSE(lru.contains(2));
  CHECK(lru.keys_by_recency() == std::vector<int>{4, 1, 3});
  CHECK(lru.evictions() == 1);
  lru.put(5, "five");
  CHECK(lru.keys_by_recency() == std::vector<int>{5, 4, 1});
  CHECK(lru.evictions() == 2);
  CHECK_FALSE(lru.get(3).has_value());
  CHECK(lru.misses() == 1);
  CHECK(lru.hits() == 1);
}

TEST_CASE("lru cache: replacing a key keeps the size and refreshes it") {
  LruCache<int, int> lru(2);
  lru.put(1, 10);
  lru.put(2, 20);
  lru.put(1, 11);
  CHECK(lru.size() == 2);
  CHECK(lru.evictions() == 0);
  CHECK(lru.keys_by_recency() == std::vector<int>{1, 2});
  CHECK(lru.get(1) == 11);
  CHECK(lru.erase(2));
  CHECK_FALSE(lru.erase(2));
  CHECK(lru.size() == 1);
}

TEST_CASE("lru cache: never holds more than its capacity; capacity 0 means 1") {
  LruCache<int, int> lru(8);
  for (int i = 0; i < 100; ++i) {
    lru.put(i, i);
    CHECK(lru.size() == std::min(i + 1, 8));
  }
  CHECK(lru.keys_by_recency().front() == 99);
  CHECK(lru.keys_by_recency().back() == 92);
  LruCache<int, int> tiny(0);
  tiny.put(1, 1);
  tiny.put(2, 2);
  CHECK(tiny.size() == 1);
  CHECK(tiny.contains(2));
}

TEST_CASE("lru cache: an evicted shared value stays valid for its holders") {
  LruCache<int, std::shared_ptr<std::string>> lru(1);
  lru.put(1, std::make_shared<std::string>("held"));
  auto held = *lru.get(1);
  lru.put(2, std::make_shared<std::string>("other"));
  CHECK_FALSE(lru.contains(1));
  CHECK(*held == "held");
  CHECK(held.use_count() == 1);
}

TEST_CASE("single flight: an exception reaches the caller and the key is released") {
  SingleFlight<int, int> flights;
  CHECK_THROWS_AS(flights.run(1, []() -> int { throw std::runtime_error("boom"); }), std::runtime_error);
  CHECK(flights.in_flight() == 0);
  auto [value, leader] = flights.run(1, [] { return 7; });
  CHECK(value == 7);
  CHECK(leader);
}

TEST_CASE("once lru cache: successes are cached, errors are not") {
  OnceLruCache<int, int, std::string> cache(4);
  int calls = 0;
  auto fail = [&]() -> std::expected<int, std::string> {
    ++calls;
    return std::unexpected(std::string("no"));
  };
  auto ok = [&]() -> std::expected<int, std::string> {
    ++calls;
    return 42;
  };
  auto [r1, s1] = cache.get_or_create(1, fail);
  CHECK_FALSE(r1.has_value());
  auto [r2, s2] = cache.get_or_create(1, ok);
  CHECK(r2 == 42);
  CHECK(s2 == decltype(cache)::Source::created);
  auto [r3, s3] = cache.get_or_create(1, ok);
  CHECK(r3 == 42);
  CHECK(s3 == decltype(cache)::Source::cached);
  CHECK(calls == 2);
}

TEST_CASE("module cache: compiled, then memory hit, then disk hit in a new instance") {
  auto dir = scratch_dir();
  int compiles = 0;
  CompileFn compile = [&]() -> std::expected<CacheEntry, Diagnostics> {
    ++compiles;
    return sample_entry();
  };
  const auto key = key_of("tiers");
  {
    ModuleCache cache({.memory_capacity = 4, .use_disk = true, .directory = dir.path()});
    auto first = cache.get_or_compile(key, "sm_90", compile);
    REQUIRE(first.has_value());
    CHECK(first->outcome == CacheOutcome::compiled);
    CHECK(first->warnings.empty());
    auto second = cache.get_or_compile(key, "sm_90", compile);
    REQUIRE(second.has_value());
    CHECK(second->outcome == CacheOutcome::memory_hit);
    CHECK(second->entry == first->entry);
    CHECK(cache.counters().compiles == 1);
    CHECK(cache.counters().memory_hits == 1);
  }
  ModuleCache fresh({.memory_capacity = 4, .use_disk = true, .directory = dir.path()});
  auto third = fresh.get_or_compile(key, "sm_90", compile);
  REQUIRE(third.has_value());
  CHECK(third->outcome == CacheOutcome::disk_hit);
  CHECK(entry_marker(*third->entry) == "A");
  CHECK(compiles == 1);
}

TEST_CASE("module cache: a corrupt disk entry is recompiled with a warning and the right result") {
  auto dir = scratch_dir();
  const auto key = key_of("corrupt then recompile");
  {
    ModuleCache writer({.memory_capacity = 4, .use_disk = true, .directory = dir.path()});
    REQUIRE(writer.get_or_compile(key, "sm_90", [] { return std::expected<CacheEntry, Diagnostics>(sample_entry()); }));
  }
  auto ptx_path = dir.path() / "v1" / key.hex / "module.ptx";
  std::filesystem::resize_file(ptx_path, 10);
  ModuleCache reader({.memory_capacity = 4, .use_disk = true, .directory = dir.path()});
  auto got = reader.get_or_compile(key, "sm_90", [] {
    return std::expected<CacheEntry, Diagnostics>(sample_entry("sm_90", "recompiled"));
  });
  REQUIRE(got.has_value());
  CHECK(got->outcome == CacheOutcome::compiled);
  CHECK(has_code(got->warnings, Code::cache_entry_corrupt));
  CHECK(entry_marker(*got->entry) == "recompiled");
}

TEST_CASE("module cache: an unusable directory warns once and still compiles correctly") {
  auto dir = scratch_dir();
  { std::ofstream(dir.path() / "file") << "x"; }
  ModuleCache cache({.memory_capacity = 4, .use_disk = true, .directory = dir.path() / "file" / "sub"});
  auto make = [] { return std::expected<CacheEntry, Diagnostics>(sample_entry()); };
  auto first = cache.get_or_compile(key_of("one"), "sm_90", make);
  REQUIRE(first.has_value());
  CHECK(count_code(first->warnings, Code::cache_unwritable) == 1);
  auto second = cache.get_or_compile(key_of("two"), "sm_90", make);
  REQUIRE(second.has_value());
  CHECK(second->warnings.empty());
  CHECK(second->outcome == CacheOutcome::compiled);
}

TEST_CASE("module cache: compile errors reach the caller and are not cached") {
  ModuleCache cache({.memory_capacity = 4, .use_disk = false});
  int calls = 0;
  auto failing = [&]() -> std::expected<CacheEntry, Diagnostics> {
    ++calls;
    Diagnostics d;
    d.add(Code::llvm_backend_failure, "failed");
    return std::unexpected(d);
  };
  auto r = cache.get_or_compile(key_of("fails"), "sm_90", failing);
  REQUIRE_FALSE(r.has_value());
  CHECK(has_code(r.error(), Code::llvm_backend_failure));
  CHECK_FALSE(cache.get_or_compile(key_of("fails"), "sm_90", failing).has_value());
  CHECK(calls == 2);
  CHECK(cache.counters().compile_failures == 2);
}

TEST_CASE("module cache: a throwing compile function becomes an internal error") {
  ModuleCache cache({.memory_capacity = 4, .use_disk = false});
  auto r = cache.get_or_compile(key_of("throws"), "sm_90",
                                []() -> std::expected<CacheEntry, Diagnostics> { throw std::runtime_error("bad"); });
  REQUIRE_FALSE(r.has_value());
  CHECK(has_code(r.error(), Code::internal_error));
}

TEST_CASE("module cache: an entry for another target from the compile function is rejected") {
  ModuleCache cache({.memory_capacity = 4, .use_disk = false});
  auto r = cache.get_or_compile(key_of("mismatch"), "sm_90",
                                [] { return std::expected<CacheEntry, Diagnostics>(sample_entry("sm_80")); });
  REQUIRE_FALSE(r.has_value());
  CHECK(has_code(r.error(), Code::internal_error));
}
