// .npy parsing and writing for the element types of kernel buffers.
#include "backend/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include <fmt/format.h>

namespace ptxgate::backend {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

diag::Diagnostics npy_error(std::string_view origin, std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_argument_spec, fmt::format("{}: {}", origin, message), {},
        "write a 1-D C-order array of float32, float64, int32, uint32, int64 or uint64 "
        "(e.g. numpy.save(path, numpy.ascontiguousarray(a, dtype=numpy.float32).ravel()))");
  return d;
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
  std::string header(text.substr(header_start, header_len));
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    return std::unexpected(npy_error(origin, "header has no 'descr'"));
  std::string descr = m[1];
  auto type = type_from_descr(descr);
  if (!type)
    return std::unexpected(npy_error(
        origin, fmt::format("dtype '{}' is not supported (expected one of <f4 <f8 <i4 <u4 <i8 <u8)", descr)));
  if (!std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    return std::unexpected(npy_error(origin, "header has no 'fortran_order'"));
  if (m[1] == "True") return std::unexpected(npy_error(origin, "Fortran-order arrays are not supported"));
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    return std::unexpected(npy_error(origin, "header has no 'shape'"));
  std::string shape = m[1];
  std::vector<uint64_t> dims;
  std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(shape.begin(), shape.end(), number); it != std::sregex_iterator(); ++it)
    dims.push_back(std::stoull(it->str()));
  if (dims.size() != 1)
    return std::unexpected(
        npy_error(origin, fmt::format("shape ({}) has {} dimensions; only 1-D arrays are supported", shape, dims.size())));
  HostArray out;
  out.type = *type;
  out.count = dims[0];
  size_t payload = out.count * ir::byte_size(out.type);
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start < payload)
    return std::unexpected(npy_error(origin, fmt::format("payload has {} bytes, the shape needs {}",
                                                         bytes.size() - data_start, payload)));
  out.bytes.assign(bytes.begin() + static_cast<ptrdiff_t>(data_start),
                   bytes.begin() + static_cast<ptrdiff_t>(data_start + payload));
  return out;
}

std::expected<HostArray, diag::Diagnostics> read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diag::Diagnostics d;
    d.add(diag::Code::cannot_read_file, fmt::format("cannot read '{}'", path.string()), {},
          "check the path and permissions");
    return std::unexpected(std::move(d));
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(std::as_bytes(std::span(data.data(), data.size())), path.string());
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
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) {
    diag::Diagnostics d;
    d.add(diag::Code::cannot_write_file, fmt::format("cannot write '{}'", path.string()), {},
          "check that the directory exists and is writable");
    return std::unexpected(std::move(d));
  }
  return {};
}

}  // namespace ptxgate::backend
