// support::thread_object: one object per thread and tag, the same one on every call, freed when its thread exits.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ptxgate/support/thread_object.hpp"

namespace {

std::atomic<int> g_made{0};
std::atomic<int> g_freed{0};

struct Counted {
  Counted() { g_made.fetch_add(1); }
  ~Counted() { g_freed.fetch_add(1); }
  int value = 0;
};
struct OtherTag {};

}  // namespace

TEST_CASE("thread_object: one object per thread, kept between calls, freed when the thread exits") {
  using ptxgate::support::thread_object;
  const int made = g_made.load(), freed = g_freed.load();
  std::thread worker([&] {
    Counted& first = thread_object<Counted>();
    first.value = 7;
    Counted& again = thread_object<Counted>();
    CHECK(&first == &again);
    CHECK(again.value == 7);
    // Another tag is another object of the same type.
    Counted& other = thread_object<Counted, OtherTag>();
    CHECK(&other != &first);
    CHECK(other.value == 0);
  });
  worker.join();
  CHECK(g_made.load() - made == 2);
  CHECK(g_freed.load() - freed == 2);  // both of the exited thread's objects
  // This thread's object is its own, not the exited thread's.
  Counted& mine = thread_object<Counted>();
  CHECK(mine.value == 0);
  mine.value = 3;
  CHECK(thread_object<Counted>().value == 3);
  CHECK(g_made.load() - made == 3);
}

TEST_CASE("thread_object: many threads at once each get their own") {
  using ptxgate::support::thread_object;
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < 1000; ++i) {
        std::vector<int>& mine = thread_object<std::vector<int>>();
        if (!mine.empty() && mine.back() != t * 1000 + i - 1) wrong.fetch_add(1);
        mine.push_back(t * 1000 + i);
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(wrong.load() == 0);
}
