/* The launch hot path of the ptxgate Python package in C: a CPython extension of the stable ABI
 * (abi3, Python 3.10 and later) that walks a call's arguments against the kernel's signature and
 * makes one call into libptxgate's ptxgate_kernel_launch_packed, with the words the package's
 * ctypes path (python/ptxgate/arrays.py) makes for the same arguments. What an argument is comes
 * from the package (arrays.native_kind, once per type; the element-type tables of dtypes.py); what
 * the walk does not take (a host array, a value it cannot read, anything to refuse) goes to the
 * Python launcher it wraps, which takes it or raises the Error that explains it. */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ptxgate/capi/ptxgate.h"

#define MAX_ARGS 256          /* the packed form's largest argument count */
#define MAX_ELEMENTS (1ull << 44)
#define MAX_TYPES 64          /* argument types classified per process; later ones take the Python path */
#define HEAD_WORDS 9

/* What an argument of one exact type is (arrays.native_kind names these). */
enum kind {
  K_PYTHON = 0,  /* the Python launcher's path */
  K_FLOAT,       /* a Python float: a real number, rounded to the parameter's type by the library */
  K_INT,         /* a Python int: an integer (u64 beyond int64) */
  K_BOOL,
  K_SIGNED,      /* a numpy signed integer scalar: its own type */
  K_UNSIGNED,    /* a numpy unsigned integer scalar */
  K_F32,
  K_F64,
  K_HALF,        /* a numpy f16/bf16 scalar */
  K_NP_BOOL,
  K_TORCH,       /* a torch.Tensor: get_device(), dtype, is_contiguous(), numel(), data_ptr() */
  K_CUPY,        /* a cupy.ndarray: dtype, contiguity, size, data.ptr, data.device_id; CuPy's stream */
  K_CAI,         /* anything else with __cuda_array_interface__, read on every call */
  K_OWNED        /* a ptxgate Buffer or TensorMap: its handle and element code */
};

static const char* const kKindNames[] = {"python", "float", "int", "bool", "signed", "unsigned", "f32", "f64",
                                         "half", "numpy_bool", "torch", "cupy", "cai", "owned"};

typedef struct {
  PyObject* type;   /* strong */
  int kind;
  uint64_t desc;    /* the descriptor's kind and dtype bits (scalars, owned objects) */
  PyObject* extra;  /* torch: (get_device, is_contiguous, numel, data_ptr); cupy: (contiguity attribute,
                       current stream function, its attribute or None, the stream 0 stands for) */
} TypeEntry;

/* The package's tables and callables, given once by setup(). */
static struct {
  PyObject* state;         /* runtime.STATE: this thread's stream and graph capture */
  const long* state_set;   /* runtime.SET: how many of those are set in all threads (0: none) */
  PyObject* raise_last;    /* raises the Error of this thread's last failed packed launch */
  PyObject* classify;      /* arrays.native_kind(type) -> (name, descriptor bits, extra) */
  PyObject* torch_desc;    /* torch.dtype -> (pointer descriptor bits, element size) or None */
  PyObject* numpy_desc;    /* numpy dtype -> the same */
  PyObject* typestr_desc;  /* __cuda_array_interface__ typestr -> the same */
  PyObject* device_of;     /* arrays._device_of(obj) -> int */
  TypeEntry types[MAX_TYPES];
  int type_count;
} g;

/* Interned attribute and key names. */
static PyObject *s_capture, *s_stream, *s_handle, *s_value, *s_cu, *s_dtype, *s_size, *s_data, *s_ptr,
    *s_device_id, *s_code, *s_cai, *s_typestr, *s_strides, *s_shape, *s_head, *s_writes, *s_kh, *s_explicit, *s_wait,
    *s_n;

/* ---------------------------------------------------------------- classification */

