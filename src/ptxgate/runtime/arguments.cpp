// The argument binder: binding facts per parameter, the one binding of each argument, proof values.
#include "ptxgate/runtime/internal/arguments.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "ptxgate/runtime/internal/checked_records.hpp"
#include "ptxgate/ir/float_bits.hpp"

namespace ptxgate::runtime {

namespace {

diag::Diagnostics bind_error(diag::Code code, std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// Whether the integer held by `arg` fits `target` (an integer type of 8 to 64 bits).
bool integer_fits(const Arg& arg, ir::Type target) {
  const unsigned bits = ir::bit_width(target);
  const int64_t s = static_cast<int64_t>(arg.bits());
  const uint64_t u = arg.bits();
  if ((ir::is_signed(arg.type()) || arg.type() == ir::Type::int_literal) && s < 0) {
    if (!ir::is_signed(target)) return false;
    return bits == 64 || s >= -(int64_t{1} << (bits - 1));
  }
  const uint64_t largest = bits == 64 ? (ir::is_signed(target) ? uint64_t{INT64_MAX} : UINT64_MAX)
                                      : (uint64_t{1} << (ir::is_signed(target) ? bits - 1 : bits)) - 1;
  return u <= largest;
}

}  // namespace

std::expected<BoundSlot, diag::Diagnostics> bind_argument(const Arg& arg, const contract::ParamInfo& param,
                                                          std::string_view kernel) {
  // Messages are only formatted on failure: binding is on the steady launch path.
  const auto where = [&] { return fmt::format("argument {} ('{}') of kernel '{}'", param.index, param.name, kernel); };
  const auto expected = [&] {
    return param.is_buffer ? fmt::format("a buffer of {}", ir::type_name(param.type))
                           : fmt::format("an {} scalar", ir::type_name(param.type));
  };
  BoundSlot slot;
  const bool map_param = !param.is_buffer && param.type == ir::Type::tensor_map;
  if (map_param != (arg.kind() == Arg::Kind::tensor_map)) {
    return std::unexpected(bind_error(
        diag::Code::tensor_map_argument_mismatch,
        fmt::format("{} is {}, but the parameter is {}", where(), arg.describe(),
                    map_param ? "a tensor_map" : expected()),
        map_param ? fmt::format("pass a tensor map (runtime::encode_tensor_map over the tensor's buffer) for '{}'",
                                param.name)
                  : fmt::format("pass {} for '{}'; tensor maps bind to `tensor_map` parameters only", expected(),
                                param.name)));
  }
  if (map_param) {
    slot.size = 128;
    return slot;
  }
  if (param.is_buffer != (arg.kind() == Arg::Kind::buffer)) {
    return std::unexpected(bind_error(diag::Code::argument_kind_mismatch,
                                      fmt::format("{} is {}, but the parameter is {}", where(), arg.describe(), expected()),
                                      fmt::format("pass {} for '{}'", expected(), param.name)));
  }
  if (param.is_buffer) {
    if (arg.bits() == 0)
      return std::unexpected(bind_error(diag::Code::null_buffer, fmt::format("{} is a null device pointer", where()),
                                        "allocate the buffer before launching"));
    if (!internal::element_type_fits(arg.type(), param.type))
      return std::unexpected(bind_error(
          diag::Code::buffer_element_type_mismatch,
          fmt::format("{} is {}, but the parameter is {}", where(), arg.describe(), expected()),
          fmt::format("pass a buffer of {} elements for '{}', or a byte view (as_bytes) to bind the memory untyped",
                      ir::type_name(param.type), param.name)));
    uint64_t p = arg.bits();
    std::memcpy(slot.bytes, &p, 8);
    slot.size = 8;
    return slot;
  }
  if (internal::bind_scalar(arg, param, slot)) return slot;
  const ir::Type want = param.type, have = arg.type();
  return std::unexpected(bind_error(
      diag::Code::argument_size_mismatch,
      fmt::format("{} is {}, but the parameter is {} ({} bytes)", where(), arg.describe(), expected(), param.size_bytes),
      want == ir::Type::f32 && have == ir::Type::f64 ? fmt::format("pass a float (e.g. 2.0f) for '{}'", param.name)
      : have == ir::Type::float_literal && ir::is_float(want)
          ? fmt::format("pass a value within the range of {} for '{}'", ir::type_name(want), param.name)
          : fmt::format("pass a value of type {} for '{}'", ir::type_name(want), param.name)));
}

namespace internal {

bool bind_scalar(const Arg& arg, const contract::ParamInfo& param, BoundSlot& slot) noexcept {
  const ir::Type want = param.type;
  const ir::Type have = arg.type();
  uint64_t value = arg.bits();
  if (want == have) {
  } else if (ir::is_integer(want) && (ir::is_integer(have) || have == ir::Type::int_literal)) {
    if (!integer_fits(arg, want)) return false;
  } else if (have == ir::Type::float_literal && ir::is_float(want)) {
    double d;
    std::memcpy(&d, &value, 8);
    auto bits = ir::float_bits(d, want);
    if (!bits) return false;
    value = *bits;
  } else if (have == ir::Type::int_literal && ir::is_float(want)) {
    // One rounding: f32 straight from the integer, the halves through a double (exact below 2^53).
    const int64_t i = static_cast<int64_t>(value);
    auto bits = want == ir::Type::f32 ? ir::float_bits(static_cast<float>(i), want)
                                      : ir::float_bits(static_cast<double>(i), want);
    if (!bits) return false;
    value = *bits;
  } else if (want == ir::Type::f64 && have == ir::Type::f32) {
    float f;
    uint32_t b = static_cast<uint32_t>(value);
    std::memcpy(&f, &b, 4);
    double d = f;
    std::memcpy(&value, &d, 8);
  } else {
    return false;
  }
  slot.size = param.size_bytes != 0 ? param.size_bytes : ir::byte_size(want);
  // Little-endian: the slot's first `size` bytes are the value's low bytes.
  std::memcpy(slot.bytes, &value, 8);
  if (slot.size < 8) std::memset(slot.bytes + slot.size, 0, 8 - slot.size);
  return true;
}

contract::ArgumentDesc describe_argument(const Arg& arg) noexcept {
  contract::ArgumentDesc d;
  if (arg.kind() == Arg::Kind::tensor_map) {
    d.kind = contract::ArgumentDesc::Kind::tensor_map;
    d.size_bytes = 128;
  } else if (arg.kind() == Arg::Kind::buffer) {
    d.kind = contract::ArgumentDesc::Kind::buffer;
    d.size_bytes = 8;
    d.pointer_is_null = arg.bits() == 0;
    if (arg.buffer_bytes() != 0) d.buffer_bytes = arg.buffer_bytes();
    d.address = arg.bits();
  } else {
    d.kind = contract::ArgumentDesc::Kind::scalar;
    d.size_bytes = ir::byte_size(arg.type());
    d.scalar_type = arg.type();
  }
  return d;
}

namespace {

/// Binds `arg` to `param` into `slot` without a message and updates `desc` (describe_argument's)
/// to what was bound, the parameter's width and type; false where bind_argument reports an error.
bool bind_described(const Arg& arg, const contract::ParamInfo& param, BoundSlot& slot,
                    contract::ArgumentDesc& desc) noexcept {
  if ((param.type == ir::Type::tensor_map && !param.is_buffer) != (arg.kind() == Arg::Kind::tensor_map)) return false;
  if (arg.kind() == Arg::Kind::tensor_map) {  // the slot is the map itself (argument_slot)
    slot.size = 128;
    return true;
  }
  if (param.is_buffer) {
    if (arg.kind() != Arg::Kind::buffer || arg.bits() == 0 || !element_type_fits(arg.type(), param.type)) return false;
    const uint64_t p = arg.bits();
    std::memcpy(slot.bytes, &p, 8);
    slot.size = 8;
    return true;
  }
  if (arg.kind() != Arg::Kind::scalar || !bind_scalar(arg, param, slot)) return false;
  desc.size_bytes = slot.size;
  desc.scalar_type = param.type;
  return true;
}

/// The low `bytes` bytes (at most 8) of the value at `p`, zero-extended: the common widths as one
/// load each (a proof scalar is read on every guarded launch of its kernel).
uint64_t read_value(const void* p, uint32_t bytes) {
  uint64_t v = 0;
  switch (bytes) {
    case 8: std::memcpy(&v, p, 8); break;
    case 4: std::memcpy(&v, p, 4); break;
    case 2: std::memcpy(&v, p, 2); break;
    case 1: std::memcpy(&v, p, 1); break;
    default: std::memcpy(&v, p, std::min<uint32_t>(bytes, 8)); break;
  }
  return v;
}

/// The value of a bound scalar slot as scalar_bits: its `size` bytes, zero-extended.
uint64_t slot_value(const BoundSlot& slot) {
  uint64_t v = 0;
  std::memcpy(&v, slot.bytes, std::min<uint32_t>(slot.size, 8));
  return v;
}

}  // namespace

ArgumentBinder::ArgumentBinder(const contract::KernelInfo& info)
    : params_(info.params.size()), exact_descs_(info.params.size()), exact_pairs_(2 * info.params.size(), 0) {
  const auto signature = [](Arg::Kind kind, ir::Type type) {
    return static_cast<uint16_t>(static_cast<uint8_t>(kind) | static_cast<uint8_t>(type) << 8);
  };
  for (size_t i = 0; i < info.params.size(); ++i) {
    const contract::ParamInfo& p = info.params[i];
    ParamBinding& b = params_[i];
    b.type = p.type;
    b.buffer = p.is_buffer;
    b.access = access_mode(p.access);
    // The description bind() leaves for an argument that matches the parameter exactly.
    contract::ArgumentDesc& d = exact_descs_[i];
    if (p.is_buffer) {
      d.kind = contract::ArgumentDesc::Kind::buffer;
      d.size_bytes = 8;
      b.signature = signature(Arg::Kind::buffer, ir::Type::void_);  // the element type: bind_exact
      exact_plan_.buffers.push_back({static_cast<uint32_t>(i), p.type, b.access});
    } else if (p.type == ir::Type::tensor_map) {  // Hopper: bound on the general path (word 0)
      d.kind = contract::ArgumentDesc::Kind::tensor_map;
      d.size_bytes = 128;
      continue;
    } else {
      d.kind = contract::ArgumentDesc::Kind::scalar;
      d.size_bytes = p.size_bytes != 0 ? p.size_bytes : ir::byte_size(p.type);
      d.scalar_type = p.type;
      b.value_bytes = static_cast<uint8_t>(std::min<uint32_t>(d.size_bytes, 8));
      if (p.value_in_access_proof) {
        b.proof = true;
        d.scalar_bits = 0;  // its value is part of the shape: the word says so
        proof_params_.push_back(static_cast<uint32_t>(i));
        exact_plan_.proofs.push_back({static_cast<uint32_t>(i), value_bits(~uint64_t{0}, b.value_bytes)});
      }
      // The slot points at the Arg's 8-byte little-endian value: only widths up to 8 bytes.
      if (d.size_bytes == 0 || d.size_bytes > 8) continue;
      b.signature = signature(Arg::Kind::scalar, p.type);
      b.signature_type_mask = 0xFF;
    }
    exact_pairs_[2 * i] = validation::LaunchShape::argument_word(d);
  }
  proof_scalars_ = static_cast<uint32_t>(proof_params_.size());
  buffers_ = static_cast<uint32_t>(exact_plan_.buffers.size());
  // A SteadyKey's words: the buffers' sizes in parameter order, then the proof scalars' values. A
  // kernel of more than SteadyKey::kMaxWords never uses its key (Kernel::launch checks).
  key_words_ = buffers_ + proof_scalars_;
}

std::expected<void, diag::Diagnostics> ArgumentBinder::bind(const contract::KernelInfo& info, std::span<const Arg> args,
                                                            std::vector<contract::ArgumentDesc>& descs, void** slots,
                                                            BoundSlot* values) const {
  descs.resize(args.size());
  const auto& params = info.params;
  diag::Diagnostics errors;
  for (size_t i = 0; i < args.size(); ++i) {
    contract::ArgumentDesc& d = descs[i];
    d = describe_argument(args[i]);
    slots[i] = argument_slot(args[i], values[i]);
    if (i >= params.size()) continue;  // an argument past the parameters: the count error is validation's
    if (bind_described(args[i], params[i], values[i], d)) {
      if (params_[i].proof) d.scalar_bits = slot_value(values[i]);
      continue;
    }
    // The message-free binder said no: bind_argument says why.
    auto bound = bind_argument(args[i], params[i], info.name);
    if (bound) [[unlikely]] {  // the two disagree: take the one that explains itself
      values[i] = *bound;
      d.size_bytes = bound->size;
      if (!params[i].is_buffer) d.scalar_type = params[i].type;
      if (params_[i].proof) d.scalar_bits = slot_value(values[i]);
    } else {
      errors.append(bound.error());
      slots[i] = nullptr;
    }
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return {};
}

void ArgumentBinder::exact_shape(std::span<const Arg> args, validation::LaunchShape& shape) const {
  // The parameters' fixed words at once, then the words of the buffers' sizes and proof values.
  uint64_t* words = shape.argument_words(args.size());  // args.size() == size() <= kMaxArguments (steady())
  if (!args.empty()) std::memcpy(words, exact_pairs_.data(), exact_pairs_.size() * sizeof(uint64_t));
  for (const ExactPlan::Buffer& b : exact_plan_.buffers) {
    const uint64_t bytes = args[b.index].buffer_bytes();
    words[2 * b.index] |= bytes != 0 ? validation::LaunchShape::kBufferBytesKnown : 0;
    words[2 * b.index + 1] = bytes;
  }
  for (const ExactPlan::Proof& p : exact_plan_.proofs) words[2 * p.index + 1] = args[p.index].bits() & p.mask;
}

void ArgumentBinder::exact_descriptions(std::span<const Arg> args, std::vector<contract::ArgumentDesc>& descs) const {
  // The parameters' descriptions at once (trivially copyable), then each buffer's size and
  // address and each proof scalar's value.
  descs.resize(args.size());  // args.size() == size()
  if (!args.empty()) std::memcpy(descs.data(), exact_descs_.data(), exact_descs_.size() * sizeof(contract::ArgumentDesc));
  for (const ExactPlan::Buffer& b : exact_plan_.buffers) {
    contract::ArgumentDesc& d = descs[b.index];
    if (const uint64_t bytes = args[b.index].buffer_bytes(); bytes != 0) d.buffer_bytes = bytes;
    d.address = args[b.index].bits();
  }
  for (const ExactPlan::Proof& p : exact_plan_.proofs) descs[p.index].scalar_bits = args[p.index].bits() & p.mask;
}

bool ArgumentBinder::proof_value(uint32_t i, std::span<void* const> slots,
                                 std::span<const contract::ArgumentDesc> descs, uint64_t& value) const {
  if (i >= slots.size() || i >= descs.size() || slots[i] == nullptr) return false;
  const contract::ArgumentDesc& d = descs[i];
  if (d.kind != contract::ArgumentDesc::Kind::scalar) return false;  // validation reports the kind
  value = read_value(slots[i], std::min<uint32_t>(d.size_bytes, params_[i].value_bytes));
  return true;
}

void ArgumentBinder::read_proof_values(std::span<void* const> slots, std::vector<contract::ArgumentDesc>& descs) const {
  for (const uint32_t i : proof_params_)
    if (uint64_t v; proof_value(i, slots, descs, v)) descs[i].scalar_bits = v;
}

void ArgumentBinder::add_proof_values(std::span<void* const> slots, std::span<const contract::ArgumentDesc> descs,
                                      validation::LaunchShape& shape) const {
  for (const uint32_t i : proof_params_)
    if (uint64_t v; i < shape.arguments() && proof_value(i, slots, descs, v)) shape.set_scalar_value(i, v);
}

std::expected<void, diag::Diagnostics> hidden_for_stream(Context& ctx, const contract::KernelInfo& info, CUstream stream,
                                                         HiddenArguments& out) {
  if (info.hidden_grid_barrier_param) {
    auto word = ctx.grid_barrier_word(stream);
    if (!word) return std::unexpected(std::move(word.error()));
    out.barrier_word = *word;
  }
  if (info.checked) {
    if (auto complete = checked_lengths_complete(info, out); !complete) return complete;
    // Reserved last: nothing fails between here and the driver call that registers or releases it.
    auto slot = ctx.checked_records().reserve();
    if (!slot) return std::unexpected(std::move(slot.error()));
    out.checked_record = slot->address;
    out.checked_slot = slot->index;
  }
  return {};
}

std::expected<void, diag::Diagnostics> checked_lengths_complete(const contract::KernelInfo& info,
                                                                const HiddenArguments& hidden) {
  const size_t buffers = info.buffer_count();
  if (hidden.buffers == buffers) [[likely]]
    return {};
  diag::Diagnostics d;
  d.add(diag::Code::internal_error,
        fmt::format("checked launch of '{}': the launch describes {} buffer sizes for {} buffer parameters (checked "
                    "mode takes at most {})",
                    info.name, hidden.buffers, buffers, contract::kMaxCheckedBuffers),
        {}, "launch a kernel with fewer buffer parameters in checked mode, or report this as a ptxgate bug");
  return std::unexpected(std::move(d));
}

void ArgumentBinder::checked_lengths(const validation::LaunchShape& shape, HiddenArguments& hidden) {
  hidden.buffers = 0;
  for (size_t k = 0; k < shape.arguments(); ++k) {
    const uint64_t description = shape.word(validation::LaunchShape::kHeaderWords + 2 * k);
    if ((description & 1) == 0) continue;  // not a buffer (argument_word's kind bit)
    if (hidden.buffers == hidden.buffer_bytes.size()) {  // more than a checked kernel has: reported
      hidden.buffers = UINT32_MAX;
      return;
    }
    const uint64_t bytes = shape.word(validation::LaunchShape::kHeaderWords + 2 * k + 1);
    hidden.buffer_bytes[hidden.buffers++] =
        (description & validation::LaunchShape::kBufferBytesKnown) != 0 ? bytes : ~uint64_t{0};
  }
}

void ArgumentBinder::checked_lengths(const SteadyKey& key, HiddenArguments& hidden) const {
  hidden.buffers = std::min<uint32_t>(buffers_, static_cast<uint32_t>(hidden.buffer_bytes.size()));
  for (uint32_t k = 0; k < hidden.buffers; ++k) hidden.buffer_bytes[k] = key.words[k] != 0 ? key.words[k] : ~uint64_t{0};
}

size_t ArgumentBinder::proof_values(std::span<void* const> slots, uint64_t* out, size_t max) const {
  for (size_t k = 0; k < proof_params_.size() && k < max; ++k) {
    const uint32_t i = proof_params_[k];
    out[k] = i < slots.size() && slots[i] != nullptr ? read_value(slots[i], params_[i].value_bytes) : 0;
  }
  return proof_params_.size();
}

}  // namespace internal
}  // namespace ptxgate::runtime
