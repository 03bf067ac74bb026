/* A C program over the installed-style C API header: the header is C, and a C caller compiles
 * a kernel to PTX and reads a program error as data. Exits 0 when every expectation holds. */
#include <stdio.h>
#include <string.h>

#include "ptxgate/capi/ptxgate.h"

static int failures = 0;
#define EXPECT(cond)                                           \
  do {                                                         \
    if (!(cond)) {                                             \
      fprintf(stderr, "c_consumer: failed: %s\n", #cond);      \
      ++failures;                                              \
    }                                                          \
  } while (0)

int main(void) {
  static const char good[] = "kernel twice(inout y: f32[]) { y[global_id.x] = 2.0 * y[global_id.x]; }\n";
  static const char bad[] = "kernel k(inout y: f32[]) {\n  y[0] = nope;\n}\n";
  ptxgate_compile_options options;
  ptxgate_module* module = NULL;
  ptxgate_diagnostics* diagnostics = NULL;
  ptxgate_diagnostic first;

  EXPECT(ptxgate_api_version() == PTXGATE_CAPI_VERSION);
  ptxgate_compile_options_init(&options);
  options.cubin = 0;
  options.disk_cache = 0;
  EXPECT(ptxgate_compile(good, sizeof good - 1, "twice.pg", &options, &module, &diagnostics) == PTXGATE_OK);
  EXPECT(module != NULL && strstr(ptxgate_module_ptx(module), ".entry twice") != NULL);
  EXPECT(module != NULL && strstr(ptxgate_module_kernels_json(module), "\"name\":\"twice\"") != NULL);
  ptxgate_module_free(module);
  ptxgate_diagnostics_free(diagnostics);

  module = NULL;
  EXPECT(ptxgate_compile(bad, sizeof bad - 1, "bad.pg", &options, &module, &diagnostics) == PTXGATE_ERROR);
  EXPECT(module == NULL);
  EXPECT(ptxgate_diagnostics_count(diagnostics) >= 1);
  EXPECT(ptxgate_diagnostics_get(diagnostics, 0, &first) == PTXGATE_OK);
  EXPECT(strcmp(first.code, "PG1101") == 0 && first.line == 2 && first.severity == PTXGATE_SEVERITY_ERROR);
  ptxgate_diagnostics_free(diagnostics);
  if (failures == 0) printf("c_consumer: 1 passed, 0 failed\n");
  return failures == 0 ? 0 : 1;
}