/* The entry of `type`, classified on first sight; -1 with an exception set on failure. */
static int entry_of(PyTypeObject* type) {
  for (int i = 0; i < g.type_count; ++i)
    if (g.types[i].type == (PyObject*)type) return i;
  if (g.type_count == MAX_TYPES) return MAX_TYPES;  /* no room: the Python path (see take_arg) */
  PyObject* r = PyObject_CallFunctionObjArgs(g.classify, (PyObject*)type, NULL);
  if (r == NULL) return -1;  /* a defect of native_kind: raised at the call */
  PyObject* name = NULL;
  unsigned long long desc = 0;
  PyObject* extra = NULL;
  if (!PyArg_ParseTuple(r, "UKO", &name, &desc, &extra)) {
    Py_DECREF(r);
    return -1;
  }
  int kind = -1;
  for (size_t k = 0; k < sizeof kKindNames / sizeof kKindNames[0]; ++k)
    if (PyUnicode_CompareWithASCIIString(name, kKindNames[k]) == 0) kind = (int)k;
  if (kind < 0) {
    PyErr_Format(PyExc_ValueError, "native_kind named an unknown kind %R", name);
    Py_DECREF(r);
    return -1;
  }
  TypeEntry* e = &g.types[g.type_count];
  Py_INCREF(type);
  e->type = (PyObject*)type;
  e->kind = kind;
  e->desc = desc;
  Py_INCREF(extra);
  e->extra = extra;
  Py_DECREF(r);
  return g.type_count++;
}

/* (descriptor bits, element size) of an element type object through one of the package's tables
 * (a dict whose __missing__ works the answer out once); 0 for None or a key the table refuses (an
 * unhashable one: the Python path explains), -1 on error. */
static int element_desc(PyObject* table, PyObject* key, uint64_t* desc) {
  PyObject* v = PyDict_GetItemWithError(table, key); /* borrowed */
  PyObject* owned = NULL;
  if (v == NULL) {
    if (!PyErr_Occurred()) v = owned = PyObject_GetItem(table, key);
    if (v == NULL) {
      PyErr_Clear();
      return 0;
    }
  }
  int found = 0;
  if (v != Py_None) {
    PyObject* bits = PyTuple_GetItem(v, 0);
    if (bits == NULL) {
      Py_XDECREF(owned);
      return -1;
    }
    *desc = PyLong_AsUnsignedLongLong(bits);
    found = PyErr_Occurred() ? -1 : 1;
  }
  Py_XDECREF(owned);
  return found;
}

/* ---------------------------------------------------------------- the launcher */

typedef struct {
  PyObject_HEAD
  PyObject* py;             /* the Python Launcher: the path for what this one does not take */
  PyObject* kernel_handle;  /* the kernel's c_void_p (a freed kernel's reads NULL) */
  void** kernel_slot;       /* its storage */
  PyObject* stream;         /* the explicit ptxgate Stream, or NULL: this thread's current one */
  void** stream_slot;       /* the explicit Stream's handle storage (a freed stream's reads NULL) */
  PyObject* wait;           /* runtime._wait_producer(consumer, producer) */
  uint64_t head[HEAD_WORDS];
  Py_ssize_t n;
  unsigned char* writes;    /* per parameter: the kernel writes it (out/inout) */
  int* seen;                /* per position: the type entry of the last call's argument */
  unsigned long long handed; /* calls handed to the Python launcher */
} Launcher;

/* One call's state while its arguments are walked. */
typedef struct {
  Launcher* self;
  int cupy_stream_read;     /* CuPy's current stream is read once per call */
  uint64_t producers[MAX_ARGS];
  int producer_count;
} Call;

enum { TAKEN = 0, PYTHON = 1, FAILED = -1 };

static PyObject* attr(PyObject* o, PyObject* name) { return PyObject_GetAttr(o, name); }

/* An int attribute (or call result) as u64; PYTHON for a value that is not one. */
static int as_u64(PyObject* v, uint64_t* out) {
  if (v == NULL) return FAILED;
  if (!PyLong_Check(v)) {
    Py_DECREF(v);
    return PYTHON;
  }
  unsigned long long x = PyLong_AsUnsignedLongLong(v);
  Py_DECREF(v);
  if (x == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return PYTHON;
  }
  *out = x;
  return TAKEN;
}

static int as_i64(PyObject* v, long long* out) {
  if (v == NULL) return FAILED;
  if (!PyLong_Check(v)) {
    Py_DECREF(v);
    return PYTHON;
  }
  long long x = PyLong_AsLongLong(v);
  Py_DECREF(v);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return PYTHON;
  }
  *out = x;
  return TAKEN;
}

