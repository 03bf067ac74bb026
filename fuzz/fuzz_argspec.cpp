// Fuzz target: `ptxgate run` argument specs (NAME=SPEC, scalar literals, buffer specs) and .npy bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ptxgate/backend/arg_spec.hpp"
#include "ptxgate/backend/npy.hpp"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const unsigned mode = data[0] % 4;
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
    default: fuzz_npy(std::as_bytes(std::span(text.data(), text.size()))); break;
  }
  return 0;
}
