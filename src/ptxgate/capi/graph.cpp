// The C API's graphs (built, instantiated, replayed, updated) and tensor maps.
#include <fmt/format.h>

#include "ptxgate/capi/internal/args.hpp"
#include "ptxgate/capi/internal/handles.hpp"
#include "ptxgate/validation/tensor_map.hpp"

using namespace ptxgate;
using capi::fail;
using capi::finish;
using capi::guarded;
using capi::null_argument;

namespace {

ptxgate_status added(ptxgate_diagnostics** diagnostics, std::expected<runtime::GraphNode, diag::Diagnostics> node,
                     uint32_t* index) {
  if (!node) return fail(diagnostics, std::move(node.error()));
  if (index != nullptr) *index = node->index;
  return finish(diagnostics, {}, PTXGATE_OK);
}

/// The C description as the validation layer's (PG5004 for a name that is none, a rank out of range).
std::expected<validation::TensorMapDesc, diag::Diagnostics> tensor_map_desc(const ptxgate_tensor_map_desc& c) {
  validation::TensorMapDesc d;
  diag::Diagnostics errors;
  const auto bad = [&](std::string_view field, std::string_view value, std::string_view expected) {
    errors.add(diag::Code::invalid_launch_option, fmt::format("ptxgate_tensor_map_desc: {} '{}' is not {}", field, value, expected),
               {}, fmt::format("pass {}", expected));
  };
  const auto name = [](const char* s) { return std::string_view(s != nullptr ? s : "none"); };
  d.kind = c.im2col != 0 ? validation::TensorMapKind::im2col : validation::TensorMapKind::tiled;
  if (auto t = validation::tma_type_from_name(c.type != nullptr ? c.type : ""))
    d.type = *t;
  else
    bad("type", c.type != nullptr ? c.type : "(null)", "u8, u16, u32, i32, u64, i64, f16, f32, f64, bf16, f32_ftz, tf32 or tf32_ftz");
  if (auto v = validation::interleave_from_name(name(c.interleave))) d.interleave = *v; else bad("interleave", name(c.interleave), "none, 16B or 32B");
  if (auto v = validation::swizzle_from_name(name(c.swizzle))) d.swizzle = *v; else bad("swizzle", name(c.swizzle), "a swizzle name (none, 32B, 64B, 128B, ...)");
  if (auto v = validation::l2_promotion_from_name(name(c.l2_promotion))) d.l2_promotion = *v; else bad("l2_promotion", name(c.l2_promotion), "none, 64B, 128B or 256B");
  if (auto v = validation::oob_fill_from_name(name(c.oob_fill))) d.oob_fill = *v; else bad("oob_fill", name(c.oob_fill), "none or nan");
  if (c.rank < 1 || c.rank > 5) {
    bad("rank", std::to_string(c.rank), "1 to 5");
  } else {
    d.dims.assign(c.dims, c.dims + c.rank);
    d.strides.assign(c.strides, c.strides + c.rank - 1);
    bool any_stride = false;
    for (uint32_t i = 0; i < c.rank; ++i) any_stride |= c.element_strides[i] != 0;
    if (any_stride) d.element_strides.assign(c.element_strides, c.element_strides + c.rank);
    if (d.kind == validation::TensorMapKind::tiled) {
      d.box.assign(c.box, c.box + c.rank);
    } else if (c.rank >= 3) {
      d.lower_corner.assign(c.lower_corner, c.lower_corner + c.rank - 2);
      d.upper_corner.assign(c.upper_corner, c.upper_corner + c.rank - 2);
      d.channels_per_pixel = c.channels_per_pixel;
      d.pixels_per_column = c.pixels_per_column;
    }
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return d;
}

/// A replay on `stream`; diagnostics only on failure (the success path allocates nothing).
ptxgate_status replay(ptxgate_graph_exec* exec, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  if (exec == nullptr) return null_argument(diagnostics, "ptxgate_graph_exec_launch", "exec");
  if (stream != nullptr && !stream->legacy_default) {  // the replay's one path, kept short
    auto ok = exec->exec.launch(stream->stream);
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return PTXGATE_OK;
  }
  if (stream == nullptr)
    return finish(diagnostics,
                  capi::usage_error("ptxgate_graph_exec_launch: 'stream' is null",
                        "pass the stream to replay on (ptxgate_stream_wrap(runtime, 0, ...) for the legacy default stream)"),
                  PTXGATE_USAGE);
  runtime::Stream legacy;
  auto on = capi::stream_object(stream, *stream->legacy_default, "graph replay", legacy);
  if (!on) return fail(diagnostics, std::move(on.error()));
  auto ok = exec->exec.launch(**on);
  if (!ok) return fail(diagnostics, std::move(ok.error()));
  return PTXGATE_OK;
}

}  // namespace

extern "C" {

ptxgate_status ptxgate_graph_create(ptxgate_runtime* runtime, ptxgate_graph** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_create", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_graph_create", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_graph_create", "runtime");
    auto created = runtime::Graph::create(runtime->runtime->shared_context());
    if (!created) return fail(diagnostics, std::move(created.error()));
    *out = new ptxgate_graph{std::move(*created)};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

ptxgate_status ptxgate_graph_add_launch(ptxgate_graph* graph, ptxgate_kernel* kernel, const ptxgate_launch_config* config,
                                        const ptxgate_arg* args, size_t arg_count, uint32_t* node,
                                        ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_add_launch", [&] {
    if (graph == nullptr) return null_argument(diagnostics, "ptxgate_graph_add_launch", "graph");
    if (kernel == nullptr) return null_argument(diagnostics, "ptxgate_graph_add_launch", "kernel");
    if (config == nullptr) return null_argument(diagnostics, "ptxgate_graph_add_launch", "config");
    if (args == nullptr && arg_count != 0) return null_argument(diagnostics, "ptxgate_graph_add_launch", "args");
    capi::Launch launch;
    if (auto prepared = capi::prepare(*kernel->kernel, kernel->device, *config, args, arg_count, launch); !prepared)
      return fail(diagnostics, std::move(prepared.error()));
    return added(diagnostics,
                 graph->graph.launch(*kernel->kernel, launch.config,
                                     std::span<const runtime::Arg>(launch.args.data(), launch.args.size())),
                 node);
  });
}

ptxgate_status ptxgate_graph_add_copy(ptxgate_graph* graph, const ptxgate_copy_end* dst, const ptxgate_copy_end* src,
                                      uint32_t* node, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_add_copy", [&] {
    if (graph == nullptr) return null_argument(diagnostics, "ptxgate_graph_add_copy", "graph");
    auto d = capi::copy_end(dst, "ptxgate_graph_add_copy", "destination");
    if (!d) return finish(diagnostics, std::move(d.error()), PTXGATE_USAGE);
    auto s = capi::copy_end(src, "ptxgate_graph_add_copy", "source");
    if (!s) return finish(diagnostics, std::move(s.error()), PTXGATE_USAGE);
    if (auto same = capi::same_element_type(*d, *s, "ptxgate_graph_add_copy"); !same)
      return fail(diagnostics, std::move(same.error()));
    return added(diagnostics, graph->graph.copy(*d, *s), node);
  });
}

