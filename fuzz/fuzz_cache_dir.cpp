// Fuzz target: arbitrary bytes as a program that builds a hostile cache directory -> every
// DiskCache operation (list, stats, lookup, publish, clear, open_existing).
//
// Each run starts from a cache holding one valid entry (key A) and an `outside` directory next
// to the cache root. The input is a sequence of 3-byte operations (op, a, b) that change the
// cache: make a directory, a file (a copy of one of A's files, or `b` bytes of junk), a FIFO, a
// symbolic link (into `outside`, to a device node there, to another entry or file), a sparse GiB file; at
// an entry's name (A, B, a non-key name, a .tmp-/.trash- leftover), at a file in an entry, or
// as `v1` itself. Properties, besides no crash and no hang (a FIFO is never opened, so a
// blocking open would be a libFuzzer timeout):
//   - nothing under `outside` changes (contents, kinds, names), its device node included (the
//     target never touches the real /dev: the node is its own, or a FIFO where mknod is not permitted);
//   - a lookup that hits returns the entry that was published for that key;
//   - when `v1` is a real directory: after lookup and publish of key B, a lookup of B hits,
//     and after clear no entry name is left in `v1`;
//   - open_existing on the cache creates and writes nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"

namespace {

using namespace ptxgate;
namespace fs = std::filesystem;

constexpr const char* kKeyA = "0123456789abcdef0123456789abcdef";
constexpr const char* kKeyB = "fedcba9876543210fedcba9876543210";
constexpr const char* kTarget = "sm_90";
constexpr const char* kEntryNames[] = {kKeyA, kKeyB, "not-a-key", ".tmp-left", ".trash-left"};
constexpr const char* kFileNames[] = {"manifest.json", "module.ptx", "module.cubin", "kernels.json", "resources.json",
                                      "extra"};

fs::path make_base() {
  const char* base = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string pattern = std::string(base) + "/ptxgate-fuzz-cache-dir-XXXXXX";
  if (!::mkdtemp(pattern.data())) __builtin_trap();
  return pattern;
}

module_cache::CacheEntry sample_entry(const std::string& marker) {
  module_cache::CacheEntry entry;
  entry.target_arch = kTarget;
  entry.ptx_isa_version = 85;
  entry.ptx = "// " + marker + "\n.version 8.5\n.target sm_90\n.address_size 64\n\n.visible .entry k()\n{\nret;\n}\n";
  entry.cubin = "\x7f" "ELF cubin of " + marker;
  contract::KernelInfo k;
  k.name = "k";
  entry.kernels.push_back(k);
  entry.resources = {{"k", {{"registers", 8}, {"marker", marker}}}};
  return entry;
}

struct Harness {
  fs::path base = make_base();
  fs::path root = base / "cache";
  fs::path outside = base / "outside";
  std::map<std::string, std::string> template_files;  ///< A's files as publish wrote them

  Harness() {
    reset();
    for (const char* name : kFileNames) {
      std::ifstream in(root / "v1" / kKeyA / name, std::ios::binary);
      if (in) template_files[name] = std::string(std::istreambuf_iterator<char>(in), {});
    }
  }
  ~Harness() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  void reset() {
    std::error_code ec;
    fs::remove_all(root, ec);
    fs::remove_all(outside, ec);
    fs::create_directories(outside / "dir", ec);
    std::ofstream(outside / "file") << "outside";
    std::ofstream(outside / "dir" / "manifest.json") << "{}";
    // A character device like /dev/zero (1, 5) of its own; a FIFO where mknod is not permitted.
    const fs::path device = outside / "device";
    if (::mknod(device.c_str(), S_IFCHR | 0644, ::makedev(1, 5)) != 0) ::mkfifo(device.c_str(), 0644);
    diag::Diagnostics w;
    auto cache = module_cache::DiskCache::open(root, w);
    if (!cache.enabled()) __builtin_trap();
    cache.publish(module_cache::CacheKey{kKeyA}, sample_entry("A"), nlohmann::json::object(), w);
    if (!w.empty()) __builtin_trap();
  }
};

Harness& harness() {
  static Harness h;
  return h;
}

/// Names, kinds, sizes and contents of everything under `dir`, links not followed.
std::string snapshot(const fs::path& dir) {
  std::string out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    auto st = it->symlink_status();
    out += it->path().lexically_relative(dir).string() + ":" + std::to_string(static_cast<int>(st.type()));
    if (st.type() == fs::file_type::regular) {
      const auto bytes = it->file_size(ec);
      out += ":" + std::to_string(bytes);
      if (!ec && bytes <= (1u << 20)) {  // a sparse GiB is compared by size, not read
        std::ifstream in(it->path(), std::ios::binary);
        out += ":" + std::string(std::istreambuf_iterator<char>(in), {});
      }
      ec.clear();
    }
    out += "\n";
  }
  return out;
}

void remove_any(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);  // does not follow links
}

