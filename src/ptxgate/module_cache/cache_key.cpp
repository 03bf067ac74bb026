// Cache key derivation (XXH3-128 over length-prefixed fields) and the memoised libdevice fingerprint.
#include "ptxgate/module_cache/cache_key.hpp"

#include <cstdint>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <xxhash.h>

#include "ptxgate/codegen_fingerprint.hpp"
#include "ptxgate/support/files.hpp"


namespace ptxgate::module_cache {
namespace {

std::string hex128(XXH128_hash_t h) { return fmt::format("{:016x}{:016x}", h.high64, h.low64); }

/// Appends a field as an 8-byte little-endian length followed by its bytes.
void append_field(std::string& out, std::string_view field) {
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(field);
}

}  // namespace

nlohmann::json CacheKeyInputs::summary() const {
  return {{"module_text_bytes", canonical_module_text.size()},
          {"module_text_xxh3_128", content_hash(canonical_module_text)},
          {"target_arch", target_arch},
          {"ptx_isa_version", ptx_isa_version},
          {"codegen_options", codegen_options},
          {"ptxgate_version", ptxgate_version},
          {"llvm_version", llvm_version},
          {"libdevice_hash", libdevice_hash},
          {"ptxas_version", ptxas_version},
          {"driver_version", driver_version}};
}

std::optional<CacheKey> CacheKey::from_hex(std::string_view text) {
  if (text.size() != 32) return std::nullopt;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  return CacheKey{std::string(text)};
}

CacheKey derive_key(const CacheKeyInputs& in) {
  std::string buf;
  buf.reserve(in.canonical_module_text.size() + 256);
  append_field(buf, "ptxgate-module-cache-key-v1");
  append_field(buf, in.canonical_module_text);
  append_field(buf, in.target_arch);
  append_field(buf, std::to_string(in.ptx_isa_version));
  append_field(buf, in.codegen_options);
  append_field(buf, in.ptxgate_version);
  append_field(buf, in.llvm_version);
  append_field(buf, in.libdevice_hash);
  append_field(buf, in.ptxas_version);
  append_field(buf, in.driver_version);
  return CacheKey{hex128(XXH3_128bits(buf.data(), buf.size()))};
}

std::string content_hash(std::string_view bytes) { return hex128(XXH3_128bits(bytes.data(), bytes.size())); }

/// libdevice is about 500 KB; anything past this is not a libdevice.
constexpr uint64_t kMaxLibdeviceBytes = uint64_t{64} << 20;

std::string libdevice_hash(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> memo;
  std::lock_guard lock(mutex);
  if (auto it = memo.find(path); it != memo.end()) return it->second;
  // Bounded and type-checked: a FIFO or device named as libdevice never blocks or exhausts memory.
  support::ReadLimits limits;
  limits.max_bytes = kMaxLibdeviceBytes;
  auto bytes = support::read_file(path, limits);
  std::string result = bytes ? content_hash(*bytes) : "missing:" + path;
  // A missing file is not memoised, so that its later appearance changes the key.
  if (!result.starts_with("missing:")) memo.emplace(path, result);
  return result;
}

std::string ptxgate_version() {
  // The release, then the fingerprint of the sources that generate PTX: a ptxgate whose code
  // generator changed (a new commit, a local edit) never reads PTX an older one cached.
#ifdef PTXGATE_VERSION
  return PTXGATE_VERSION "+" PTXGATE_CODEGEN_FINGERPRINT;
#else
  return "unknown+" PTXGATE_CODEGEN_FINGERPRINT;
#endif
}

}  // namespace ptxgate::module_cache
