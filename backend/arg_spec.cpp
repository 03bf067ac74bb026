// Parses `--arg` specifications into host arrays and typed scalars.
#include "ptxgate/backend/arg_spec.hpp"

#include <charconv>
#include <cstring>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include <fmt/format.h>

namespace ptxgate::backend {
namespace {

diag::Diagnostics spec_error(std::string_view param, std::string_view spec, std::string expected) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_argument_spec,
        fmt::format("invalid value '{}' for argument '{}': expected {}", spec, param, expected), {},
        fmt::format("write --arg {}=SPEC with {}", param, expected));
  return d;
}

std::string buffer_forms(ir::Type type) {
  return fmt::format("a buffer spec for {} elements: random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, "
                     "a .npy file or a raw file",
                     ir::type_name(type));
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Parses `s` as `type` into the element's bytes (little-endian host order).
std::optional<uint64_t> parse_value_bits(std::string_view s, ir::Type type) {
  if (ir::is_float(type)) {
    if (type == ir::Type::f32 && (s.ends_with('f') || s.ends_with('F'))) s.remove_suffix(1);
    double d = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
    if (type == ir::Type::f32) {
      if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) return std::nullopt;
      float f = static_cast<float>(d);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
  }
  if (type == ir::Type::bool_) {
    if (s == "true" || s == "1") return 1;
    if (s == "false" || s == "0") return 0;
    return std::nullopt;
  }
  if (!ir::is_integer(type)) return std::nullopt;
  bool negative = s.starts_with('-');
  if (negative) s.remove_prefix(1);
  auto mag = parse_u64(s);
  if (!mag) return std::nullopt;
  switch (type) {
    case ir::Type::i32:
      if (negative ? *mag > 2147483648ull : *mag > 2147483647ull) return std::nullopt;
      return static_cast<uint32_t>(negative ? -static_cast<int64_t>(*mag) : static_cast<int64_t>(*mag));
    case ir::Type::i64:
      if (negative ? *mag > 9223372036854775808ull : *mag > 9223372036854775807ull) return std::nullopt;
      return negative ? 0 - *mag : *mag;
    case ir::Type::u32:
      if (negative || *mag > 0xffffffffull) return std::nullopt;
      return *mag;
    default:
      if (negative) return std::nullopt;
      return *mag;
  }
}

void store(HostArray& a, size_t i, uint64_t bits) {
  unsigned size = ir::byte_size(a.type);
  if (size == 4) {
    uint32_t v = static_cast<uint32_t>(bits);
    std::memcpy(a.bytes.data() + i * 4, &v, 4);
  } else {
    std::memcpy(a.bytes.data() + i * 8, &bits, 8);
  }
}

template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

}  // namespace

