/* The ptxgate C API (version 3): compile, check a launch offline, and launch through the
 * validating runtime (events, copies, pools, graphs, tensor maps, profiling, several devices, NCCL),
 * with opaque handles and diagnostics returned as data. Pure C; every
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

/** Element types of buffers and types of scalars: every scalar type of the IR. */
typedef enum ptxgate_dtype {
  PTXGATE_DTYPE_UNKNOWN = 0, /**< a buffer whose element type the caller does not state */
  PTXGATE_DTYPE_BOOL = 1,
  PTXGATE_DTYPE_I32 = 2,
  PTXGATE_DTYPE_U32 = 3,
  PTXGATE_DTYPE_I64 = 4,
  PTXGATE_DTYPE_U64 = 5,
  PTXGATE_DTYPE_F32 = 6,
  PTXGATE_DTYPE_F64 = 7,
  PTXGATE_DTYPE_I8 = 8,    /**< version 3: the small types */
  PTXGATE_DTYPE_U8 = 9,
  PTXGATE_DTYPE_I16 = 10,
  PTXGATE_DTYPE_U16 = 11,
  PTXGATE_DTYPE_F16 = 12,  /**< IEEE binary16 */
  PTXGATE_DTYPE_BF16 = 13  /**< bfloat16 */
} ptxgate_dtype;



typedef struct ptxgate_diagnostics ptxgate_diagnostics;
typedef struct ptxgate_module ptxgate_module;
typedef struct ptxgate_verdict ptxgate_verdict;
typedef struct ptxgate_runtime ptxgate_runtime;
typedef struct ptxgate_kernel ptxgate_kernel;
typedef struct ptxgate_buffer ptxgate_buffer;
typedef struct ptxgate_stream ptxgate_stream;
typedef struct ptxgate_event ptxgate_event;             /**< version 3 */
typedef struct ptxgate_host_buffer ptxgate_host_buffer; /**< version 3: pinned host memory */
typedef struct ptxgate_graph ptxgate_graph;             /**< version 3 */
typedef struct ptxgate_graph_exec ptxgate_graph_exec;   /**< version 3 */
typedef struct ptxgate_tensor_map ptxgate_tensor_map;   /**< version 3 */
typedef struct ptxgate_device_set ptxgate_device_set;   /**< version 3 */
typedef struct ptxgate_communicator ptxgate_communicator; /**< version 3: one NCCL rank */
typedef struct ptxgate_group ptxgate_group;             /**< version 3: NCCL calls issued together */
typedef struct ptxgate_text ptxgate_text;               /**< version 3: an owned string */

/** The library's PTXGATE_CAPI_VERSION. */
PTXGATE_CAPI int ptxgate_api_version(void);
/** The library's version text, e.g. "0.1.0". */
PTXGATE_CAPI const char* ptxgate_library_version(void);

/** The text of an owned string (JSON documents the runtime hands out). */
PTXGATE_CAPI const char* ptxgate_text_data(const ptxgate_text* text);
PTXGATE_CAPI void ptxgate_text_free(ptxgate_text* text);

/** The dtype's name as the IR spells it ("bf16"), "unknown" for 0, NULL for a value that is none. */
PTXGATE_CAPI const char* ptxgate_dtype_name(int32_t dtype);
/** Bytes of one element (1, 2, 4 or 8; bool 4); 0 for UNKNOWN or a value that is none. */
PTXGATE_CAPI size_t ptxgate_dtype_size(int32_t dtype);
/** `value` as a float of `dtype` (F16, BF16, F32, F64), rounded to nearest, ties to even, as the
 *  IR's casts round; NaN and infinities kept. PTXGATE_USAGE for another dtype, and for a finite
 *  value beyond the type's largest finite one (the diagnostics say so). */
