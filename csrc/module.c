/* dynamo._C: the module object. Exposes the callback switch, the per-code cache (for reset
 * and introspection) and the C types; it knows frames and code objects, never numpy or graphs. */
#include "dynamo_c.h"

static PyObject *py_set_eval_frame(PyObject *module, PyObject *callback) {
    if (callback != Py_None && !PyCallable_Check(callback)) {
        PyErr_SetString(PyExc_TypeError, "set_eval_frame takes a callable or None");
        return NULL;
    }
    return eval_frame_swap_callback(callback);
}

static PyObject *py_get_eval_frame(PyObject *module, PyObject *unused) {
    PyObject *callback = eval_frame_callback();
    return Py_NewRef(callback ? callback : Py_None);
}

static PyObject *py_hook_installed(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(eval_frame_hook_installed());
}

static PyObject *py_reset(PyObject *module, PyObject *unused) {
    cache_reset_all();
    Py_RETURN_NONE;
}

static PyCodeObject *code_arg(PyObject *arg) {
    if (!PyCode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected a code object, got %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return (PyCodeObject *)arg;
}

static PyObject *py_cache_entries(PyObject *module, PyObject *arg) {
    PyCodeObject *code = code_arg(arg);
    if (code == NULL) return NULL;
    ExtraState *state = extra_state_get(code);
    return state ? PyList_GetSlice(state->entries, 0, PyList_GET_SIZE(state->entries)) : PyList_New(0);
}

static PyObject *py_is_skipped(PyObject *module, PyObject *arg) {
    PyCodeObject *code = code_arg(arg);
    if (code == NULL) return NULL;
    ExtraState *state = extra_state_get(code);
    return PyBool_FromLong(state != NULL && state->skip);
}

static PyObject *py_mark_skip(PyObject *module, PyObject *arg) {
    PyCodeObject *code = code_arg(arg);
    if (code == NULL) return NULL;
    ExtraState *state = extra_state_get_or_create(code);
    if (state == NULL) return NULL;
    state->skip = 1;
    state->skip_unhooked = 0;
    state->recheck_after = 0; /* for good */
    state->quiet_calls = 0;
    Py_RETURN_NONE;
}

static PyObject *py_set_turn_timer(PyObject *module, PyObject *arg) {
    if (arg != Py_None && !PyCallable_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_turn_timer() takes a callable returning seconds, or None");
        return NULL;
    }
    eval_frame_set_turn_timer(arg);
    Py_RETURN_NONE;
}

static PyObject *py_clear_cache(PyObject *module, PyObject *arg) {
    PyCodeObject *code = code_arg(arg);
    if (code == NULL) return NULL;
    ExtraState *state = extra_state_get(code);
    if (state != NULL) {
        state->skip = 0;
        state->recheck_after = state->skipped_calls = 0;
        state->skip_unhooked = 0;
        state->quiet_calls = 0;
        if (PyList_SetSlice(state->entries, 0, PyList_GET_SIZE(state->entries), NULL) < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* call_moving(fn, values): fn(*values), where values is a list that the transformed code built
 * from its stack (BUILD_LIST moves the stack's references into it). The list is emptied and its
 * references are handed to fn's frame, which is then their only holder: CPython keeps a CALL's
 * arguments on the caller's stack until the call returns, so that passing them directly kept
 * every value alive for the whole resume function (a `del obj` there freed nothing). */
static PyObject *py_call_moving(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "call_moving(fn, values) takes a callable and a list");
        return NULL;
    }
    PyObject *values = args[1];
    Py_ssize_t count = PyList_GET_SIZE(values);
    PyObject *small[16];
    PyObject **owned = count <= 16 ? small : PyMem_New(PyObject *, count);
    if (owned == NULL) {
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        owned[i] = Py_NewRef(PyList_GET_ITEM(values, i));
    }
    PyObject *result = NULL;
    if (PyList_SetSlice(values, 0, count, NULL) == 0) { /* owned keeps every item alive */
        result = eval_frame_call(args[0], owned, count, 1);
    }
    else {
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_DECREF(owned[i]);
        }
    }
    if (owned != small) {
        PyMem_Free(owned);
    }
    return result;
}
/* retime(code, owner): owner's compiled versions of code now run other code (a graph of backend
 * "tiered" moved to C): their timed turns start again, a dropped version's included, so that what
 * the turns decided on the old code is measured anew. Versions made with no turns stay as they are. */
static PyObject *py_retime(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "retime(code, owner) takes 2 arguments");
        return NULL;
    }
    PyCodeObject *code = code_arg(args[0]);
    if (code == NULL) return NULL;
    ExtraState *state = extra_state_get(code);
    if (state == NULL) Py_RETURN_NONE;
    int rearmed = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(state->entries); i++) {
        CacheEntry *entry = (CacheEntry *)PyList_GET_ITEM(state->entries, i);
        if (entry->owner != args[1] || entry->turns <= 0) continue;
        if (entry->dropped) {
            cache_entry_rearm(entry, state->hit_serial);
            rearmed = 1;
        }
        else if (!entry->in_place) { /* kept, or its turns deferred until now */
            entry->probe = entry->turns;
            entry->best_compiled = entry->best_original = 0.0;
            entry->recheck_at = 0;
        }
    }
    if (rearmed && state->skip && state->skip_unhooked) { /* skipped for those drops: lifted */
        state->skip = state->skip_unhooked = 0;
        state->recheck_after = state->skipped_calls = 0;
    }
    Py_RETURN_NONE;
}

