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
#include <utility>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "ptxgate/support/directory.hpp"
#include "ptxgate/support/files.hpp"
#include "ptxgate/support/unique_fd.hpp"
#include "ptxgate/toolchain/ptx_entries.hpp"

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

/// Per-file caps: a cache file larger than its cap is corrupt and is refused before it is read.
constexpr uint64_t kMaxManifestBytes = uint64_t{4} << 20;
constexpr uint64_t kMaxJsonPayloadBytes = uint64_t{64} << 20;   ///< kernels.json, resources.json
constexpr uint64_t kMaxBinaryPayloadBytes = uint64_t{512} << 20;  ///< module.ptx, module.cubin

uint64_t cap_of(std::string_view name) {
  if (name == kManifest) return kMaxManifestBytes;
  if (name == kKernels || name == kResources) return kMaxJsonPayloadBytes;
  return kMaxBinaryPayloadBytes;
}

/// Reads one file of an entry: a regular file only (a FIFO, device, socket or link is refused
/// unopened), at most `max_bytes`.
std::expected<std::string, support::ReadError> read_entry_file(int entry_fd, std::string_view name,
                                                               uint64_t max_bytes, const fs::path& entry_dir) {
  support::ReadLimits limits;
  limits.max_bytes = max_bytes;
  limits.follow_symlinks = false;
  return support::read_file_at(entry_fd, name, limits, (entry_dir / name).string());
}

/// `name` in `dir_fd`, not followed: its inode, or 0 when it does not exist.
uint64_t inode_at(int dir_fd, const std::string& name) {
  struct stat st{};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

/// Opens `<directory>/v1`. The cache root is opened as named (links in it followed: the user
/// chose it); `v1` and everything below is opened relative to it and never through a link:
/// ELOOP or ENOTDIR when `v1` is a symbolic link or not a directory.
std::expected<support::UniqueFd, int> open_entries(const fs::path& directory) {
  auto root = support::open_directory(directory.c_str());
  if (!root) return std::unexpected(root.error());
  return support::open_directory_at(root->get(), "v1");
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}-{}-{}", ::getpid(), counter.fetch_add(1), now);
}

/// A directory `<prefix><unique>` made in `dir_fd` (mode 0700), removed with its contents
/// (links not followed) unless released.
class TempAt {
 public:
  static std::expected<TempAt, int> create(int dir_fd, const std::string& prefix) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = prefix + unique_suffix();
      if (::mkdirat(dir_fd, name.c_str(), 0700) == 0) return TempAt(dir_fd, std::move(name));
      if (errno != EEXIST) return std::unexpected(errno);
    }
    return std::unexpected(EEXIST);
  }
  TempAt(TempAt&& other) noexcept : dir_fd_(other.dir_fd_), name_(std::exchange(other.name_, {})) {}
  TempAt& operator=(TempAt&&) = delete;
  ~TempAt() {
    if (!name_.empty()) (void)support::remove_tree_at(dir_fd_, name_);
  }
  const std::string& name() const { return name_; }
  void release() { name_.clear(); }

 private:
  TempAt(int dir_fd, std::string name) : dir_fd_(dir_fd), name_(std::move(name)) {}
  int dir_fd_;
  std::string name_;
};

/// Moves `name` in `entries_fd` aside to a `.trash-` name (so no reader sees it half-removed)
/// and removes it there, links not followed. Only when it is still `expected_inode` (nonzero):
/// a concurrent publisher may have replaced it. 0, ENOENT when it was gone or replaced, else an errno.
int discard_at(int entries_fd, const std::string& name, uint64_t expected_inode) {
  if (expected_inode == 0 || inode_at(entries_fd, name) != expected_inode) return ENOENT;
  const std::string trash = std::string(kTrashPrefix) + name + "-" + unique_suffix();
  if (::renameat(entries_fd, name.c_str(), entries_fd, trash.c_str()) != 0) return errno;
  return support::remove_tree_at(entries_fd, trash);
}

bool is_not_directory_error(int err) { return err == ELOOP || err == ENOTDIR; }

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

DiskCache::DiskCache(fs::path directory, bool enabled, bool inspect_only)
    : directory_(std::move(directory)), enabled_(enabled), inspect_only_(inspect_only) {}