ptxgate_status ptxgate_graph_add_fill(ptxgate_graph* graph, const ptxgate_copy_end* dst, uint32_t value, uint32_t width,
                                      uint32_t* node, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_add_fill", [&] {
    if (graph == nullptr) return null_argument(diagnostics, "ptxgate_graph_add_fill", "graph");
    auto d = capi::copy_end(dst, "ptxgate_graph_add_fill", "destination");
    if (!d) return finish(diagnostics, std::move(d.error()), PTXGATE_USAGE);
    return added(diagnostics, graph->graph.fill(*d, value, width), node);
  });
}

size_t ptxgate_graph_size(const ptxgate_graph* graph) { return graph != nullptr ? graph->graph.size() : 0; }

size_t ptxgate_graph_dependencies(const ptxgate_graph* graph, uint32_t node, uint32_t* out, size_t capacity) {
  if (graph == nullptr) return 0;
  try {
    const auto deps = graph->graph.dependencies({graph->graph.id(), node});
    for (size_t i = 0; i < deps.size() && i < capacity && out != nullptr; ++i) out[i] = deps[i];
    return deps.size();
  } catch (...) {
    return 0;
  }
}

ptxgate_status ptxgate_graph_instantiate(ptxgate_graph* graph, ptxgate_graph_exec** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_instantiate", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_graph_instantiate", "out");
    *out = nullptr;
    if (graph == nullptr) return null_argument(diagnostics, "ptxgate_graph_instantiate", "graph");
    auto exec = graph->graph.instantiate();
    if (!exec) return fail(diagnostics, std::move(exec.error()));
    *out = new ptxgate_graph_exec{std::move(*exec), graph->graph.id(), graph->graph.context()->ordinal()};
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

