// Unit tests for the on-disk cache tier: round trip, every kind of damaged entry, unusable directories, clear.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
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

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

fs::path entry_dir(const DiskCache& cache, const CacheKey& key) { return cache.directory() / "v1" / key.hex; }

}  // namespace

TEST_CASE("disk cache: publish then lookup returns the same entry") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  REQUIRE(w.empty());
  REQUIRE(cache.enabled());
  const auto key = key_of("round trip");
  const auto entry = sample_entry();

  CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
  CHECK(w.empty());
  cache.publish(key, entry, CacheKeyInputs{}.summary(), w);
  CHECK(w.empty());
  auto got = cache.lookup(key, "sm_90", w);
  CHECK(w.empty());
  REQUIRE(got.has_value());
  CHECK(got->target_arch == "sm_90");
  CHECK(got->ptx_isa_version == entry.ptx_isa_version);
  CHECK(got->ptx == entry.ptx);
  CHECK(got->cubin == entry.cubin);
  CHECK(got->resources == entry.resources);
  REQUIRE(got->kernels.size() == 1);
  CHECK(got->kernels[0].name == "saxpy");
  CHECK(got->kernels[0].params.size() == 2);
  CHECK(got->kernels[0].required_block == entry.kernels[0].required_block);
  CHECK(entry_marker(*got) == "A");
}

TEST_CASE("disk cache: an entry without cubin round-trips with an empty cubin") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  auto entry = sample_entry();
  entry.cubin.clear();
  const auto key = key_of("no cubin");
  cache.publish(key, entry, {}, w);
  auto got = cache.lookup(key, "sm_90", w);
  REQUIRE(got.has_value());
  CHECK(got->cubin.empty());
  CHECK_FALSE(fs::exists(entry_dir(cache, key) / "module.cubin"));
  CHECK(w.empty());
}

TEST_CASE("disk cache: damaged entries are reported, removed and never loaded") {
  struct Damage {
    const char* name;
    Code expected;
    std::function<void(const fs::path& entry, const fs::path& entries)> apply;
    const char* lookup_arch = "sm_90";
  };
  const Damage damages[] = {
      {"truncated ptx", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) {
         auto p = read_file(e / "module.ptx");
         write_file(e / "module.ptx", p.substr(0, p.size() / 2));
       }},
      {"flipped byte in cubin", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) {
         auto c = read_file(e / "module.cubin");
         c[c.size() / 2] ^= 0x01;
         write_file(e / "module.cubin", c);
       }},
      {"flipped byte in kernels.json", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) {
         auto k = read_file(e / "kernels.json");
         k[1] ^= 0x20;
         write_file(e / "kernels.json", k);
       }},
      {"manifest without payload", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) { fs::remove(e / "module.ptx"); }},
      {"payload without manifest", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) { fs::remove(e / "manifest.json"); }},
      {"garbage manifest", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) { write_file(e / "manifest.json", "{\"manifest\": [1, 2,"); }},
      {"empty manifest", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) { write_file(e / "manifest.json", ""); }},
      {"edited manifest field", Code::cache_entry_corrupt,
       [](const fs::path& e, const fs::path&) {
         auto m = read_file(e / "manifest.json");
         auto pos = m.find("\"ptx_isa_version\": 80");
         REQUIRE(pos != std::string::npos);
         m.replace(pos, 21, "\"ptx_isa_version\": 81");
         write_file(e / "manifest.json", m);
       }},
      {"entry of another key in this key's place", Code::cache_entry_foreign,
       [](const fs::path& e, const fs::path& entries) {
         fs::remove_all(e);
         fs::rename(entries / key_of("the other key").hex, e);
       }},
      {"entry for another architecture", Code::cache_entry_foreign, [](const fs::path&, const fs::path&) {},
       "sm_80"},
  };
  for (const auto& damage : damages) {
    CAPTURE(damage.name);
    auto dir = scratch_dir();
    Diagnostics w;
    auto cache = DiskCache::open(dir.path(), w);
    const auto key = key_of("damaged");
    cache.publish(key, sample_entry("sm_90", "good"), {}, w);
    cache.publish(key_of("the other key"), sample_entry("sm_90", "other"), {}, w);
    REQUIRE(w.empty());
    damage.apply(entry_dir(cache, key), cache.directory() / "v1");

    auto got = cache.lookup(key, damage.lookup_arch, w);
    CHECK_FALSE(got.has_value());
    REQUIRE(w.size() == 1);
    CHECK(w.items()[0].code == damage.expected);
    CHECK(w.items()[0].message.find(key.hex) != std::string::npos);
    CHECK_FALSE(w.items()[0].fix.empty());
    CHECK_FALSE(fs::exists(entry_dir(cache, key)));

    Diagnostics again;
    CHECK_FALSE(cache.lookup(key, "sm_90", again).has_value());
    CHECK(again.empty());
    cache.publish(key, sample_entry("sm_90", "fresh"), {}, again);
    auto fresh = cache.lookup(key, "sm_90", again);
    REQUIRE(fresh.has_value());
    CHECK(entry_marker(*fresh) == "fresh");
    CHECK(again.empty());
  }
}

