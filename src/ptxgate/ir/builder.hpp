// Builder API: constructs the same ir::Module as the parser, from C++ instead of text.
//
//   ir::ModuleBuilder mb;
//   auto& k = mb.kernel("saxpy");
//   k.workgroup(256).buffer("y", Access::inout, Type::f32).buffer("x", Access::in, Type::f32)
//    .scalar("a", Type::f32).scalar("n", Type::u32);
//   ir::Ex i = k.let_("i", k.global_id());
//   k.if_(i < k.name("n"), [&](ir::BlockBuilder& b) {
//     b.assign(b.index("y", i), b.name("a") * b.index("x", i) + b.index("y", i));
//   });
//   ir::Module m = mb.take();
#pragma once

#include <concepts>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "ptxgate/ir/ast.hpp"

namespace ptxgate::ir {

/// A deep copy of an expression tree (resolved symbols and types are copied as they are).
ExprPtr clone(const Expr& e);

/// A value handle for an expression under construction. Copies deep-clone the tree, so
/// one handle can be used several times. Arithmetic values convert implicitly to untyped
/// literals: integers to integer literals (negative ones as unary minus), floating-point
/// values to float literals, bool to true/false.
class Ex {
 public:
  explicit Ex(ExprPtr e) : e_(std::move(e)) {}
  template <std::integral T>
  Ex(T v) : e_(make(v)) {}  // NOLINT(google-explicit-constructor): literals read naturally
  template <std::floating_point T>
  Ex(T v) : e_(make_float(static_cast<double>(v))) {}  // NOLINT(google-explicit-constructor)
  Ex(const Ex& other) : e_(clone(*other.e_)) {}
  Ex(Ex&&) noexcept = default;
  Ex& operator=(const Ex& other) {
    if (this != &other) e_ = clone(*other.e_);
    return *this;
  }
  Ex& operator=(Ex&&) noexcept = default;

  const Expr& expr() const { return *e_; }
  /// Gives up the tree (the handle is empty afterwards).
  ExprPtr take() && { return std::move(e_); }
  /// A copy of the tree.
  ExprPtr copy() const { return clone(*e_); }

 private:
  template <std::integral T>
  static ExprPtr make(T v) {
    if constexpr (std::same_as<T, bool>) {
      return make_bool(v);
    } else if constexpr (std::is_signed_v<T>) {
      return v < 0 ? make_negative(static_cast<uint64_t>(0) - static_cast<uint64_t>(v)) : make_int(static_cast<uint64_t>(v));
    } else {
      return make_int(static_cast<uint64_t>(v));
    }
  }
  static ExprPtr make_int(uint64_t magnitude);
  static ExprPtr make_negative(uint64_t magnitude);
  static ExprPtr make_float(double v);
  static ExprPtr make_bool(bool v);

