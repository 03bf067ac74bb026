/* The ptxgate C API (version 3): compile, check a launch offline, and launch through the
 * validating runtime, with opaque handles and diagnostics returned as data. Pure C; every
 * fallible call returns a ptxgate_status and, when `diagnostics` is not NULL, stores a new
 * diagnostics list there (warnings on success, the reasons on failure; free it with
 * ptxgate_diagnostics_free). Strings and bytes a handle hands out stay valid until it is freed. */
#ifndef PTXGATE_CAPI_PTXGATE_H
#define PTXGATE_CAPI_PTXGATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this header; ptxgate_api_version() answers the library's. A caller built for
 *  version N works with a library whose version is N (the ABI changes only with the number). */
#define PTXGATE_CAPI_VERSION 3

#if defined(__GNUC__)
#define PTXGATE_CAPI __attribute__((visibility("default")))
#else
#define PTXGATE_CAPI
#endif

typedef enum ptxgate_status {
  PTXGATE_OK = 0,    /**< success; the diagnostics may hold warnings */
  PTXGATE_ERROR = 1, /**< failed or blocked; the diagnostics say why */
  PTXGATE_USAGE = 2  /**< the request itself is malformed (an option's value); the diagnostics say why */
} ptxgate_status;

typedef enum ptxgate_severity {
  PTXGATE_SEVERITY_ERROR = 0,
  PTXGATE_SEVERITY_WARNING = 1,
  PTXGATE_SEVERITY_NOTE = 2
} ptxgate_severity;

/** Element types of buffers and types of scalars (the IR's seven spellable types). */
typedef enum ptxgate_dtype {
  PTXGATE_DTYPE_UNKNOWN = 0, /**< a buffer whose element type the caller does not state */
  PTXGATE_DTYPE_BOOL = 1,
  PTXGATE_DTYPE_I32 = 2,
  PTXGATE_DTYPE_U32 = 3,
  PTXGATE_DTYPE_I64 = 4,
  PTXGATE_DTYPE_U64 = 5,
  PTXGATE_DTYPE_F32 = 6,
  PTXGATE_DTYPE_F64 = 7
} ptxgate_dtype;

typedef struct ptxgate_diagnostics ptxgate_diagnostics;
typedef struct ptxgate_module ptxgate_module;
typedef struct ptxgate_verdict ptxgate_verdict;
typedef struct ptxgate_runtime ptxgate_runtime;
typedef struct ptxgate_kernel ptxgate_kernel;
typedef struct ptxgate_buffer ptxgate_buffer;
typedef struct ptxgate_stream ptxgate_stream;

/** The library's PTXGATE_CAPI_VERSION. */
PTXGATE_CAPI int ptxgate_api_version(void);
/** The library's version text, e.g. "0.1.0". */
PTXGATE_CAPI const char* ptxgate_library_version(void);

/* ---- Diagnostics ---- */

/** One diagnostic; its strings belong to the list it came from. */
typedef struct ptxgate_diagnostic {
  const char* code;     /**< "PG3105" */
  int32_t severity;     /**< a ptxgate_severity */
  const char* message;  /**< names the offending thing, its value and the limit */
  const char* file;     /**< "" when the diagnostic points at no source */
  uint32_t line;        /**< 1-based; 0: no source position */
  uint32_t column;      /**< 1-based, in bytes */
  const char* fix;      /**< what to change; may be "" */
} ptxgate_diagnostic;

PTXGATE_CAPI size_t ptxgate_diagnostics_count(const ptxgate_diagnostics* list);
/** Fills `out` with diagnostic `index`; PTXGATE_USAGE when the index is out of range. */
PTXGATE_CAPI ptxgate_status ptxgate_diagnostics_get(const ptxgate_diagnostics* list, size_t index, ptxgate_diagnostic* out);
/** The list rendered as "text" (like the compiler prints), "json" or "sarif"; NULL for another
 *  format name. The text stays valid until the list is freed. */
PTXGATE_CAPI const char* ptxgate_diagnostics_render(ptxgate_diagnostics* list, const char* format);
PTXGATE_CAPI void ptxgate_diagnostics_free(ptxgate_diagnostics* list);

/* ---- Compile (offline; needs no GPU) ---- */

typedef struct ptxgate_compile_options {
  const char* target;    /**< "sm_90" ...; NULL: "sm_90" */
  int32_t opt_level;     /**< 0..3; a negative value: 3 */
  int32_t cubin;         /**< nonzero: run ptxas for a cubin and each kernel's resources */
  const char* cache_dir; /**< the module cache's directory; NULL: the default one */
  int32_t disk_cache;    /**< nonzero: use the disk tier of the module cache */
} ptxgate_compile_options;