TEST_CASE("disk cache: PTX whose .target disagrees with the manifest is foreign") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  auto entry = sample_entry("sm_90");
  entry.ptx.replace(entry.ptx.find(".target sm_90"), 13, ".target sm_80");
  const auto key = key_of("wrong ptx target");
  cache.publish(key, entry, {}, w);
  CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
  CHECK(has_code(w, Code::cache_entry_foreign));
}

TEST_CASE("disk cache: a directory that cannot be created disables the tier with one warning") {
  auto dir = scratch_dir();
  write_file(dir.path() / "a-file", "not a directory");
  Diagnostics w;
  auto cache = DiskCache::open(dir.path() / "a-file" / "cache", w);
  CHECK_FALSE(cache.enabled());
  REQUIRE(w.size() == 1);
  CHECK(w.items()[0].code == Code::cache_unwritable);
  CHECK(w.items()[0].severity == ptxgate::diag::Severity::warning);
  CHECK(w.items()[0].message.find("a-file") != std::string::npos);
  const auto key = key_of("unusable");
  cache.publish(key, sample_entry(), {}, w);
  CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
  CHECK(w.size() == 1);
}

TEST_CASE("disk cache: a read-only directory disables the tier with one warning") {
  auto dir = scratch_dir();
  fs::create_directories(dir.path() / "ro" / "v1");
  ::chmod((dir.path() / "ro" / "v1").c_str(), 0555);
  ::chmod((dir.path() / "ro").c_str(), 0555);
  const bool writes_blocked = ::access((dir.path() / "ro" / "v1").c_str(), W_OK) != 0;
  if (!writes_blocked) {
    MESSAGE("skipped: running with privileges that ignore permission bits (e.g. root); "
            "the unusable-directory path is covered by the not-a-directory case");
  } else {
    Diagnostics w;
    auto cache = DiskCache::open(dir.path() / "ro", w);
    CHECK_FALSE(cache.enabled());
    CHECK(count_code(w, Code::cache_unwritable) == 1);
  }
  ::chmod((dir.path() / "ro").c_str(), 0755);
  ::chmod((dir.path() / "ro" / "v1").c_str(), 0755);
}

TEST_CASE("disk cache: the directory removed while running gives one warning, then memory-only") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path() / "cache", w);
  const auto first = key_of("before removal");
  cache.publish(first, sample_entry(), {}, w);
  REQUIRE(cache.lookup(first, "sm_90", w).has_value());
  REQUIRE(w.empty());

  fs::remove_all(dir.path() / "cache");
  CHECK_FALSE(cache.lookup(first, "sm_90", w).has_value());
  CHECK(w.empty());
  cache.publish(key_of("after removal 1"), sample_entry(), {}, w);
  cache.publish(key_of("after removal 2"), sample_entry(), {}, w);
  CHECK(count_code(w, Code::cache_unwritable) == 1);
  CHECK(w.size() == 1);
  CHECK_FALSE(cache.enabled());
  CHECK_FALSE(cache.lookup(key_of("after removal 1"), "sm_90", w).has_value());
}

TEST_CASE("disk cache: list and stats describe published entries") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  cache.publish(key_of("one"), sample_entry("sm_90"), {}, w);
  auto no_cubin = sample_entry("sm_80");
  no_cubin.cubin.clear();
  CacheKeyInputs in;
  in.canonical_module_text = "two";
  in.target_arch = "sm_80";
  cache.publish(derive_key(in), no_cubin, in.summary(), w);
  REQUIRE(w.empty());

  auto entries = cache.list();
  REQUIRE(entries.size() == 2);
  for (const auto& e : entries) {
    CHECK(e.kernel_names == std::vector<std::string>{"saxpy"});
    CHECK(e.bytes > 0);
    CHECK(e.created_unix_seconds > 0);
    CHECK(e.has_cubin == (e.target_arch == "sm_90"));
  }
  auto s = cache.stats();
  CHECK(s.enabled);
  CHECK(s.entries == 2);
  CHECK(s.bytes == entries[0].bytes + entries[1].bytes);
  CHECK(s.directory == dir.path());
}

