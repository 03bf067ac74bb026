// Concurrency tests of the module cache: many threads and two processes on one key; single-flight compiles.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "ptxgate/module_cache/lru_cache.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "module_cache_test_support.hpp"

using namespace ptxgate::module_cache;
using namespace ptxgate::module_cache::testing;
using ptxgate::diag::Code;
using ptxgate::diag::Diagnostics;

namespace {

constexpr int kThreads = 16;

CacheKey key_of(const std::string& text) {
  CacheKeyInputs in;
  in.canonical_module_text = text;
  in.target_arch = "sm_90";
  return derive_key(in);
}

/// What the readers of one key saw: complete entries by writer, and anything wrong.
struct Observations {
  std::atomic<int> hits{0}, misses{0}, mixed{0}, warnings{0};
};

/// Publishes its own variant of `key` and reads it back, `rounds` times; every hit must
/// be one writer's complete entry. Used by threads and by forked processes alike.
void publish_and_read(DiskCache& cache, const CacheKey& key, const std::string& writer, int rounds,
                      Observations& seen) {
  for (int i = 0; i < rounds; ++i) {
    Diagnostics w;
    cache.publish(key, sample_entry("sm_90", writer), {}, w);
    auto got = cache.lookup(key, "sm_90", w);
    if (got) {
      ++seen.hits;
      if (entry_marker(*got) == "mixed" || entry_marker(*got) == "none") ++seen.mixed;
    } else {
      ++seen.misses;
    }
    seen.warnings += static_cast<int>(w.size());
  }
}

}  // namespace

TEST_CASE("cache concurrency: 16 threads publishing and reading one key see only complete entries") {
  auto dir = scratch_dir();
  Diagnostics open_w;
  auto cache = DiskCache::open(dir.path(), open_w);
  REQUIRE(open_w.empty());
  const auto key = key_of("threads on one key");
  Observations seen;
  std::atomic<bool> stop{false};
  std::atomic<size_t> cleared{0};
  std::latch start(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      publish_and_read(cache, key, "writer" + std::to_string(t), 40, seen);
    });
  // A clearer keeps removing the entry so that publication races happen again and again.
  std::thread clearer([&] {
    start.arrive_and_wait();
    while (!stop.load()) {
      Diagnostics w;
      cleared += cache.clear(w);
      seen.warnings += static_cast<int>(w.size());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  clearer.join();
  CHECK(seen.mixed == 0);
  CHECK(seen.warnings == 0);
  CHECK(seen.hits > 0);
  CHECK(seen.hits + seen.misses == kThreads * 40);
  MESSAGE("hits " << seen.hits.load() << ", misses " << seen.misses.load() << ", entries cleared "
                  << cleared.load());
  CHECK(cache.enabled());
}

TEST_CASE("cache concurrency: two processes publishing one key at once never expose a mixed entry") {
  auto dir = scratch_dir();
  const auto key = key_of("two processes");
  pid_t children[2] = {-1, -1};
  for (int c = 0; c < 2; ++c) {
    children[c] = ::fork();
    REQUIRE(children[c] >= 0);
    if (children[c] == 0) {
      Diagnostics w;
      auto cache = DiskCache::open(dir.path(), w);
      Observations seen;
      for (int round = 0; round < 30; ++round) {
        publish_and_read(cache, key, c == 0 ? "process0" : "process1", 1, seen);
        if (round % 3 == c) cache.clear(w);
      }
      ::_exit(seen.mixed == 0 && seen.warnings == 0 && w.empty() && seen.hits > 0 ? 0 : 1);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  cache.publish(key, sample_entry("sm_90", "parent"), {}, w);
  auto final_entry = cache.lookup(key, "sm_90", w);
  REQUIRE(final_entry.has_value());
  CHECK(entry_marker(*final_entry) != "mixed");
  CHECK(w.empty());
}

TEST_CASE("cache concurrency: 16 threads asking for one key compile it once") {
  auto dir = scratch_dir();
  ModuleCache cache({.memory_capacity = 8, .use_disk = true, .directory = dir.path()});
  std::atomic<int> compiles{0};
  CompileFn compile = [&]() -> std::expected<CacheEntry, Diagnostics> {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return sample_entry();
  };
  const auto key = key_of("single flight");
  std::latch start(kThreads);
  std::mutex results_mutex;
  std::vector<std::shared_ptr<const CacheEntry>> entries;
  std::vector<CacheOutcome> outcomes;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      start.arrive_and_wait();
      auto r = cache.get_or_compile(key, "sm_90", compile);
      std::lock_guard lock(results_mutex);
      if (r) {
        entries.push_back(r->entry);
        outcomes.push_back(r->outcome);
      }
    });
  for (auto& t : threads) t.join();
  CHECK(compiles == 1);
  REQUIRE(entries.size() == kThreads);
  for (const auto& e : entries) CHECK(e == entries.front());
  CHECK(std::count(outcomes.begin(), outcomes.end(), CacheOutcome::compiled) == 1);
  auto c = cache.counters();
  CHECK(c.compiles == 1);
  CHECK(c.compiles + c.joined + c.memory_hits == kThreads);
}

TEST_CASE("cache concurrency: many threads on many keys with a small LRU stay bounded and correct") {
  ModuleCache cache({.memory_capacity = 4, .use_disk = false});
  std::atomic<int> compiles{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        int k = (i * 7 + t) % 12;
        auto marker = "key" + std::to_string(k);
        auto r = cache.get_or_compile(key_of(marker), "sm_90", [&, marker] {
          ++compiles;
          return std::expected<CacheEntry, Diagnostics>(sample_entry("sm_90", marker));
        });
        if (!r || entry_marker(*r->entry) != marker) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(cache.memory().size() <= 4);
  CHECK(compiles >= 12);
}

TEST_CASE("cache concurrency: OnceLruCache creates each value once under contention") {
  OnceLruCache<int, std::shared_ptr<int>, std::string> cache(64);
  std::atomic<int> creations{0}, wrong{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int k = 0; k < 32; ++k) {
        auto [value, source] = cache.get_or_create(k, [&]() -> std::expected<std::shared_ptr<int>, std::string> {
          ++creations;
          std::this_thread::sleep_for(std::chrono::microseconds(100));
          return std::make_shared<int>(k * 10);
        });
        if (!value || **value != k * 10) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(creations == 32);
  CHECK(wrong == 0);
}
