// The disk tier against a hostile cache directory: FIFOs, sockets, links and sparse files in
// place of entry files, a symbolic link as `v1` or as an entry, a regular file as an entry.
// Nothing may block, nothing outside the cache root may be read, written or removed.
#include <doctest/doctest.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <future>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "module_cache_test_support.hpp"

using namespace ptxgate::module_cache;
using namespace ptxgate::module_cache::testing;
using ptxgate::diag::Code;
using ptxgate::diag::Diagnostics;
namespace fs = std::filesystem;

namespace {

CacheKey key_of(const std::string& text) {
  CacheKeyInputs in;
  in.canonical_module_text = text;
  in.target_arch = "sm_90";
  return derive_key(in);
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Runs `op` with a deadline. Past it, the FIFO at `fifo` gets a writer (which releases an
/// open(2) blocked on it) and the check fails: the test reports the hang instead of hanging.
template <typename F>
auto within_deadline(const fs::path& fifo, F op) {
  auto result = std::async(std::launch::async, op);
  const bool in_time = result.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  CHECK_MESSAGE(in_time, "the cache operation blocked on a FIFO");
  if (!in_time) {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  return result.get();
}

/// A Unix socket bound at `path` (the descriptor stays open for the test's life).
int bind_socket(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string p = path.string();
  REQUIRE(p.size() < sizeof addr.sun_path);
  std::copy(p.begin(), p.end(), addr.sun_path);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

long max_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("disk cache: a FIFO in place of an entry file never blocks lookup, list or stats") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  REQUIRE(cache.enabled());
  const auto key = key_of("fifo");
  cache.publish(key, sample_entry(), {}, w);
  REQUIRE(w.empty());
  const auto entry = dir.path() / "v1" / key.hex;
  const char* file = nullptr;
  SUBCASE("manifest.json") { file = "manifest.json"; }
  SUBCASE("module.ptx") { file = "module.ptx"; }
  SUBCASE("module.cubin") { file = "module.cubin"; }
  fs::remove(entry / file);
  REQUIRE(::mkfifo((entry / file).c_str(), 0644) == 0);

  auto listed = within_deadline(entry / file, [&] { return cache.list(); });
  REQUIRE(listed.size() == 1);
  if (std::string_view(file) == "manifest.json") CHECK(listed[0].target_arch == "(corrupt)");
  auto stats = within_deadline(entry / file, [&] { return cache.stats(); });
  CHECK(stats.entries == 1);
  auto found = within_deadline(entry / file, [&] { return cache.lookup(key, "sm_90", w); });
  CHECK_FALSE(found.has_value());
  REQUIRE(count_code(w, Code::cache_entry_corrupt) == 1);
  CHECK(w.items()[0].message.find("FIFO") != std::string::npos);
  CHECK_FALSE(fs::exists(fs::symlink_status(entry)));  // the entry was removed: the key is usable again
  cache.publish(key, sample_entry(), {}, w);
  CHECK(cache.lookup(key, "sm_90", w).has_value());
}

TEST_CASE("disk cache: a socket or a link to a device in place of an entry file is corrupt, not read") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  const auto key = key_of("special");
  cache.publish(key, sample_entry(), {}, w);
  const auto entry = dir.path() / "v1" / key.hex;
  int socket_fd = -1;
  std::string expected;
  SUBCASE("a socket as the manifest") {
    fs::remove(entry / "manifest.json");
    socket_fd = bind_socket(entry / "manifest.json");
    expected = "socket";
  }
  SUBCASE("a link to /dev/zero as the PTX") {
    fs::remove(entry / "module.ptx");
    fs::create_symlink("/dev/zero", entry / "module.ptx");
    expected = "symbolic link";
  }
  auto listed = cache.list();
  REQUIRE(listed.size() == 1);
  CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
  REQUIRE(count_code(w, Code::cache_entry_corrupt) == 1);
  CHECK(w.items()[0].message.find(expected) != std::string::npos);
  CHECK(fs::exists(fs::path("/dev/zero")));
  if (socket_fd >= 0) ::close(socket_fd);
}

TEST_CASE("disk cache: a payload larger than its manifest records is refused before it is read") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  const auto key = key_of("sparse");
  cache.publish(key, sample_entry(), {}, w);
  const auto ptx = dir.path() / "v1" / key.hex / "module.ptx";
  // A sparse GiB: costs no disk, and would cost a GiB of memory if it were read whole.
  REQUIRE(::truncate(ptx.c_str(), off_t{1} << 30) == 0);
  const long before = max_rss_kib();
  CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
  CHECK(max_rss_kib() - before < 256 * 1024);
  REQUIRE(count_code(w, Code::cache_entry_corrupt) == 1);
  CHECK(w.items()[0].message.find("1073741824 bytes") != std::string::npos);
}

TEST_CASE("disk cache: clear never follows a symbolic link 'v1' out of the cache root") {
  auto dir = scratch_dir();
  const auto elsewhere = dir.path() / "elsewhere";
  const auto victim = elsewhere / key_of("victim").hex;
  fs::create_directories(victim);
  write_file(victim / "manifest.json", "not the cache's");
  fs::create_directories(elsewhere / ".trash-old");
  fs::last_write_time(elsewhere / ".trash-old", fs::file_time_type::clock::now() - std::chrono::hours(24));
  fs::create_directories(dir.path() / "cache");
  fs::create_directory_symlink(elsewhere, dir.path() / "cache" / "v1");

  Diagnostics w;
  auto cache = DiskCache::open(dir.path() / "cache", w);
  CHECK(cache.list().empty());
  CHECK(cache.clear(w) == 0);
  CHECK(count_code(w, Code::cache_io_error) == 1);
  CHECK_FALSE(cache.enabled());
  REQUIRE(count_code(w, Code::cache_unwritable) == 1);
  CHECK(w.items()[0].message.find("symbolic link") != std::string::npos);
  CHECK(read_file(victim / "manifest.json") == "not the cache's");
  CHECK(fs::exists(elsewhere / ".trash-old"));
  CHECK(fs::is_symlink(dir.path() / "cache" / "v1"));
  // No temporary directory was made through the link either.
  size_t in_elsewhere = 0;
  for (auto it = fs::directory_iterator(elsewhere); it != fs::directory_iterator(); ++it) ++in_elsewhere;
  CHECK(in_elsewhere == 2);
}

TEST_CASE("disk cache: a symbolic link as an entry is never followed; clear removes the link, not its target") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path() / "cache", w);
  const auto real = key_of("real entry");
  const auto linked = key_of("linked entry");
  cache.publish(real, sample_entry("sm_90", "R"), {}, w);
  REQUIRE(w.empty());
  const auto v1 = dir.path() / "cache" / "v1";
  // Outside the cache: a directory holding a copy of a real entry, a link to it at another key.
  fs::create_directories(dir.path() / "outside");
  fs::copy(v1 / real.hex, dir.path() / "outside" / "entry");
  fs::create_directory_symlink(dir.path() / "outside" / "entry", v1 / linked.hex);

