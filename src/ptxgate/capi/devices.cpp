// The C API's several devices (a device set with peer access) and NCCL (unique ids, communicators,
// collectives and groups).
#include <cstring>

#include <fmt/format.h>

#include "ptxgate/capi/internal/args.hpp"
#include "ptxgate/capi/internal/handles.hpp"

using namespace ptxgate;
using capi::fail;
using capi::finish;
using capi::guarded;
using capi::null_argument;

namespace {

/// The NCCL type of a C dtype (nullopt for bool, i16, u16 and unknown: NCCL has none).
std::optional<ncclDataType_t> nccl_type(int32_t dtype) {
  switch (dtype) {
    case PTXGATE_DTYPE_I8: return ncclInt8;
    case PTXGATE_DTYPE_U8: return ncclUint8;
    case PTXGATE_DTYPE_I32: return ncclInt32;
    case PTXGATE_DTYPE_U32: return ncclUint32;
    case PTXGATE_DTYPE_I64: return ncclInt64;
    case PTXGATE_DTYPE_U64: return ncclUint64;
    case PTXGATE_DTYPE_F16: return ncclFloat16;
    case PTXGATE_DTYPE_BF16: return ncclBfloat16;
    case PTXGATE_DTYPE_F32: return ncclFloat32;
    case PTXGATE_DTYPE_F64: return ncclFloat64;
    default: return std::nullopt;
  }
}

/// One C end of a collective as the backend's; `used` false leaves it empty.
bool collective_end(const ptxgate_collective_end& c, std::string_view role, std::string_view call, bool used,
                    runtime::CollectiveEnd& out, diag::Diagnostics& errors) {
  if (!used) return true;
  if (c.buffer == nullptr) {
    errors.add(diag::Code::invalid_argument_spec, fmt::format("{}: the {} buffer is null", call, role), {},
               fmt::format("pass the {} buffer", role));
    return false;
  }
  const auto type = nccl_type(c.dtype);
  const auto ir_type = capi::ir_type_of(c.dtype);
  if (!type || !ir_type) {
    const char* name = ptxgate_dtype_name(c.dtype);
    errors.add(diag::Code::collective_type_mismatch,
               fmt::format("{}: the {} elements are {}, which NCCL cannot reduce or move as such", call, role,
                           name != nullptr ? name : fmt::format("dtype {}", c.dtype)),
               {}, "use i8, u8, i32, u32, i64, u64, f16, bf16, f32 or f64 elements");
    return false;
  }
  if (auto ok = c.buffer->buffer.viewable_as(*ir_type, call); !ok) {
    errors.append(ok.error());
    return false;
  }
  out = {&c.buffer->buffer, c.first, c.count, *type};
  return true;
}

std::expected<runtime::Collective, diag::Diagnostics> collective(const ptxgate_collective* c, std::string_view call) {
  if (c->kind < PTXGATE_ALL_REDUCE || c->kind > PTXGATE_RECV)
    return std::unexpected(capi::usage_error(fmt::format("{}: kind {} is not a ptxgate_collective_kind", call, c->kind),
                                             "use PTXGATE_ALL_REDUCE .. PTXGATE_RECV"));
  static constexpr int kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  runtime::Collective out;
  out.kind = static_cast<runtime::CollectiveKind>(c->kind);
  const bool reduction = c->kind == PTXGATE_ALL_REDUCE || c->kind == PTXGATE_REDUCE || c->kind == PTXGATE_REDUCE_SCATTER;
  // An op out of range is the backend's PG4210 for reductions; other calls ignore it.
  out.op = c->op >= 0 && c->op < 5 ? kOps[c->op] : (reduction ? -1 : ncclSum);
  out.root = c->root;
  diag::Diagnostics errors;
  const std::string name(runtime::collective_name(out.kind));
  collective_end(c->send, "send", name, c->kind != PTXGATE_RECV, out.send, errors);
  collective_end(c->recv, "receive", name, c->kind != PTXGATE_SEND, out.recv, errors);
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return out;
}

}  // namespace

