// The on-disk tier: atomic publication by directory rename, verified reads, and the unusable-directory fallback.
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/diagnostics/internal/json_checks.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "ptxgate/support/temp_dir.hpp"

namespace ptxgate::module_cache {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFormat = "ptxgate-module-cache";
constexpr int kFormatVersion = 1;
constexpr const char* kManifest = "manifest.json";
constexpr const char* kPtx = "module.ptx";
constexpr const char* kCubin = "module.cubin";
constexpr const char* kKernels = "kernels.json";
constexpr const char* kResources = "resources.json";
constexpr const char* kTempPrefix = ".tmp-";
constexpr const char* kTrashPrefix = ".trash-";
/// A temporary or trash directory older than this is left over from a crashed process.
constexpr auto kStaleTemp = std::chrono::minutes(10);

/// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Reads a whole file relative to a directory descriptor; the error is an errno value.
std::expected<std::string, int> read_at(int dir_fd, const char* name) {
  Fd file(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (file.fd < 0) return std::unexpected(errno);
  std::string bytes;
  std::array<char, 1 << 16> chunk;
  for (;;) {
    ssize_t n = ::read(file.fd, chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(errno);
    }
    if (n == 0) break;
    bytes.append(chunk.data(), static_cast<size_t>(n));
  }
  return bytes;
}

/// Writes a whole new file; returns 0 or an errno value.
int write_file(const fs::path& path, std::string_view bytes) {
  Fd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (file.fd < 0) return errno;
  while (!bytes.empty()) {
    ssize_t n = ::write(file.fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(file.fd) != 0) return errno;
  int fd = file.fd;
  file.fd = -1;
  return ::close(fd) == 0 ? 0 : errno;
}

uint64_t inode_of(const fs::path& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

/// The first operand of the PTX `.target` directive, or empty when there is none.
std::string ptx_target(std::string_view ptx) {
  size_t pos = 0;
  while (pos < ptx.size()) {
    size_t end = ptx.find('\n', pos);
    std::string_view line = ptx.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(first).starts_with(".target")) {
      auto rest = line.substr(first + 7);
      size_t b = rest.find_first_not_of(" \t");
      if (b == std::string_view::npos) return {};
      size_t e = rest.find_first_of(" \t,;\r", b);
      return std::string(rest.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return {};
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}-{}-{}", ::getpid(), counter.fetch_add(1), now);
}

int64_t now_unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A warning about one entry, with its directory as the location's file.
void warn_entry(diag::Diagnostics& warnings, diag::Code code, const fs::path& entry_dir, std::string message) {
  diag::Location where;
  where.file = entry_dir.string();
  warnings.add(code, std::move(message), where,
               "the entry was removed and the module recompiled; if this repeats, check the disk or run "
               "`ptxgate cache clear`");
}

constexpr int kMaxJsonNesting = 64;

/// A parsed manifest: its body, after the self-checksum was verified.
std::expected<nlohmann::json, std::string> parse_manifest(const std::string& text) {
  if (!diag::json_nesting_within(text, kMaxJsonNesting))
    return std::unexpected(fmt::format("manifest nests deeper than {} levels", kMaxJsonNesting));
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::unexpected(std::string("manifest is not valid JSON"));
  auto body = doc.find("manifest");
  auto sum = doc.find("checksum");
  if (body == doc.end() || !body->is_object() || sum == doc.end() || !sum->is_string())
    return std::unexpected(std::string("manifest lacks its body or checksum"));
  if (content_hash(body->dump()) != sum->get<std::string>())
    return std::unexpected(std::string("manifest checksum does not match its content"));
  // value() would throw on a mistyped field; a checksummed manifest can still be hand-made.
  auto format = body->find("format");
  auto version = body->find("format_version");
  if (format == body->end() || !format->is_string() || *format != kFormat || version == body->end() ||
      !version->is_number_integer() || *version != kFormatVersion)
    return std::unexpected(std::string("manifest has an unknown format or version"));
  return *body;
}

}  // namespace

fs::path DiskCache::default_directory() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : std::string();
  };
  if (auto d = env("PTXGATE_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return fs::path(d) / "ptxgate";
  if (auto d = env("HOME"); !d.empty()) return fs::path(d) / ".cache" / "ptxgate";
  return {};
}

DiskCache::DiskCache(fs::path directory, bool enabled) : directory_(std::move(directory)), enabled_(enabled) {}

DiskCache::DiskCache(DiskCache&& other) noexcept
    : directory_(std::move(other.directory_)),
      enabled_(other.enabled_.load()),
      warned_unusable_(other.warned_unusable_.load()) {}

DiskCache DiskCache::disabled() {
  DiskCache cache({}, false);
  cache.warned_unusable_ = true;
  return cache;
}

fs::path DiskCache::entries_dir() const { return directory_ / "v1"; }

DiskCache DiskCache::open(const fs::path& directory, diag::Diagnostics& warnings) {
  DiskCache cache(directory.empty() ? default_directory() : directory, true);
  if (cache.directory_.empty()) {
    cache.disable(warnings, "no cache directory: none of PTXGATE_CACHE_DIR, XDG_CACHE_HOME, HOME is set", 0);
    return cache;
  }
  std::error_code ec;
  fs::create_directories(cache.entries_dir(), ec);
  if (ec) {
    cache.disable(warnings, "cannot create it", ec.value());
    return cache;
  }
  // Probe with a real write: permission bits say nothing when running as root or on a read-only mount.
  auto probe = support::TempDir::create(cache.entries_dir(), kTempPrefix);
  if (!probe) cache.disable(warnings, probe.error(), 0);
  return cache;
}

void DiskCache::disable(diag::Diagnostics& warnings, const std::string& what, int error_number) {
  enabled_.store(false, std::memory_order_release);
  if (warned_unusable_.exchange(true)) return;
  std::string reason = error_number ? fmt::format("{}: {}", what, std::strerror(error_number)) : what;
  diag::Location where;
  where.file = directory_.string();
  warnings.add(diag::Code::cache_unwritable,
               fmt::format("cache directory '{}' is unusable ({}); continuing with the in-memory cache only",
                           directory_.string(), reason),
               where, "set PTXGATE_CACHE_DIR to a writable directory with free space, or --cache-dir");
}

void DiskCache::discard(const fs::path& entry_dir, uint64_t expected_inode) {
  // Only move away the entry that was verified: a concurrent publisher may have replaced it.
  if (inode_of(entry_dir) != expected_inode) return;
  fs::path trash = entries_dir() / (std::string(kTrashPrefix) + entry_dir.filename().string() + "-" + unique_suffix());
  if (::rename(entry_dir.c_str(), trash.c_str()) != 0) return;
  std::error_code ec;
  fs::remove_all(trash, ec);
}

std::optional<CacheEntry> DiskCache::lookup(const CacheKey& key, const std::string& target_arch,
                                            diag::Diagnostics& warnings) {
  if (!enabled() || !CacheKey::from_hex(key.hex)) return std::nullopt;
  const fs::path entry_dir = entries_dir() / key.hex;
  Fd dir(::open(entry_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (dir.fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      warnings.add(diag::Code::cache_io_error,
                   fmt::format("cannot open cache entry '{}': {}", entry_dir.string(), std::strerror(errno)), {},
                   "check the permissions of the cache directory");
    return std::nullopt;
  }
  struct stat st{};
  if (::fstat(dir.fd, &st) != 0) return std::nullopt;
  const uint64_t inode = st.st_ino;
  // A file that vanished while the entry directory was moved away by another reader is a miss, not corruption.
  auto still_published = [&] { return inode_of(entry_dir) == inode; };
  auto reject = [&](diag::Code code, std::string why) -> std::optional<CacheEntry> {
    if (!still_published()) return std::nullopt;
    warn_entry(warnings, code, entry_dir, fmt::format("cache entry {} discarded: {}", key.hex, why));
    discard(entry_dir, inode);
    return std::nullopt;
  };

  auto manifest_text = read_at(dir.fd, kManifest);
  if (!manifest_text)
    return reject(diag::Code::cache_entry_corrupt,
                  fmt::format("cannot read its manifest ({})", std::strerror(manifest_text.error())));
  auto manifest = parse_manifest(*manifest_text);
  if (!manifest) return reject(diag::Code::cache_entry_corrupt, manifest.error());
  try {
    const auto& m = *manifest;
    if (m.at("key").get<std::string>() != key.hex)
      return reject(diag::Code::cache_entry_foreign,
                    fmt::format("its manifest is for key {}", m.at("key").get<std::string>()));
    const auto entry_arch = m.at("target_arch").get<std::string>();
    if (entry_arch != target_arch)
      return reject(diag::Code::cache_entry_foreign,
                    fmt::format("it was built for {}, but {} was requested", entry_arch, target_arch));

    std::map<std::string, std::string> payload;
    for (const auto& [name, info] : m.at("files").items()) {
      if (name != kPtx && name != kCubin && name != kKernels && name != kResources)
        return reject(diag::Code::cache_entry_corrupt, fmt::format("unexpected file '{}' in manifest", name));
      auto bytes = read_at(dir.fd, name.c_str());
      if (!bytes)
        return reject(diag::Code::cache_entry_corrupt,
                      fmt::format("payload '{}' is unreadable ({})", name, std::strerror(bytes.error())));
      const auto want_size = diag::json_integer<uint64_t>(info.at("size"));
      if (bytes->size() != want_size)
        return reject(diag::Code::cache_entry_corrupt,
                      fmt::format("payload '{}' has {} bytes, the manifest records {}", name, bytes->size(), want_size));
      if (content_hash(*bytes) != info.at("xxh3_128").get<std::string>())
        return reject(diag::Code::cache_entry_corrupt, fmt::format("payload '{}' fails its checksum", name));
      payload.emplace(name, std::move(*bytes));
    }
    for (const char* required : {kPtx, kKernels, kResources})
      if (!payload.contains(required))
        return reject(diag::Code::cache_entry_corrupt, fmt::format("manifest lists no '{}'", required));

    CacheEntry entry;
    entry.target_arch = entry_arch;
    entry.ptx_isa_version = m.at("ptx_isa_version").get<unsigned>();
    entry.ptx = std::move(payload[kPtx]);
    if (auto it = payload.find(kCubin); it != payload.end()) entry.cubin = std::move(it->second);
    if (auto t = ptx_target(entry.ptx); !t.empty() && t != target_arch)
      return reject(diag::Code::cache_entry_foreign, fmt::format("its PTX targets {}, not {}", t, target_arch));
    for (const char* json_file : {kKernels, kResources})
      if (!diag::json_nesting_within(payload[json_file], kMaxJsonNesting))
        return reject(diag::Code::cache_entry_corrupt,
                      fmt::format("{} nests deeper than {} levels", json_file, kMaxJsonNesting));
    auto kernels = nlohmann::json::parse(payload[kKernels], nullptr, false);
    if (kernels.is_discarded() || !kernels.is_array())
      return reject(diag::Code::cache_entry_corrupt, "kernels.json is not a JSON array");
    for (const auto& k : kernels) {
      auto info = codegen::kernel_info_from_json(k);
      if (!info) return reject(diag::Code::cache_entry_corrupt, "kernels.json: " + info.error());
      entry.kernels.push_back(std::move(*info));
    }
    entry.resources = nlohmann::json::parse(payload[kResources], nullptr, false);
    if (entry.resources.is_discarded())
      return reject(diag::Code::cache_entry_corrupt, "resources.json is not valid JSON");
    return entry;
  } catch (const std::exception& e) {
    return reject(diag::Code::cache_entry_corrupt, fmt::format("manifest field missing or mistyped ({})", e.what()));
  }
}

void DiskCache::publish(const CacheKey& key, const CacheEntry& entry, const nlohmann::json& inputs_summary,
                        diag::Diagnostics& warnings) {
  if (!enabled() || !CacheKey::from_hex(key.hex)) return;
  const fs::path final_dir = entries_dir() / key.hex;
  if (inode_of(final_dir) != 0) return;  // already published by someone: entries are immutable
  try {
    auto temp = support::TempDir::create(entries_dir(), std::string(kTempPrefix) + key.hex + "-");
    if (!temp) return disable(warnings, temp.error(), 0);

    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : entry.kernels) kernels.push_back(codegen::to_json(k));
    std::vector<std::pair<const char*, std::string>> files;
    files.emplace_back(kPtx, entry.ptx);
    if (!entry.cubin.empty()) files.emplace_back(kCubin, entry.cubin);
    files.emplace_back(kKernels, kernels.dump());
    files.emplace_back(kResources, entry.resources.dump());

    nlohmann::json listed = nlohmann::json::object();
    nlohmann::json kernel_names = nlohmann::json::array();
    for (const auto& k : entry.kernels) kernel_names.push_back(k.name);
    for (const auto& [name, bytes] : files) {
      if (int err = write_file(temp->path() / name, bytes)) return disable(warnings, "cannot write an entry", err);
      listed[name] = {{"size", bytes.size()}, {"xxh3_128", content_hash(bytes)}};
    }
    nlohmann::json body = {{"format", kFormat},
                           {"format_version", kFormatVersion},
                           {"key", key.hex},
                           {"target_arch", entry.target_arch},
                           {"ptx_isa_version", entry.ptx_isa_version},
                           {"kernels", kernel_names},
                           {"created_unix_seconds", now_unix_seconds()},
                           {"inputs", inputs_summary.is_null() ? nlohmann::json::object() : inputs_summary},
                           {"files", listed}};
    nlohmann::json manifest = {{"checksum", content_hash(body.dump())}, {"manifest", body}};
    if (int err = write_file(temp->path() / kManifest, manifest.dump(2)))
      return disable(warnings, "cannot write an entry manifest", err);

    if (::rename(temp->path().c_str(), final_dir.c_str()) == 0) {
      temp->release();
      return;
    }
    int err = errno;
    // Another publisher won the race: its complete entry stays, ours is dropped.
    if (err == EEXIST || err == ENOTEMPTY) return;
    disable(warnings, "cannot publish an entry", err);
  } catch (const std::exception& e) {
    disable(warnings, fmt::format("cannot publish an entry ({})", e.what()), 0);
  }
}

std::vector<EntrySummary> DiskCache::list() const {
  std::vector<EntrySummary> out;
  std::error_code ec;
  for (fs::directory_iterator it(entries_dir(), ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    if (!CacheKey::from_hex(name)) continue;
    EntrySummary s;
    s.key = name;
    std::error_code size_ec;
    for (fs::directory_iterator f(it->path(), size_ec), fend; !size_ec && f != fend; f.increment(size_ec)) {
      std::error_code file_ec;
      auto n = f->file_size(file_ec);
      if (!file_ec) s.bytes += n;
    }
    Fd dir(::open(it->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::expected<nlohmann::json, std::string> manifest = std::unexpected(std::string("unreadable"));
    if (dir.fd >= 0) {
      if (auto text = read_at(dir.fd, kManifest)) manifest = parse_manifest(*text);
    }
    try {
      // value() throws on a mistyped field: a checksummed but hand-edited manifest is still corrupt.
      if (!manifest) throw std::runtime_error(manifest.error());
      s.target_arch = manifest->value("target_arch", "");
      s.created_unix_seconds = diag::json_integer_or(*manifest, "created_unix_seconds", int64_t{0});
      for (const auto& k : manifest->value("kernels", nlohmann::json::array()))
        if (k.is_string()) s.kernel_names.push_back(k.get<std::string>());
      s.has_cubin = manifest->contains("files") && (*manifest)["files"].contains(kCubin);
    } catch (const std::exception&) {
      s.target_arch = "(corrupt)";
      s.kernel_names.clear();
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

DiskStats DiskCache::stats() const {
  DiskStats s;
  s.directory = directory_;
  s.enabled = enabled();
  for (const auto& e : list()) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

size_t DiskCache::clear(diag::Diagnostics& warnings) {
  size_t removed = 0;
  std::error_code ec;
  const auto stale_before = fs::file_time_type::clock::now() - kStaleTemp;
  std::vector<fs::path> to_remove;
  for (fs::directory_iterator it(entries_dir(), ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    std::error_code type_ec;
    if (!it->is_directory(type_ec) || it->is_symlink(type_ec)) continue;
    if (CacheKey::from_hex(name)) {
      to_remove.push_back(it->path());
    } else if (name.starts_with(kTempPrefix) || name.starts_with(kTrashPrefix)) {
      // Another publisher or remover may be working in it right now; only leftovers of a crash go.
      std::error_code time_ec;
      auto written = it->last_write_time(time_ec);
      if (!time_ec && written < stale_before) to_remove.push_back(it->path());
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    warnings.add(diag::Code::cache_io_error,
                 fmt::format("cannot read cache directory '{}': {}", entries_dir().string(), ec.message()), {},
                 "check the permissions of the cache directory");
  for (const auto& path : to_remove) {
    const bool is_entry = CacheKey::from_hex(path.filename().string()).has_value();
    fs::path target = path;
    if (is_entry) {
      // Move the entry out of the way first, so that no reader sees it half-deleted.
      target = entries_dir() / (std::string(kTrashPrefix) + path.filename().string() + "-" + unique_suffix());
      if (::rename(path.c_str(), target.c_str()) != 0) {
        if (errno != ENOENT)
          warnings.add(diag::Code::cache_io_error,
                       fmt::format("cannot remove cache entry '{}': {}", path.string(), std::strerror(errno)), {},
                       "check the permissions of the cache directory");
        continue;
      }
    }
    std::error_code rm_ec;
    fs::remove_all(target, rm_ec);
    if (rm_ec && rm_ec != std::errc::no_such_file_or_directory) {
      warnings.add(diag::Code::cache_io_error,
                   fmt::format("cannot remove '{}': {}", target.string(), rm_ec.message()), {},
                   "check the permissions of the cache directory");
    } else if (is_entry) {
      ++removed;
    }
  }
  return removed;
}

}  // namespace ptxgate::module_cache
