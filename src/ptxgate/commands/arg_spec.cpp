// The `--arg` grammar: classification of a spec, its numbers and its literals.
#include "ptxgate/commands/arg_spec.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/support/numbers.hpp"

namespace ptxgate::commands {
namespace {

diag::Diagnostics spec_error(std::string_view name, std::string_view spec, std::string_view expected) {
  return argument_spec_error(name, spec, expected);
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

std::vector<std::string_view> split_fields(std::string_view spec) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t colon = spec.find(':', start);
    out.push_back(spec.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string scalar_expectation(ir::Type type) {
  return type == ir::Type::bool_ ? std::string("a bool literal (true or false)")
         : ir::is_float(type)    ? fmt::format("an {} literal (e.g. 2.5)", ir::type_name(type))
         : ir::is_signed(type)   ? fmt::format("an {} integer literal in range", ir::type_name(type))
                                 : fmt::format("a non-negative {} integer literal in range", ir::type_name(type));
}

bool is_element_type(ir::Type t) {
  return t == ir::Type::f32 || t == ir::Type::f64 || t == ir::Type::i32 || t == ir::Type::u32 ||
         t == ir::Type::i64 || t == ir::Type::u64;
}

/// A prefix before ':' that names a spec form ("random", "u32"), as opposed to part of a path.
bool looks_like_form(std::string_view word) {
  if (word.empty()) return false;
  for (char c : word)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

/// The type a bare literal stands for where no scalar parameter fixes it.
std::optional<ir::Type> inferred_literal_type(std::string_view s) {
  if (s.find_first_of(".eE") != std::string_view::npos && !s.starts_with("0x") && !s.starts_with("0X") &&
      !s.starts_with("-0x"))
    return parse_value_bits(s, ir::Type::f32) ? std::optional(ir::Type::f32) : std::nullopt;
  if (parse_value_bits(s, ir::Type::i32)) return ir::Type::i32;
  if (parse_value_bits(s, ir::Type::i64)) return ir::Type::i64;
  if (parse_value_bits(s, ir::Type::u64)) return ir::Type::u64;
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> ArgSpec::known_bytes() const {
  switch (kind) {
    case Kind::device_bytes: return count;
    case Kind::random:
    case Kind::fill:
    case Kind::iota: return count * ir::byte_size(type);
    default: return std::nullopt;
  }
}

std::string buffer_spec_forms(ir::Type element) {
  return fmt::format("a buffer spec for {} elements: random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, "
                     "buffer:BYTES, null, a .npy file or a raw file",
                     ir::type_name(element));
}

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

std::expected<ArgSpec, diag::Diagnostics> parse_arg_spec(std::string_view spec, const contract::ParamInfo* param,
                                                         std::string_view name) {
  const bool buffer_param = param != nullptr && param->is_buffer;
  const bool scalar_param = param != nullptr && !param->is_buffer;
  ArgSpec out;
  out.type = param != nullptr ? param->type : ir::Type::i32;
  if (spec.empty()) return std::unexpected(spec_error(name, spec, "a non-empty spec"));
  if (spec == "null") {
    out.kind = ArgSpec::Kind::null_pointer;
    return out;
  }
  auto fields = split_fields(spec);
  auto kind = fields[0];
  if (kind == "buffer") {
    auto bytes = fields.size() == 2 ? support::parse_count(fields[1]) : std::unexpected(std::string("missing"));
    if (!bytes) return std::unexpected(spec_error(name, spec, "buffer:BYTES with BYTES a decimal byte count"));
    out.kind = ArgSpec::Kind::device_bytes;
    out.count = *bytes;
    return out;
  }
  if (kind == "random" || kind == "fill" || kind == "iota") {
    if (scalar_param)
      return std::unexpected(spec_error(name, spec, fmt::format("{} (parameter '{}' is a scalar, not a buffer)",
                                                                scalar_expectation(param->type), param->name)));
    if (param == nullptr)
      return std::unexpected(spec_error(name, spec, "null, buffer:BYTES, TYPE:VALUE or a literal (no parameter "
                                                    "gives this argument an element type)"));
    if (!is_element_type(param->type))
      return std::unexpected(spec_error(name, spec, fmt::format("a supported element type, not {}",
                                                                ir::type_name(param->type))));
    size_t want = kind == "fill" ? 3 : 2;
    if (fields.size() != want && !(kind == "random" && fields.size() == 3))
      return std::unexpected(spec_error(name, spec, buffer_spec_forms(param->type)));
    auto count = support::parse_count(fields[1], kMaxSpecElements);
    if (!count || *count == 0)
      return std::unexpected(spec_error(name, spec, fmt::format("COUNT between 1 and {} in {}", kMaxSpecElements,
                                                                buffer_spec_forms(param->type))));
    out.count = *count;
    if (kind == "iota") {
      out.kind = ArgSpec::Kind::iota;
    } else if (kind == "fill") {
      auto bits = parse_value_bits(fields[2], param->type);
      if (!bits)
        return std::unexpected(spec_error(
            name, spec, fmt::format("VALUE in fill:COUNT:VALUE to be an {} literal", ir::type_name(param->type))));
      out.kind = ArgSpec::Kind::fill;
      out.bits = *bits;
    } else {
      out.kind = ArgSpec::Kind::random;
      if (fields.size() == 3) {
        auto seed = support::parse_count(fields[2]);
        if (!seed)
          return std::unexpected(spec_error(name, spec, "SEED in random:COUNT:SEED to be a decimal unsigned integer"));
        out.seed = *seed;
      }
    }
    return out;
  }
  if (fields.size() == 2 && looks_like_form(kind)) {
    auto typed = ir::type_from_name(kind);
    if (!typed)
      return std::unexpected(spec_error(
          name, spec,
          fmt::format("TYPE:VALUE with TYPE one of i32 u32 i64 u64 f32 f64 bool, or {}",
                      buffer_param ? buffer_spec_forms(param->type)
                                   : std::string("random:, fill:, iota:, buffer: or null (write ./PATH for a file)"))));
    auto bits = parse_value_bits(fields[1], *typed);
    if (!bits) return std::unexpected(spec_error(name, spec, fmt::format("TYPE:VALUE with VALUE {}", scalar_expectation(*typed))));
    out.kind = ArgSpec::Kind::scalar;
    out.type = *typed;
    out.bits = *bits;
    return out;
  }
  if (scalar_param) {
    auto bits = parse_value_bits(spec, param->type);
    if (!bits) return std::unexpected(spec_error(name, spec, scalar_expectation(param->type)));
    out.kind = ArgSpec::Kind::scalar;
    out.bits = *bits;
    return out;
  }
  if (auto literal = inferred_literal_type(spec)) {
    out.kind = ArgSpec::Kind::scalar;
    out.type = *literal;
    out.bits = *parse_value_bits(spec, *literal);
    return out;
  }
  if (!buffer_param)
    return std::unexpected(spec_error(name, spec, "null, buffer:BYTES, TYPE:VALUE or a number literal"));
  out.kind = spec.ends_with(".npy") ? ArgSpec::Kind::npy_file : ArgSpec::Kind::raw_file;
  out.path = std::string(spec);
  return out;
}

contract::ArgumentDesc describe_argument(const ArgSpec& spec) {
  contract::ArgumentDesc d;
  if (spec.kind == ArgSpec::Kind::scalar) {
    d.kind = contract::ArgumentDesc::Kind::scalar;
    d.scalar_type = spec.type;
    d.size_bytes = ir::byte_size(spec.type);
    d.scalar_bits = spec.bits;
    return d;
  }
  d.kind = contract::ArgumentDesc::Kind::buffer;
  d.size_bytes = 8;
  d.pointer_is_null = spec.kind == ArgSpec::Kind::null_pointer;
  d.buffer_bytes = spec.known_bytes();
  return d;
}

diag::Diagnostics argument_spec_error(std::string_view name, std::string_view spec, std::string_view expected) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_argument_spec,
        fmt::format("invalid value '{}' for argument '{}': expected {}", spec, name, expected), {},
        fmt::format("write --arg {}=SPEC with {}", name, expected));
  return d;
}

}  // namespace ptxgate::commands