void apply(Harness& h, uint8_t op, uint8_t a, uint8_t b, std::string_view junk) {
  const fs::path v1 = h.root / "v1";
  const fs::path entry = v1 / kEntryNames[a % std::size(kEntryNames)];
  const char* file_name = kFileNames[b % std::size(kFileNames)];
  const fs::path file = entry / file_name;
  std::error_code ec;
  switch (op % 10) {
    case 0:  // an entry name as an (empty) directory
      remove_any(entry);
      fs::create_directory(entry, ec);
      break;
    case 1: {  // a file in an entry: a copy of A's, or junk
      fs::create_directory(entry, ec);
      remove_any(file);
      auto it = h.template_files.find(file_name);
      std::ofstream out(file, std::ios::binary);
      if ((a & 0x80) == 0 && it != h.template_files.end()) out << it->second;
      else out << junk.substr(0, b);
      break;
    }
    case 2:  // a FIFO as a file of an entry
      fs::create_directory(entry, ec);
      remove_any(file);
      ::mkfifo(file.c_str(), 0644);
      break;
    case 3: {  // a link as a file of an entry
      fs::create_directory(entry, ec);
      remove_any(file);
      const fs::path targets[] = {h.outside / "file", h.outside / "device", v1 / kKeyA / file_name, h.outside / "dir"};
      fs::create_symlink(targets[b % std::size(targets)], file, ec);
      break;
    }
    case 4: {  // a link at an entry's name
      remove_any(entry);
      const fs::path targets[] = {h.outside / "dir", h.outside, v1 / kKeyA, h.outside / "file", h.outside / "device"};
      fs::create_symlink(targets[b % std::size(targets)], entry, ec);
      break;
    }
    case 5:  // a regular file or FIFO at an entry's name
      remove_any(entry);
      if (b & 1) ::mkfifo(entry.c_str(), 0644);
      else std::ofstream(entry) << junk.substr(0, b);
      break;
    case 6:  // v1 itself: a link to outside, or a file
      remove_any(v1);
      if (b & 1) fs::create_directory_symlink(h.outside, v1, ec);
      else std::ofstream(v1) << "v1";
      break;
    case 7:  // a sparse GiB in place of a file of an entry
      if (fs::is_directory(fs::symlink_status(entry, ec))) {
        if (fs::is_regular_file(fs::symlink_status(file, ec)) || !fs::exists(fs::symlink_status(file, ec))) {
          int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
          if (fd >= 0) {
            if (::ftruncate(fd, off_t{1} << 30) != 0) {}
            ::close(fd);
          }
        }
      }
      break;
    case 8: {  // age an entry (a .tmp-/.trash- leftover becomes stale)
      struct timespec times[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
      ::utimensat(AT_FDCWD, entry.c_str(), times, AT_SYMLINK_NOFOLLOW);
      break;
    }
    default:  // remove a file of an entry
      remove_any(file);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  harness();
  if (const char* seeds = std::getenv("PTXGATE_FUZZ_WRITE_SEEDS")) {
    // One seed per kind of operation, on each entry name and file.
    fs::create_directories(seeds);
    for (unsigned op = 0; op < 10; ++op)
      for (unsigned a = 0; a < std::size(kEntryNames); ++a) {
        std::string seed = {static_cast<char>(op), static_cast<char>(a), static_cast<char>(op * 7 + 1)};
        std::ofstream(fs::path(seeds) / ("op" + std::to_string(op) + "-entry" + std::to_string(a)), std::ios::binary)
            << seed << "junk {\"manifest\": {}}";
      }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& h = harness();
  h.reset();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t ops = 0;
  for (size_t i = 0; i + 3 <= size && ops < 16; i += 3, ++ops) apply(h, data[i], data[i + 1], data[i + 2], input);
  const std::string outside_before = snapshot(h.outside);
  const bool v1_is_directory = fs::is_directory(fs::symlink_status(h.root / "v1"));
  const module_cache::CacheKey a{kKeyA}, b{kKeyB};

  {  // inspection writes nothing
    const std::string root_before = snapshot(h.root);
    diag::Diagnostics w;
    auto inspect = module_cache::DiskCache::open_existing(h.root, w);
    (void)inspect.list();
    (void)inspect.stats();
    (void)inspect.lookup(a, kTarget, w);
    inspect.publish(b, sample_entry("B"), nlohmann::json::object(), w);
    if (snapshot(h.root) != root_before) __builtin_trap();
  }

  diag::Diagnostics w;
  auto cache = module_cache::DiskCache::open(h.root, w);
  if (cache.enabled() != v1_is_directory) __builtin_trap();
  for (const auto& s : cache.list())
    if (!module_cache::CacheKey::from_hex(s.key)) __builtin_trap();
  (void)cache.stats();
  if (auto got = cache.lookup(a, kTarget, w); got && got->resources["k"].value("marker", "") != "A") __builtin_trap();
  (void)cache.lookup(b, kTarget, w);
  cache.publish(b, sample_entry("B"), nlohmann::json::object(), w);
  auto got_b = cache.lookup(b, kTarget, w);
  if (got_b && got_b->resources["k"].value("marker", "") != "B") __builtin_trap();
  if (v1_is_directory && !got_b) __builtin_trap();  // nothing at B's name blocks the key
  diag::Diagnostics clear_w;
  (void)cache.clear(clear_w);
  if (v1_is_directory)
    for (const char* key : {kKeyA, kKeyB})
      if (fs::exists(fs::symlink_status(h.root / "v1" / key))) __builtin_trap();
  if (snapshot(h.outside) != outside_before) __builtin_trap();
  return 0;
}