  SUBCASE("list shows the link as corrupt, not as the entry it points to") {
    auto listed = cache.list();
    REQUIRE(listed.size() == 2);
    for (const auto& e : listed) {
      if (e.key == linked.hex) {
        CHECK(e.target_arch == "(corrupt)");
        CHECK(e.kernel_names.empty());
      } else {
        CHECK(e.kernel_names == std::vector<std::string>{"saxpy"});
      }
    }
  }
  SUBCASE("lookup is a miss that removes the link; the next publish stores the key") {
    CHECK_FALSE(cache.lookup(linked, "sm_90", w).has_value());
    CHECK(count_code(w, Code::cache_entry_corrupt) == 1);
    CHECK_FALSE(fs::exists(fs::symlink_status(v1 / linked.hex)));
    cache.publish(linked, sample_entry("sm_90", "L"), {}, w);
    auto got = cache.lookup(linked, "sm_90", w);
    REQUIRE(got.has_value());
    CHECK(entry_marker(*got) == "L");
  }
  SUBCASE("publish replaces the link without writing through it") {
    cache.publish(linked, sample_entry("sm_90", "L"), {}, w);
    CHECK(w.empty());
    CHECK(fs::is_directory(fs::symlink_status(v1 / linked.hex)));
    auto got = cache.lookup(linked, "sm_90", w);
    REQUIRE(got.has_value());
    CHECK(entry_marker(*got) == "L");
  }
  SUBCASE("clear removes the link and the real entry, nothing outside") {
    CHECK(cache.clear(w) == 2);
    CHECK(w.empty());
    CHECK_FALSE(fs::exists(fs::symlink_status(v1 / linked.hex)));
    CHECK_FALSE(fs::exists(v1 / real.hex));
  }
  // The directory the link pointed to is untouched in every case.
  CHECK(fs::exists(dir.path() / "outside" / "entry" / "manifest.json"));
  CHECK(fs::exists(dir.path() / "outside" / "entry" / "module.ptx"));
}