void ptxgate_graph_free(ptxgate_graph* graph) { delete graph; }

ptxgate_status ptxgate_graph_exec_launch(ptxgate_graph_exec* exec, ptxgate_stream* stream, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_exec_launch", [&] {
    const ptxgate_status status = replay(exec, stream, diagnostics);
    return status == PTXGATE_OK ? finish(diagnostics, {}, PTXGATE_OK) : status;
  });
}

ptxgate_status ptxgate_graph_exec_replay(ptxgate_graph_exec* exec, ptxgate_stream* stream) {
  ptxgate_diagnostics* failure = nullptr;
  const ptxgate_status status =
      guarded(&failure, "ptxgate_graph_exec_replay", [&] { return replay(exec, stream, &failure); });
  capi::set_last_failure(failure);
  return status;
}

ptxgate_status ptxgate_graph_exec_update(ptxgate_graph_exec* exec, uint32_t node, const ptxgate_launch_config* config,
                                         const ptxgate_arg* args, size_t arg_count, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_graph_exec_update", [&] {
    if (exec == nullptr) return null_argument(diagnostics, "ptxgate_graph_exec_update", "exec");
    if (config == nullptr) return null_argument(diagnostics, "ptxgate_graph_exec_update", "config");
    if (args == nullptr && arg_count != 0) return null_argument(diagnostics, "ptxgate_graph_exec_update", "args");
    // The node's kernel gives the signature to convert against; a node that is not a kernel node
    // is the backend's PG4032 (converted without a signature, so the C checks name no parameter).
    const runtime::Kernel* kernel = exec->exec.kernel_of({exec->graph_id, node});
    capi::Launch launch;
    if (kernel != nullptr) {
      if (auto prepared = capi::prepare(*kernel, exec->device, *config, args, arg_count, launch); !prepared)
        return fail(diagnostics, std::move(prepared.error()));
    } else {
      launch.config = capi::launch_config(*config);
    }
    auto ok = exec->exec.update({exec->graph_id, node}, launch.config,
                                std::span<const runtime::Arg>(launch.args.data(), launch.args.size()));
    if (!ok) return fail(diagnostics, std::move(ok.error()));
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

uint64_t ptxgate_graph_exec_replays(const ptxgate_graph_exec* exec) { return exec != nullptr ? exec->exec.replays() : 0; }

size_t ptxgate_graph_exec_size(const ptxgate_graph_exec* exec) { return exec != nullptr ? exec->exec.size() : 0; }

void ptxgate_graph_exec_free(ptxgate_graph_exec* exec) { delete exec; }

ptxgate_status ptxgate_tensor_map_encode(ptxgate_runtime* runtime, const ptxgate_tensor_map_desc* desc,
                                         ptxgate_buffer* buffer, uint64_t pointer, uint64_t offset, uint64_t bytes,
                                         ptxgate_tensor_map** out, ptxgate_diagnostics** diagnostics) {
  return guarded(diagnostics, "ptxgate_tensor_map_encode", [&] {
    if (out == nullptr) return null_argument(diagnostics, "ptxgate_tensor_map_encode", "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(diagnostics, "ptxgate_tensor_map_encode", "runtime");
    if (desc == nullptr) return null_argument(diagnostics, "ptxgate_tensor_map_encode", "desc");
    auto d = tensor_map_desc(*desc);
    if (!d) return finish(diagnostics, std::move(d.error()), PTXGATE_USAGE);
    std::expected<runtime::TensorMap, diag::Diagnostics> map = std::unexpected(diag::Diagnostics{});
    if (buffer != nullptr) {
      map = runtime::encode_tensor_map(buffer->buffer, offset, std::move(*d));
    } else {
      if (pointer == 0) return null_argument(diagnostics, "ptxgate_tensor_map_encode", "pointer");
      map = runtime::encode_tensor_map(runtime->runtime->context(), pointer + offset, bytes, std::move(*d));
    }
    if (!map) return fail(diagnostics, std::move(map.error()));
    auto m = std::make_unique<ptxgate_tensor_map>();
    m->map = std::move(*map);
    m->description = validation::describe(m->map.desc);
    *out = m.release();
    return finish(diagnostics, {}, PTXGATE_OK);
  });
}

const char* ptxgate_tensor_map_describe(const ptxgate_tensor_map* map) { return map != nullptr ? map->description.c_str() : nullptr; }

void ptxgate_tensor_map_free(ptxgate_tensor_map* map) { delete map; }

}  // extern "C"
