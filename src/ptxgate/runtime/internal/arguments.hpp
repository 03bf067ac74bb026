// The argument binder: every launch path binds a kernel's arguments here, each argument once.
#pragma once

#include <cstdint>
#include <cstring>
#include <expected>
#include <memory>
#include <span>
#include <vector>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/runtime/internal/launch_cache.hpp"
#include "ptxgate/runtime/tracking.hpp"
#include "ptxgate/contract/checked.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::runtime::internal {

/// What binding reads of one parameter, in eight bytes (eight parameters per cache line, not the
/// larger ParamInfo): its type, whether it is a buffer, the access mode, whether it is a scalar the
/// memory-safety proof uses, and the signature of an argument that matches it exactly.
struct ParamBinding {
  ir::Type type = ir::Type::void_;  ///< element type (buffers) or value type (scalars)
  bool buffer = false;
  AccessMode access = AccessMode::write;
  bool proof = false;       ///< a scalar the kernel's memory-safety proof uses (ParamInfo::value_in_access_proof)
  uint8_t value_bytes = 0;  ///< scalars: the width of the value the kernel reads
  /// 0xFF when the argument's type must equal the parameter's (a scalar), 0 when bind_exact checks
  /// it with the buffer (a buffer's element type).
  uint8_t signature_type_mask = 0;
  /// The signature of an exactly matching argument (bind_exact): its Arg::Kind in the low byte,
  /// its type in the high byte. For a parameter the steady path does not take (a tensor map, a
  /// scalar wider than 8 bytes) a kind no argument has (0xFF).
  uint16_t signature = 0x00FF;
};
static_assert(sizeof(ParamBinding) <= 8);

/// Kernel::launch's binding of arguments that match their parameters exactly, decided once per
/// kernel (ArgumentBinder's constructor): with each parameter's signature (ParamBinding), the
/// steady path is one compare-and-copy pass over the arguments, one over the buffers and one over
/// the proof scalars (bind_exact), with no per-argument decisions.
struct ExactPlan {
  struct Buffer {
    uint32_t index = 0;  ///< the parameter's number
    ir::Type type = ir::Type::void_;
    AccessMode access = AccessMode::write;
  };
  /// The buffer parameters in order: their sizes are the SteadyKey's first words.
  std::vector<Buffer> buffers;
  struct Proof {
    uint32_t index = 0;  ///< the parameter's number
    uint64_t mask = 0;   ///< the bits of the value the kernel reads (value_bits)
  };
  /// The scalars the memory-safety proof uses, in order: their values are the key's next words.
  std::vector<Proof> proofs;
};

/// A scalar's value as the memory-safety check reads it (ArgumentDesc::scalar_bits): the low
/// `bytes` bytes of `bits`, zero-extended.
inline uint64_t value_bits(uint64_t bits, unsigned bytes) {
  return bytes >= 8 ? bits : bits & ((uint64_t{1} << (8 * bytes)) - 1);
}

/// Whether a buffer argument's element type fits a buffer parameter: equal, or untyped (void_).
/// An untyped buffer fits any buffer parameter, and any buffer fits a parameter of unknown
/// element type (a pointer of another compiler's kernel).
inline bool element_type_fits(ir::Type arg, ir::Type param) noexcept {
  return arg == ir::Type::void_ || param == ir::Type::void_ || arg == param;
}

/// The steady path's binding of one launch: the argument table (each slot the Arg's own value),
/// the SteadyKey's words, and the tracked buffers. Storage only: bind_exact writes what it uses.
struct ExactBinding {
  ExactBinding() {}  // NOLINT: left uninitialised (zeroing the arrays costs more than the launch)
  std::array<void*, validation::LaunchShape::kMaxArguments> slots;
  SteadyKey key;
  union Accesses {
    Accesses() {}
    BufferAccess items[validation::LaunchShape::kMaxArguments];
  } accesses;
  size_t tracked = 0;
};

