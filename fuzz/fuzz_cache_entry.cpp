// Fuzz target: arbitrary bytes as an on-disk cache entry (manifest + payloads) -> DiskCache::lookup.
//
// Input: one flag byte, then up to five parts separated by kSeparator: manifest, module.ptx,
// kernels.json, resources.json, module.cubin. Flags let the fuzzer get past the checksums:
//   bit 0  the manifest part is the manifest *body*; the harness wraps it with its self-checksum
//   bit 1  (with bit 0) the harness rewrites body.files with the true size and hash of each part
//   bit 2  (with bit 0) the harness sets body.key to the looked-up key
//   bit 3  module.cubin is listed (bit 1) but not written: a manifest without its payload
// Properties: lookup never crashes; a returned entry's manifest verifies, every payload equals
// the bytes on disk and matches its recorded hash, and the target is the requested one; a
// rejected entry gives a warning and is removed from the cache; `cache list` never throws.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"

namespace {

using namespace ptxgate;
namespace fs = std::filesystem;

constexpr std::string_view kSeparator = "\n--8<--\n";
constexpr const char* kKeyHex = "0123456789abcdef0123456789abcdef";
constexpr const char* kTarget = "sm_90";
constexpr const char* kPayloadNames[] = {"module.ptx", "kernels.json", "resources.json", "module.cubin"};

fs::path make_root() {
  const char* base = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string pattern = std::string(base) + "/ptxgate-fuzz-cache-XXXXXX";
  if (!::mkdtemp(pattern.data())) __builtin_trap();
  return pattern;
}

module_cache::DiskCache open_cache(const fs::path& root) {
  diag::Diagnostics warnings;
  auto cache = module_cache::DiskCache::open(root, warnings);
  if (!cache.enabled()) __builtin_trap();
  return cache;
}

struct Harness {
  fs::path root = make_root();
  module_cache::DiskCache cache = open_cache(root);
  module_cache::CacheKey key{kKeyHex};

  ~Harness() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  fs::path entry_dir() const { return root / "v1" / key.hex; }
};

Harness& harness() {
  static Harness h;
  return h;
}

std::vector<std::string_view> split_parts(std::string_view text) {
  std::vector<std::string_view> parts;
  for (;;) {
    size_t at = text.find(kSeparator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos || parts.size() == 5) break;
    text.remove_prefix(at + kSeparator.size());
  }
  return parts;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) __builtin_trap();
}

