// Builder API: expression handles, statement and kernel builders producing an ir::Module.
#include "ptxgate/ir/builder.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace ptxgate::ir {

namespace {

ExprPtr new_expr(ExprKind kind) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  return e;
}

Ex binary_ex(BinaryOp op, Ex a, Ex b) {
  ExprPtr e = new_expr(ExprKind::binary);
  e->binary_op = op;
  e->operands.push_back(std::move(a).take());
  e->operands.push_back(std::move(b).take());
  return Ex(std::move(e));
}

Ex unary_ex(UnaryOp op, Ex a) {
  ExprPtr e = new_expr(ExprKind::unary);
  e->unary_op = op;
  e->operands.push_back(std::move(a).take());
  return Ex(std::move(e));
}

ExprPtr call_expr(std::string name, std::optional<Intrinsic> fn, std::vector<Ex> args) {
  ExprPtr e = new_expr(ExprKind::call);
  e->name = std::move(name);
  e->intrinsic = fn;
  for (auto& a : args) e->operands.push_back(std::move(a).take());
  return e;
}

}  // namespace

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->range = e.range;
  c->type = e.type;
  c->name = e.name;
  c->text = e.text;
  c->int_value = e.int_value;
  c->float_value = e.float_value;
  c->bool_value = e.bool_value;
  c->builtin = e.builtin;
  c->component = e.component;
  c->unary_op = e.unary_op;
  c->binary_op = e.binary_op;
  c->cast_type = e.cast_type;
  c->intrinsic = e.intrinsic;
  c->memory_order = e.memory_order;
  c->memory_scope = e.memory_scope;
  c->source_line = e.source_line;
  c->symbol = e.symbol;
  c->operands.reserve(e.operands.size());
  for (const auto& op : e.operands) c->operands.push_back(op ? clone(*op) : nullptr);
  return c;
}

ExprPtr Ex::make_int(uint64_t magnitude) {
  ExprPtr e = new_expr(ExprKind::int_literal);
  e->int_value = magnitude;
  return e;
}

ExprPtr Ex::make_negative(uint64_t magnitude) { return unary_ex(UnaryOp::neg, Ex(make_int(magnitude))).take(); }

ExprPtr Ex::make_float(double v) {
  if (v < 0) return unary_ex(UnaryOp::neg, Ex(make_float(-v))).take();
  ExprPtr e = new_expr(ExprKind::float_literal);
  e->float_value = v;
  return e;
}

ExprPtr Ex::make_bool(bool v) {
  ExprPtr e = new_expr(ExprKind::bool_literal);
  e->bool_value = v;
  return e;
}

Ex operator+(Ex a, Ex b) { return binary_ex(BinaryOp::add, std::move(a), std::move(b)); }
Ex operator-(Ex a, Ex b) { return binary_ex(BinaryOp::sub, std::move(a), std::move(b)); }
Ex operator*(Ex a, Ex b) { return binary_ex(BinaryOp::mul, std::move(a), std::move(b)); }
Ex operator/(Ex a, Ex b) { return binary_ex(BinaryOp::div, std::move(a), std::move(b)); }
Ex operator%(Ex a, Ex b) { return binary_ex(BinaryOp::rem, std::move(a), std::move(b)); }
Ex operator<<(Ex a, Ex b) { return binary_ex(BinaryOp::shl, std::move(a), std::move(b)); }
Ex operator>>(Ex a, Ex b) { return binary_ex(BinaryOp::shr, std::move(a), std::move(b)); }
Ex operator&(Ex a, Ex b) { return binary_ex(BinaryOp::bit_and, std::move(a), std::move(b)); }
Ex operator|(Ex a, Ex b) { return binary_ex(BinaryOp::bit_or, std::move(a), std::move(b)); }
Ex operator^(Ex a, Ex b) { return binary_ex(BinaryOp::bit_xor, std::move(a), std::move(b)); }
Ex operator==(Ex a, Ex b) { return binary_ex(BinaryOp::eq, std::move(a), std::move(b)); }
Ex operator!=(Ex a, Ex b) { return binary_ex(BinaryOp::ne, std::move(a), std::move(b)); }
Ex operator<(Ex a, Ex b) { return binary_ex(BinaryOp::lt, std::move(a), std::move(b)); }
Ex operator<=(Ex a, Ex b) { return binary_ex(BinaryOp::le, std::move(a), std::move(b)); }
Ex operator>(Ex a, Ex b) { return binary_ex(BinaryOp::gt, std::move(a), std::move(b)); }
Ex operator>=(Ex a, Ex b) { return binary_ex(BinaryOp::ge, std::move(a), std::move(b)); }
Ex operator&&(Ex a, Ex b) { return binary_ex(BinaryOp::logical_and, std::move(a), std::move(b)); }
Ex operator||(Ex a, Ex b) { return binary_ex(BinaryOp::logical_or, std::move(a), std::move(b)); }
Ex operator-(Ex a) { return unary_ex(UnaryOp::neg, std::move(a)); }
Ex operator~(Ex a) { return unary_ex(UnaryOp::bit_not, std::move(a)); }
Ex operator!(Ex a) { return unary_ex(UnaryOp::logical_not, std::move(a)); }