/** Fills `options` with the defaults (sm_90, -O3, a cubin, the default disk cache). */
PTXGATE_CAPI void ptxgate_compile_options_init(ptxgate_compile_options* options);

/** Compiles `.pg` text (`size` bytes; `path` names it in diagnostics, NULL: "<text>") through
 *  the module cache. `options` NULL: the defaults. */
PTXGATE_CAPI ptxgate_status ptxgate_compile(const char* source, size_t size, const char* path,
                                            const ptxgate_compile_options* options, ptxgate_module** module,
                                            ptxgate_diagnostics** diagnostics);
/** Like ptxgate_compile for the file at `path`. */
PTXGATE_CAPI ptxgate_status ptxgate_compile_file(const char* path, const ptxgate_compile_options* options,
                                                 ptxgate_module** module, ptxgate_diagnostics** diagnostics);
/** Reads PTX or a cubin made by another compiler (nvcc, NVRTC, Triton; `path` names it in
 *  diagnostics) as a module. PTX: its text, each launchable entry's signature derived from the PTX
 *  (pointers are buffers of type "void": any element type) with "resources" null, and no cubin. A
 *  cubin: the cubin, each entry's parameters by size (8 bytes: a "void" buffer; 4 bytes: u32,
 *  named param0...) and the "resources" recorded in it, and no PTX. PG1004 (not PTX, malformed),
 *  PG2006 (no entry), PG5001 (a fatbin, or an unreadable cubin); entries a launch cannot take are
 *  left out with a PG3007 warning. */
PTXGATE_CAPI ptxgate_status ptxgate_read_ptx(const char* ptx, size_t size, const char* path, ptxgate_module** module,
                                             ptxgate_diagnostics** diagnostics);
/** What a module's bytes are, as ptxgate reads them (not by name or by words inside). */
typedef enum ptxgate_module_format {
  PTXGATE_FORMAT_IR = 0,     /**< ptxgate IR text (.pg) */
  PTXGATE_FORMAT_PTX = 1,    /**< PTX text: its first token after comments is `.version` */
  PTXGATE_FORMAT_CUBIN = 2,  /**< an ELF cubin */
  PTXGATE_FORMAT_FATBIN = 3  /**< a fatbin (refused: pass one cubin or the PTX) */
} ptxgate_module_format;
/** The format of `size` bytes at `bytes` (NULL with size 0: PTXGATE_FORMAT_IR). */
PTXGATE_CAPI int ptxgate_module_format_of(const void* bytes, size_t size);
PTXGATE_CAPI const char* ptxgate_module_ptx(const ptxgate_module* module);
/** The cubin's bytes (size 0 when none was asked for). */
PTXGATE_CAPI const void* ptxgate_module_cubin(const ptxgate_module* module, size_t* size);
PTXGATE_CAPI const char* ptxgate_module_target(const ptxgate_module* module);
/** The kernels as a JSON array: each kernel's signature (name, params with name, index, kind,
 *  type, size_bytes, access), required_block, static_shared_bytes, cooperative, uses_grid_sync,
 *  and "resources" (ptxas's registers, shared, local, spills, barriers; null without a cubin). */
PTXGATE_CAPI const char* ptxgate_module_kernels_json(const ptxgate_module* module);
PTXGATE_CAPI void ptxgate_module_free(ptxgate_module* module);

/* ---- Offline check (needs no GPU) ---- */

/** A launch described as the command line `ptxgate check` takes it (one grammar for both). */
typedef struct ptxgate_check_request {
  const char* input;         /**< a .pg path, or a .ptx / .cubin of another compiler */
  const char* kernel;
  const char* grid;          /**< "X[,Y[,Z]]" or "max"; NULL: "1" */
  const char* block;         /**< "X[,Y[,Z]]"; NULL or "": the kernel's @workgroup (else 256) */
  const char* shared_bytes;  /**< dynamic shared memory per block; NULL: "0" */
  int32_t cooperative;
  const char* profile;       /**< a device profile name or path; NULL: the default (h100-sxm) */
  const char* const* args;   /**< NAME=SPEC in signature order (ptxgate check --arg) */
  size_t arg_count;
  int32_t empty_args;        /**< nonzero: the argument table is empty */
  const char* const* elements; /**< NAME=COUNT: elements of buffer NAME the launch touches */
  size_t element_count;
  int32_t null_stream;       /**< the launch goes to the legacy default stream */
  int32_t require_explicit_stream;
  const char* cache_dir;     /**< NULL: the default module cache directory */
  const char* signature;     /**< a .ptx/.cubin kernel's parameter types, "f32[], u64, f32" (version 2); NULL: its own */
} ptxgate_check_request;

/** Checks the launch against the device profile. PTXGATE_OK with a verdict (launchable or
 *  not: see ptxgate_verdict_launchable); PTXGATE_ERROR / PTXGATE_USAGE without one when no
 *  verdict could be reached (the program, the profile, or an option is wrong). */