static int truth(PyObject* v) {
  if (v == NULL) return -1;
  int t = PyObject_IsTrue(v);
  Py_DECREF(v);
  return t;
}

static void add_producer(Call* c, uint64_t stream) {
  for (int i = 0; i < c->producer_count; ++i)
    if (c->producers[i] == stream) return;
  c->producers[c->producer_count++] = stream;
}

static uint64_t pointer_desc(uint64_t desc, long long device, uint64_t elements) {
  return desc | (uint64_t)(device + 1) << 12 | elements << 20;
}

static int take_torch(PyObject* a, const TypeEntry* e, uint64_t* w) {
  long long device = 0, elements = 0;
  uint64_t desc = 0, pointer = 0;
  int r = as_i64(PyObject_CallFunctionObjArgs(PyTuple_GetItem(e->extra, 0), a, NULL), &device);
  if (r != TAKEN) return r;
  if (device < 0 || device > 254) return PYTHON;
  PyObject* dtype = attr(a, s_dtype);
  if (dtype == NULL) return FAILED;
  r = element_desc(g.torch_desc, dtype, &desc);
  Py_DECREF(dtype);
  if (r <= 0) return r < 0 ? FAILED : PYTHON;
  int contiguous = truth(PyObject_CallFunctionObjArgs(PyTuple_GetItem(e->extra, 1), a, NULL));
  if (contiguous <= 0) return contiguous < 0 ? FAILED : PYTHON;
  r = as_i64(PyObject_CallFunctionObjArgs(PyTuple_GetItem(e->extra, 2), a, NULL), &elements);
  if (r != TAKEN) return r;
  if (elements < 0 || (uint64_t)elements >= MAX_ELEMENTS) return PYTHON;
  r = as_u64(PyObject_CallFunctionObjArgs(PyTuple_GetItem(e->extra, 3), a, NULL), &pointer);
  if (r != TAKEN) return r;
  w[0] = pointer;
  w[1] = pointer_desc(desc, device, (uint64_t)elements);
  return TAKEN;
}

/* CuPy's current stream as its __cuda_array_interface__ names it (0 stands for the legacy or the
 * per-thread default stream), once per call; None when CuPy exports no stream. */
static int cupy_stream(Call* c, const TypeEntry* e) {
  if (c->cupy_stream_read) return TAKEN;
  c->cupy_stream_read = 1;
  PyObject* fn = PyTuple_GetItem(e->extra, 1);
  if (fn == Py_None) return TAKEN;
  PyObject* v = PyObject_CallNoArgs(fn);
  PyObject* field = PyTuple_GetItem(e->extra, 2);
  if (v != NULL && field != Py_None) {
    PyObject* ptr = PyObject_GetAttr(v, field);
    Py_DECREF(v);
    v = ptr;
  }
  uint64_t stream = 0;
  int r = as_u64(v, &stream);
  if (r != TAKEN) return r;
  if (stream == 0) {
    uint64_t fallback = 0;
    Py_INCREF(PyTuple_GetItem(e->extra, 3));
    r = as_u64(PyTuple_GetItem(e->extra, 3), &fallback);
    if (r != TAKEN) return r;
    stream = fallback;
  }
  add_producer(c, stream);
  return TAKEN;
}

static int take_cupy(Call* c, PyObject* a, const TypeEntry* e, uint64_t* w) {
  uint64_t desc = 0, elements = 0, pointer = 0, device = 0;
  PyObject* dtype = attr(a, s_dtype);
  if (dtype == NULL) return FAILED;
  int r = element_desc(g.numpy_desc, dtype, &desc);
  Py_DECREF(dtype);
  if (r <= 0) return r < 0 ? FAILED : PYTHON;
  PyObject* contiguity = PyTuple_GetItem(e->extra, 0);
  PyObject* flags = NULL;
  if (PyTuple_Check(contiguity)) {  /* ("flags", "c_contiguous") */
    flags = attr(a, PyTuple_GetItem(contiguity, 0));
    if (flags == NULL) return FAILED;
    contiguity = PyTuple_GetItem(contiguity, 1);
  }
  int contiguous = truth(attr(flags != NULL ? flags : a, contiguity));
  Py_XDECREF(flags);
  if (contiguous <= 0) return contiguous < 0 ? FAILED : PYTHON;
  r = as_u64(attr(a, s_size), &elements);
  if (r != TAKEN) return r;
  if (elements >= MAX_ELEMENTS) return PYTHON;
  PyObject* memory = attr(a, s_data);
  if (memory == NULL) return FAILED;
  r = as_u64(attr(memory, s_ptr), &pointer);
  if (r == TAKEN) r = as_u64(attr(memory, s_device_id), &device);
  Py_DECREF(memory);
  if (r != TAKEN) return r;
  if (device > 254) return PYTHON;
  r = cupy_stream(c, e);
  if (r != TAKEN) return r;
  w[0] = pointer;
  w[1] = pointer_desc(desc, (long long)device, elements);
  return TAKEN;
}

