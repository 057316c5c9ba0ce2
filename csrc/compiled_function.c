/* CompiledFunction: what compile(fn) returns. Its call checks the cache before any frame exists
 * when the arguments bind to plain parameters (the fast path), and turns the hook on around it. */
#include "dynamo_c.h"

#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *fn;       /* the user's callable */
    PyObject *callback; /* the compile callback this wrapper enables */
    PyObject *dict;     /* __dict__: functools.wraps metadata lives here */
    PyObject *weakrefs;
    vectorcallfunc vectorcall;
} CompiledFunction;

/* A code skipped for good runs with the hook off after this many calls in a row that started no
 * frame the hook would compile, and is called with it on again once in QUIET_RECHECK calls. */
#define QUIET_CALLS 16
#define QUIET_RECHECK 256

/* The most parameters a call's arguments are bound to here; more take the frame path. */
#define MAX_BOUND_SLOTS 32

/* The parameter slot named `key` among those a keyword may fill, or -1. */
static Py_ssize_t keyword_slot(PyCodeObject *code, PyObject *key) {
    PyObject *names = compat_localsplus_names(code);
    for (Py_ssize_t j = code->co_posonlyargcount; j < code->co_argcount; j++) {
        if (PyTuple_GET_ITEM(names, j) == key) { /* names and keywords are interned: the usual hit */
            return j;
        }
    }
    for (Py_ssize_t j = code->co_posonlyargcount; j < code->co_argcount; j++) {
        if (PyUnicode_Check(key) && PyUnicode_Compare(PyTuple_GET_ITEM(names, j), key) == 0) {
            return j;
        }
    }
    return -1;
}

/* The code's argument slots for this call, bound as CPython binds them (keywords to their
 * parameters, defaults for what is missing), in `slots` (borrowed references); NULL when the
 * signature has *args, **kwargs or keyword-only parameters, or the call is not a valid one
 * (missing, repeated or unknown arguments): the frame path then binds it, raising CPython's
 * own TypeError. Plain positional calls use the arguments as they are. */
static PyObject *const *bind_slots(PyFunctionObject *func, PyCodeObject *code, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames, PyObject **slots) {
    Py_ssize_t count = code->co_argcount;
    if (code->co_kwonlyargcount != 0 || (code->co_flags & (CO_VARARGS | CO_VARKEYWORDS)) || nargs > count) {
        return NULL;
    }
    if (kwnames == NULL && nargs == count) {
        return args;
    }
    if (count > MAX_BOUND_SLOTS) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        slots[i] = i < nargs ? args[i] : NULL;
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        Py_ssize_t j = keyword_slot(code, PyTuple_GET_ITEM(kwnames, k));
        if (j < 0 || slots[j] != NULL) {
            return NULL;
        }
        slots[j] = args[nargs + k];
    }
    PyObject *defaults = func->func_defaults;
    Py_ssize_t first_default = count - (defaults == NULL ? 0 : PyTuple_GET_SIZE(defaults));
    for (Py_ssize_t i = 0; i < count; i++) {
        if (slots[i] == NULL) {
            if (i < first_default) {
                return NULL;
            }
            slots[i] = PyTuple_GET_ITEM(defaults, i - first_default);
        }
    }
    return slots;
}

/* The cached entry for this call when one matches (its argument slots in *bound); NULL on a
 * miss, a call the frame path must bind, or an error. */
static CacheEntry *lookup_before_frame(CompiledFunction *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames, PyObject **slots, PyObject *const **bound) {
    if (!PyFunction_Check(self->fn)) {
        return NULL;
    }
    PyFunctionObject *func = (PyFunctionObject *)self->fn;
    PyCodeObject *code = (PyCodeObject *)func->func_code;
    ExtraState *state = extra_state_get(code);
    if (state == NULL || state->skip) {
        return NULL;
    }
    *bound = bind_slots(func, code, args, nargs, kwnames, slots);
    if (*bound == NULL) {
        return NULL;
    }
    GuardInputs inputs = {
        .args = *bound,
        .nargs = code->co_argcount,
        .globals = func->func_globals,
        .builtins = func->func_builtins,
        .closure = func->func_closure,
    };
    PyObject *suspended = eval_frame_suspend(); /* guards run unhooked */
    CacheEntry *entry = cache_lookup(state, self->callback, &inputs);
    eval_frame_resume(suspended);
    return entry;
}