PTXGATE_CAPI ptxgate_status ptxgate_float_bits(double value, int32_t dtype, uint64_t* bits, ptxgate_diagnostics** diagnostics);

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
  const char* target;    /**< "sm_90" ...; NULL: "sm_90". A module whose kernels use Hopper's
                              mbarrier, TMA or wgmma operations compiles for sm_90a when sm_90
                              is asked for (ptxgate_module_target names the target used). */
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
  /* version 3 */
  /** nonzero: checked mode (docs/ir.md "Memory safety"): every access not proven in bounds is
   *  guarded; one out of bounds touches no memory, the kernel goes on, and the next synchronisation
   *  (or, with checked_launches, the launch itself) reports it (PG3804) */
  int32_t checked;
  /** nonzero: each launch synchronises its stream; a fault names that launch (PG4050) */
  int32_t checked_launches;
  int32_t profile_launches;    /**< nonzero: time every launch (ptxgate_runtime_profile) */
  int32_t stream_ordered;      /**< nonzero: buffers come from the runtime's stream-ordered pool */
  int32_t require_explicit_stream; /**< nonzero: nothing may run on the legacy default stream (PG3002) */
  uint64_t pool_limit_bytes;   /**< most live bytes of the pool at once (0: the device's memory; PG4021 past it) */
  uint64_t pool_keep_bytes;    /**< bytes the pool keeps reserved across synchronisations (UINT64_MAX: all) */
  int32_t opt_level;           /**< 0..3 (a negative value: 3) */
  int32_t fp_mode;             /**< 0 contract (default), 1 exact, 2 fast (docs/ir.md "Floating point") */
  int32_t require_memory_proof; /**< nonzero: a launch must be proven in bounds (an access not proven is
                                     PG3802, an error; a kernel of another compiler is blocked) */
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
/** The device and the options as one JSON object: ordinal, name, target, compute capability,
 *  multiprocessors, memory, and each option (version 3). Owned by the runtime. */
PTXGATE_CAPI const char* ptxgate_runtime_json(const ptxgate_runtime* runtime);
/** Every GPU, or why there are none, as `ptxgate devices --format json` prints it (peer access
 *  matrix included; version 3). Needs no runtime; without a driver, the document says so. */
PTXGATE_CAPI ptxgate_status ptxgate_devices_json(ptxgate_text** out, ptxgate_diagnostics** diagnostics);
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
/** `count` elements of `dtype` (UNKNOWN: bytes, untyped) on `stream` (NULL: the legacy default
 *  stream): a stream-ordered allocation there when the runtime allocates from its pool, else
 *  cuMemAlloc (version 3). A typed buffer binds only to parameters of its element type (PG3010). */
PTXGATE_CAPI ptxgate_status ptxgate_buffer_allocate_array(ptxgate_runtime* runtime, size_t count, int32_t dtype,
                                                          ptxgate_stream* stream, ptxgate_buffer** out,
                                                          ptxgate_diagnostics** diagnostics);