// ---- ExprFactory ------------------------------------------------------------

Ex ExprFactory::name(std::string n) const {
  ExprPtr e = new_expr(ExprKind::name);
  e->name = std::move(n);
  return Ex(std::move(e));
}

Ex ExprFactory::index(std::string buffer, Ex i) const {
  ExprPtr e = new_expr(ExprKind::index);
  e->name = std::move(buffer);
  e->operands.push_back(std::move(i).take());
  return Ex(std::move(e));
}

Ex ExprFactory::builtin(Builtin b, char component) const {
  ExprPtr e = new_expr(ExprKind::builtin);
  e->builtin = b;
  e->name = std::string(builtin_name(b));
  e->component = static_cast<uint8_t>(component >= 'x' && component <= 'z' ? component - 'x' : 0);
  return Ex(std::move(e));
}

Ex ExprFactory::binary(BinaryOp op, Ex a, Ex b) const { return binary_ex(op, std::move(a), std::move(b)); }
Ex ExprFactory::unary(UnaryOp op, Ex a) const { return unary_ex(op, std::move(a)); }

Ex ExprFactory::cast(Type to, Ex value) const {
  ExprPtr e = new_expr(ExprKind::cast);
  e->cast_type = to;
  e->name = std::string(type_name(to));
  e->operands.push_back(std::move(value).take());
  return Ex(std::move(e));
}

Ex ExprFactory::call(Intrinsic fn, std::vector<Ex> args) const {
  return Ex(call_expr(std::string(intrinsic_name(fn)), fn, std::move(args)));
}

Ex ExprFactory::call(std::string fn, std::vector<Ex> args) const {
  std::optional<Intrinsic> intrinsic = intrinsic_from_name(fn);
  return Ex(call_expr(std::move(fn), intrinsic, std::move(args)));
}

Ex ExprFactory::select(Ex cond, Ex if_true, Ex if_false) const {
  std::vector<Ex> args;
  args.push_back(std::move(cond));
  args.push_back(std::move(if_true));
  args.push_back(std::move(if_false));
  return call(Intrinsic::select, std::move(args));
}

Ex ExprFactory::atomic(Intrinsic op, std::string array, Ex index, Ex value) const {
  std::vector<Ex> args;
  args.push_back(name(std::move(array)));
  args.push_back(std::move(index));
  args.push_back(std::move(value));
  return call(op, std::move(args));
}

Ex ExprFactory::atomic_cas(std::string array, Ex index, Ex expected, Ex value) const {
  std::vector<Ex> args;
  args.push_back(name(std::move(array)));
  args.push_back(std::move(index));
  args.push_back(std::move(expected));
  args.push_back(std::move(value));
  return call(Intrinsic::atomic_cas, std::move(args));
}

Ex ExprFactory::vector(Type vector_type, std::vector<Ex> lanes) const {
  ExprPtr e = new_expr(ExprKind::cast);
  e->cast_type = vector_type;
  e->name = std::string(type_name(vector_type));
  for (auto& lane : lanes) e->operands.push_back(std::move(lane).take());
  return Ex(std::move(e));
}