/* A call of a function whose code is skipped for good: the original runs, with the hook on for the
 * frames it starts, unless its recent calls started none (ExtraState.quiet_calls): a function
 * that gave up recompiling (a Mandelbrot escape loop on complex points) then costs what a plain
 * call of it costs, without turning the hook on and off around each call. */
static PyObject *call_skipped(CompiledFunction *self, ExtraState *state, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    if (state->quiet_calls >= QUIET_CALLS && ++state->unhooked_runs % QUIET_RECHECK != 0) {
        PyObject *suspended = eval_frame_suspend();
        PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
        eval_frame_resume(suspended);
        return result;
    }
    Py_ssize_t lookups = eval_frame_lookups();
    /* the call may free the state (dynamo.reset(), a new __code__): looked up again after it */
    PyCodeObject *code = (PyCodeObject *)Py_NewRef(state->code);
    PyObject *previous = eval_frame_swap_callback(self->callback);
    PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    PyObject *mine = eval_frame_swap_callback(previous);
    Py_DECREF(previous);
    Py_DECREF(mine);
    state = extra_state_get(code);
    if (state != NULL && state->skip && !state->skip_unhooked && state->recheck_after == 0) {
        state->quiet_calls = eval_frame_lookups() == lookups ? state->quiet_calls + 1 : 0;
    }
    Py_DECREF(code);
    return result;
}

static PyObject *compiled_function_vectorcall(CompiledFunction *self, PyObject *const *args,
                                              size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->callback == Py_None) {
        /* compilation off for this call (dynamo.disable, compiled graphs): no count change */
        PyObject *suspended = eval_frame_suspend();
        PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
        eval_frame_resume(suspended);
        return result;
    }
    if (compat_trace_installed(PyThreadState_GET())) {
        /* a debugger or coverage traces this thread: the original code runs, every line of it */
        return PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    }
    if (PyFunction_Check(self->fn)) {
        ExtraState *state = extra_state_get((PyCodeObject *)PyFunction_GET_CODE(self->fn));
        if (state != NULL && state->skip && state->skip_unhooked && !cache_skipped_call(state)) {
            /* every version dropped by its timed turns: plain Python, as the turns timed it */
            PyObject *suspended = eval_frame_suspend();
            PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
            eval_frame_resume(suspended);
            return result;
        }
        if (state != NULL && state->skip && !state->skip_unhooked && state->recheck_after == 0) {
            return call_skipped(self, state, args, nargsf, kwnames);
        }
    }
    PyObject *slots[MAX_BOUND_SLOTS];
    PyObject *const *bound = NULL;
    CacheEntry *entry = lookup_before_frame(self, args, nargs, kwnames, slots, &bound);
    if (entry == NULL && PyErr_Occurred()) {
        return NULL;
    }
    PyFunctionObject *func = (PyFunctionObject *)self->fn;
    if (entry != NULL && entry->probe > 0 && !entry->in_place) {
        entry->hits--; /* a timed turn: the frame hook takes it (and checks the guards again) */
        Py_DECREF(entry);
        entry = NULL;
    }
    if (entry != NULL && entry->in_place) {
        /* the original code is the entry's: a plain call of the function, its guards checked */
        int unhooked = entry->unhooked;
        Py_DECREF(entry);
        PyObject *previous = unhooked ? eval_frame_suspend() : eval_frame_swap_callback(self->callback);
        if (!unhooked) {
            eval_frame_run_next_as_is((PyCodeObject *)func->func_code);
        }
        PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
        if (unhooked) {
            eval_frame_resume(previous);
            return result;
        }
        eval_frame_run_next_as_is(NULL);
        PyObject *mine = eval_frame_swap_callback(previous);
        Py_DECREF(previous);
        Py_DECREF(mine);
        return result;
    }
    if (entry != NULL && entry->unhooked) {
        /* code that starts no frame to compile: no need to turn the hook on around it */
        PyObject *result = cache_entry_call(entry, (PyObject **)bound, ((PyCodeObject *)func->func_code)->co_argcount,
                                            func->func_globals, func->func_closure, 0);
        Py_DECREF(entry);
        return result;
    }
    PyObject *previous = eval_frame_swap_callback(self->callback);
    PyObject *result = NULL;
    if (entry != NULL) {
        /* the guards passed on these slots: the transformed code runs straight away, with the
         * hook on for the frames it starts (its own is marked skip) */
        result = cache_entry_call(entry, (PyObject **)bound, ((PyCodeObject *)func->func_code)->co_argcount,
                                  func->func_globals, func->func_closure, 0);
        Py_DECREF(entry);
    }
    else {
        /* the frame hook binds the arguments, checks again and compiles on a miss */
        result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    }
    PyObject *mine = eval_frame_swap_callback(previous);
    Py_DECREF(previous);
    Py_DECREF(mine);
    return result;
}