/* Anything with __cuda_array_interface__: the dictionary read on every call. Explicit strides, a
 * read-only array for a parameter the kernel writes, stream 0 or another value go to the Python
 * path, which takes or explains them. */
static int take_cai(Call* c, PyObject* a, Py_ssize_t i, uint64_t* w) {
  PyObject* x = attr(a, s_cai);
  if (x == NULL) return FAILED;
  int r = PYTHON;
  uint64_t desc = 0, pointer = 0, elements = 1;
  long long device = -1;
  if (!PyDict_Check(x)) goto done;
  PyObject* typestr = PyDict_GetItemWithError(x, s_typestr);
  PyObject* strides = typestr != NULL ? PyDict_GetItemWithError(x, s_strides) : NULL;
  PyObject* data = PyDict_GetItemWithError(x, s_data);
  PyObject* shape = PyDict_GetItemWithError(x, s_shape);
  PyObject* stream = PyDict_GetItemWithError(x, s_stream);
  if (PyErr_Occurred()) {
    r = FAILED;
    goto done;
  }
  if (typestr == NULL || (strides != NULL && strides != Py_None) || data == NULL || !PyTuple_Check(data) ||
      PyTuple_Size(data) != 2 || shape == NULL || !PyTuple_Check(shape))
    goto done;
  int found = element_desc(g.typestr_desc, typestr, &desc);
  if (found <= 0) {
    r = found < 0 ? FAILED : PYTHON;
    goto done;
  }
  Py_INCREF(PyTuple_GetItem(data, 0));
  if ((r = as_u64(PyTuple_GetItem(data, 0), &pointer)) != TAKEN) goto done;
  r = PYTHON;
  int readonly = PyObject_IsTrue(PyTuple_GetItem(data, 1));
  if (readonly < 0) {
    r = FAILED;
    goto done;
  }
  if (readonly && c->self->writes[i]) goto done;
  for (Py_ssize_t d = 0, rank = PyTuple_Size(shape); d < rank; ++d) {
    uint64_t extent = 0;
    PyObject* item = PyTuple_GetItem(shape, d);
    Py_INCREF(item);
    if ((r = as_u64(item, &extent)) != TAKEN) goto done;
    r = PYTHON;
    if (extent != 0 && elements > (MAX_ELEMENTS - 1) / extent) goto done;
    elements *= extent;
  }
  if (elements >= MAX_ELEMENTS) goto done;
  if (stream != NULL && stream != Py_None) {
    uint64_t s = 0;
    Py_INCREF(stream);
    if ((r = as_u64(stream, &s)) != TAKEN) goto done;
    r = PYTHON;
    if (s == 0 || PyBool_Check(stream)) goto done;  /* version 3 refuses stream 0 */
    add_producer(c, s);
  }
  if ((r = as_i64(PyObject_CallFunctionObjArgs(g.device_of, a, NULL), &device)) != TAKEN) goto done;
  r = PYTHON;
  if (device < -1 || device > 254) goto done;
  w[0] = pointer;
  w[1] = pointer_desc(desc, device, elements);
  r = TAKEN;
done:
  Py_DECREF(x);
  return r;
}

