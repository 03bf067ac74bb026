// .npy parsing and writing for the element types of kernel buffers.
#include "ptxgate/commands/npy.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "ptxgate/support/files.hpp"

namespace ptxgate::commands {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

diag::Diagnostics npy_error(std::string_view origin, std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_argument_spec, fmt::format("{}: {}", origin, message), {},
        "write a 1-D C-order array of float32, float64, int32, uint32, int64 or uint64 "
        "(e.g. numpy.save(path, numpy.ascontiguousarray(a, dtype=numpy.float32).ravel()))");
  return d;
}

/// The text after `'key'` and its ':' in a header dict, or nullopt. A hand-written scan:
/// std::regex recurses per character and overflows the stack on a long header.
std::optional<std::string_view> value_at(std::string_view header, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  for (size_t at = header.find(quoted); at != std::string_view::npos; at = header.find(quoted, at + 1)) {
    std::string_view rest = header.substr(at + quoted.size());
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t\r\n\v\f")));
    if (!rest.starts_with(':')) continue;
    rest.remove_prefix(1);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t\r\n\v\f")));
    return rest;
  }
  return std::nullopt;
}

/// The quoted string value of `key`, e.g. <f4 for 'descr': '<f4'.
std::optional<std::string_view> quoted_value(std::string_view header, std::string_view key) {
  auto value = value_at(header, key);
  if (!value || !value->starts_with('\'')) return std::nullopt;
  size_t close = value->find('\'', 1);
  if (close == std::string_view::npos) return std::nullopt;
  return value->substr(1, close - 1);
}

/// Every run of decimal digits in a shape tuple; nullopt when one exceeds 64 bits.
std::optional<std::vector<uint64_t>> dimensions(std::string_view shape) {
  std::vector<uint64_t> dims;
  for (size_t i = 0; i < shape.size();) {
    if (shape[i] < '0' || shape[i] > '9') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < shape.size() && shape[end] >= '0' && shape[end] <= '9') ++end;
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(shape.data() + i, shape.data() + end, value);
    if (ec != std::errc{}) return std::nullopt;
    dims.push_back(value);
    i = end;
  }
  return dims;
}