TEST_CASE("disk cache: a regular file at an entry's path does not block the key") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  const auto key = key_of("file in the way");
  const auto path = dir.path() / "v1" / key.hex;
  write_file(path, "in the way");
  auto listed = cache.list();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].target_arch == "(corrupt)");
  SUBCASE("publish replaces it") {
    cache.publish(key, sample_entry(), {}, w);
    CHECK(w.empty());
    CHECK(cache.lookup(key, "sm_90", w).has_value());
  }
  SUBCASE("clear removes it") {
    CHECK(cache.clear(w) == 1);
    CHECK_FALSE(fs::exists(fs::symlink_status(path)));
  }
}

TEST_CASE("disk cache: clear removes a stale temporary directory holding a link, not the link's target") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path() / "cache", w);
  fs::create_directories(dir.path() / "outside");
  write_file(dir.path() / "outside" / "keep", "keep");
  const auto temp = dir.path() / "cache" / "v1" / ".tmp-crashed";
  fs::create_directories(temp);
  fs::create_directory_symlink(dir.path() / "outside", temp / "module.ptx");
  fs::last_write_time(temp, fs::file_time_type::clock::now() - std::chrono::hours(1));
  CHECK(cache.clear(w) == 0);
  CHECK(w.empty());
  CHECK_FALSE(fs::exists(fs::symlink_status(temp)));
  CHECK(read_file(dir.path() / "outside" / "keep") == "keep");
}

TEST_CASE("disk cache: open_existing creates nothing, for a missing directory or an existing one") {
  auto dir = scratch_dir();
  Diagnostics w;
  SUBCASE("a missing directory is an empty cache") {
    const auto missing = dir.path() / "missing" / "cache";
    auto cache = DiskCache::open_existing(missing, w);
    CHECK(w.empty());
    CHECK(cache.list().empty());
    auto s = cache.stats();
    CHECK_FALSE(s.exists);
    CHECK_FALSE(s.enabled);
    CHECK(s.entries == 0);
    CHECK(cache.clear(w) == 0);
    CHECK_FALSE(cache.lookup(key_of("x"), "sm_90", w).has_value());
    cache.publish(key_of("x"), sample_entry(), {}, w);
    CHECK(w.empty());
    CHECK_FALSE(fs::exists(dir.path() / "missing"));
  }
  SUBCASE("an existing cache: inspected without any write") {
    {
      auto writer = DiskCache::open(dir.path() / "cache", w);
      writer.publish(key_of("one"), sample_entry(), {}, w);
    }
    const auto v1 = dir.path() / "cache" / "v1";
    auto names = [&] {
      std::vector<std::string> out;
      for (const auto& e : fs::directory_iterator(v1)) out.push_back(e.path().filename().string());
      return out;
    };
    const auto before = names();
    const auto mtime = fs::last_write_time(v1);
    auto cache = DiskCache::open_existing(dir.path() / "cache", w);
    CHECK(w.empty());
    auto s = cache.stats();
    CHECK(s.exists);
    CHECK(s.entries == 1);
    CHECK(cache.list().size() == 1);
    cache.publish(key_of("two"), sample_entry(), {}, w);
    CHECK(names() == before);
    CHECK(fs::last_write_time(v1) == mtime);  // not even a write probe made and removed a directory
  }
  SUBCASE("a directory that is a file is a PG4102, not a crash") {
    write_file(dir.path() / "a-file", "x");
    auto cache = DiskCache::open_existing(dir.path() / "a-file", w);
    CHECK(count_code(w, Code::cache_unwritable) == 1);
    CHECK(cache.list().empty());
  }
}