static int take_owned(PyObject* a, const TypeEntry* e, uint64_t* w) {
  PyObject* handle = attr(a, s_handle);
  if (handle == NULL) return FAILED;
  PyObject* value = attr(handle, s_value);
  Py_DECREF(handle);
  if (value == NULL) return FAILED;
  if (value == Py_None) {  /* freed: the Python path says so */
    Py_DECREF(value);
    return PYTHON;
  }
  uint64_t pointer = 0, code = 0;
  int r = as_u64(value, &pointer);
  if (r != TAKEN) return r;
  r = as_u64(attr(a, s_code), &code);
  if (r != TAKEN) return r;
  w[0] = pointer;
  w[1] = e->desc | (code & 0xff) << 4;
  return TAKEN;
}

/* The two words of argument `i`: TAKEN, PYTHON (the Python path takes the call) or FAILED. */
static int take_arg(Call* c, PyObject* a, Py_ssize_t i, uint64_t* w) {
  Launcher* self = c->self;
  int index = self->seen[i];
  if (index < 0 || g.types[index].type != (PyObject*)Py_TYPE(a)) {
    index = entry_of(Py_TYPE(a));
    if (index < 0) return FAILED;
    if (index == MAX_TYPES) return PYTHON;
    self->seen[i] = index;
  }
  const TypeEntry* e = &g.types[index];
  switch (e->kind) {
    case K_FLOAT: {
      double d = PyFloat_AsDouble(a);
      if (d == -1.0 && PyErr_Occurred()) return FAILED;
      memcpy(&w[0], &d, 8);
      w[1] = PTXGATE_ARG_REAL;
      return TAKEN;
    }
    case K_INT: {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
      if (v == -1 && PyErr_Occurred()) return FAILED;
      if (overflow == 0) {
        w[0] = (uint64_t)v;
        w[1] = PTXGATE_ARG_INTEGER;
        return TAKEN;
      }
      if (overflow < 0) return PYTHON;
      unsigned long long u = PyLong_AsUnsignedLongLong(a);
      if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return PYTHON;  /* beyond 64 bits: the Python path explains */
      }
      w[0] = u;
      w[1] = PTXGATE_ARG_SCALAR | PTXGATE_DTYPE_U64 << 4;
      return TAKEN;
    }
    case K_BOOL:
    case K_NP_BOOL: {
      int t = PyObject_IsTrue(a);
      if (t < 0) return FAILED;
      w[0] = (uint64_t)t;
      w[1] = e->desc;
      return TAKEN;
    }
    case K_SIGNED: {
      long long v = PyLong_AsLongLong(a);  /* through __index__ */
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return PYTHON;
      }
      w[0] = (uint64_t)v;
      w[1] = e->desc;
      return TAKEN;
    }
    case K_UNSIGNED: {
      uint64_t v = 0;
      int r = as_u64(PyNumber_Index(a), &v);
      if (r == FAILED) {
        PyErr_Clear();
        return PYTHON;
      }
      if (r != TAKEN) return r;
      w[0] = v;
      w[1] = e->desc;
      return TAKEN;
    }
    case K_F32:
    case K_F64:
    case K_HALF: {
      double d = PyFloat_AsDouble(a);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return PYTHON;
      }
      if (e->kind == K_F32) {
        float f = (float)d;  /* exact: the value is an f32 */
        uint32_t bits;
        memcpy(&bits, &f, 4);
        w[0] = bits;
      } else if (e->kind == K_F64) {
        memcpy(&w[0], &d, 8);
      } else {
        /* An f16/bf16 value is exact in a double and comes back unchanged through the library's
         * rounding; a NaN's payload would not: the Python path passes its bits. */
        if (isnan(d)) return PYTHON;
        uint64_t bits = 0;
        if (ptxgate_float_bits(d, (int32_t)((e->desc >> 4) & 0xff), &bits, NULL) != PTXGATE_OK) return PYTHON;
        w[0] = bits;
      }
      w[1] = e->desc;
      return TAKEN;
    }
    case K_TORCH: return take_torch(a, e, w);
    case K_CUPY: return take_cupy(c, a, e, w);
    case K_CAI: return take_cai(c, a, i, w);
    case K_OWNED: return take_owned(a, e, w);
    default: return PYTHON;
  }
}

static PyObject* python_path(Launcher* self, PyObject* args, PyObject* kwargs) {
  ++self->handed;
  return PyObject_Call(self->py, args, kwargs);
}

