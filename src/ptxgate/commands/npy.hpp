// A small .npy reader/writer: 1-D, C order, little-endian <f4 <f8 <i4 <u4 <i8 <u8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::commands {

/// A 1-D array of one element type held on the host.
struct HostArray {
  ir::Type type = ir::Type::f32;  ///< f32 f64 i32 u32 i64 u64
  size_t count = 0;
  std::vector<std::byte> bytes;   ///< count * byte_size(type)

  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> as() {
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  /// Element `i` formatted for printing ("1.5", "-3").
  std::string format_element(size_t i) const;
};

/// "<f4" for f32 etc.; nullopt for types .npy support does not cover (bool).
std::optional<std::string_view> npy_descr(ir::Type type);

/// Parses .npy bytes. PG5002 naming `origin` for a bad magic, an unsupported dtype
/// (big-endian, other kinds), Fortran order, more than one dimension or a short payload.
[[nodiscard]] std::expected<HostArray, diag::Diagnostics> parse_npy(std::span<const std::byte> bytes, std::string_view origin);
/// Reads a .npy file (PG5001 when unreadable).
[[nodiscard]] std::expected<HostArray, diag::Diagnostics> read_npy(const std::filesystem::path& path);

/// The .npy (version 1.0) encoding of `array`.
[[nodiscard]] std::expected<std::vector<std::byte>, diag::Diagnostics> encode_npy(const HostArray& array);
/// Writes `array` as .npy (PG5003 when the file cannot be written).
[[nodiscard]] std::expected<void, diag::Diagnostics> write_npy(const std::filesystem::path& path, const HostArray& array);

}  // namespace ptxgate::commands
