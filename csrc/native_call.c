/* call_native: run a compiled function (backend "c") on buffers, with no ctypes on the way.
 * It knows the buffer protocol and a C calling convention, never numpy or graphs: each argument
 * is handed over as (data, shape, strides in bytes); the function returns an int, passed back. */
#include "dynamo_c.h"

#define NATIVE_MAX_ARGS 64

/* what the generated code calls `dyn_arg` (backends/c_cpu/emitters.py) */
typedef struct {
    char *data;
    const Py_ssize_t *shape;
    const Py_ssize_t *strides;
} NativeArg;

typedef int (*native_function)(const NativeArg *args);

/* call_native(address, writemask, *buffers) -> int: address is the function's (from dlopen), bit i
 * of writemask says the function writes buffer i (it must then be writable). The GIL is released
 * while the function runs (it may start threads). */
PyObject *native_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs - 2 > NATIVE_MAX_ARGS) {
        PyErr_Format(PyExc_TypeError, "call_native(address, writemask, *buffers) takes 2 to %d arguments",
                     NATIVE_MAX_ARGS + 2);
        return NULL;
    }
    void *address = PyLong_AsVoidPtr(args[0]);
    if (address == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "call_native: null function address");
        return NULL;
    }
    unsigned long long writemask = PyLong_AsUnsignedLongLong(args[1]);
    if (writemask == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    Py_ssize_t count = nargs - 2, held = 0;
    Py_buffer views[NATIVE_MAX_ARGS];
    NativeArg native[NATIVE_MAX_ARGS];
    for (Py_ssize_t i = 0; i < count; i++, held++) {
        int flags = PyBUF_STRIDES | (((writemask >> i) & 1) ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[2 + i], &views[i], flags) < 0) goto fail;
        native[i].data = (char *)views[i].buf;
        native[i].shape = views[i].shape;
        native[i].strides = views[i].strides;
    }
    int result;
    Py_BEGIN_ALLOW_THREADS
    result = ((native_function)address)(native);
    Py_END_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    return PyLong_FromLong(result);
fail:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    return NULL;
}