namespace {
/// load2/load4/load8 (or the stores) by lane count; any other count names no intrinsic, so the
/// verifier reports the call as an unknown function.
std::string vector_access_name(bool store, unsigned lanes) {
  return std::string(store ? "store" : "load") + std::to_string(lanes);
}
}  // namespace

Ex ExprFactory::load(unsigned lanes, std::string array, Ex index) const {
  std::vector<Ex> args;
  args.push_back(name(std::move(array)));
  args.push_back(std::move(index));
  return call(vector_access_name(false, lanes), std::move(args));
}

Ex ExprFactory::store(unsigned lanes, std::string array, Ex index, Ex value) const {
  std::vector<Ex> args;
  args.push_back(name(std::move(array)));
  args.push_back(std::move(index));
  args.push_back(std::move(value));
  return call(vector_access_name(true, lanes), std::move(args));
}

// tensor cores: mma.sync, ldmatrix, cp.async
Ex ExprFactory::mma(unsigned k, Ex a, Ex b, Ex c) const {
  std::vector<Ex> args;
  args.push_back(std::move(a));
  args.push_back(std::move(b));
  args.push_back(std::move(c));
  return call(fmt::format("mma_m16n8k{}", k), std::move(args));
}

Ex ExprFactory::ldmatrix(unsigned count, bool trans, std::string array, Ex chunk) const {
  std::vector<Ex> args;
  args.push_back(name(std::move(array)));
  args.push_back(std::move(chunk));
  return call(fmt::format("ldmatrix_x{}{}", count, trans ? "_trans" : ""), std::move(args));
}

Ex ExprFactory::cp_async(unsigned bytes, std::string shared, Ex i, std::string buffer, Ex j) const {
  std::vector<Ex> args;
  args.push_back(name(std::move(shared)));
  args.push_back(std::move(i));
  args.push_back(name(std::move(buffer)));
  args.push_back(std::move(j));
  return call(fmt::format("cp_async{}", bytes), std::move(args));
}

Ex ExprFactory::cp_async(unsigned bytes, std::string shared, Ex i, std::string buffer, Ex j, Ex source_bytes) const {
  ExprPtr e = cp_async(bytes, std::move(shared), std::move(i), std::move(buffer), std::move(j)).take();
  e->operands.push_back(std::move(source_bytes).take());
  return Ex(std::move(e));
}

Ex ExprFactory::cp_async_wait(Ex groups) const {
  std::vector<Ex> args;
  args.push_back(std::move(groups));
  return call(Intrinsic::cp_async_wait, std::move(args));
}

Ex ExprFactory::tf32(Ex x) const {
  std::vector<Ex> args;
  args.push_back(std::move(x));
  return call(Intrinsic::tf32, std::move(args));
}

Ex ExprFactory::atomic(Intrinsic op, std::string array, Ex index, Ex value, MemoryOrder order,
                       MemoryScope scope) const {
  ExprPtr e = atomic(op, std::move(array), std::move(index), std::move(value)).take();
  e->memory_order = order;
  e->memory_scope = scope;
  return Ex(std::move(e));
}

Ex ExprFactory::atomic_cas(std::string array, Ex index, Ex expected, Ex value, MemoryOrder order,
                           MemoryScope scope) const {
  ExprPtr e = atomic_cas(std::move(array), std::move(index), std::move(expected), std::move(value)).take();
  e->memory_order = order;
  e->memory_scope = scope;
  return Ex(std::move(e));
}

// ---- BlockBuilder -----------------------------------------------------------

BlockBuilder& BlockBuilder::fence(MemoryScope scope) {
  const Intrinsic which = scope == MemoryScope::block    ? Intrinsic::fence_block
                          : scope == MemoryScope::device ? Intrinsic::fence_device
                                                         : Intrinsic::fence_system;
  return expr(call(which, {}));
}

Stmt& BlockBuilder::append(StmtKind kind) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  out_->push_back(std::move(s));
  return *out_->back();
}

