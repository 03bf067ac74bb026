// Cache keys: a 128-bit XXH3 hash over every input that can change a compiled module.
#pragma once

#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ptxgate::module_cache {

/// Everything that determines the bytes of a compiled module. A change in any
/// field gives a different key, so a stale entry is never found.
struct CacheKeyInputs {
  std::string canonical_module_text;  ///< ir::print of the verified module
  std::string target_arch;            ///< "sm_90"
  unsigned ptx_isa_version = 0;       ///< 0 when the caller does not pin it (then implied by LLVM + target)
  std::string codegen_options;        ///< a stable text form of codegen::CodegenOptions (see codegen_options_text)
  std::string ptxgate_version;        ///< ptxgate's own version
  std::string llvm_version;           ///< codegen::llvm_version()
  std::string libdevice_hash;         ///< libdevice_hash(path) of the toolkit's libdevice (the one linked in)
  std::string ptxas_version;          ///< toolchain::ptxas_version(); empty when no cubin is produced
  std::string driver_version;         ///< e.g. "13000" from cuDriverGetVersion; empty offline

  /// The inputs without the module text (which may be large), for manifests and `cache list`.
  nlohmann::json summary() const;
};

/// A derived key: 32 lowercase hex digits of XXH3-128.
struct CacheKey {
  std::string hex;

  /// Parses 32 lowercase hex digits; nullopt for anything else.
  static std::optional<CacheKey> from_hex(std::string_view text);
  friend auto operator<=>(const CacheKey&, const CacheKey&) = default;
};

/// Hashes a length-prefixed serialisation of every field, so that moving bytes
/// from one field to the next ("ab"+"c" vs "a"+"bc") changes the key.
CacheKey derive_key(const CacheKeyInputs& inputs);

/// XXH3-128 of a byte string as 32 lowercase hex digits (also the payload checksum).
std::string content_hash(std::string_view bytes);

/// XXH3-128 of a file's bytes, computed once per path per process and memoised.
/// Returns "missing:<path>" when the file cannot be read (absent, not a regular file,
/// over 64 MiB; never blocks on a FIFO), so that the key still changes when it appears later.
std::string libdevice_hash(const std::string& path);

/// ptxgate's version and its code generator's fingerprint ("0.1.0+1f2e..."), as compiled in: part
/// of every cache key.
std::string ptxgate_version();

}  // namespace ptxgate::module_cache

template <>
struct std::hash<ptxgate::module_cache::CacheKey> {
  size_t operator()(const ptxgate::module_cache::CacheKey& key) const noexcept {
    return std::hash<std::string>{}(key.hex);
  }
};