TEST_CASE("disk cache: clear removes entries and nothing else") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  for (const char* name : {"a", "b", "c"}) cache.publish(key_of(name), sample_entry(), {}, w);
  write_file(dir.path() / "README", "user file");
  write_file(dir.path() / "v1" / "notes.txt", "user file in the entries folder");
  fs::create_directories(dir.path() / "v1" / "not-a-key");
  fs::create_directories(dir.path() / "v1" / ".tmp-in-progress");

  CHECK(cache.clear(w) == 3);
  CHECK(w.empty());
  CHECK(cache.list().empty());
  CHECK(fs::exists(dir.path() / "README"));
  CHECK(fs::exists(dir.path() / "v1" / "notes.txt"));
  CHECK(fs::exists(dir.path() / "v1" / "not-a-key"));
  CHECK(fs::exists(dir.path() / "v1" / ".tmp-in-progress"));  // may belong to a running publisher
  CHECK(cache.enabled());
}

TEST_CASE("disk cache: default directory follows PTXGATE_CACHE_DIR, XDG_CACHE_HOME, HOME") {
  auto saved = [](const char* n) -> std::optional<std::string> {
    const char* v = std::getenv(n);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* n, const std::optional<std::string>& v) {
    if (v) ::setenv(n, v->c_str(), 1);
    else ::unsetenv(n);
  };
  auto pg = saved("PTXGATE_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  ::setenv("PTXGATE_CACHE_DIR", "/x/explicit", 1);
  ::setenv("XDG_CACHE_HOME", "/x/xdg", 1);
  ::setenv("HOME", "/x/home", 1);
  CHECK(DiskCache::default_directory() == fs::path("/x/explicit"));
  ::unsetenv("PTXGATE_CACHE_DIR");
  CHECK(DiskCache::default_directory() == fs::path("/x/xdg/ptxgate"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(DiskCache::default_directory() == fs::path("/x/home/.cache/ptxgate"));
  restore("PTXGATE_CACHE_DIR", pg);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

namespace {

/// Publishes sample_entry() under `key` in `cache`, then edits its manifest's body with `edit` and
/// writes it back with a checksum that matches: a manifest that verifies but holds what `edit` put.
template <class Edit>
void publish_edited(DiskCache& cache, const CacheKey& key, Diagnostics& w, Edit edit) {
  cache.publish(key, sample_entry(), {}, w);
  auto manifest_path = entry_dir(cache, key) / "manifest.json";
  auto doc = nlohmann::json::parse(read_file(manifest_path));
  edit(doc["manifest"]);
  doc["checksum"] = content_hash(doc["manifest"].dump());
  write_file(manifest_path, doc.dump());
}

}  // namespace

TEST_CASE("disk cache: a checksummed manifest with a mistyped field is corrupt, in lookup and list") {
  auto dir = scratch_dir();
  Diagnostics w;
  auto cache = DiskCache::open(dir.path(), w);
  const auto key = key_of("mistyped");
  publish_edited(cache, key, w, [](nlohmann::json& m) {
    m["target_arch"] = 90;
    m["kernels"] = "saxpy";
  });

  auto listed = cache.list();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].target_arch == "(corrupt)");
  CHECK(listed[0].kernel_names.empty());
  CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
  CHECK(count_code(w, Code::cache_entry_corrupt) == 1);
  CHECK(cache.list().empty());
}

TEST_CASE("disk cache: a checksummed manifest whose PTX ISA version does not fit its field is corrupt") {
  // A float or an integer beyond `unsigned` once reached nlohmann's get<unsigned>() (undefined
  // behaviour, found by fuzz_cache_entry); it must be a corrupt entry like any mistyped field.
  for (const nlohmann::json& version :
       {nlohmann::json(4.44444e73), nlohmann::json(uint64_t{1} << 40), nlohmann::json(-1), nlohmann::json(8.5)}) {
    CAPTURE(version.dump());
    auto dir = scratch_dir();
    Diagnostics w;
    auto cache = DiskCache::open(dir.path(), w);
    const auto key = key_of("isa-version");
    publish_edited(cache, key, w, [&](nlohmann::json& m) { m["ptx_isa_version"] = version; });

    CHECK_FALSE(cache.lookup(key, "sm_90", w).has_value());
    CHECK(count_code(w, Code::cache_entry_corrupt) == 1);
    CHECK(cache.list().empty());
  }
}