DiskCache::DiskCache(DiskCache&& other) noexcept
    : directory_(std::move(other.directory_)),
      enabled_(other.enabled_.load()),
      warned_unusable_(other.warned_unusable_.load()),
      inspect_only_(other.inspect_only_) {}

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
  fs::create_directories(cache.directory_, ec);
  if (ec) {
    cache.disable(warnings, "cannot create it", ec.value());
    return cache;
  }
  auto root = support::open_directory(cache.directory_.c_str());
  if (!root) {
    cache.disable(warnings, "cannot open it", root.error());
    return cache;
  }
  if (::mkdirat(root->get(), "v1", 0755) != 0 && errno != EEXIST) {
    cache.disable(warnings, "cannot create 'v1' in it", errno);
    return cache;
  }
  auto entries = support::open_directory_at(root->get(), "v1");
  if (!entries) {
    if (is_not_directory_error(entries.error()))
      cache.disable(warnings, "'v1' in it is a symbolic link or not a directory, which is never followed", 0);
    else
      cache.disable(warnings, "cannot open 'v1' in it", entries.error());
    return cache;
  }
  // Probe with a real write: permission bits say nothing when running as root or on a read-only mount.
  auto probe = TempAt::create(entries->get(), kTempPrefix);
  if (!probe) cache.disable(warnings, "cannot create a temporary directory in 'v1'", probe.error());
  return cache;
}