  ExprPtr e_;
};

/// Binary and unary operators on handles, with the precedence of the text format
/// left to the tree (the printer adds parentheses where needed).
Ex operator+(Ex a, Ex b);
Ex operator-(Ex a, Ex b);
Ex operator*(Ex a, Ex b);
Ex operator/(Ex a, Ex b);
Ex operator%(Ex a, Ex b);
Ex operator<<(Ex a, Ex b);
Ex operator>>(Ex a, Ex b);
Ex operator&(Ex a, Ex b);
Ex operator|(Ex a, Ex b);
Ex operator^(Ex a, Ex b);
Ex operator==(Ex a, Ex b);
Ex operator!=(Ex a, Ex b);
Ex operator<(Ex a, Ex b);
Ex operator<=(Ex a, Ex b);
Ex operator>(Ex a, Ex b);
Ex operator>=(Ex a, Ex b);
Ex operator&&(Ex a, Ex b);
Ex operator||(Ex a, Ex b);
Ex operator-(Ex a);
Ex operator~(Ex a);
Ex operator!(Ex a);

/// Expression constructors; every statement builder offers them as members.
class ExprFactory {
 public:
  Ex name(std::string n) const;
  /// Untyped literals (`lit(0)`, `lit(2.5)`, `lit(true)`).
  Ex lit(Ex value) const { return value; }
  Ex index(std::string buffer, Ex i) const;
  Ex builtin(Builtin b, char component = 'x') const;
  Ex thread_id(char component = 'x') const { return builtin(Builtin::thread_id, component); }
  Ex block_id(char component = 'x') const { return builtin(Builtin::block_id, component); }
  Ex block_dim(char component = 'x') const { return builtin(Builtin::block_dim, component); }
  Ex grid_dim(char component = 'x') const { return builtin(Builtin::grid_dim, component); }
  Ex global_id(char component = 'x') const { return builtin(Builtin::global_id, component); }
  /// The scalar builtins `lane_id` and `warp_id` (no component).
  Ex lane_id() const { return builtin(Builtin::lane_id); }
  Ex warp_id() const { return builtin(Builtin::warp_id); }
  /// Hopper: the scalar builtin `warpgroup_id` (linear thread index / 128). The Hopper operations are
  /// intrinsics: `b.expr(b.call(Intrinsic::tma_load, {b.name("tile"), 0, b.name("map"), b.name("bars"), 0, x, y}))`.
  Ex warpgroup_id() const { return builtin(Builtin::warpgroup_id); }
  /// A warp operation, e.g. `warp(Intrinsic::shfl_xor, {v, 16})` or `warp(Intrinsic::warp_sum, {v})`.
  Ex warp(Intrinsic op, std::vector<Ex> args) const { return call(op, std::move(args)); }
  Ex binary(BinaryOp op, Ex a, Ex b) const;
  Ex unary(UnaryOp op, Ex a) const;
  Ex add(Ex a, Ex b) const { return binary(BinaryOp::add, std::move(a), std::move(b)); }
  Ex sub(Ex a, Ex b) const { return binary(BinaryOp::sub, std::move(a), std::move(b)); }
  Ex mul(Ex a, Ex b) const { return binary(BinaryOp::mul, std::move(a), std::move(b)); }
  Ex div(Ex a, Ex b) const { return binary(BinaryOp::div, std::move(a), std::move(b)); }
  Ex cast(Type to, Ex value) const;
  /// A call of an intrinsic, e.g. `call(Intrinsic::sqrt, {x})`.
  Ex call(Intrinsic fn, std::vector<Ex> args) const;
  /// A call of a function by name (unknown names are reported by the verifier).
  Ex call(std::string fn, std::vector<Ex> args) const;
  Ex select(Ex cond, Ex if_true, Ex if_false) const;
  /// `atomic_xxx(array, index, value)`; returns the old value.
  Ex atomic(Intrinsic op, std::string array, Ex index, Ex value) const;
  /// `atomic_cas(array, index, expected, value)`; returns the old value.
  Ex atomic_cas(std::string array, Ex index, Ex expected, Ex value) const;
  /// `f32x4(a, b, c, d)` (one value per lane) or `f32x4(x)` (x in every lane).
  Ex vector(Type vector_type, std::vector<Ex> lanes) const;
  /// `loadN(array, index)` for N = `lanes` (2, 4 or 8): elements N*index .. N*index+N-1.
  Ex load(unsigned lanes, std::string array, Ex index) const;
  /// `storeN(array, index, value)`; use it as a statement: `b.expr(b.store(4, "y", i, v))`.
  Ex store(unsigned lanes, std::string array, Ex index, Ex value) const;
  /// The same with a memory order and scope, e.g. `atomic(Intrinsic::atomic_exch, "flag", 0, 1,
  /// MemoryOrder::release, MemoryScope::device)`.
  Ex atomic(Intrinsic op, std::string array, Ex index, Ex value, MemoryOrder order,
            MemoryScope scope = MemoryScope::device) const;
  Ex atomic_cas(std::string array, Ex index, Ex expected, Ex value, MemoryOrder order,
                MemoryScope scope = MemoryScope::device) const;