static PyObject *py_set_compiled_function_reducer(PyObject *module, PyObject *reducer) {
    return compiled_function_set_reducer(reducer);
}

static PyMethodDef module_methods[] = {
    {"set_compiled_function_reducer", py_set_compiled_function_reducer, METH_O,
     "set_compiled_function_reducer(fn): fn(compiled) answers CompiledFunction.__reduce__"},
    {"call_native", (PyCFunction)(void (*)(void))native_call, METH_FASTCALL,
     "call_native(address, writemask, *buffers) -> int: the compiled function at address run on the "
     "buffers' (data, shape, strides in bytes); bit i of writemask: buffer i is written"},
    {"call_moving", (PyCFunction)(void (*)(void))py_call_moving, METH_FASTCALL,
     "call_moving(fn, values: list) -> fn(*values), emptying values: fn's frame is the only holder of its "
     "arguments while it runs"},
    {"set_eval_frame", py_set_eval_frame, METH_O,
     "set_eval_frame(callback or None) -> previous: this thread's compile callback"},
    {"get_eval_frame", py_get_eval_frame, METH_NOARGS, "this thread's compile callback, or None"},
    {"hook_installed", py_hook_installed, METH_NOARGS, "whether the PEP 523 hook is installed now"},
    {"reset", py_reset, METH_NOARGS, "drop every cache entry and SKIP mark of every code object"},
    {"cache_entries", py_cache_entries, METH_O, "cache_entries(code) -> [CacheEntry], newest use first"},
    {"is_skipped", py_is_skipped, METH_O, "is_skipped(code) -> whether the hook ignores this code"},
    {"mark_skip", py_mark_skip, METH_O, "mark_skip(code): the hook will ignore this code"},
    {"set_turn_timer", py_set_turn_timer, METH_O,
     "set_turn_timer(fn): timed turns read the time from fn() (None: the monotonic clock); for tests"},
    {"clear_cache", py_clear_cache, METH_O, "clear_cache(code): drop its entries and SKIP mark"},
    {"keep_freed_memory", keep_freed_memory, METH_VARARGS,
     "keep_freed_memory(trim_threshold, mmap_threshold) -> bool: glibc's malloc serves blocks up to "
     "mmap_threshold bytes from its heap and returns the heap's top only past trim_threshold (False: "
     "not glibc, or refused)"},
    {"retime", (PyCFunction)(void (*)(void))py_retime, METH_FASTCALL,
     "retime(code, owner): owner's versions of code take their timed turns again (their code changed)"},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "dynamo._C",
    .m_doc = "The PEP 523 eval-frame hook and per-code cache of dynamo.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__C(void) {
    static int initialized = 0;
    if (initialized) {
        PyErr_SetString(PyExc_ImportError, "dynamo._C cannot be loaded twice in one process");
        return NULL;
    }
    PyTypeObject *types[] = {&GuardProgram_Type, &CacheEntry_Type, &FrameView_Type,
                             &CompiledFunction_Type};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (PyType_Ready(types[i]) < 0) return NULL;
    }
    if (cache_module_init() < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    dynamo_skip_marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    dynamo_skip_unhooked_marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    dynamo_cache_full_marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (dynamo_skip_marker == NULL || dynamo_skip_unhooked_marker == NULL || dynamo_cache_full_marker == NULL ||
        PyModule_AddObjectRef(module, "SKIP", dynamo_skip_marker) < 0 ||
        PyModule_AddObjectRef(module, "SKIP_UNHOOKED", dynamo_skip_unhooked_marker) < 0 ||
        PyModule_AddObjectRef(module, "CACHE_FULL", dynamo_cache_full_marker) < 0 ||
        PyModule_AddObjectRef(module, "GuardProgram", (PyObject *)&GuardProgram_Type) < 0 ||
        PyModule_AddObjectRef(module, "CacheEntry", (PyObject *)&CacheEntry_Type) < 0 ||
        PyModule_AddObjectRef(module, "FrameView", (PyObject *)&FrameView_Type) < 0 ||
        PyModule_AddObjectRef(module, "CompiledFunction", (PyObject *)&CompiledFunction_Type) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    initialized = 1;
    return module;
}
