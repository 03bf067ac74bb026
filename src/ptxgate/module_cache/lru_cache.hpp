// Generic in-process cache pieces: a thread-safe bounded LRU map and a single-flight helper.
#pragma once

#include <cstddef>
#include <expected>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ptxgate::module_cache {

/// A map bounded by entry count. When full, inserting evicts exactly the least
/// recently used entries needed to make room (never everything). Every member
/// is safe to call from many threads. Evicted values are destroyed after the
/// lock is released, so a value whose destructor calls the driver (e.g. a
/// shared_ptr with a deleter that unloads a CUmodule) never runs under the lock;
/// holders of a shared_ptr keep using it after eviction.
template <class K, class V, class Hash = std::hash<K>>
class LruCache {
 public:
  /// `capacity` of 0 is treated as 1.
  explicit LruCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// The value for `key`, marking it most recently used.
  std::optional<V> get(const K& key) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return std::nullopt;
    }
    order_.splice(order_.begin(), order_, it->second);
    ++hits_;
    return it->second->second;
  }

  /// True when `key` is present; does not change recency.
  bool contains(const K& key) const {
    std::lock_guard lock(mutex_);
    return index_.contains(key);
  }

  /// Inserts or replaces `key`, making it most recently used; evicts the least
  /// recently used entries beyond the capacity.
  void put(const K& key, V value) {
    std::vector<V> evicted;
    {
      std::lock_guard lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        evicted.push_back(std::exchange(it->second->second, std::move(value)));
        order_.splice(order_.begin(), order_, it->second);
      } else {
        order_.emplace_front(key, std::move(value));
        index_.emplace(key, order_.begin());
      }
      while (order_.size() > capacity_) {
        index_.erase(order_.back().first);
        evicted.push_back(std::move(order_.back().second));
        order_.pop_back();
        ++evictions_;
      }
    }
  }

  /// Removes `key`; true when it was present.
  bool erase(const K& key) {
    std::optional<V> removed;
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    removed.emplace(std::move(it->second->second));
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }

  /// Removes every entry (an explicit request, e.g. when a context is destroyed).
  void clear() {
    std::list<std::pair<K, V>> dropped;
    std::lock_guard lock(mutex_);
    index_.clear();
    dropped.swap(order_);
  }

  /// Keys from most to least recently used.
  std::vector<K> keys_by_recency() const {
    std::lock_guard lock(mutex_);
    std::vector<K> keys;
    keys.reserve(order_.size());
    for (const auto& [k, v] : order_) keys.push_back(k);
    return keys;
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return order_.size();
  }
  size_t capacity() const { return capacity_; }
  size_t hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
  }
  size_t misses() const {
    std::lock_guard lock(mutex_);
    return misses_;
  }
  size_t evictions() const {
    std::lock_guard lock(mutex_);
    return evictions_;
  }

 private:
  using Order = std::list<std::pair<K, V>>;
  const size_t capacity_;
  mutable std::mutex mutex_;
  Order order_;
  std::unordered_map<K, typename Order::iterator, Hash> index_;
  size_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

/// Deduplicates concurrent work per key: while one thread (the leader) runs the
/// work for a key, every other thread asking for the same key waits for and
/// receives the leader's result instead of running the work again. Once the
/// leader finishes, the key is forgotten; callers cache results themselves
/// (e.g. in an LruCache, before the flight ends). `V` should carry errors as a
/// value (e.g. std::expected); an exception thrown by the work is rethrown in
/// the leader and in every waiter.
template <class K, class V, class Hash = std::hash<K>>
class SingleFlight {
 public:
  /// The result of `work()` for `key` and whether this call ran it (true) or
  /// joined a flight already in progress (false).
  template <class Work>
  std::pair<V, bool> run(const K& key, Work&& work) {
    std::promise<V> promise;
    {
      std::unique_lock lock(mutex_);
      auto it = flights_.find(key);
      if (it != flights_.end()) {
        std::shared_future<V> joined = it->second;
        lock.unlock();
        return {joined.get(), false};
      }
      flights_.emplace(key, promise.get_future().share());
    }
    try {
      V value = std::forward<Work>(work)();
      promise.set_value(value);
      forget(key);
      return {std::move(value), true};
    } catch (...) {
      promise.set_exception(std::current_exception());
      forget(key);
      throw;
    }
  }

  /// Keys with work in progress now.
  size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return flights_.size();
  }

 private:
  void forget(const K& key) {
    std::lock_guard lock(mutex_);
    flights_.erase(key);
  }
  mutable std::mutex mutex_;
  std::unordered_map<K, std::shared_future<V>, Hash> flights_;
};

/// An LruCache filled through a SingleFlight: `get_or_create(key, make)` returns
/// the cached value, or runs `make()` once for all concurrent callers of that key
/// and caches a success. `make` returns std::expected<V, E>; errors are returned
/// to every waiter and not cached, so a later call retries. This is the shape of
/// a per-context tier (loaded modules, functions, attributes, verdicts).
template <class K, class V, class E, class Hash = std::hash<K>>
class OnceLruCache {
 public:
  /// How a value was obtained.
  enum class Source { cached, created, joined };

  explicit OnceLruCache(size_t capacity) : lru_(capacity) {}

  template <class Make>
  [[nodiscard]] std::pair<std::expected<V, E>, Source> get_or_create(const K& key, Make&& make) {
    if (auto hit = lru_.get(key)) return {std::expected<V, E>(std::move(*hit)), Source::cached};
    auto [result, leader] = flights_.run(key, [&]() -> std::expected<V, E> {
      if (auto late_hit = lru_.get(key)) return std::move(*late_hit);
      std::expected<V, E> made = std::forward<Make>(make)();
      if (made) lru_.put(key, *made);
      return made;
    });
    return {std::move(result), leader ? Source::created : Source::joined};
  }

  LruCache<K, V, Hash>& lru() { return lru_; }
  const LruCache<K, V, Hash>& lru() const { return lru_; }

 private:
  LruCache<K, V, Hash> lru_;
  SingleFlight<K, std::expected<V, E>, Hash> flights_;
};

}  // namespace ptxgate::module_cache