  // tensor cores: mma.sync, ldmatrix, cp.async (sm_80+; docs/ir.md "Tensor cores")
  /// `mma_m16n8k16(a, b, c)` for k = 16 (f16/bf16 fragments), `mma_m16n8k8(a, b, c)` for k = 8
  /// (tf32 in f32 lanes); another k names no intrinsic (the verifier reports it).
  Ex mma(unsigned k, Ex a, Ex b, Ex c) const;
  /// `ldmatrix_xN(array, chunk)` or `ldmatrix_xN_trans(array, chunk)` for N = `count` (1, 2, 4).
  Ex ldmatrix(unsigned count, bool trans, std::string array, Ex chunk) const;
  /// `cp_asyncN(shared, i, buffer, j)` for N = `bytes` (4, 8, 16); a statement:
  /// `b.expr(b.cp_async(16, "tile", i, "x", j))`.
  Ex cp_async(unsigned bytes, std::string shared, Ex i, std::string buffer, Ex j) const;
  /// The same reading only `source_bytes` from the buffer (the rest of the copy is zero-filled).
  Ex cp_async(unsigned bytes, std::string shared, Ex i, std::string buffer, Ex j, Ex source_bytes) const;
  /// `cp_async_commit()` and `cp_async_wait(groups)` (a constant), statements.
  Ex cp_async_commit() const { return call(Intrinsic::cp_async_commit, {}); }
  Ex cp_async_wait(Ex groups) const;
  /// `tf32(x)`: x rounded to TF32.
  Ex tf32(Ex x) const;
};

/// Appends statements to one block (a kernel body or a nested body).
class BlockBuilder : public ExprFactory {
 public:
  using BodyFn = std::function<void(BlockBuilder&)>;

  /// Handle returned by if_ to attach `else if` and `else` branches.
  class IfChain {
   public:
    IfChain& else_if(Ex cond, const BodyFn& then_body);
    void else_(const BodyFn& else_body);

   private:
    friend class BlockBuilder;
    explicit IfChain(Stmt* last) : last_(last) {}
    Stmt* last_;
  };

  explicit BlockBuilder(std::vector<StmtPtr>& out) : out_(&out) {}

  /// `let name [: type] = value;` and returns a handle naming it.
  Ex let_(std::string name, Ex value, std::optional<Type> type = std::nullopt);
  /// `var name [: type] = value;` and returns a handle naming it.
  Ex var_(std::string name, Ex value, std::optional<Type> type = std::nullopt);
  /// `var name: type;` without an initial value.
  Ex var_(std::string name, Type type);
  /// `shared name: elem[size];` and returns a handle naming it.
  Ex shared(std::string name, Type elem, uint64_t size);
  /// `shared name: elem[size];` with a constant size expression, e.g. a module constant's name.
  Ex shared(std::string name, Type elem, Ex size);
  /// `shared name: elem[];`: the kernel's dynamic shared array, sized by the launch.
  Ex shared_dynamic(std::string name, Type elem);
  /// `var name: elem[size];`: a local (per-thread) array, every element zero; returns a handle naming it.
  Ex local_array(std::string name, Type elem, Ex size);
  /// `target = value;` where target is a name or index handle.
  BlockBuilder& assign(Ex target, Ex value);
  BlockBuilder& assign(std::string name, Ex value) { return assign(this->name(std::move(name)), std::move(value)); }
  IfChain if_(Ex cond, const BodyFn& then_body);
  BlockBuilder& while_(Ex cond, const BodyFn& body);
  /// `for var in lo..hi { body }`; inside, `b.name(var)` is the loop variable.
  BlockBuilder& for_(std::string var, Ex lo, Ex hi, const BodyFn& body);
  /// `for var in lo..hi step step { body }`.
  BlockBuilder& for_(std::string var, Ex lo, Ex hi, Ex step, const BodyFn& body);
  /// Marks the `for` loop appended last `unroll` (count 0: completely) or `unroll(count)`;
  /// std::logic_error when the last statement is not a `for` loop.
  BlockBuilder& unroll(uint32_t count = 0);
  BlockBuilder& break_();
  BlockBuilder& continue_();
  BlockBuilder& return_();
  /// `return value;` (in a device function with a result).
  BlockBuilder& return_(Ex value);
  /// An expression statement, e.g. `b.expr(b.atomic(Intrinsic::atomic_add, "t", 0, v))`.
  BlockBuilder& expr(Ex e);
  BlockBuilder& barrier() { return expr(call(Intrinsic::barrier, {})); }
  BlockBuilder& grid_sync() { return expr(call(Intrinsic::grid_sync, {})); }
  /// `fence_block();`, `fence_device();` or `fence_system();`.
  BlockBuilder& fence(MemoryScope scope);
  /// `assert(condition);` (the device message shows the condition's canonical text, line 0).
  BlockBuilder& assert_(Ex condition) { return expr(call(Intrinsic::assert_, {std::move(condition)})); }
  /// A nested `{ ... }` block.
  BlockBuilder& block(const BodyFn& body);

