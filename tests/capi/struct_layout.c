/* Prints the layout of every struct of src/ptxgate/capi/ptxgate.h as the C compiler lays it out, as one JSON
 * object: {"ptxgate_arg": {"size": 56, "fields": {"kind": [0, 4], ...}}, ...} (each field's offset
 * and size in bytes). python/tests/test_capi_layout.py compares it with the ctypes mirrors of
 * python/ptxgate/_capi.py. */
#include <stddef.h>
#include <stdio.h>

#include "ptxgate/capi/ptxgate.h"

static int first_struct = 1;
static int first_field = 1;

static void begin(const char* name, size_t size) {
  printf("%s\n  \"%s\": {\"size\": %zu, \"fields\": {", first_struct ? "{" : ",", name, size);
  first_struct = 0;
  first_field = 1;
}

static void field(const char* name, size_t offset, size_t size) {
  printf("%s\"%s\": [%zu, %zu]", first_field ? "" : ", ", name, offset, size);
  first_field = 0;
}

static void end(void) { printf("}}"); }

#define BEGIN(type) begin(#type, sizeof(type))
#define FIELD(type, member) field(#member, offsetof(type, member), sizeof(((type*)0)->member))

int main(void) {
  BEGIN(ptxgate_diagnostic);
  FIELD(ptxgate_diagnostic, code);
  FIELD(ptxgate_diagnostic, severity);
  FIELD(ptxgate_diagnostic, message);
  FIELD(ptxgate_diagnostic, file);
  FIELD(ptxgate_diagnostic, line);
  FIELD(ptxgate_diagnostic, column);
  FIELD(ptxgate_diagnostic, fix);
  end();

  BEGIN(ptxgate_compile_options);
  FIELD(ptxgate_compile_options, target);
  FIELD(ptxgate_compile_options, opt_level);
  FIELD(ptxgate_compile_options, cubin);
  FIELD(ptxgate_compile_options, cache_dir);
  FIELD(ptxgate_compile_options, disk_cache);
  end();

  BEGIN(ptxgate_check_request);
  FIELD(ptxgate_check_request, input);
  FIELD(ptxgate_check_request, kernel);
  FIELD(ptxgate_check_request, grid);
  FIELD(ptxgate_check_request, block);
  FIELD(ptxgate_check_request, shared_bytes);
  FIELD(ptxgate_check_request, cooperative);
  FIELD(ptxgate_check_request, profile);
  FIELD(ptxgate_check_request, args);
  FIELD(ptxgate_check_request, arg_count);
  FIELD(ptxgate_check_request, empty_args);
  FIELD(ptxgate_check_request, elements);
  FIELD(ptxgate_check_request, element_count);
  FIELD(ptxgate_check_request, null_stream);
  FIELD(ptxgate_check_request, require_explicit_stream);
  FIELD(ptxgate_check_request, cache_dir);
  FIELD(ptxgate_check_request, signature);
  end();

  BEGIN(ptxgate_runtime_options);
  FIELD(ptxgate_runtime_options, device);
  FIELD(ptxgate_runtime_options, track_dependencies);
  FIELD(ptxgate_runtime_options, cache_dir);
  FIELD(ptxgate_runtime_options, disk_cache);
  FIELD(ptxgate_runtime_options, checked);
  FIELD(ptxgate_runtime_options, checked_launches);
  FIELD(ptxgate_runtime_options, profile_launches);
  FIELD(ptxgate_runtime_options, stream_ordered);
  FIELD(ptxgate_runtime_options, require_explicit_stream);
  FIELD(ptxgate_runtime_options, pool_limit_bytes);
  FIELD(ptxgate_runtime_options, pool_keep_bytes);
  FIELD(ptxgate_runtime_options, opt_level);
  FIELD(ptxgate_runtime_options, fp_mode);
  FIELD(ptxgate_runtime_options, require_memory_proof);
  end();

  BEGIN(ptxgate_copy_end);
  FIELD(ptxgate_copy_end, memory);
  FIELD(ptxgate_copy_end, dtype);
  FIELD(ptxgate_copy_end, buffer);
  FIELD(ptxgate_copy_end, pinned);
  FIELD(ptxgate_copy_end, host);
  FIELD(ptxgate_copy_end, offset);
  FIELD(ptxgate_copy_end, bytes);
  end();

  BEGIN(ptxgate_pool_usage);
  FIELD(ptxgate_pool_usage, reserved_bytes);
  FIELD(ptxgate_pool_usage, reserved_peak_bytes);
  FIELD(ptxgate_pool_usage, used_bytes);
  FIELD(ptxgate_pool_usage, used_peak_bytes);
  FIELD(ptxgate_pool_usage, live_bytes);
  FIELD(ptxgate_pool_usage, live_peak_bytes);
  FIELD(ptxgate_pool_usage, allocations);
  FIELD(ptxgate_pool_usage, limit_bytes);
  end();

  BEGIN(ptxgate_arg);
  FIELD(ptxgate_arg, kind);
  FIELD(ptxgate_arg, dtype);
  FIELD(ptxgate_arg, device);
  FIELD(ptxgate_arg, reserved);
  FIELD(ptxgate_arg, buffer);
  FIELD(ptxgate_arg, pointer);
  FIELD(ptxgate_arg, elements);
  FIELD(ptxgate_arg, bits);
  FIELD(ptxgate_arg, tensor_map);
  end();

  BEGIN(ptxgate_launch_config);
  FIELD(ptxgate_launch_config, grid);
  FIELD(ptxgate_launch_config, block);
  FIELD(ptxgate_launch_config, dynamic_shared_bytes);
  FIELD(ptxgate_launch_config, cooperative);
  end();

  BEGIN(ptxgate_tensor_map_desc);
  FIELD(ptxgate_tensor_map_desc, im2col);
  FIELD(ptxgate_tensor_map_desc, type);
  FIELD(ptxgate_tensor_map_desc, rank);
  FIELD(ptxgate_tensor_map_desc, dims);
  FIELD(ptxgate_tensor_map_desc, strides);
  FIELD(ptxgate_tensor_map_desc, box);
  FIELD(ptxgate_tensor_map_desc, element_strides);
  FIELD(ptxgate_tensor_map_desc, interleave);
  FIELD(ptxgate_tensor_map_desc, swizzle);
  FIELD(ptxgate_tensor_map_desc, l2_promotion);
  FIELD(ptxgate_tensor_map_desc, oob_fill);
  FIELD(ptxgate_tensor_map_desc, lower_corner);
  FIELD(ptxgate_tensor_map_desc, upper_corner);
  FIELD(ptxgate_tensor_map_desc, channels_per_pixel);
  FIELD(ptxgate_tensor_map_desc, pixels_per_column);
  end();

  BEGIN(ptxgate_collective_end);
  FIELD(ptxgate_collective_end, buffer);
  FIELD(ptxgate_collective_end, first);
  FIELD(ptxgate_collective_end, count);
  FIELD(ptxgate_collective_end, dtype);
  FIELD(ptxgate_collective_end, reserved);
  end();

  BEGIN(ptxgate_collective);
  FIELD(ptxgate_collective, kind);
  FIELD(ptxgate_collective, op);
  FIELD(ptxgate_collective, root);
  FIELD(ptxgate_collective, reserved);
  FIELD(ptxgate_collective, send);
  FIELD(ptxgate_collective, recv);
  end();

  printf("\n}\n");
  return 0;
}