std::expected<std::pair<std::string, std::string>, diag::Diagnostics> split_assignment(std::string_view text,
                                                                                        std::string_view option) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    diag::Diagnostics d;
    d.add(diag::Code::invalid_argument_spec, fmt::format("{} '{}' is not NAME=VALUE", option, text), {},
          fmt::format("write {} NAME=VALUE, e.g. {} x=random:1024", option, option));
    return std::unexpected(std::move(d));
  }
  return std::pair{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

std::expected<HostArray, diag::Diagnostics> make_buffer_data(std::string_view spec, ir::Type type,
                                                             std::string_view param) {
  if (!npy_descr(type))
    return std::unexpected(spec_error(param, spec, fmt::format("a supported element type, not {}", ir::type_name(type))));
  HostArray a;
  a.type = type;
  unsigned elem = ir::byte_size(type);
  auto fields = [&] {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
      size_t colon = spec.find(':', start);
      out.push_back(spec.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    return out;
  }();
  auto kind = fields[0];
  auto count_of = [&](std::string_view s) -> std::expected<size_t, diag::Diagnostics> {
    auto n = parse_u64(s);
    if (!n || *n == 0 || *n > (uint64_t{1} << 34))
      return std::unexpected(spec_error(param, spec, fmt::format("COUNT between 1 and {} in {}", uint64_t{1} << 34,
                                                                 buffer_forms(type))));
    return static_cast<size_t>(*n);
  };
  if (kind == "random" || kind == "fill" || kind == "iota") {
    size_t want_fields = kind == "fill" ? 3 : 2;
    if (fields.size() != want_fields && !(kind == "random" && fields.size() == 3))
      return std::unexpected(spec_error(param, spec, buffer_forms(type)));
    auto count = count_of(fields[1]);
    if (!count) return std::unexpected(count.error());
    a.count = *count;
    a.bytes.resize(a.count * elem);
    if (kind == "iota") {
      for (size_t i = 0; i < a.count; ++i) {
        uint64_t bits = type == ir::Type::f32   ? bits_of(static_cast<float>(i))
                        : type == ir::Type::f64 ? bits_of(static_cast<double>(i))
                                                : static_cast<uint64_t>(i);
        store(a, i, bits);
      }
    } else if (kind == "fill") {
      auto bits = parse_value_bits(fields[2], type);
      if (!bits)
        return std::unexpected(spec_error(param, spec, fmt::format("VALUE in fill:COUNT:VALUE to be an {} literal",
                                                                   ir::type_name(type))));
      for (size_t i = 0; i < a.count; ++i) store(a, i, *bits);
    } else {
      uint64_t seed = 1;
      if (fields.size() == 3) {
        auto s = parse_u64(fields[2]);
        if (!s) return std::unexpected(spec_error(param, spec, "SEED in random:COUNT:SEED to be an unsigned integer"));
        seed = *s;
      }
      std::mt19937_64 rng(seed);
      for (size_t i = 0; i < a.count; ++i) {
        uint64_t bits = 0;
        switch (type) {
          case ir::Type::f32: bits = bits_of(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng)); break;
          case ir::Type::f64: bits = bits_of(std::uniform_real_distribution<double>(-1.0, 1.0)(rng)); break;
          case ir::Type::i32:
          case ir::Type::i64:
            bits = static_cast<uint64_t>(std::uniform_int_distribution<int64_t>(-1000, 1000)(rng));
            break;
          default: bits = std::uniform_int_distribution<uint64_t>(0, 1000)(rng); break;
        }
        store(a, i, bits);
      }
    }
    return a;
  }
  std::string path(spec);
  if (path.ends_with(".npy")) {
    auto arr = read_npy(path);
    if (!arr) return std::unexpected(arr.error());
    if (arr->type != type)
      return std::unexpected(spec_error(param, spec, fmt::format("a .npy of dtype {} (for {} elements), not {}",
                                                                 *npy_descr(type), ir::type_name(type),
                                                                 *npy_descr(arr->type))));
    if (arr->count == 0) return std::unexpected(spec_error(param, spec, "a non-empty array"));
    return std::move(*arr);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diag::Diagnostics d;
    d.add(diag::Code::cannot_read_file,
          fmt::format("argument '{}': '{}' is not a buffer spec and cannot be read as a file", param, spec), {},
          fmt::format("use {}", buffer_forms(type)));
    return std::unexpected(std::move(d));
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.empty() || data.size() % elem != 0)
    return std::unexpected(spec_error(
        param, spec, fmt::format("a raw file whose size ({} bytes) is a non-zero multiple of {} ({} elements)",
                                 data.size(), elem, ir::type_name(type))));
  a.count = data.size() / elem;
  a.bytes.resize(data.size());
  std::memcpy(a.bytes.data(), data.data(), data.size());
  return a;
}

std::expected<Arg, diag::Diagnostics> parse_scalar(std::string_view spec, ir::Type type, std::string_view param) {
  auto bits = parse_value_bits(spec, type);
  if (!bits) {
    std::string expected = type == ir::Type::bool_ ? std::string("a bool literal (true or false)")
                           : ir::is_float(type)    ? fmt::format("an {} literal (e.g. 2.5)", ir::type_name(type))
                           : ir::is_signed(type)   ? fmt::format("an {} integer literal in range", ir::type_name(type))
                                                   : fmt::format("a non-negative {} integer literal in range",
                                                                 ir::type_name(type));
    return std::unexpected(spec_error(param, spec, expected));
  }
  switch (type) {
    case ir::Type::f32: {
      float f;
      uint32_t b = static_cast<uint32_t>(*bits);
      std::memcpy(&f, &b, 4);
      return Arg(f);
    }
    case ir::Type::f64: {
      double d;
      std::memcpy(&d, &*bits, 8);
      return Arg(d);
    }
    case ir::Type::i32: return Arg(static_cast<int32_t>(static_cast<uint32_t>(*bits)));
    case ir::Type::u32: return Arg(static_cast<uint32_t>(*bits));
    case ir::Type::i64: return Arg(static_cast<int64_t>(*bits));
    case ir::Type::u64: return Arg(static_cast<uint64_t>(*bits));
    case ir::Type::bool_: return Arg(*bits != 0);
    default: return std::unexpected(spec_error(param, spec, "a scalar parameter type"));
  }
}

}  // namespace ptxgate::backend