/// Binds arguments that match their parameters exactly (`params`, the binder's, and `plan`:
/// Kernel::launch's steady path): a
/// buffer of context `own` (or untracked memory) of the parameter's element type or untyped, a
/// scalar of exactly the parameter's type. args.size() is the plan's parameter count. Writes the
/// slots, the buffers' sizes (and, with kProofs, the proof scalars' values) into the key's words,
/// and the tracked accesses; false when any argument does not match (the general path, bind(),
/// takes the launch then and explains it). The mismatches of all arguments are gathered without a
/// branch: a steady launch takes one.
template <bool kProofs>
[[gnu::always_inline]] inline bool bind_exact(const ParamBinding* params, const ExactPlan& plan,
                                              std::span<const Arg> args, const void* own, ExactBinding& out) {
  const size_t n = args.size();
  uint32_t differ = 0;
  for (size_t i = 0; i < n; ++i) {
    const Arg& a = args[i];
    const ParamBinding& p = params[i];
    const uint32_t signature = uint32_t{static_cast<uint8_t>(a.kind())} | uint32_t{static_cast<uint8_t>(a.type())} << 8;
    differ |= (signature ^ p.signature) & (0xFFu | uint32_t{p.signature_type_mask} << 8);
    out.slots[i] = const_cast<uint64_t*>(a.value_address());  // the driver only reads it
  }
  size_t tracked = 0;
  const size_t buffers = plan.buffers.size();
  for (size_t k = 0; k < buffers; ++k) {
    const ExactPlan::Buffer& p = plan.buffers[k];
    const Arg& a = args[p.index];
    const void* context = a.context();
    differ |= uint32_t{a.bits() == 0} | uint32_t{!element_type_fits(a.type(), p.type)} |
              uint32_t{context != nullptr && context != own};
    out.key.words[k] = a.buffer_bytes();
    if (BufferTrack* t = a.track()) std::construct_at(&out.accesses.items[tracked++], t, p.access);
  }
  if constexpr (kProofs) {
    const size_t proofs = plan.proofs.size();
    for (size_t k = 0; k < proofs; ++k)
      out.key.words[buffers + k] = args[plan.proofs[k].index].bits() & plan.proofs[k].mask;
  }
  out.tracked = tracked;
  return differ == 0;
}

/// The values of the hidden arguments the backend appends after the user's, for kernels that
/// declare them. Adding a hidden parameter is one field here, its value in hidden_for_stream (and
/// the graph's node preparation), and one line in ArgumentBinder::append_hidden.
struct HiddenArguments {
  /// The grid-barrier word (KernelInfo::hidden_grid_barrier_param): the stream's (Context::
  /// grid_barrier_word) for a launch, the graph's own for its nodes.
  CUdeviceptr barrier_word = 0;
  /// Checked kernels (KernelInfo::checked, src/ptxgate/contract/checked.hpp): each buffer parameter's length in
  /// bytes, in parameter order (UINT64_MAX: not known); `buffers` of them are set
  /// (ArgumentBinder::checked_lengths).
  uint32_t buffers = 0;
  std::array<uint64_t, contract::kMaxCheckedBuffers> buffer_bytes;
  /// Checked kernels: the address of the launch's record, a slot of the context's CheckedRecords
  /// ring (`checked_slot`, released or registered by the driver call) or a graph node's own (-1).
  CUdeviceptr checked_record = 0;
  int64_t checked_slot = -1;
};

/// The hidden arguments of a launch of `info`'s kernel on `stream`: the stream's grid-barrier
/// word, and for a checked kernel (whose lengths the caller set) a record slot of the context's
/// ring (the caller's driver call registers or releases it).
[[nodiscard]] std::expected<void, diag::Diagnostics> hidden_for_stream(Context& ctx, const contract::KernelInfo& info,
                                                                       CUstream stream, HiddenArguments& out);
/// PG9000 (an internal error) unless `hidden` holds one length per buffer parameter of `info`'s
/// checked kernel: the launch's shape described every buffer (checked kernels have at most
/// contract::kMaxCheckedBuffers, PG1906 when compiling).
[[nodiscard]] std::expected<void, diag::Diagnostics> checked_lengths_complete(const contract::KernelInfo& info,
                                                                              const HiddenArguments& hidden);

/// One kernel's binding facts, computed once when its function is loaded, and the binding itself.
class ArgumentBinder {
 public:
  explicit ArgumentBinder(const contract::KernelInfo& info);

  size_t size() const { return params_.size(); }
  const ParamBinding* params() const { return params_.data(); }
  /// The steady path's plan (bind_exact).
  const ExactPlan& exact_plan() const { return exact_plan_; }
  /// Words of the kernel's SteadyKey: one per buffer parameter, one per proof scalar.
  uint32_t key_words() const { return key_words_; }
  bool has_proof_scalars() const { return proof_scalars_ != 0; }
  /// Whether arguments that match exactly can take the steady path: at most kMaxArguments
  /// parameters (the SteadyKey is used only when it has at most SteadyKey::kMaxWords words).
  bool steady() const { return params_.size() <= validation::LaunchShape::kMaxArguments; }

  /// Binds any arguments (the general path, Kernel::check, graph nodes): each argument is
  /// described (plan.arguments), bound to its parameter into `values` (kind, element type, scalar
  /// family, width and range; PG3006, PG3007, PG3009, PG3010 and PG3712 with a message) and given
  /// its slot (null where binding failed); a proof scalar's value goes into scalar_bits. An
  /// argument past the parameters is only described (the count is validation's to report).
  /// `slots` and `values` hold args.size() entries.
  [[nodiscard]] std::expected<void, diag::Diagnostics> bind(const contract::KernelInfo& info, std::span<const Arg> args,
                                                            std::vector<contract::ArgumentDesc>& descs, void** slots,
                                                            BoundSlot* values) const;