Ex BlockBuilder::let_(std::string n, Ex value, std::optional<Type> type) {
  Stmt& s = append(StmtKind::let_decl);
  s.name = n;
  s.declared_type = type;
  s.value = std::move(value).take();
  return name(std::move(n));
}

Ex BlockBuilder::var_(std::string n, Ex value, std::optional<Type> type) {
  Stmt& s = append(StmtKind::var_decl);
  s.name = n;
  s.declared_type = type;
  s.value = std::move(value).take();
  return name(std::move(n));
}

Ex BlockBuilder::var_(std::string n, Type type) {
  Stmt& s = append(StmtKind::var_decl);
  s.name = n;
  s.declared_type = type;
  return name(std::move(n));
}

Ex BlockBuilder::shared(std::string n, Type elem, uint64_t size) { return shared(std::move(n), elem, Ex(size)); }

Ex BlockBuilder::shared_dynamic(std::string n, Type elem) {
  Stmt& s = append(StmtKind::shared_decl);
  s.name = n;
  s.declared_type = elem;
  return name(std::move(n));
}

Ex BlockBuilder::shared(std::string n, Type elem, Ex size) {
  Stmt& s = append(StmtKind::shared_decl);
  s.name = n;
  s.declared_type = elem;
  s.value = std::move(size).take();
  return name(std::move(n));
}

Ex BlockBuilder::local_array(std::string n, Type elem, Ex size) {
  Stmt& s = append(StmtKind::local_array_decl);
  s.name = n;
  s.declared_type = elem;
  s.value = std::move(size).take();
  return name(std::move(n));
}

BlockBuilder& BlockBuilder::assign(Ex target, Ex value) {
  Stmt& s = append(StmtKind::assign);
  s.target = std::move(target).take();
  s.value = std::move(value).take();
  return *this;
}

BlockBuilder::IfChain BlockBuilder::if_(Ex cond, const BodyFn& then_body) {
  Stmt& s = append(StmtKind::if_);
  s.value = std::move(cond).take();
  BlockBuilder inner(s.body);
  then_body(inner);
  return IfChain(&s);
}

BlockBuilder::IfChain& BlockBuilder::IfChain::else_if(Ex cond, const BodyFn& then_body) {
  last_->has_else = true;
  BlockBuilder else_block(last_->else_body);
  Stmt& nested = else_block.append(StmtKind::if_);
  nested.value = std::move(cond).take();
  BlockBuilder inner(nested.body);
  then_body(inner);
  last_ = &nested;
  return *this;
}

void BlockBuilder::IfChain::else_(const BodyFn& else_body) {
  last_->has_else = true;
  BlockBuilder inner(last_->else_body);
  else_body(inner);
}

BlockBuilder& BlockBuilder::while_(Ex cond, const BodyFn& body) {
  Stmt& s = append(StmtKind::while_);
  s.value = std::move(cond).take();
  BlockBuilder inner(s.body);
  body(inner);
  return *this;
}

BlockBuilder& BlockBuilder::for_(std::string var, Ex lo, Ex hi, const BodyFn& body) {
  Stmt& s = append(StmtKind::for_);
  s.name = std::move(var);
  s.lo = std::move(lo).take();
  s.hi = std::move(hi).take();
  BlockBuilder inner(s.body);
  body(inner);
  return *this;
}

BlockBuilder& BlockBuilder::for_(std::string var, Ex lo, Ex hi, Ex step, const BodyFn& body) {
  for_(std::move(var), std::move(lo), std::move(hi), body);
  out_->back()->step = std::move(step).take();
  return *this;
}

BlockBuilder& BlockBuilder::unroll(uint32_t count) {
  if (out_->empty() || !out_->back() || out_->back()->kind != StmtKind::for_)
    throw std::logic_error("BlockBuilder::unroll: the last statement is not a for loop");
  Stmt& s = *out_->back();
  s.unroll = true;
  s.unroll_count = count == 0 ? nullptr : Ex(static_cast<int64_t>(count)).take();
  return *this;
}

BlockBuilder& BlockBuilder::break_() {
  append(StmtKind::break_);
  return *this;
}