 private:
  Stmt& append(StmtKind kind);
  std::vector<StmtPtr>* out_;
};

namespace detail {
/// Holds the kernel so that it exists before the BlockBuilder base that appends to its body.
struct KernelStorage {
  Kernel kernel;
};
}  // namespace detail

/// Builds one kernel: attributes, parameters, and the body (as a BlockBuilder).
class KernelBuilder : private detail::KernelStorage, public BlockBuilder {
 public:
  explicit KernelBuilder(std::string name);
  /// `@workgroup(x)`, `@workgroup(x, y)`, `@workgroup(x, y, z)`.
  KernelBuilder& workgroup(uint32_t x);
  KernelBuilder& workgroup(uint32_t x, uint32_t y);
  KernelBuilder& workgroup(uint32_t x, uint32_t y, uint32_t z);
  KernelBuilder& cooperative();
  /// `@fp(contract)`, `@fp(exact)` or `@fp(fast)`.
  KernelBuilder& fp(FpMode mode);
  /// Any attribute, e.g. one the verifier should reject.
  KernelBuilder& attribute(std::string name, std::vector<Ex> args = {});
  /// A buffer parameter `access name: elem[]`.
  KernelBuilder& buffer(std::string name, Access access, Type elem);
  /// A scalar parameter `name: type`.
  KernelBuilder& scalar(std::string name, Type type);
  /// Hopper: a tensor map parameter `name: tensor_map` (a __grid_constant__ CUtensorMap).
  KernelBuilder& tensor_map(std::string name) { return scalar(std::move(name), Type::tensor_map); }
  Kernel take() && { return std::move(kernel); }
};

namespace detail {
/// Holds the function so that it exists before the BlockBuilder base that appends to its body.
struct FunctionStorage {
  Function function;
};
}  // namespace detail

/// Builds one device function `fn name(params) [-> result] { body }`; call it with
/// `b.call("name", {args})`, passing a buffer argument as `b.name("buffer")`.
class FunctionBuilder : private detail::FunctionStorage, public BlockBuilder {
 public:
  explicit FunctionBuilder(std::string name);
  /// `-> type`; without it the function has no result.
  FunctionBuilder& returns(Type type);
  /// A buffer parameter `access name: elem[]`.
  FunctionBuilder& buffer(std::string name, Access access, Type elem);
  /// A scalar parameter `name: type`.
  FunctionBuilder& scalar(std::string name, Type type);
  Function take() && { return std::move(function); }
};

/// Builds a module of kernels and device functions.
class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string path = "<builder>") : path_(std::move(path)) {}
  /// Starts a new kernel; the reference stays valid until take().
  KernelBuilder& kernel(std::string name);
  /// Starts a new device function; the reference stays valid until take().
  FunctionBuilder& function(std::string name);
  /// `const name: type = value;` at module level; returns a handle naming it (usable in
  /// every kernel and in later constants).
  Ex constant(std::string name, Type type, Ex value);
  /// The finished module; the builder is empty afterwards.
  Module take();

 private:
  std::string path_;
  std::vector<StmtPtr> constants_;
  std::deque<KernelBuilder> kernels_;
  std::deque<FunctionBuilder> functions_;
};

}  // namespace ptxgate::ir