PTXGATE_CAPI ptxgate_status ptxgate_check(const ptxgate_check_request* request, ptxgate_verdict** verdict,
                                          ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI int ptxgate_verdict_launchable(const ptxgate_verdict* verdict);
/** The verdict's own diagnostics (errors, warnings, notes); owned by the verdict: do not free. */
PTXGATE_CAPI ptxgate_diagnostics* ptxgate_verdict_diagnostics(ptxgate_verdict* verdict);
/** The verdict as `ptxgate check --format json` prints it. */
PTXGATE_CAPI const char* ptxgate_verdict_json(const ptxgate_verdict* verdict);
/** The one `verdict: status=... ` summary line. */
PTXGATE_CAPI const char* ptxgate_verdict_summary(const ptxgate_verdict* verdict);
PTXGATE_CAPI void ptxgate_verdict_free(ptxgate_verdict* verdict);

/* ---- Runtime (needs the CUDA driver) ---- */

typedef struct ptxgate_runtime_options {
  int32_t device;              /**< CUDA device ordinal */
  int32_t track_dependencies;  /**< nonzero: automatic dependencies between streams */
  const char* cache_dir;       /**< NULL: the default module cache directory */
  int32_t disk_cache;          /**< nonzero: use the disk tier of the module cache */
  /** nonzero: checked mode (version 3): every access not proven in bounds is guarded; one out of
   *  bounds touches no memory, the kernel goes on, and the next synchronisation reports it (PG3804) */
  int32_t checked;
  /** nonzero: each launch synchronises its stream (version 3): a fault names its launch (PG4050),
   *  and in checked mode the launch itself reports what it stopped */
  int32_t checked_launches;
} ptxgate_runtime_options;

PTXGATE_CAPI void ptxgate_runtime_options_init(ptxgate_runtime_options* options);
/** Opens the device's primary context (the one PyTorch and CuPy use). PG4001 without a driver,
 *  PG4004 without the device. `options` NULL: the defaults. */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_create(const ptxgate_runtime_options* options, ptxgate_runtime** runtime,
                                                   ptxgate_diagnostics** diagnostics);
/** The runtime's device ordinal and the codegen target it compiles for ("sm_90"). */
PTXGATE_CAPI int ptxgate_runtime_device(const ptxgate_runtime* runtime);
PTXGATE_CAPI const char* ptxgate_runtime_target(const ptxgate_runtime* runtime);
PTXGATE_CAPI ptxgate_status ptxgate_runtime_synchronize(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics);
/** After a kernel fault (version 3): resets the device's primary context (destroying what every
 *  library made in it) and gives the runtime a fresh context where the driver allows one. Kernels,
 *  buffers and streams made before it — from any runtime of the device — fail with PG4010 when used
 *  and are freed without a driver call: make them again. PG4011 when the driver gives the process no
 *  new context (an H100 with driver 580 after an illegal address: start a new process); PG4002 when
 *  the device cannot be reset. Not while other threads use its objects. */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_reset(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics);
/** Frees the runtime; kernels, buffers and streams made from it keep its context alive. */
PTXGATE_CAPI void ptxgate_runtime_free(ptxgate_runtime* runtime);

/** Compiles `.pg` text through the module cache and loads `kernel` (`path` names the text in
 *  diagnostics; NULL: "<text>"). */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_compile(ptxgate_runtime* runtime, const char* source, size_t size,
                                                    const char* path, const char* kernel, ptxgate_kernel** out,
                                                    ptxgate_diagnostics** diagnostics);
/** Loads `kernel` of a module made by another compiler, PTX text or a cubin (`size` bytes at
 *  `image`): its signature from the PTX, or its parameter sizes from the cubin (8-byte parameters
 *  are buffers); `signature` (NULL: none) restates the parameter types, "f32[], u64, f32"; then the
 *  same validated launch. PG1004/PG5001 for input that is neither; PG3007 for a parameter a launch
 *  cannot pass or a signature item of the wrong size; PG3005 for a signature of the wrong length;
 *  PG2001 for a target the device cannot run; PG2006 for no such entry. */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_load_module(ptxgate_runtime* runtime, const void* image, size_t size,
                                                        const char* path, const char* kernel, const char* signature,
                                                        ptxgate_kernel** out, ptxgate_diagnostics** diagnostics);
/** ptxgate_runtime_load_module without a signature (`path` NULL: "<ptx>"). */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_load_ptx(ptxgate_runtime* runtime, const char* ptx, size_t size,
                                                     const char* path, const char* kernel, ptxgate_kernel** out,
                                                     ptxgate_diagnostics** diagnostics);
/** The kernel's signature and resources as one JSON object (the shape of one element of
 *  ptxgate_module_kernels_json; resources from the driver). */
PTXGATE_CAPI const char* ptxgate_kernel_json(const ptxgate_kernel* kernel);
PTXGATE_CAPI void ptxgate_kernel_free(ptxgate_kernel* kernel);

PTXGATE_CAPI ptxgate_status ptxgate_buffer_allocate(ptxgate_runtime* runtime, size_t bytes, ptxgate_buffer** out,
                                                    ptxgate_diagnostics** diagnostics);
/** Copies `bytes` from host memory into the buffer, from its start (PG3008 when they do not fit). */
PTXGATE_CAPI ptxgate_status ptxgate_buffer_upload(ptxgate_buffer* buffer, const void* host, size_t bytes,
                                                  ptxgate_diagnostics** diagnostics);
/** Copies `bytes` from the buffer's start into host memory (PG3008 past its end). */
PTXGATE_CAPI ptxgate_status ptxgate_buffer_download(const ptxgate_buffer* buffer, void* host, size_t bytes,
                                                    ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI uint64_t ptxgate_buffer_device_pointer(const ptxgate_buffer* buffer);
PTXGATE_CAPI size_t ptxgate_buffer_size(const ptxgate_buffer* buffer);
/** Frees the buffer (after pending work that uses it, when dependencies are tracked). */
PTXGATE_CAPI void ptxgate_buffer_free(ptxgate_buffer* buffer);

/** A new non-blocking stream of the runtime's context. */
PTXGATE_CAPI ptxgate_status ptxgate_stream_create(ptxgate_runtime* runtime, ptxgate_stream** out,
                                                  ptxgate_diagnostics** diagnostics);
/** A stream made elsewhere (a CUstream of the device's primary context, e.g. PyTorch's or
 *  CuPy's), used without owning it: ptxgate_stream_free never destroys it. 0 is the legacy
 *  default stream. */
PTXGATE_CAPI ptxgate_status ptxgate_stream_wrap(ptxgate_runtime* runtime, uintptr_t cu_stream, ptxgate_stream** out,
                                                ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI uintptr_t ptxgate_stream_handle(const ptxgate_stream* stream);
PTXGATE_CAPI ptxgate_status ptxgate_stream_synchronize(ptxgate_stream* stream, ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI void ptxgate_stream_free(ptxgate_stream* stream);

typedef enum ptxgate_arg_kind {
  PTXGATE_ARG_BUFFER = 0,  /**< a ptxgate_buffer (dependency-tracked) */
  PTXGATE_ARG_POINTER = 1, /**< a raw device pointer (from PyTorch, CuPy, ...) of `elements` elements */
  PTXGATE_ARG_SCALAR = 2   /**< a value of type `dtype` in `bits` */
} ptxgate_arg_kind;

/** One kernel argument. */
typedef struct ptxgate_arg {
  int32_t kind;            /**< a ptxgate_arg_kind */
  int32_t dtype;           /**< a ptxgate_dtype: the element type (buffers, pointers; UNKNOWN: unchecked) or the scalar's type */
  int32_t device;          /**< pointers: the device ordinal the memory lives on; -1: unknown */
  int32_t reserved;        /**< 0 */
  ptxgate_buffer* buffer;  /**< BUFFER */
  uint64_t pointer;        /**< POINTER */
  uint64_t elements;       /**< BUFFER, POINTER: elements the memory holds (0: a buffer's whole size; a pointer's unknown) */
  uint64_t bits;           /**< SCALAR: integers as 64-bit two's complement, bool 0/1, f32 and f64 as their IEEE bits (low bits) */
} ptxgate_arg;

typedef struct ptxgate_launch_config {
  uint64_t grid[3];
  uint64_t block[3];           /**< all 0: the kernel's @workgroup, else 256 */
  uint64_t dynamic_shared_bytes;
  int32_t cooperative;
} ptxgate_launch_config;

/** Binds `args` to the kernel's signature (kind, element type, device, scalar type and width),
 *  validates the launch against the live device, and launches on `stream` (NULL: the legacy
 *  default stream). A blocked launch never reaches the driver. */
PTXGATE_CAPI ptxgate_status ptxgate_kernel_launch(ptxgate_kernel* kernel, const ptxgate_launch_config* config,
                                                  const ptxgate_arg* args, size_t arg_count, ptxgate_stream* stream,
                                                  ptxgate_diagnostics** diagnostics);
/** The verdict for the launch without launching. */
PTXGATE_CAPI ptxgate_status ptxgate_kernel_check(ptxgate_kernel* kernel, const ptxgate_launch_config* config,
                                                 const ptxgate_arg* args, size_t arg_count, ptxgate_stream* stream,
                                                 ptxgate_diagnostics** diagnostics);

#ifdef __cplusplus
}
#endif

#endif /* PTXGATE_CAPI_PTXGATE_H */