  /// The LaunchShape words of arguments bind_exact accepted (args.size() == size()), and their
  /// descriptions: what bind() would have given for the same arguments.
  void exact_shape(std::span<const Arg> args, validation::LaunchShape& shape) const;
  void exact_descriptions(std::span<const Arg> args, std::vector<contract::ArgumentDesc>& descs) const;

  /// A raw argument table's proof scalars (launch_cuda_function): each value read from its slot
  /// (`size_bytes` of the description, zero-extended) into scalar_bits, so that the verdict and the
  /// launch cache's key use the value the kernel receives. Null slots and non-scalars are skipped.
  void read_proof_values(std::span<void* const> slots, std::vector<contract::ArgumentDesc>& descs) const;
  /// The same values into `shape` (LaunchShape::of the plan whose descriptions are `descs`): the
  /// shape of the plan read_proof_values would give, without copying the plan.
  void add_proof_values(std::span<void* const> slots, std::span<const contract::ArgumentDesc> descs,
                        validation::LaunchShape& shape) const;
  /// The proof scalars' values in a raw argument table, in parameter order, for a LaunchTicket:
  /// at most `max` of them into `out`; the count of proof scalars (more than `max`: not all kept).
  size_t proof_values(std::span<void* const> slots, uint64_t* out, size_t max) const;

  /// The proof scalars' parameter numbers, in order.
  std::span<const uint32_t> proof_params() const { return proof_params_; }

  /// Checked kernels: the buffers' lengths a launch's shape holds, into `hidden` (in parameter
  /// order; UINT64_MAX where the shape has no size). From a LaunchShape, or from a SteadyKey of
  /// this kernel (its first words are the buffers' sizes, 0 when not known).
  static void checked_lengths(const validation::LaunchShape& shape, HiddenArguments& hidden);
  void checked_lengths(const SteadyKey& key, HiddenArguments& hidden) const;

 private:
  /// Parameter `i`'s value in a raw argument table as read_proof_values reads it; false where it
  /// reads none (no slot, a null slot, an argument that is not a scalar).
  bool proof_value(uint32_t i, std::span<void* const> slots, std::span<const contract::ArgumentDesc> descs,
                   uint64_t& value) const;

 public:

  /// Appends the slots of `info`'s hidden arguments to `table` (a vector of void*): pointers to
  /// `hidden`'s values, which must outlive the driver call that reads the table.
  template <class Table>
  static void append_hidden(const contract::KernelInfo& info, HiddenArguments& hidden, Table& table) {
    if (info.hidden_grid_barrier_param) table.push_back(&hidden.barrier_word);
    if (info.checked) {
      for (uint32_t k = 0; k < hidden.buffers; ++k) table.push_back(&hidden.buffer_bytes[k]);
      table.push_back(&hidden.checked_record);
    }
  }

 private:
  std::vector<ParamBinding> params_;
  ExactPlan exact_plan_;
  /// Per parameter: the description an exactly matching argument leaves, and its LaunchShape
  /// words as a shape holds them, the description's (0: no steady path, e.g. a tensor map or a
  /// scalar wider than 8 bytes) then the value's (0, set per launch).
  std::vector<contract::ArgumentDesc> exact_descs_;
  std::vector<uint64_t> exact_pairs_;
  std::vector<uint32_t> proof_params_;  ///< the proof scalars' parameter numbers
  uint32_t key_words_ = 0;
  uint32_t proof_scalars_ = 0;
  uint32_t buffers_ = 0;  ///< buffer parameters (a SteadyKey's first words)
};

/// The message-free part of bind_argument for a scalar: writes the value converted to the
/// parameter's type into `slot` and returns true, or false where bind_argument reports PG3007.
bool bind_scalar(const Arg& arg, const contract::ParamInfo& param, BoundSlot& slot) noexcept;

/// What validation sees of `arg` as supplied (before binding): kind, slot width, null pointer,
/// scalar type, buffer size and address.
contract::ArgumentDesc describe_argument(const Arg& arg) noexcept;

/// The argument-table entry of a bound argument: the map's own 128 bytes for a tensor map, else the
/// bound slot's bytes.
inline void* argument_slot(const Arg& arg, BoundSlot& slot) noexcept {
  if (arg.kind() == Arg::Kind::tensor_map) return const_cast<uint64_t*>(arg.value_address());  // the driver only reads it
  return slot.bytes;
}

}  // namespace ptxgate::runtime::internal
