// Forging cubins for the reader's tests: a section's size, or the value of an attribute record in
// NVIDIA's .nv.info tables, rewritten in the bytes ptxas wrote (little-endian ELF64).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptxgate::testing {

inline uint64_t read_le(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b.at(at + static_cast<size_t>(i)));
  return v;
}

inline void write_le(std::string& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.at(at + static_cast<size_t>(i)) = static_cast<char>((v >> (8 * i)) & 0xff);
}

/// The offset of the section header of the section named `name`, if there is one.
inline std::optional<size_t> section_header(const std::string& cubin, std::string_view name) {
  const uint64_t shoff = read_le(cubin, 0x28, 8);
  const uint64_t entsize = read_le(cubin, 0x3a, 2), count = read_le(cubin, 0x3c, 2), names = read_le(cubin, 0x3e, 2);
  const uint64_t strtab = read_le(cubin, shoff + names * entsize + 0x18, 8);
  for (uint64_t i = 0; i < count; ++i) {
    const size_t header = shoff + i * entsize;
    const size_t at = strtab + read_le(cubin, header, 4);
    if (cubin.compare(at, name.size(), name) == 0 && cubin.at(at + name.size()) == '\0') return header;
  }
  return std::nullopt;
}

/// The offset of the payload of the first SVAL/NVAL attribute record `attr` (format `format`) in
/// section `name` (".nv.info" or ".nv.info.KERNEL"), or of its 16-bit value for other formats.
inline std::optional<size_t> attribute_at(const std::string& cubin, std::string_view name, uint8_t format, uint8_t attr) {
  auto header = section_header(cubin, name);
  if (!header) return std::nullopt;
  const size_t begin = read_le(cubin, *header + 0x18, 8), size = read_le(cubin, *header + 0x20, 8);
  for (size_t at = begin; at + 4 <= begin + size;) {
    const auto f = static_cast<uint8_t>(cubin[at]), a = static_cast<uint8_t>(cubin[at + 1]);
    const size_t length = f == 0x04 ? read_le(cubin, at + 2, 2) : 0;
    if (f == format && a == attr) return f == 0x04 ? at + 4 : at + 2;
    at += 4 + length;
  }
  return std::nullopt;
}

}  // namespace ptxgate::testing