std::string utf8_dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// The manifest text the harness writes for `parts` under `flags`.
std::string manifest_text(unsigned flags, const std::vector<std::string_view>& parts) {
  if (!(flags & 1)) return std::string(parts[0]);
  auto body = nlohmann::json::parse(parts[0], nullptr, false);
  if (body.is_discarded()) body = std::string(parts[0]);  // still wrapped: the checksum matches, the shape does not
  if (body.is_object()) {
    if (flags & 2) {
      nlohmann::json files = nlohmann::json::object();
      for (size_t i = 1; i < parts.size(); ++i)
        files[kPayloadNames[i - 1]] = {{"size", parts[i].size()},
                                       {"xxh3_128", module_cache::content_hash(parts[i])}};
      body["files"] = files;
    }
    if (flags & 4) body["key"] = kKeyHex;
  }
  // Bytes that are not UTF-8 become U+FFFD, as they would in any JSON writer.
  nlohmann::json doc = {{"checksum", module_cache::content_hash(utf8_dump(body))}, {"manifest", body}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Checks a returned entry against the bytes that were written.
void check_accepted(const module_cache::CacheEntry& entry, const std::string& manifest,
                    const std::vector<std::string_view>& written) {
  if (entry.target_arch != kTarget) __builtin_trap();
  auto doc = nlohmann::json::parse(manifest, nullptr, false);
  if (!doc.is_object() || !doc.contains("manifest") || !doc.contains("checksum")) __builtin_trap();
  const auto& body = doc["manifest"];
  if (!doc["checksum"].is_string() || module_cache::content_hash(body.dump()) != doc["checksum"].get<std::string>())
    __builtin_trap();
  if (!body.is_object() || body.value("key", "") != kKeyHex || body.value("target_arch", "") != kTarget)
    __builtin_trap();
  const auto& files = body["files"];
  auto recorded_matches = [&](const char* name, std::string_view bytes) {
    if (!files.contains(name)) return false;
    const auto& info = files[name];
    return info.is_object() && info.value("xxh3_128", "") == module_cache::content_hash(bytes);
  };
  if (written.size() < 4 || entry.ptx != written[1] || !recorded_matches("module.ptx", written[1])) __builtin_trap();
  if (!recorded_matches("kernels.json", written[2]) || !recorded_matches("resources.json", written[3]))
    __builtin_trap();
  if (files.contains("module.cubin")) {
    if (written.size() < 5 || entry.cubin != written[4] || !recorded_matches("module.cubin", written[4]))
      __builtin_trap();
  } else if (!entry.cubin.empty()) {
    __builtin_trap();
  }
  auto kernels = nlohmann::json::parse(written[2], nullptr, false);
  if (!kernels.is_array() || kernels.size() != entry.kernels.size()) __builtin_trap();
}

/// A real entry, as publish() writes it, turned into fuzz inputs (verbatim and as a body).
void write_seeds(const fs::path& dir) {
  auto& h = harness();
  module_cache::CacheEntry entry;
  entry.target_arch = kTarget;
  entry.ptx_isa_version = 85;
  entry.ptx = ".version 8.5\n.target sm_90\n.address_size 64\n\n.visible .entry saxpy(\n.param .u64 y\n)\n{\nret;\n}\n";
  contract::KernelInfo k;
  k.name = "saxpy";
  k.params.push_back({"y", 0, true, ir::Access::inout, ir::Type::f32, 8});
  k.params.push_back({"a", 1, false, ir::Access::inout, ir::Type::f32, 4});
  k.required_block = {256, 1, 1};
  entry.kernels.push_back(k);
  entry.resources = {{"saxpy", {{"registers", 8}, {"static_shared_bytes", 0}}}};
  fs::create_directories(dir);
  for (bool with_cubin : {false, true}) {
    entry.cubin = with_cubin ? std::string("\x7f" "ELF fake cubin", 15) : std::string();
    std::error_code ec;
    fs::remove_all(h.entry_dir(), ec);
    diag::Diagnostics warnings;
    h.cache.publish(h.key, entry, nlohmann::json::object(), warnings);
    auto read = [&](const char* name) {
      std::ifstream in(h.entry_dir() / name, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    std::string manifest = read("manifest.json");
    std::string payloads;
    for (const char* name : kPayloadNames)
      if (with_cubin || std::string_view(name) != "module.cubin") payloads += std::string(kSeparator) + read(name);
    auto body = nlohmann::json::parse(manifest)["manifest"].dump(1);
    std::string tag = with_cubin ? "cubin" : "ptx";
    write_file(dir / ("verbatim-" + tag), std::string(1, '\x00') + manifest + payloads);
    write_file(dir / ("body-" + tag), std::string(1, '\x07') + body + payloads);
    write_file(dir / ("missing-payload-" + tag), std::string(1, '\x0f') + body + payloads);
  }
  std::error_code ec;
  fs::remove_all(h.entry_dir(), ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  harness();
  if (const char* seeds = std::getenv("PTXGATE_FUZZ_WRITE_SEEDS")) write_seeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  auto& h = harness();
  const unsigned flags = data[0];
  auto parts = split_parts(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  std::error_code ec;
  fs::remove_all(h.entry_dir(), ec);
  fs::create_directory(h.entry_dir(), ec);
  if (ec) __builtin_trap();
  std::string manifest = manifest_text(flags, parts);
  write_file(h.entry_dir() / "manifest.json", manifest);
  for (size_t i = 1; i < parts.size(); ++i) {
    if (i == 4 && (flags & 8)) continue;
    write_file(h.entry_dir() / kPayloadNames[i - 1], parts[i]);
  }
  for (const auto& summary : h.cache.list())  // `ptxgate cache list` reads the same manifest unverified
    if (summary.key != kKeyHex) __builtin_trap();
  diag::Diagnostics warnings;
  auto entry = h.cache.lookup(h.key, kTarget, warnings);
  if (entry) {
    check_accepted(*entry, manifest, parts);
  } else if (warnings.empty() || fs::exists(h.entry_dir())) {
    __builtin_trap();  // a rejected entry is reported and removed
  }
  if (!h.cache.enabled()) __builtin_trap();
  return 0;
}