/** The buffer's element type (a ptxgate_dtype; UNKNOWN: untyped) and its device (version 3). */
PTXGATE_CAPI int32_t ptxgate_buffer_dtype(const ptxgate_buffer* buffer);
PTXGATE_CAPI int ptxgate_buffer_device(const ptxgate_buffer* buffer);
/** Sets every byte of the buffer to `value` on the legacy default stream (version 3). */
PTXGATE_CAPI ptxgate_status ptxgate_buffer_fill_bytes(ptxgate_buffer* buffer, uint8_t value,
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

/* ---- Events, pinned host memory, copies and fills (version 3) ---- */

/** A CUDA event of the runtime's context, with timing. */
PTXGATE_CAPI ptxgate_status ptxgate_event_create(ptxgate_runtime* runtime, ptxgate_event** out,
                                                 ptxgate_diagnostics** diagnostics);
/** Records the event on `stream` (NULL: the legacy default stream; PG3002 when forbidden). */
PTXGATE_CAPI ptxgate_status ptxgate_event_record(ptxgate_event* event, ptxgate_stream* stream,
                                                 ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI ptxgate_status ptxgate_event_synchronize(ptxgate_event* event, ptxgate_diagnostics** diagnostics);
/** `*complete` 1 when the recorded work is done, 0 when not yet (no waiting). */
PTXGATE_CAPI ptxgate_status ptxgate_event_query(ptxgate_event* event, int32_t* complete,
                                                ptxgate_diagnostics** diagnostics);
/** Milliseconds from `start` to `end` (both recorded and complete; one context: PG4008). */
PTXGATE_CAPI ptxgate_status ptxgate_event_elapsed_ms(ptxgate_event* start, ptxgate_event* end, float* ms,
                                                     ptxgate_diagnostics** diagnostics);
/** Work submitted to `stream` later waits for the work recorded before `event` (cuStreamWaitEvent;
 *  any device's event). `stream` NULL: the legacy default stream. */
PTXGATE_CAPI ptxgate_status ptxgate_stream_wait_event(ptxgate_stream* stream, ptxgate_event* event,
                                                      ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI void ptxgate_event_free(ptxgate_event* event);

/** Page-locked host memory (cuMemAllocHost) for copies that overlap with compute. */
PTXGATE_CAPI ptxgate_status ptxgate_host_buffer_allocate(ptxgate_runtime* runtime, size_t bytes,
                                                         ptxgate_host_buffer** out, ptxgate_diagnostics** diagnostics);
/** The memory, as it is (no waiting); ptxgate_host_buffer_wait first to read what a copy wrote. */
PTXGATE_CAPI void* ptxgate_host_buffer_data(const ptxgate_host_buffer* buffer);
PTXGATE_CAPI size_t ptxgate_host_buffer_size(const ptxgate_host_buffer* buffer);
/** Blocks until pending copies that write the buffer (`for_write` nonzero: or read it) are done. */
PTXGATE_CAPI ptxgate_status ptxgate_host_buffer_wait(ptxgate_host_buffer* buffer, int32_t for_write,
                                                     ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI void ptxgate_host_buffer_free(ptxgate_host_buffer* buffer);

typedef enum ptxgate_memory {
  PTXGATE_MEMORY_DEVICE = 0,  /**< a ptxgate_buffer */
  PTXGATE_MEMORY_PINNED = 1,  /**< a ptxgate_host_buffer */
  PTXGATE_MEMORY_HOST = 2     /**< ordinary (pageable) host memory at `host` */
} ptxgate_memory;

/** One end of a copy or a fill: `bytes` from `offset` bytes into the memory, viewed as `dtype`
 *  elements (UNKNOWN: bytes; a typed view of a buffer typed otherwise is PG4009). */
typedef struct ptxgate_copy_end {
  int32_t memory;                /**< a ptxgate_memory */
  int32_t dtype;
  ptxgate_buffer* buffer;        /**< DEVICE */
  ptxgate_host_buffer* pinned;   /**< PINNED */
  void* host;                    /**< HOST */
  uint64_t offset;
  uint64_t bytes;
} ptxgate_copy_end;

/** Copies `src` to `dst` on `stream` (NULL: the legacy default stream), asynchronously for the
 *  host: ranges inside their memory (PG4006), equal sizes and a device end (PG4007), one context
 *  or a peer with access (PG4008, PG4070), ordered by dependency tracking. */
PTXGATE_CAPI ptxgate_status ptxgate_copy_async(ptxgate_stream* stream, const ptxgate_copy_end* dst,
                                               const ptxgate_copy_end* src, ptxgate_diagnostics** diagnostics);
/** Copies between device buffers of two devices (cuMemcpyPeerAsync) on the stream of one end's
 *  context; needs no peer access (PG4072 for another stream, PG4006, PG4007). */
PTXGATE_CAPI ptxgate_status ptxgate_copy_peer_async(ptxgate_stream* stream, const ptxgate_copy_end* dst,
                                                    const ptxgate_copy_end* src, ptxgate_diagnostics** diagnostics);
/** Sets every `width`-byte element (1, 2 or 4) of the device range `dst` to the low bytes of `value`. */
PTXGATE_CAPI ptxgate_status ptxgate_fill_async(ptxgate_stream* stream, const ptxgate_copy_end* dst, uint32_t value,
                                               uint32_t width, ptxgate_diagnostics** diagnostics);

/* ---- The stream-ordered pool and profiling (version 3) ---- */

/** What the runtime's pool holds (the driver's counters and the live bytes of its buffers). */
typedef struct ptxgate_pool_usage {
  uint64_t reserved_bytes, reserved_peak_bytes;
  uint64_t used_bytes, used_peak_bytes;
  uint64_t live_bytes, live_peak_bytes;
  uint64_t allocations;
  uint64_t limit_bytes;  /**< 0: the device's memory */
} ptxgate_pool_usage;

/** The pool's usage (it is created on first use: PG4020 on a device without pools). */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_pool_usage(ptxgate_runtime* runtime, ptxgate_pool_usage* out,
                                                       ptxgate_diagnostics** diagnostics);
/** Returns reserved memory beyond `keep_bytes` that no allocation uses to the device. */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_pool_trim(ptxgate_runtime* runtime, uint64_t keep_bytes,
                                                      ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI ptxgate_status ptxgate_runtime_pool_reset_peaks(ptxgate_runtime* runtime, ptxgate_diagnostics** diagnostics);
/** Every profiled launch and the per-kernel summary as JSON: {"launches": [{sequence, kernel,
 *  device_ms}], "summary": [{kernel, count, total_ms, median_ms, min_ms, max_ms}]}; waits for the
 *  launches' end. PG5002 unless the runtime was made with profile_launches. `clear` nonzero:
 *  forget them afterwards. */
PTXGATE_CAPI ptxgate_status ptxgate_runtime_profile(ptxgate_runtime* runtime, int32_t clear, ptxgate_text** out,
                                                    ptxgate_diagnostics** diagnostics);

typedef enum ptxgate_arg_kind {
  PTXGATE_ARG_BUFFER = 0,  /**< a ptxgate_buffer (dependency-tracked) */
  PTXGATE_ARG_POINTER = 1, /**< a raw device pointer (from PyTorch, CuPy, ...) of `elements` elements */
  PTXGATE_ARG_SCALAR = 2,  /**< a value of type `dtype` in `bits` */
  /** version 3: a real number (`bits`: an f64) for a float parameter, rounded to the parameter's
   *  type to nearest, ties to even (a Python float); beyond that type's range: PG3007 */
  PTXGATE_ARG_REAL = 3,
  PTXGATE_ARG_TENSOR_MAP = 4, /**< version 3: `tensor_map` for a `tensor_map` parameter */
  /** version 3: an integer (`bits`: an int64) for a parameter of any number type: bound to an
   *  integer parameter when it fits, to a float parameter as its nearest value (a Python int) */
  PTXGATE_ARG_INTEGER = 5
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
  uint64_t bits;           /**< SCALAR: integers as 64-bit two's complement, bool 0/1, floats as their IEEE bits (low bits) */
  ptxgate_tensor_map* tensor_map; /**< TENSOR_MAP (version 3) */
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

/** The same launch with its request packed into 64-bit words (version 3), for bindings that build
 *  arguments in an interpreted language, where filling a ptxgate_arg array costs more than the
 *  launch: words[0] the argument count N | flags << 32 (1: cooperative); words[1..3] grid,
 *  [4..6] block (all 0: the kernel's @workgroup, else 256), [7] dynamic shared bytes, [8] a ptxgate_stream* (0: the legacy
 *  default stream); then two words per argument: a value (BUFFER: the ptxgate_buffer*, POINTER:
 *  the address, SCALAR/REAL/INTEGER: the bits, TENSOR_MAP: the ptxgate_tensor_map*) and a descriptor
 *  kind | dtype << 4 | (device + 1) << 12 | elements << 20 (elements below 2^44; device + 1 of 0:
 *  unknown). Answers the status; on failure the diagnostics wait for
 *  ptxgate_take_last_diagnostics on the same thread. */
PTXGATE_CAPI ptxgate_status ptxgate_kernel_launch_packed(ptxgate_kernel* kernel, const uint64_t* words);
/** The diagnostics of this thread's last failed ptxgate_kernel_launch_packed or
 *  ptxgate_graph_exec_replay (NULL when none); the caller frees them. */
PTXGATE_CAPI ptxgate_diagnostics* ptxgate_take_last_diagnostics(void);

/* ---- Graphs (version 3) ---- */

/** A graph being built: each launch bound and validated as ptxgate_kernel_launch validates it,
 *  each copy and fill as ptxgate_copy_async / ptxgate_fill_async; dependencies from access modes
 *  (untracked memory, a raw pointer, orders a node after every earlier one). */
PTXGATE_CAPI ptxgate_status ptxgate_graph_create(ptxgate_runtime* runtime, ptxgate_graph** out,
                                                 ptxgate_diagnostics** diagnostics);
/** Adds a launch; `*node` receives its index. A blocked launch adds nothing. */
PTXGATE_CAPI ptxgate_status ptxgate_graph_add_launch(ptxgate_graph* graph, ptxgate_kernel* kernel,
                                                     const ptxgate_launch_config* config, const ptxgate_arg* args,
                                                     size_t arg_count, uint32_t* node, ptxgate_diagnostics** diagnostics);
/** Adds a copy (pageable host memory is PG4031: a replay outlives the call; use pinned memory). */
PTXGATE_CAPI ptxgate_status ptxgate_graph_add_copy(ptxgate_graph* graph, const ptxgate_copy_end* dst,
                                                   const ptxgate_copy_end* src, uint32_t* node,
                                                   ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI ptxgate_status ptxgate_graph_add_fill(ptxgate_graph* graph, const ptxgate_copy_end* dst, uint32_t value,
                                                   uint32_t width, uint32_t* node, ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI size_t ptxgate_graph_size(const ptxgate_graph* graph);
/** The nodes `node` waits for directly: their count; the first `capacity` of them in `out`. */
PTXGATE_CAPI size_t ptxgate_graph_dependencies(const ptxgate_graph* graph, uint32_t node, uint32_t* out,
                                               size_t capacity);
/** An executable graph of the nodes so far; the builder stays usable. */
PTXGATE_CAPI ptxgate_status ptxgate_graph_instantiate(ptxgate_graph* graph, ptxgate_graph_exec** out,
                                                      ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI void ptxgate_graph_free(ptxgate_graph* graph);
/** Replays the graph on `stream` (NULL: the legacy default stream): PG4030 before the driver when
 *  a buffer it uses was freed. */
PTXGATE_CAPI ptxgate_status ptxgate_graph_exec_launch(ptxgate_graph_exec* exec, ptxgate_stream* stream,
                                                      ptxgate_diagnostics** diagnostics);
/** ptxgate_graph_exec_launch for bindings that replay in a loop: nothing allocated on success; on
 *  failure the diagnostics wait for ptxgate_take_last_diagnostics on the same thread. */
PTXGATE_CAPI ptxgate_status ptxgate_graph_exec_replay(ptxgate_graph_exec* exec, ptxgate_stream* stream);
/** New geometry and arguments for kernel node `node` from the next replay on, validated before the
 *  driver as a launch is (PG30xx, PG31xx, ...; PG4032 not a kernel node; PG4033, PG4034). */
PTXGATE_CAPI ptxgate_status ptxgate_graph_exec_update(ptxgate_graph_exec* exec, uint32_t node,
                                                      const ptxgate_launch_config* config, const ptxgate_arg* args,
                                                      size_t arg_count, ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI uint64_t ptxgate_graph_exec_replays(const ptxgate_graph_exec* exec);
PTXGATE_CAPI size_t ptxgate_graph_exec_size(const ptxgate_graph_exec* exec);
PTXGATE_CAPI void ptxgate_graph_exec_free(ptxgate_graph_exec* exec);

/* ---- Tensor maps (version 3; Hopper's TMA) ---- */

/** A tensor map as cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col take it: dimension 0 the
 *  innermost; names as `ptxgate tensormap` spells them. */
typedef struct ptxgate_tensor_map_desc {
  int32_t im2col;               /**< 0: tiled, nonzero: im2col */
  const char* type;             /**< "u8" "u16" "u32" "i32" "u64" "i64" "f16" "f32" "f64" "bf16" "f32_ftz" "tf32" "tf32_ftz" */
  uint32_t rank;                /**< 1..5 */
  uint64_t dims[5];             /**< elements per dimension */
  uint64_t strides[4];          /**< bytes between consecutive indices of dimensions 1..rank-1 */
  uint32_t box[5];              /**< tiled: the box (elements per dimension) */
  uint32_t element_strides[5];  /**< all 0: 1 for every dimension */
  const char* interleave;       /**< NULL: "none"; "16B", "32B" */
  const char* swizzle;          /**< NULL: "none"; "32B", "64B", "128B", ... */
  const char* l2_promotion;     /**< NULL: "none"; "64B", "128B", "256B" */
  const char* oob_fill;         /**< NULL: "none"; "nan" */
  int32_t lower_corner[3];      /**< im2col: rank - 2 values */
  int32_t upper_corner[3];
  uint32_t channels_per_pixel;  /**< im2col */
  uint32_t pixels_per_column;   /**< im2col */
} ptxgate_tensor_map_desc;

/** Encodes a tensor map over device memory: `buffer` from `offset` bytes, or (buffer NULL) device
 *  memory made elsewhere at `pointer` with `bytes` available from there (0: unknown) on the
 *  runtime's device. Every rule is checked first (PG3701-PG3712, all at once); only a passing
 *  description reaches the driver. The memory must outlive every launch that uses the map. */
PTXGATE_CAPI ptxgate_status ptxgate_tensor_map_encode(ptxgate_runtime* runtime, const ptxgate_tensor_map_desc* desc,
                                                      ptxgate_buffer* buffer, uint64_t pointer, uint64_t offset,
                                                      uint64_t bytes, ptxgate_tensor_map** out,
                                                      ptxgate_diagnostics** diagnostics);
/** "tiled bf16 tensor 4096x4096, box 64x64, swizzle 128B" */
PTXGATE_CAPI const char* ptxgate_tensor_map_describe(const ptxgate_tensor_map* map);
PTXGATE_CAPI void ptxgate_tensor_map_free(ptxgate_tensor_map* map);

/* ---- Several devices (version 3) ---- */

/** One runtime per device (`ordinals`, in rank order; count 0: every device), opened together,
 *  with peer access enabled where the topology allows it when `enable_peer_access` is nonzero.
 *  PG4071 for an ordinal named twice or missing. `options` (device ignored) for every runtime. */
PTXGATE_CAPI ptxgate_status ptxgate_device_set_open(const int* ordinals, size_t count,
                                                    const ptxgate_runtime_options* options,
                                                    int32_t enable_peer_access, ptxgate_device_set** out,
                                                    ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI size_t ptxgate_device_set_size(const ptxgate_device_set* set);
/** A handle to the set's runtime `index` (free it with ptxgate_runtime_free; it keeps the set alive). */
PTXGATE_CAPI ptxgate_runtime* ptxgate_device_set_runtime(ptxgate_device_set* set, size_t index);
/** 1 when device `i` may use device `j`'s memory (positions in the set; peer access enabled). */
PTXGATE_CAPI int ptxgate_device_set_peer_enabled(const ptxgate_device_set* set, size_t i, size_t j);
PTXGATE_CAPI void ptxgate_device_set_free(ptxgate_device_set* set);

/* ---- NCCL (version 3; libnccl.so.2 loaded at run time, $PTXGATE_NCCL_LIBRARY) ---- */

/** A new unique id as 256 hex digits and a NUL (`hex` holds 257 bytes): made by one process and
 *  passed to the others (a file, an environment variable, torch.distributed's store). */
PTXGATE_CAPI ptxgate_status ptxgate_nccl_unique_id(char* hex, ptxgate_diagnostics** diagnostics);
/** One communicator per runtime, all in this process (ncclCommInitAll): `out` receives `count`. */
PTXGATE_CAPI ptxgate_status ptxgate_communicator_init_all(ptxgate_runtime* const* runtimes, size_t count,
                                                          ptxgate_communicator** out, ptxgate_diagnostics** diagnostics);
/** Rank `rank` of `nranks` from the unique id `hex` (blocks until every rank joined; PG4205 for a
 *  malformed id). */
PTXGATE_CAPI ptxgate_status ptxgate_communicator_init_rank(ptxgate_runtime* runtime, int nranks, int rank,
                                                           const char* hex, ptxgate_communicator** out,
                                                           ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI int ptxgate_communicator_rank(const ptxgate_communicator* comm);
PTXGATE_CAPI int ptxgate_communicator_size(const ptxgate_communicator* comm);
PTXGATE_CAPI int ptxgate_communicator_device(const ptxgate_communicator* comm);
/** Waits for `stream`, polling NCCL's asynchronous error (a failed peer aborts: PG4204). */
PTXGATE_CAPI ptxgate_status ptxgate_communicator_synchronize(ptxgate_communicator* comm, ptxgate_stream* stream,
                                                             ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI void ptxgate_communicator_free(ptxgate_communicator* comm);

typedef enum ptxgate_collective_kind {
  PTXGATE_ALL_REDUCE = 0, PTXGATE_BROADCAST = 1, PTXGATE_REDUCE = 2, PTXGATE_ALL_GATHER = 3,
  PTXGATE_REDUCE_SCATTER = 4, PTXGATE_SEND = 5, PTXGATE_RECV = 6
} ptxgate_collective_kind;
typedef enum ptxgate_reduce_op { PTXGATE_SUM = 0, PTXGATE_PROD = 1, PTXGATE_MAX = 2, PTXGATE_MIN = 3, PTXGATE_AVG = 4 } ptxgate_reduce_op;

/** Elements [first, first + count) of a buffer, as `dtype`. */
typedef struct ptxgate_collective_end {
  ptxgate_buffer* buffer;
  uint64_t first;
  uint64_t count;
  int32_t dtype;  /**< I8 U8 I32 U32 I64 U64 F16 BF16 F32 F64 */
  int32_t reserved;
} ptxgate_collective_end;

typedef struct ptxgate_collective {
  int32_t kind;    /**< a ptxgate_collective_kind */
  int32_t op;      /**< a ptxgate_reduce_op (reductions) */
  int32_t root;    /**< broadcast, reduce: the root rank; send, recv: the peer */
  int32_t reserved;
  ptxgate_collective_end send;  /**< unused by RECV */
  ptxgate_collective_end recv;  /**< unused by SEND */
} ptxgate_collective;

/** Validates the call (PG4206-PG4211, all at once, before NCCL), checks the communicator's health
 *  and issues it on `stream` through dependency tracking (reads `send`, writes `recv`). */
PTXGATE_CAPI ptxgate_status ptxgate_collective_run(ptxgate_communicator* comm, ptxgate_stream* stream,
                                                   const ptxgate_collective* call, ptxgate_diagnostics** diagnostics);
/** Calls issued together between ncclGroupStart and ncclGroupEnd (point-to-point pairs, or one
 *  collective on several local communicators); each validated when added. The streams and
 *  communicators must outlive ptxgate_group_end. */
PTXGATE_CAPI ptxgate_status ptxgate_group_create(ptxgate_group** out, ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI ptxgate_status ptxgate_group_add(ptxgate_group* group, ptxgate_communicator* comm, ptxgate_stream* stream,
                                              const ptxgate_collective* call, ptxgate_diagnostics** diagnostics);
/** Issues every added call (PG4212 when called twice). */
PTXGATE_CAPI ptxgate_status ptxgate_group_end(ptxgate_group* group, ptxgate_diagnostics** diagnostics);
PTXGATE_CAPI void ptxgate_group_free(ptxgate_group* group);

#ifdef __cplusplus
}
#endif

#endif /* PTXGATE_CAPI_PTXGATE_H */
