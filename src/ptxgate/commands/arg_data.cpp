// Materialises parsed `--arg` specs: host arrays for buffers, typed Args for scalars.
#include "ptxgate/commands/arg_data.hpp"

#include <cstring>
#include <new>
#include <random>

#include <unistd.h>

#include <fmt/format.h>

#include "ptxgate/support/files.hpp"

namespace ptxgate::commands {
namespace {

using runtime::Arg;

diag::Diagnostics spec_error(std::string_view param, std::string_view spec, std::string_view expected) {
  return argument_spec_error(param, spec, expected);
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

/// An argument file read whole, bounded and type-checked (never a directory, FIFO or device).
std::expected<std::string, diag::Diagnostics> read_argument_file(const std::string& path, std::string_view param,
                                                                 ir::Type type) {
  auto data = support::read_file(path, {.max_bytes = kMaxArgumentFileBytes});
  if (data) return std::move(*data);
  diag::Diagnostics d;
  diag::Location where;
  where.file = path;
  if (data.error().failure == support::ReadFailure::open_failed && data.error().error_number == ENOENT)
    d.add(diag::Code::cannot_read_file,
          fmt::format("argument '{}': '{}' is not a buffer spec and no such file exists", param, path), where,
          fmt::format("use {}", buffer_spec_forms(type)));
  else
    d.add(diag::Code::cannot_read_file, fmt::format("argument '{}': {}", param, data.error().message), where,
          fmt::format("give a readable regular file of at most {} bytes, or {}", kMaxArgumentFileBytes,
                      buffer_spec_forms(type)));
  return std::unexpected(std::move(d));
}

}  // namespace

std::expected<HostArray, diag::Diagnostics> make_host_data(const ArgSpec& spec, std::string_view text,
                                                           std::string_view param) {
  if (!npy_descr(spec.type))
    return std::unexpected(spec_error(param, text, fmt::format("a supported element type, not {}", ir::type_name(spec.type))));
  HostArray a;
  a.type = spec.type;
  const unsigned elem = ir::byte_size(spec.type);
  if (spec.kind == ArgSpec::Kind::npy_file || spec.kind == ArgSpec::Kind::raw_file) {
    auto data = read_argument_file(spec.path, param, spec.type);
    if (!data) return std::unexpected(data.error());
    if (spec.kind == ArgSpec::Kind::npy_file) {
      auto arr = parse_npy(std::as_bytes(std::span(data->data(), data->size())), spec.path);
      if (!arr) return std::unexpected(arr.error());
      if (arr->type != spec.type)
        return std::unexpected(spec_error(param, text, fmt::format("a .npy of dtype {} (for {} elements), not {}",
                                                                   *npy_descr(spec.type), ir::type_name(spec.type),
                                                                   *npy_descr(arr->type))));
      if (arr->count == 0) return std::unexpected(spec_error(param, text, "a non-empty array"));
      return std::move(*arr);
    }
    if (data->empty() || data->size() % elem != 0)
      return std::unexpected(spec_error(
          param, text, fmt::format("a raw file whose size ({} bytes) is a non-zero multiple of {} ({} elements)",
                                   data->size(), elem, ir::type_name(spec.type))));
    a.count = data->size() / elem;
    a.bytes.resize(data->size());
    std::memcpy(a.bytes.data(), data->data(), data->size());
    return a;
  }
  if (spec.kind == ArgSpec::Kind::null_pointer || spec.kind == ArgSpec::Kind::scalar)
    return std::unexpected(spec_error(param, text, buffer_spec_forms(spec.type)));
  const uint64_t bytes = spec.kind == ArgSpec::Kind::device_bytes ? spec.count : spec.count * elem;
  // Refused before allocating: an overcommitted allocation would succeed and then exhaust memory.
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0 && bytes > static_cast<uint64_t>(pages) / 2 * static_cast<uint64_t>(page_size)) {
    diag::Diagnostics d;
    d.add(diag::Code::invalid_argument_spec,
          fmt::format("argument '{}': '{}' needs {} bytes of host memory, more than half of this machine's {} bytes",
                      param, text, bytes, static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)),
          {}, "use a smaller COUNT");
    return std::unexpected(std::move(d));
  }
  try {
    a.bytes.resize(bytes);
  } catch (const std::bad_alloc&) {
    diag::Diagnostics d;
    d.add(diag::Code::invalid_argument_spec,
          fmt::format("argument '{}': cannot allocate {} bytes of host memory for '{}'", param, bytes, text), {},
          "use a smaller COUNT");
    return std::unexpected(std::move(d));
  } catch (const std::length_error&) {
    return std::unexpected(spec_error(param, text, "a smaller COUNT"));
  }
  a.count = bytes / elem;
  switch (spec.kind) {
    case ArgSpec::Kind::iota:
      for (size_t i = 0; i < a.count; ++i)
        store(a, i,
              spec.type == ir::Type::f32   ? bits_of(static_cast<float>(i))
              : spec.type == ir::Type::f64 ? bits_of(static_cast<double>(i))
                                           : static_cast<uint64_t>(i));
      break;
    case ArgSpec::Kind::fill:
      for (size_t i = 0; i < a.count; ++i) store(a, i, spec.bits);
      break;
    case ArgSpec::Kind::random: {
      std::mt19937_64 rng(spec.seed);
      for (size_t i = 0; i < a.count; ++i) {
        uint64_t bits = 0;
        switch (spec.type) {
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
      break;
    }
    default: break;  // device_bytes: zeros
  }
  return a;
}

std::expected<HostArray, diag::Diagnostics> make_buffer_data(std::string_view spec, ir::Type type,
                                                             std::string_view param) {
  contract::ParamInfo p;
  p.name = std::string(param);
  p.is_buffer = true;
  p.type = type;
  auto parsed = parse_arg_spec(spec, &p, param);
  if (!parsed) return std::unexpected(parsed.error());
  return make_host_data(*parsed, spec, param);
}

Arg scalar_arg(const ArgSpec& spec) {
  switch (spec.type) {
    case ir::Type::f32: {
      float f;
      uint32_t b = static_cast<uint32_t>(spec.bits);
      std::memcpy(&f, &b, 4);
      return Arg(f);
    }
    case ir::Type::f64: {
      double d;
      std::memcpy(&d, &spec.bits, 8);
      return Arg(d);
    }
    case ir::Type::i32: return Arg(static_cast<int32_t>(static_cast<uint32_t>(spec.bits)));
    case ir::Type::u32: return Arg(static_cast<uint32_t>(spec.bits));
    case ir::Type::i64: return Arg(static_cast<int64_t>(spec.bits));
    case ir::Type::u64: return Arg(static_cast<uint64_t>(spec.bits));
    default: return Arg(spec.bits != 0);
  }
}

std::expected<Arg, diag::Diagnostics> parse_scalar(std::string_view spec, ir::Type type, std::string_view param) {
  contract::ParamInfo p;
  p.name = std::string(param);
  p.type = type;
  auto parsed = parse_arg_spec(spec, &p, param);
  if (!parsed) return std::unexpected(parsed.error());
  if (parsed->kind != ArgSpec::Kind::scalar)
    return std::unexpected(spec_error(param, spec, fmt::format("an {} literal", ir::type_name(type))));
  return scalar_arg(*parsed);
}

}  // namespace ptxgate::commands