/* This thread's stream (None or a ptxgate Stream) and its CUstream word; PYTHON for a freed one. */
static int stream_word(PyObject* stream, uint64_t* word) {
  if (stream == Py_None) {
    *word = 0;
    return TAKEN;
  }
  PyObject* handle = attr(stream, s_handle);
  if (handle == NULL) return FAILED;
  PyObject* value = attr(handle, s_value);
  Py_DECREF(handle);
  if (value == NULL) return FAILED;
  if (value == Py_None) {
    Py_DECREF(value);
    return PYTHON;
  }
  return as_u64(value, word);
}

static PyObject* launcher_call(PyObject* op, PyObject* args, PyObject* kwargs) {
  Launcher* self = (Launcher*)op;
  if (self->py == NULL) {  /* cleared by the collector */
    PyErr_SetString(PyExc_RuntimeError, "this launcher was cleared");
    return NULL;
  }
  if (kwargs != NULL && PyDict_Size(kwargs) != 0) return python_path(self, args, kwargs);
  const int state_set = *g.state_set != 0;
  if (state_set) {
    PyObject* capture = attr(g.state, s_capture);
    if (capture == NULL) return NULL;
    Py_DECREF(capture);
    if (capture != Py_None) return python_path(self, args, kwargs);  /* a graph records the launch */
  }
  Py_ssize_t n = PyTuple_Size(args);
  if (n != self->n) return python_path(self, args, kwargs);  /* the Python path explains (PG3005) */

  uint64_t words[HEAD_WORDS + 2 * MAX_ARGS];
  memcpy(words, self->head, sizeof self->head);
  PyObject* stream = self->stream;
  int r = TAKEN;
  if (stream != NULL) {  /* the explicit stream's handle, read in place */
    Py_INCREF(stream);
    words[8] = (uint64_t)(uintptr_t)*self->stream_slot;
    if (words[8] == 0) r = PYTHON;  /* freed: the Python path says so */
  } else {
    stream = state_set ? attr(g.state, s_stream) : (Py_INCREF(Py_None), Py_None);
    if (stream == NULL) return NULL;
    r = stream_word(stream, &words[8]);
  }
  PyObject* result = NULL;
  Call c;
  c.self = self;
  c.cupy_stream_read = 0;
  c.producer_count = 0;
  for (Py_ssize_t i = 0; r == TAKEN && i < n; ++i) r = take_arg(&c, PyTuple_GetItem(args, i), i, &words[HEAD_WORDS + 2 * i]);
  if (r == FAILED) goto out;
  if (r == PYTHON) {
    result = python_path(self, args, kwargs);
    goto out;
  }
  if (c.producer_count != 0) {  /* __cuda_array_interface__ v3: wait for each producer's stream */
    uint64_t cu = 1;            /* the legacy default stream */
    if (stream != Py_None) {
      r = as_u64(attr(stream, s_cu), &cu);
      if (r == FAILED) goto out;
    }
    for (int j = 0; j < c.producer_count; ++j) {
      if (c.producers[j] == cu) continue;
      PyObject* p = PyLong_FromUnsignedLongLong(c.producers[j]);
      if (p == NULL) goto out;
      PyObject* waited = PyObject_CallFunctionObjArgs(self->wait, stream, p, NULL);
      Py_DECREF(p);
      if (waited == NULL) goto out;
      Py_DECREF(waited);
    }
  }
  {
    ptxgate_kernel* kernel = (ptxgate_kernel*)*self->kernel_slot;
    ptxgate_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ptxgate_kernel_launch_packed(kernel, words);
    Py_END_ALLOW_THREADS
    if (status != PTXGATE_OK) {
      PyObject* raised = PyObject_CallNoArgs(g.raise_last);  /* raises the Error */
      Py_XDECREF(raised);
      if (raised != NULL) PyErr_SetString(PyExc_RuntimeError, "a launch failed and raise_last did not raise");
      goto out;
    }
  }
  Py_INCREF(Py_None);
  result = Py_None;
out:
  Py_DECREF(stream);
  return result;
}

/* Launcher(launcher, kernel_slot, stream_slot): a Python Launcher's request (its _head, _n, _writes,
 * _wait, _stream if _explicit_stream, its kernel's handle _kh) taken once; the storage of the
 * kernel's and the explicit stream's handles (c_void_p) is read on every call. */