std::optional<ir::Type> type_from_descr(std::string_view descr) {
  for (ir::Type t : {ir::Type::f32, ir::Type::f64, ir::Type::i32, ir::Type::u32, ir::Type::i64, ir::Type::u64})
    if (npy_descr(t) == descr) return t;
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> npy_descr(ir::Type type) {
  switch (type) {
    case ir::Type::f32: return "<f4";
    case ir::Type::f64: return "<f8";
    case ir::Type::i32: return "<i4";
    case ir::Type::u32: return "<u4";
    case ir::Type::i64: return "<i8";
    case ir::Type::u64: return "<u8";
    default: return std::nullopt;
  }
}

std::string HostArray::format_element(size_t i) const {
  switch (type) {
    case ir::Type::f32: return fmt::format("{}", as<float>()[i]);
    case ir::Type::f64: return fmt::format("{}", as<double>()[i]);
    case ir::Type::i32: return fmt::format("{}", as<int32_t>()[i]);
    case ir::Type::u32: return fmt::format("{}", as<uint32_t>()[i]);
    case ir::Type::i64: return fmt::format("{}", as<int64_t>()[i]);
    case ir::Type::u64: return fmt::format("{}", as<uint64_t>()[i]);
    default: return "?";
  }
}

std::expected<HostArray, diag::Diagnostics> parse_npy(std::span<const std::byte> bytes, std::string_view origin) {
  auto text = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.size() < 10 || !text.starts_with(kMagic)) return std::unexpected(npy_error(origin, "not a .npy file"));
  unsigned major = static_cast<unsigned char>(text[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(text[8]) | static_cast<unsigned char>(text[9]) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (text.size() < 12) return std::unexpected(npy_error(origin, "truncated header"));
    for (int i = 0; i < 4; ++i) header_len |= size_t{static_cast<unsigned char>(text[8 + i])} << (8 * i);
    header_start = 12;
  } else {
    return std::unexpected(npy_error(origin, fmt::format("unsupported .npy version {}", major)));
  }
  if (text.size() < header_start + header_len) return std::unexpected(npy_error(origin, "truncated header"));
  std::string_view header = text.substr(header_start, header_len);
  auto descr_text = quoted_value(header, "descr");
  if (!descr_text) return std::unexpected(npy_error(origin, "header has no 'descr'"));
  std::string descr(*descr_text);
  auto type = type_from_descr(descr);
  if (!type)
    return std::unexpected(npy_error(
        origin, fmt::format("dtype '{}' is not supported (expected one of <f4 <f8 <i4 <u4 <i8 <u8)", descr)));
  auto fortran = value_at(header, "fortran_order");
  if (!fortran || !(fortran->starts_with("True") || fortran->starts_with("False")))
    return std::unexpected(npy_error(origin, "header has no 'fortran_order'"));
  if (fortran->starts_with("True")) return std::unexpected(npy_error(origin, "Fortran-order arrays are not supported"));
  auto shape_text = value_at(header, "shape");
  size_t shape_end = shape_text ? shape_text->find(')') : std::string_view::npos;
  if (!shape_text || !shape_text->starts_with('(') || shape_end == std::string_view::npos)
    return std::unexpected(npy_error(origin, "header has no 'shape'"));
  std::string_view shape = shape_text->substr(1, shape_end - 1);
  auto dims = dimensions(shape);
  if (!dims)
    return std::unexpected(npy_error(origin, fmt::format("shape ({}) has a dimension larger than 2^64", shape)));
  if (dims->size() != 1)
    return std::unexpected(
        npy_error(origin, fmt::format("shape ({}) has {} dimensions; only 1-D arrays are supported", shape, dims->size())));
  const size_t data_start = header_start + header_len;
  const size_t available = bytes.size() - data_start;
  const uint64_t count = (*dims)[0], element_bytes = ir::byte_size(*type);
  if (count > available / element_bytes) {
    std::string needed = count > UINT64_MAX / element_bytes
                             ? fmt::format("{} elements of {} bytes", count, element_bytes)
                             : fmt::format("{}", count * element_bytes);
    return std::unexpected(npy_error(origin, fmt::format("payload has {} bytes, the shape needs {}", available, needed)));
  }
  HostArray out;
  out.type = *type;
  out.count = static_cast<size_t>(count);
  const size_t payload = out.count * ir::byte_size(out.type);
  out.bytes.assign(bytes.begin() + static_cast<ptrdiff_t>(data_start),
                   bytes.begin() + static_cast<ptrdiff_t>(data_start + payload));
  return out;
}

std::expected<HostArray, diag::Diagnostics> read_npy(const std::filesystem::path& path) {
  // Bounded and type-checked: a directory, FIFO or device is refused unopened, a huge file unread.
  auto data = support::read_file_diagnosed(path.string(), ".npy file", {.max_bytes = uint64_t{1} << 32});
  if (!data) return std::unexpected(data.error());
  return parse_npy(std::as_bytes(std::span(data->data(), data->size())), path.string());
}

std::expected<std::vector<std::byte>, diag::Diagnostics> encode_npy(const HostArray& array) {
  auto descr = npy_descr(array.type);
  if (!descr)
    return std::unexpected(npy_error("output", fmt::format("element type {} cannot be written as .npy",
                                                           ir::type_name(array.type))));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", *descr, array.count);
  size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  std::vector<std::byte> bytes(out.size() + array.bytes.size());
  std::memcpy(bytes.data(), out.data(), out.size());
  if (!array.bytes.empty()) std::memcpy(bytes.data() + out.size(), array.bytes.data(), array.bytes.size());
  return bytes;
}

std::expected<void, diag::Diagnostics> write_npy(const std::filesystem::path& path, const HostArray& array) {
  auto bytes = encode_npy(array);
  if (!bytes) return std::unexpected(bytes.error());
  // A temporary file renamed over `path`: a failed write never leaves a truncated array.
  return support::write_file_atomically(
      path.string(), std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
}

}  // namespace ptxgate::commands