DiskCache DiskCache::open_existing(const fs::path& directory, diag::Diagnostics& warnings) {
  DiskCache cache(directory.empty() ? default_directory() : directory, false, true);
  if (cache.directory_.empty()) {
    cache.disable(warnings, "no cache directory: none of PTXGATE_CACHE_DIR, XDG_CACHE_HOME, HOME is set", 0);
    return cache;
  }
  auto root = support::open_directory(cache.directory_.c_str());
  if (!root) {
    if (root.error() != ENOENT) cache.disable(warnings, "cannot open it", root.error());
    return cache;  // missing: an empty cache, created by the first compile that uses it
  }
  auto entries = support::open_directory_at(root->get(), "v1");
  if (!entries && is_not_directory_error(entries.error()))
    cache.disable(warnings, "'v1' in it is a symbolic link or not a directory, which is never followed", 0);
  else if (!entries && entries.error() != ENOENT)
    cache.disable(warnings, "cannot open 'v1' in it", entries.error());
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

std::optional<CacheEntry> DiskCache::lookup(const CacheKey& key, const std::string& target_arch,
                                            diag::Diagnostics& warnings) {
  if (!enabled() || !CacheKey::from_hex(key.hex)) return std::nullopt;
  const fs::path entry_dir = entries_dir() / key.hex;
  auto entries = open_entries(directory_);
  if (!entries) return std::nullopt;  // removed while running: the next publish reports it
  const int entries_fd = entries->get();
  auto dir = support::open_directory_at(entries_fd, key.hex);
  if (!dir) {
    const int err = dir.error();
    if (is_not_directory_error(err)) {
      // A link or file in the entry's place: never followed; moved away so the key is usable again.
      const uint64_t inode = inode_at(entries_fd, key.hex);
      if (discard_at(entries_fd, key.hex, inode) == ENOENT) return std::nullopt;
      warn_entry(warnings, diag::Code::cache_entry_corrupt, entry_dir,
                 fmt::format("cache entry {} discarded: it is a symbolic link or a file, not a directory", key.hex));
    } else if (err != ENOENT) {
      warnings.add(diag::Code::cache_io_error,
                   fmt::format("cannot open cache entry '{}': {}", entry_dir.string(), std::strerror(err)), {},
                   "check the permissions of the cache directory");
    }
    return std::nullopt;
  }
  struct stat st{};
  if (::fstat(dir->get(), &st) != 0) return std::nullopt;
  const uint64_t inode = st.st_ino;
  // A file that vanished while the entry directory was moved away by another reader is a miss, not corruption.
  auto still_published = [&] { return inode_at(entries_fd, key.hex) == inode; };
  auto reject = [&](diag::Code code, std::string why) -> std::optional<CacheEntry> {
    if (!still_published()) return std::nullopt;
    warn_entry(warnings, code, entry_dir, fmt::format("cache entry {} discarded: {}", key.hex, why));
    (void)discard_at(entries_fd, key.hex, inode);
    return std::nullopt;
  };

  auto manifest_text = read_entry_file(dir->get(), kManifest, kMaxManifestBytes, entry_dir);
  if (!manifest_text)
    return reject(diag::Code::cache_entry_corrupt, fmt::format("cannot read its manifest ({})", manifest_text.error().message));
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
      const auto want_size = diag::json_integer<uint64_t>(info.at("size"));
      if (want_size > cap_of(name))
        return reject(diag::Code::cache_entry_corrupt,
                      fmt::format("payload '{}' is recorded as {} bytes, more than the limit of {}", name, want_size,
                                  cap_of(name)));
      // Read at most the recorded size: a longer file is refused before it costs memory.
      auto bytes = read_entry_file(dir->get(), name, want_size, entry_dir);
      if (!bytes)
        return reject(diag::Code::cache_entry_corrupt,
                      fmt::format("payload '{}' is unreadable ({})", name, bytes.error().message));
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
    entry.ptx_isa_version = diag::json_integer<unsigned>(m.at("ptx_isa_version"));
    entry.ptx = std::move(payload[kPtx]);
    if (auto it = payload.find(kCubin); it != payload.end()) entry.cubin = std::move(it->second);
    auto header = toolchain::read_ptx_header(diag::SourceFile(kPtx, entry.ptx));
    if (!header)
      return reject(diag::Code::cache_entry_corrupt,
                    fmt::format("its PTX cannot be read: {}", header.error().items().front().message));
    if (header->target != target_arch)
      return reject(diag::Code::cache_entry_foreign,
                    fmt::format("its PTX targets {}, not {}", header->target, target_arch));
    for (const char* json_file : {kKernels, kResources})
      if (!diag::json_nesting_within(payload[json_file], kMaxJsonNesting))
        return reject(diag::Code::cache_entry_corrupt,
                      fmt::format("{} nests deeper than {} levels", json_file, kMaxJsonNesting));
    auto kernels = nlohmann::json::parse(payload[kKernels], nullptr, false);
    if (kernels.is_discarded() || !kernels.is_array())
      return reject(diag::Code::cache_entry_corrupt, "kernels.json is not a JSON array");
    for (const auto& k : kernels) {
      auto info = contract::kernel_info_from_json(k);
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
  if (!enabled() || inspect_only_ || !CacheKey::from_hex(key.hex)) return;
  auto entries = open_entries(directory_);
  if (!entries) return disable(warnings, "cannot open its 'v1' directory", entries.error());
  const int entries_fd = entries->get();
  struct stat st{};
  if (::fstatat(entries_fd, key.hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) return;  // already published by someone: entries are immutable
    // A link or file in the entry's place blocks the key: move it away, never following it.
    (void)discard_at(entries_fd, key.hex, static_cast<uint64_t>(st.st_ino));
  }
  try {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : entry.kernels) kernels.push_back(contract::to_json(k));
    std::vector<std::pair<const char*, std::string>> files;
    files.emplace_back(kPtx, entry.ptx);
    if (!entry.cubin.empty()) files.emplace_back(kCubin, entry.cubin);
    files.emplace_back(kKernels, kernels.dump());
    files.emplace_back(kResources, entry.resources.dump());
    // An entry that a lookup would refuse is not written: it would only be recompiled every time.
    for (const auto& [name, bytes] : files)
      if (bytes.size() > cap_of(name)) return;

    auto temp = TempAt::create(entries_fd, std::string(kTempPrefix) + key.hex + "-");
    if (!temp) return disable(warnings, "cannot create a temporary directory in 'v1'", temp.error());
    auto temp_fd = support::open_directory_at(entries_fd, temp->name());
    if (!temp_fd) return disable(warnings, "cannot open a temporary directory in 'v1'", temp_fd.error());

    nlohmann::json listed = nlohmann::json::object();
    nlohmann::json kernel_names = nlohmann::json::array();
    for (const auto& k : entry.kernels) kernel_names.push_back(k.name);
    for (const auto& [name, bytes] : files) {
      if (int err = support::write_new_file_at(temp_fd->get(), name, bytes))
        return disable(warnings, "cannot write an entry", err);
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
    const std::string manifest_text = manifest.dump(2);
    if (manifest_text.size() > kMaxManifestBytes) return;
    if (int err = support::write_new_file_at(temp_fd->get(), kManifest, manifest_text))
      return disable(warnings, "cannot write an entry manifest", err);

    if (::renameat(entries_fd, temp->name().c_str(), entries_fd, key.hex.c_str()) == 0) {
      temp->release();
      return;
    }
    int err = errno;
    // Another publisher won the race (its complete entry stays, ours is dropped), or a link or
    // file reappeared in the entry's place (the next lookup or publish moves it away).
    if (err == EEXIST || err == ENOTEMPTY || err == ENOTDIR) return;
    disable(warnings, "cannot publish an entry", err);
  } catch (const std::exception& e) {
    disable(warnings, fmt::format("cannot publish an entry ({})", e.what()), 0);
  }
}

std::vector<EntrySummary> DiskCache::list() const {
  std::vector<EntrySummary> out;
  auto entries = open_entries(directory_);
  if (!entries) return out;
  auto names = support::list_directory(entries->get());
  if (!names) return out;
  for (const auto& name : *names) {
    if (!CacheKey::from_hex(name)) continue;
    EntrySummary s;
    s.key = name;
    s.target_arch = "(corrupt)";
    struct stat st{};
    if (::fstatat(entries->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed meanwhile
    // A link or file in an entry's place is shown as corrupt and never followed to another entry.
    std::expected<support::UniqueFd, int> dir = std::unexpected(ENOTDIR);
    if (S_ISDIR(st.st_mode)) dir = support::open_directory_at(entries->get(), name);
    if (!dir) {
      if (S_ISREG(st.st_mode)) s.bytes = static_cast<uint64_t>(st.st_size);
      out.push_back(std::move(s));
      continue;
    }
    if (auto files = support::list_directory(dir->get())) {
      for (const auto& f : *files) {
        struct stat fst{};
        if (::fstatat(dir->get(), f.c_str(), &fst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(fst.st_mode))
          s.bytes += static_cast<uint64_t>(fst.st_size);
      }
    }
    const fs::path entry_dir = entries_dir() / name;
    std::expected<nlohmann::json, std::string> manifest = std::unexpected(std::string("unreadable"));
    if (auto text = read_entry_file(dir->get(), kManifest, kMaxManifestBytes, entry_dir)) manifest = parse_manifest(*text);
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
  struct stat st{};
  s.exists = !directory_.empty() && ::stat(directory_.c_str(), &st) == 0;
  if (inspect_only_) s.enabled = false;
  if (auto root = directory_.empty() ? std::unexpected(ENOENT) : support::open_directory(directory_.c_str())) {
    if (inspect_only_) {
      // Without writing: could a compile store entries here (in v1, or create v1)?
      auto entries = support::open_directory_at(root->get(), "v1");
      if (entries)
        s.enabled = ::faccessat(entries->get(), ".", W_OK | X_OK, AT_EACCESS) == 0;
      else
        s.enabled = entries.error() == ENOENT && ::faccessat(root->get(), ".", W_OK | X_OK, AT_EACCESS) == 0;
    }
  }
  for (const auto& e : list()) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

size_t DiskCache::clear(diag::Diagnostics& warnings) {
  size_t removed = 0;
  auto io_warning = [&](std::string message) {
    warnings.add(diag::Code::cache_io_error, std::move(message), {}, "check the permissions of the cache directory");
  };
  auto entries = open_entries(directory_);
  if (!entries) {
    const int err = entries.error();
    if (is_not_directory_error(err))
      io_warning(fmt::format("'{}' is a symbolic link or not a directory; it is not followed and nothing was removed",
                             entries_dir().string()));
    else if (err != ENOENT)
      io_warning(fmt::format("cannot read cache directory '{}': {}", entries_dir().string(), std::strerror(err)));
    return 0;
  }
  const int entries_fd = entries->get();
  auto names = support::list_directory(entries_fd);
  if (!names) {
    io_warning(fmt::format("cannot read cache directory '{}': {}", entries_dir().string(), std::strerror(names.error())));
    return 0;
  }
  const auto stale_before =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() - kStaleTemp);
  for (const auto& name : *names) {
    struct stat st{};
    if (::fstatat(entries_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed meanwhile
    int err = 0;
    if (CacheKey::from_hex(name)) {
      // Any kind of file at an entry's name goes; a link is removed itself, never its target.
      // Moved aside first, so that no reader sees an entry half-deleted.
      err = discard_at(entries_fd, name, static_cast<uint64_t>(st.st_ino));
      if (err == 0) ++removed;
    } else if (name.starts_with(kTempPrefix) || name.starts_with(kTrashPrefix)) {
      // Another publisher or remover may be working in it right now; only leftovers of a crash go.
      if (st.st_mtime < stale_before) err = support::remove_tree_at(entries_fd, name);
    }
    if (err != 0 && err != ENOENT)
      io_warning(fmt::format("cannot remove '{}': {}", (entries_dir() / name).string(), std::strerror(err)));
  }
  return removed;
}

}  // namespace ptxgate::module_cache
