// Fuzz target: argument specs of `ptxgate run` and `ptxgate check` (NAME=SPEC, the one grammar of
// validation/arg_spec, scalar literals, buffer specs) and .npy bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ptxgate/backend/arg_spec.hpp"
#include "ptxgate/backend/npy.hpp"
#include "ptxgate/validation/arg_spec.hpp"

namespace {

using namespace ptxgate;

constexpr ir::Type kTypes[] = {ir::Type::error, ir::Type::void_, ir::Type::bool_, ir::Type::i32,
                               ir::Type::u32,   ir::Type::i64,   ir::Type::u64,   ir::Type::f32,
                               ir::Type::f64,   ir::Type::int_literal, ir::Type::float_literal};

/// Generated buffers are sized by COUNT (up to 2^34 elements by design); the fuzzer keeps
/// them small so that a run measures parsing, not memset. Paths are never opened.
constexpr uint64_t kMaxFuzzCount = 1u << 16;

bool generated_and_small(std::string_view spec) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return false;
  auto kind = spec.substr(0, colon);
  if (kind != "random" && kind != "fill" && kind != "iota") return false;
  auto rest = spec.substr(colon + 1);
  auto count = rest.substr(0, rest.find(':'));
  uint64_t n = 0;
  int base = 10;
  if (count.starts_with("0x") || count.starts_with("0X")) {
    count.remove_prefix(2);
    base = 16;
  }
  for (char c : count) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
    if (digit >= base) return true;  // malformed: the parser must reject it, cheap either way
    n = n * base + digit;
    if (n > kMaxFuzzCount) return false;
  }
  return true;
}

void check_array(const backend::HostArray& a) {
  const size_t element = ir::byte_size(a.type);
  if (a.bytes.size() % element != 0 || a.bytes.size() / element != a.count) __builtin_trap();
  for (size_t i = 0; i < a.count && i < 4; ++i) (void)a.format_element(i);
}

void fuzz_npy(std::span<const std::byte> bytes) {
  auto parsed = backend::parse_npy(bytes, "fuzz.npy");
  if (!parsed) {
    if (parsed.error().empty()) __builtin_trap();
    return;
  }
  check_array(*parsed);
  // What parses must encode and parse back to the same elements.
  auto encoded = backend::encode_npy(*parsed);
  if (!encoded) __builtin_trap();
  auto again = backend::parse_npy(*encoded, "again.npy");
  if (!again || again->type != parsed->type || again->count != parsed->count || again->bytes != parsed->bytes)
    __builtin_trap();
}

/// The grammar alone, for a buffer, a scalar or no parameter: never materialises, never opens a
/// path; what parses has a consistent description.
void fuzz_grammar(std::string_view text, ir::Type type, unsigned shape) {
  contract::ParamInfo p;
  p.name = "x";
  p.type = type;
  p.is_buffer = shape == 1;
  auto parsed = validation::parse_arg_spec(text, shape == 2 ? nullptr : &p, "x");
  if (!parsed) {
    if (parsed.error().empty()) __builtin_trap();
    return;
  }
  using K = validation::ArgSpec::Kind;
  if ((parsed->kind == K::random || parsed->kind == K::fill || parsed->kind == K::iota) &&
      (parsed->count == 0 || parsed->count > validation::kMaxSpecElements || !p.is_buffer || shape == 2))
    __builtin_trap();
  if ((parsed->kind == K::npy_file || parsed->kind == K::raw_file) && (parsed->path != text || !p.is_buffer || shape == 2))
    __builtin_trap();
  auto desc = validation::describe_argument(*parsed);
  if ((desc.kind == contract::ArgumentDesc::Kind::scalar) != (parsed->kind == K::scalar)) __builtin_trap();
  if (parsed->kind == K::scalar) {
    if (desc.size_bytes != ir::byte_size(parsed->type)) __builtin_trap();
    (void)backend::scalar_arg(*parsed).describe();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const unsigned mode = data[0] % 5;
  const ir::Type type = kTypes[data[1] % std::size(kTypes)];
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  switch (mode) {
    case 0: {
      auto split = backend::split_assignment(text, "--arg");
      if (split && (split->first.empty() || split->first.size() + split->second.size() + 1 != text.size()))
        __builtin_trap();
      if (!split && split.error().empty()) __builtin_trap();
      break;
    }
    case 1: {
      auto scalar = backend::parse_scalar(text, type, "x");
      if (scalar) {
        if (scalar->kind() != backend::Arg::Kind::scalar) __builtin_trap();
        (void)scalar->describe();
      } else if (scalar.error().empty()) {
        __builtin_trap();
      }
      break;
    }
    case 2: {
      if (!generated_and_small(text)) break;
      auto buffer = backend::make_buffer_data(text, type, "x");
      if (buffer) {
        if (buffer->type != type || buffer->count == 0) __builtin_trap();
        check_array(*buffer);
      } else if (buffer.error().empty()) {
        __builtin_trap();
      }
      break;
    }
    case 4: fuzz_grammar(text, type, (data[0] / 5) % 3); break;
    default: fuzz_npy(std::as_bytes(std::span(text.data(), text.size()))); break;
  }
  return 0;
}