BlockBuilder& BlockBuilder::continue_() {
  append(StmtKind::continue_);
  return *this;
}

BlockBuilder& BlockBuilder::return_() {
  append(StmtKind::return_);
  return *this;
}

BlockBuilder& BlockBuilder::return_(Ex value) {
  append(StmtKind::return_).value = std::move(value).take();
  return *this;
}

BlockBuilder& BlockBuilder::expr(Ex e) {
  append(StmtKind::expr).value = std::move(e).take();
  return *this;
}

BlockBuilder& BlockBuilder::block(const BodyFn& body) {
  Stmt& s = append(StmtKind::block);
  BlockBuilder inner(s.body);
  body(inner);
  return *this;
}

// ---- KernelBuilder / ModuleBuilder -------------------------------------------

KernelBuilder::KernelBuilder(std::string name) : BlockBuilder(kernel.body) { kernel.name = std::move(name); }

KernelBuilder& KernelBuilder::attribute(std::string name, std::vector<Ex> args) {
  Attribute a;
  a.name = std::move(name);
  for (auto& e : args) a.args.push_back(std::move(e).take());
  kernel.attributes.push_back(std::move(a));
  return *this;
}

KernelBuilder& KernelBuilder::workgroup(uint32_t x) { return attribute("workgroup", {Ex(x)}); }
KernelBuilder& KernelBuilder::workgroup(uint32_t x, uint32_t y) { return attribute("workgroup", {Ex(x), Ex(y)}); }
KernelBuilder& KernelBuilder::workgroup(uint32_t x, uint32_t y, uint32_t z) {
  return attribute("workgroup", {Ex(x), Ex(y), Ex(z)});
}
KernelBuilder& KernelBuilder::cooperative() { return attribute("cooperative"); }

KernelBuilder& KernelBuilder::fp(FpMode mode) {
  std::vector<Ex> args;
  args.push_back(name(std::string(fp_mode_name(mode))));
  return attribute("fp", std::move(args));
}

namespace {

Param buffer_param(std::string name, Access access, Type elem) {
  Param p;
  p.name = std::move(name);
  p.is_buffer = true;
  p.access = access;
  p.type = elem;
  return p;
}

Param scalar_param(std::string name, Type type) {
  Param p;
  p.name = std::move(name);
  p.type = type;
  return p;
}

}  // namespace

KernelBuilder& KernelBuilder::buffer(std::string name, Access access, Type elem) {
  kernel.params.push_back(buffer_param(std::move(name), access, elem));
  return *this;
}

KernelBuilder& KernelBuilder::scalar(std::string name, Type type) {
  kernel.params.push_back(scalar_param(std::move(name), type));
  return *this;
}

FunctionBuilder::FunctionBuilder(std::string name) : BlockBuilder(function.body) { function.name = std::move(name); }

FunctionBuilder& FunctionBuilder::returns(Type type) {
  function.result = type;
  return *this;
}

FunctionBuilder& FunctionBuilder::buffer(std::string name, Access access, Type elem) {
  function.params.push_back(buffer_param(std::move(name), access, elem));
  return *this;
}

FunctionBuilder& FunctionBuilder::scalar(std::string name, Type type) {
  function.params.push_back(scalar_param(std::move(name), type));
  return *this;
}

KernelBuilder& ModuleBuilder::kernel(std::string name) { return kernels_.emplace_back(std::move(name)); }

FunctionBuilder& ModuleBuilder::function(std::string name) { return functions_.emplace_back(std::move(name)); }

Ex ModuleBuilder::constant(std::string name, Type type, Ex value) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::const_decl;
  s->name = name;
  s->declared_type = type;
  s->value = std::move(value).take();
  constants_.push_back(std::move(s));
  return ExprFactory{}.name(std::move(name));
}

Module ModuleBuilder::take() {
  Module m;
  m.path = path_;
  m.constants = std::move(constants_);
  constants_.clear();
  for (auto& k : kernels_) m.kernels.push_back(std::move(k).take());
  kernels_.clear();
  for (auto& f : functions_) m.functions.push_back(std::move(f).take());
  functions_.clear();
  return m;
}

}  // namespace ptxgate::ir