static PyObject* launcher_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* py;
  unsigned long long slot, stream_slot;
  static char* names[] = {"launcher", "kernel_slot", "stream_slot", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OKK", names, &py, &slot, &stream_slot)) return NULL;
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  Launcher* self = (Launcher*)alloc(type, 0);
  if (self == NULL) return NULL;
  Py_INCREF(py);
  self->py = py;
  self->kernel_slot = (void**)(uintptr_t)slot;
  self->kernel_handle = attr(py, s_kh);
  self->wait = attr(py, s_wait);
  PyObject* head = attr(py, s_head);
  PyObject* count = attr(py, s_n);
  PyObject* writes = attr(py, s_writes);
  PyObject* explicit_ = attr(py, s_explicit);
  if (self->kernel_handle == NULL || self->wait == NULL || head == NULL || count == NULL || writes == NULL || explicit_ == NULL) goto fail;
  self->n = PyLong_AsSsize_t(count);
  if (self->n < 0 || self->n > MAX_ARGS || PyList_Size(head) != HEAD_WORDS) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a launcher of more than 256 parameters");
    goto fail;
  }
  for (Py_ssize_t i = 0; i < HEAD_WORDS; ++i) {
    self->head[i] = PyLong_AsUnsignedLongLong(PyList_GetItem(head, i));
    if (PyErr_Occurred()) goto fail;
  }
  self->writes = PyMem_Calloc((size_t)self->n + 1, 1);
  self->seen = PyMem_Malloc(((size_t)self->n + 1) * sizeof(int));
  if (self->writes == NULL || self->seen == NULL) {
    PyErr_NoMemory();
    goto fail;
  }
  for (Py_ssize_t i = 0; i < self->n; ++i) {
    self->seen[i] = -1;
    PyObject* item = PySequence_GetItem(writes, i);
    int t = item != NULL ? PyObject_IsTrue(item) : -1;
    Py_XDECREF(item);
    if (t < 0) goto fail;
    self->writes[i] = (unsigned char)t;
  }
  int is_explicit = PyObject_IsTrue(explicit_);
  if (is_explicit < 0) goto fail;
  if (is_explicit) {
    if (stream_slot == 0) {
      PyErr_SetString(PyExc_ValueError, "an explicit stream needs its handle's storage (stream_slot)");
      goto fail;
    }
    self->stream = PyObject_GetAttrString(py, "_stream");
    if (self->stream == NULL) goto fail;
    self->stream_slot = (void**)(uintptr_t)stream_slot;
  }
  Py_DECREF(head);
  Py_DECREF(count);
  Py_DECREF(writes);
  Py_DECREF(explicit_);
  return (PyObject*)self;
fail:
  Py_XDECREF(head);
  Py_XDECREF(count);
  Py_XDECREF(writes);
  Py_XDECREF(explicit_);
  Py_DECREF(self);
  return NULL;
}

/* The launcher is in a cycle (kernel -> its launchers -> this -> the Python launcher -> kernel):
 * the collector must see its references. */
static int launcher_traverse(PyObject* op, visitproc visit, void* arg) {
  Launcher* self = (Launcher*)op;
  Py_VISIT(Py_TYPE(op));
  Py_VISIT(self->py);
  Py_VISIT(self->kernel_handle);
  Py_VISIT(self->stream);
  Py_VISIT(self->wait);
  return 0;
}

static int launcher_clear(PyObject* op) {
  Launcher* self = (Launcher*)op;
  Py_CLEAR(self->py);
  Py_CLEAR(self->kernel_handle);
  Py_CLEAR(self->stream);
  Py_CLEAR(self->wait);
  return 0;
}

static void launcher_dealloc(PyObject* op) {
  Launcher* self = (Launcher*)op;
  PyTypeObject* type = Py_TYPE(op);
  PyObject_GC_UnTrack(op);
  launcher_clear(op);
  PyMem_Free(self->writes);
  PyMem_Free(self->seen);
  freefunc free_ = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_(op);
  Py_DECREF(type);
}

static PyObject* launcher_repr(PyObject* op) { return PyObject_Repr(((Launcher*)op)->py); }