extern "C" {

ptxgate_status ptxgate_device_set_open(const int* ordinals, size_t count, const ptxgate_runtime_options* options,
                                       int32_t enable_peer_access, ptxgate_device_set** out,
                                       ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_device_set_open", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_device_set_open", "out");
    *out = nullptr;
    if (ordinals == nullptr && count != 0) return null_argument(diagnostics, "ptxgate_device_set_open", "ordinals");
    auto ro = capi::options_of(options);
    if (!ro) return finish(diagnostics, std::move(ro.error()), PTXGATE_USAGE);
    runtime::DeviceSetOptions o;
    o.devices.assign(ordinals, ordinals + count);
    o.runtime = *ro;
    o.enable_peer_access = enable_peer_access != 0;
    auto opened = runtime::DeviceSet::open(std::move(o));
    if (!opened) return fail(diagnostics, std::move(opened.error()));
    *out = new ptxgate_device_set{std::shared_ptr<runtime::DeviceSet>(std::move(*opened)), *ro};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

size_t ptxgate_device_set_size(const ptxgate_device_set* set) { return set != nullptr ? set->set->size() : 0; }

ptxgate_runtime* ptxgate_device_set_runtime(ptxgate_device_set* set, size_t index) {
  if (set == nullptr || index >= set->set->size()) return nullptr;
  try {
    // Shares the set's ownership: the runtime stays valid while this handle lives.
    std::shared_ptr<runtime::Runtime> runtime(set->set, &set->set->runtime(index));
    return capi::runtime_handle(std::move(runtime), set->options);
  } catch (...) {
    return nullptr;
  }
}

int ptxgate_device_set_peer_enabled(const ptxgate_device_set* set, size_t i, size_t j) {
  if (set == nullptr || i >= set->set->size() || j >= set->set->size()) return 0;
  return set->set->peer_enabled(i, j) ? 1 : 0;
}

void ptxgate_device_set_free(ptxgate_device_set* set) { delete set; }

ptxgate_status ptxgate_nccl_unique_id(char* hex, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_nccl_unique_id", [&] {
    if (hex == nullptr) return null_argument(diagnostics, "ptxgate_nccl_unique_id", "hex");
    auto id = runtime::UniqueId::create();
    if (!id) return fail(diagnostics, std::move(id.error()));
    const std::string text = id->to_hex();
    std::memcpy(hex, text.c_str(), text.size() + 1);
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_communicator_init_all(ptxgate_runtime* const* runtimes, size_t count, ptxgate_communicator** out,
                                             ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_communicator_init_all", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_communicator_init_all", "out");
    if (runtimes == nullptr && count != 0) return null_argument(diagnostics, "ptxgate_communicator_init_all", "runtimes");
    std::vector<std::shared_ptr<runtime::Context>> contexts;
    for (size_t i = 0; i < count; ++i) {
      out[i] = nullptr;
      if (runtimes[i] == nullptr) return null_argument(diagnostics, "ptxgate_communicator_init_all", "runtimes[i]");
      contexts.push_back(runtimes[i]->runtime->shared_context());
    }
    auto comms = runtime::Communicator::init_all(contexts);
    if (!comms) return fail(diagnostics, std::move(comms.error()));
    for (size_t i = 0; i < count; ++i) out[i] = new ptxgate_communicator{std::move((*comms)[i])};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_communicator_init_rank(ptxgate_runtime* runtime, int nranks, int rank, const char* hex,
                                              ptxgate_communicator** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_communicator_init_rank", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_communicator_init_rank", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_communicator_init_rank", "runtime");
    if (hex == nullptr) return null_argument(diagnostics, "ptxgate_communicator_init_rank", "hex");
    auto id = runtime::UniqueId::from_hex(hex);
    if (!id) return fail(diagnostics, std::move(id.error()));
    auto comm = runtime::Communicator::init_rank(runtime->runtime->shared_context(), nranks, rank, *id);
    if (!comm) return fail(diagnostics, std::move(comm.error()));
    *out = new ptxgate_communicator{std::move(*comm)};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

int ptxgate_communicator_rank(const ptxgate_communicator* comm) { return comm != nullptr ? comm->comm->rank() : -1; }
int ptxgate_communicator_size(const ptxgate_communicator* comm) { return comm != nullptr ? comm->comm->size() : 0; }
int ptxgate_communicator_device(const ptxgate_communicator* comm) { return comm != nullptr ? comm->comm->device() : -1; }

ptxgate_status ptxgate_communicator_synchronize(ptxgate_communicator* comm, ptxgate_stream* stream,
                                                ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_communicator_synchronize", [&] {
    if (comm == nullptr) return null_argument(diagnostics, "ptxgate_communicator_synchronize", "comm");
    runtime::Stream legacy;
    auto on = capi::stream_object(stream, comm->comm->context(), "communicator synchronize", legacy);
    if (!on) return fail(diagnostics, std::move(on.error()));
    auto ok = comm->comm->synchronize(**on);
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

void ptxgate_communicator_free(ptxgate_communicator* comm) { delete comm; }

ptxgate_status ptxgate_collective_run(ptxgate_communicator* comm, ptxgate_stream* stream, const ptxgate_collective* call,
                                      ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_collective_run", [&] {
    if (comm == nullptr) return null_argument(diagnostics, "ptxgate_collective_run", "comm");
    if (call == nullptr) return null_argument(diagnostics, "ptxgate_collective_run", "call");
    auto c = collective(call, "ptxgate_collective_run");
    if (!c) return fail(diagnostics, std::move(c.error()));
    runtime::Stream legacy;
    auto on = capi::stream_object(stream, comm->comm->context(), "collective", legacy);
    if (!on) return fail(diagnostics, std::move(on.error()));
    auto ok = runtime::run_collective(*comm->comm, **on, *c);
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_group_create(ptxgate_group** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_group_create", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_group_create", "out");
    *out = new ptxgate_group{};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_group_add(ptxgate_group* group, ptxgate_communicator* comm, ptxgate_stream* stream,
                                 const ptxgate_collective* call, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_group_add", [&] {
    if (group == nullptr) return null_argument(diagnostics, "ptxgate_group_add", "group");
    if (comm == nullptr) return null_argument(diagnostics, "ptxgate_group_add", "comm");
    if (stream == nullptr || stream->legacy_default)
      return finish(diagnostics,
                    capi::usage_error("ptxgate_group_add: a grouped call needs a stream of its own",
                                      "pass a stream made by ptxgate_stream_create (or a wrapped non-default stream)",
                                      diag::Code::null_stream),
                    PTXGATE_ERROR);
    if (call == nullptr) return null_argument(diagnostics, "ptxgate_group_add", "call");
    auto c = collective(call, "ptxgate_group_add");
    if (!c) return fail(diagnostics, std::move(c.error()));
    auto ok = group->group.add(*comm->comm, stream->stream, *c);
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_group_end(ptxgate_group* group, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_group_end", [&] {
    if (group == nullptr) return null_argument(diagnostics, "ptxgate_group_end", "group");
    auto ok = group->group.end();
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

void ptxgate_group_free(ptxgate_group* group) { delete group; }

}  // extern "C"