static PyObject *compiled_function_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fn", "callback", NULL};
    PyObject *fn, *callback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:CompiledFunction", kwlist, &fn, &callback)) {
        return NULL;
    }
    if (!PyCallable_Check(fn) || (callback != Py_None && !PyCallable_Check(callback))) {
        PyErr_SetString(PyExc_TypeError, "CompiledFunction(fn, callback) takes a callable and a callable or None");
        return NULL;
    }
    CompiledFunction *self = (CompiledFunction *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->fn = Py_NewRef(fn);
    self->callback = Py_NewRef(callback);
    self->vectorcall = (vectorcallfunc)compiled_function_vectorcall;
    return (PyObject *)self;
}

static int compiled_function_traverse(CompiledFunction *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->callback);
    Py_VISIT(self->dict);
    return 0;
}

static int compiled_function_clear(CompiledFunction *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->dict);
    return 0;
}

static void compiled_function_dealloc(CompiledFunction *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    compiled_function_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Methods: a compiled function stored on a class binds like a plain function. */
static PyObject *compiled_function_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

/* Pickling is decided in Python (by reference where importable, else by value of the code): the
 * module registers the function that answers __reduce__ with set_compiled_function_reducer. */
static PyObject *compiled_function_reducer = NULL;

PyObject *compiled_function_set_reducer(PyObject *reducer) {
    if (reducer != Py_None && !PyCallable_Check(reducer)) {
        PyErr_SetString(PyExc_TypeError, "set_compiled_function_reducer takes a callable or None");
        return NULL;
    }
    Py_XSETREF(compiled_function_reducer, reducer == Py_None ? NULL : Py_NewRef(reducer));
    Py_RETURN_NONE;
}

static PyObject *compiled_function_reduce(PyObject *self, PyObject *unused) {
    if (compiled_function_reducer == NULL) {
        PyErr_Format(PyExc_TypeError, "cannot pickle %R: no reducer registered (import dynamo first)", self);
        return NULL;
    }
    return PyObject_CallOneArg(compiled_function_reducer, self);
}

/* Like a plain function, a compiled one is its own copy (copy.copy and copy.deepcopy). */
static PyObject *compiled_function_copy(PyObject *self, PyObject *unused) {
    return Py_NewRef(self);
}

static PyMethodDef compiled_function_methods[] = {
    {"__reduce__", compiled_function_reduce, METH_NOARGS, "pickling: see dynamo.serialization"},
    {"__copy__", compiled_function_copy, METH_NOARGS, "a compiled function is its own copy"},
    {"__deepcopy__", compiled_function_copy, METH_O, "a compiled function is its own copy"},
    {NULL},
};

static PyObject *compiled_function_repr(CompiledFunction *self) {
    return PyUnicode_FromFormat("<compiled %R>", self->fn);
}

static PyMemberDef compiled_function_members[] = {
    {"_dynamo_fn", T_OBJECT, offsetof(CompiledFunction, fn), READONLY, "the original callable"},
    {"_dynamo_callback", T_OBJECT, offsetof(CompiledFunction, callback), READONLY,
     "the compile callback"},
    {NULL},
};

static PyGetSetDef compiled_function_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict},
    {NULL},
};

PyTypeObject CompiledFunction_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.CompiledFunction",
    .tp_basicsize = sizeof(CompiledFunction),
    .tp_dealloc = (destructor)compiled_function_dealloc,
    .tp_vectorcall_offset = offsetof(CompiledFunction, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)compiled_function_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "CompiledFunction(fn, callback): calls fn with compilation on (callback None: off).",
    .tp_traverse = (traverseproc)compiled_function_traverse,
    .tp_clear = (inquiry)compiled_function_clear,
    .tp_weaklistoffset = offsetof(CompiledFunction, weakrefs),
    .tp_members = compiled_function_members,
    .tp_methods = compiled_function_methods,
    .tp_getset = compiled_function_getset,
    .tp_descr_get = compiled_function_descr_get,
    .tp_dictoffset = offsetof(CompiledFunction, dict),
    .tp_new = compiled_function_new,
};