static PyObject* launcher_python(PyObject* op, void* closure) {
  (void)closure;
  PyObject* py = ((Launcher*)op)->py;
  Py_INCREF(py);
  return py;
}

static PyObject* launcher_handed(PyObject* op, void* closure) {
  (void)closure;
  return PyLong_FromUnsignedLongLong(((Launcher*)op)->handed);
}

static PyGetSetDef launcher_getset[] = {
    {"python", launcher_python, NULL, "The Python launcher this one hands what it does not take", NULL},
    {"handed_over", launcher_handed, NULL, "How many calls this launcher handed to the Python launcher", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot launcher_slots[] = {
    {Py_tp_new, launcher_new},
    {Py_tp_dealloc, launcher_dealloc},
    {Py_tp_traverse, launcher_traverse},
    {Py_tp_clear, launcher_clear},
    {Py_tp_call, launcher_call},
    {Py_tp_repr, launcher_repr},
    {Py_tp_getset, launcher_getset},
    {Py_tp_doc, "kernel[grid, block, ...] with its arguments walked in C and one call into libptxgate"},
    {0, NULL}};

static PyType_Spec launcher_spec = {"ptxgate._launch.Launcher", sizeof(Launcher), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, launcher_slots};

/* ---------------------------------------------------------------- the module */

static PyObject* setup(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 8) {
    PyErr_SetString(PyExc_TypeError,
                    "setup(state, state_set, raise_last, classify, torch_desc, numpy_desc, typestr_desc, device_of)");
    return NULL;
  }
  unsigned long long set = PyLong_AsUnsignedLongLong(args[1]);
  if (PyErr_Occurred()) return NULL;
  if (set == 0) {
    PyErr_SetString(PyExc_ValueError, "setup: state_set is the address of a C long");
    return NULL;
  }
  g.state_set = (const long*)(uintptr_t)set;
  PyObject* const objects[] = {args[0], args[2], args[3], args[4], args[5], args[6], args[7]};
  PyObject** slots[] = {&g.state, &g.raise_last, &g.classify, &g.torch_desc, &g.numpy_desc, &g.typestr_desc, &g.device_of};
  for (int i = 0; i < 7; ++i) {
    if (i >= 3 && i <= 5 && !PyDict_Check(objects[i])) {
      PyErr_SetString(PyExc_TypeError, "setup: the element-type tables are dicts");
      return NULL;
    }
    PyObject* old = *slots[i];
    Py_INCREF(objects[i]);
    *slots[i] = objects[i];
    Py_XDECREF(old);
  }
  Py_RETURN_NONE;
}

static PyObject* entry_address(PyObject* module, PyObject* unused) {
  (void)module;
  (void)unused;
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)&ptxgate_kernel_launch_packed);
}

static PyMethodDef methods[] = {
    {"setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL,
     "setup(state, state_set, raise_last, classify, torch_desc, numpy_desc, typestr_desc, device_of): the "
     "package's tables"},
    {"entry_address", entry_address, METH_NOARGS,
     "The address of the ptxgate_kernel_launch_packed this module calls (the package checks it is its library's)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_launch",
                                        "The launch hot path of the ptxgate package in C", -1, methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__launch(void) {
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&s_capture, "capture"}, {&s_stream, "stream"}, {&s_handle, "_handle"}, {&s_value, "value"},
               {&s_cu, "_cu"}, {&s_dtype, "dtype"}, {&s_size, "size"}, {&s_data, "data"}, {&s_ptr, "ptr"},
               {&s_device_id, "device_id"}, {&s_code, "_code"}, {&s_cai, "__cuda_array_interface__"},
               {&s_typestr, "typestr"}, {&s_strides, "strides"}, {&s_shape, "shape"}, {&s_head, "_head"},
               {&s_writes, "_writes"}, {&s_kh, "_kh"}, {&s_explicit, "_explicit_stream"}, {&s_wait, "_wait"},
               {&s_n, "_n"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
  PyObject* m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  PyObject* type = PyType_FromSpec(&launcher_spec);
  if (type == NULL || PyModule_AddObject(m, "Launcher", type) < 0) {
    Py_XDECREF(type);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
