/* CompiledFunction: what compile(fn) returns. Its call turns the hook on for the duration and,
 * for plain positional calls, checks the cache before any frame exists (the fast path). */
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

/* Whether a vectorcall's arguments are exactly the code's argument slots. */
static inline int call_fills_slots(PyCodeObject *code, Py_ssize_t nargs, PyObject *kwnames) {
    return kwnames == NULL && nargs == code->co_argcount && code->co_kwonlyargcount == 0 &&
           !(code->co_flags & (CO_VARARGS | CO_VARKEYWORDS));
}

/* The cached entry for this call when one matches; NULL on a miss or an error. */
static CacheEntry *lookup_before_frame(CompiledFunction *self, PyObject *const *args,
                                       Py_ssize_t nargs, PyObject *kwnames) {
    if (!PyFunction_Check(self->fn)) {
        return NULL;
    }
    PyFunctionObject *func = (PyFunctionObject *)self->fn;
    PyCodeObject *code = (PyCodeObject *)func->func_code;
    if (!call_fills_slots(code, nargs, kwnames)) {
        return NULL;
    }
    ExtraState *state = extra_state_get(code);
    if (state == NULL || state->skip) {
        return NULL;
    }
    GuardInputs inputs = {
        .args = args,
        .nargs = nargs,
        .globals = func->func_globals,
        .builtins = func->func_builtins,
        .closure = func->func_closure,
    };
    PyObject *suspended = eval_frame_suspend(); /* guards run unhooked */
    CacheEntry *entry = cache_lookup(state, self->callback, &inputs);
    eval_frame_resume(suspended);
    return entry;
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
    CacheEntry *entry = lookup_before_frame(self, args, nargs, kwnames);
    if (entry == NULL && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *previous = eval_frame_swap_callback(self->callback);
    PyObject *result = NULL;
    if (entry != NULL) {
        PyFunctionObject *func = (PyFunctionObject *)self->fn;
        result = cache_entry_call(entry, args, nargs, func->func_globals, func->func_closure);
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
    .tp_getset = compiled_function_getset,
    .tp_descr_get = compiled_function_descr_get,
    .tp_dictoffset = offsetof(CompiledFunction, dict),
    .tp_new = compiled_function_new,
};
