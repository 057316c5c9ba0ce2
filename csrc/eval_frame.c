/* The PEP 523 hook: installed only while some thread has a callback, it runs cached
 * transformed code when a guard passes and asks the Python callback on a miss. */
#include "dynamo_c.h"

#include <fenv.h>
#include <structmember.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <time.h>
#endif

/* The callback of this thread (strong reference), NULL when compilation is off here. It is
 * also NULL while the callback itself or a guard runs, so that their frames are not hooked. */
#if defined(__GNUC__) && defined(__ELF__)
/* initial-exec: every frame reads it, and this model makes that a plain thread-pointer-relative
 * load rather than a __tls_get_addr call (8 bytes of the static TLS space that the C library
 * keeps for modules loaded after start-up) */
#define DYNAMO_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define DYNAMO_TLS_MODEL
#endif
static _Thread_local PyObject *tls_callback DYNAMO_TLS_MODEL = NULL;
static Py_ssize_t threads_with_callback = 0;
/* A code object whose next frame on this thread runs as it is, without a cache lookup: a
 * compiled function's call checked the guards already (eval_frame_run_next_as_is). */
static _Thread_local PyCodeObject *tls_checked_code DYNAMO_TLS_MODEL = NULL;
static _PyFrameEvalFunction previous_eval_frame = NULL;
static _Thread_local Py_ssize_t tls_lookups DYNAMO_TLS_MODEL = 0; /* eval_frame_lookups */
/* Nonzero while a compiled turn of a timed entry runs on this thread: the resume functions it
 * calls (entries part_of_caller) run their compiled code and take no turns of their own, so that
 * the turn times what the version costs on the whole, as the original turn times the whole
 * function run plain. Other functions it calls take their turns, judged apart as when called
 * from anywhere else (a main() whose one call runs the program would otherwise never let them). */
static _Thread_local int tls_compiled_turn DYNAMO_TLS_MODEL = 0;

/* Argument references a call hands over to the frame it starts (eval_frame_call): the caller
 * owns them until that frame holds its own copies, and then lets go, so that while the callee
 * runs its frame is the only holder, as in plain Python (a caller that kept them would keep a
 * `del`eted object alive: weakref callbacks, __del__, ndarray.resize's reference check). */
typedef struct {
    PyObject **items; /* owned references; emptied (NULL) once released */
    Py_ssize_t count;
    PyCodeObject *code; /* the code whose frame takes them over */
} MovedArgs;
static _Thread_local MovedArgs *tls_moved DYNAMO_TLS_MODEL = NULL;
PyObject *dynamo_skip_marker = NULL;
PyObject *dynamo_skip_unhooked_marker = NULL;
PyObject *dynamo_cache_full_marker = NULL;

static PyObject *dynamo_eval_frame(PyThreadState *tstate, DynamoFrame *frame, int throwflag);

static PyObject *eval_default(PyThreadState *tstate, DynamoFrame *frame, int throwflag) {
    if (previous_eval_frame != NULL) {
        return previous_eval_frame(tstate, frame, throwflag);
    }
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

PyObject *eval_frame_callback(void) { return tls_callback; }

static void release_moved(MovedArgs *moved) {
    Py_ssize_t count = moved->count;
    moved->count = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_CLEAR(moved->items[i]);
    }
}

/* At the start of a frame: the references handed over to it are released when this is the
 * frame they were meant for (its argument slots hold the same objects, each with a reference
 * of its own, so that no object can die here and no code runs). */
static void take_over_moved(DynamoFrame *frame) {
    MovedArgs *moved = tls_moved;
    tls_moved = NULL; /* the first frame started after the call is the callee's, or none is */
    if (compat_frame_code(frame) != moved->code || moved->count > code_argument_slots(moved->code)) {
        return;
    }
    for (Py_ssize_t i = 0; i < moved->count; i++) {
        if (frame->localsplus[i] != moved->items[i]) {
            return;
        }
    }
    release_moved(moved);
}

PyObject *eval_frame_call(PyObject *fn, PyObject **args, Py_ssize_t nargs, int move) {
    if (!move || !PyFunction_Check(fn)) {
        PyObject *result = PyObject_Vectorcall(fn, args, nargs, NULL);
        if (move) {
            MovedArgs moved = {args, nargs, NULL};
            release_moved(&moved);
        }
        return result;
    }
    MovedArgs moved = {args, nargs, (PyCodeObject *)PyFunction_GET_CODE(fn)};
    tls_moved = &moved;
    PyObject *result = PyObject_Vectorcall(fn, args, nargs, NULL);
    /* not taken over when no frame started (a generator function's call, an error binding
     * the arguments, a hook installed over this one): released now */
    tls_moved = NULL;
    release_moved(&moved);
    return result;
}

void eval_frame_run_next_as_is(PyCodeObject *code) { tls_checked_code = code; }

Py_ssize_t eval_frame_lookups(void) { return tls_lookups; }

PyObject *eval_frame_suspend(void) {
    PyObject *callback = tls_callback;
    tls_callback = NULL;
    return callback;
}

void eval_frame_resume(PyObject *suspended) {
    if (tls_callback != NULL) {
        /* a callback set while suspended (by the compile callback or a guard) and left set
         * would leak and keep the hook installed for good: drop it as set_eval_frame(None) */
        Py_DECREF(eval_frame_swap_callback(NULL));
    }
    tls_callback = suspended;
}

int eval_frame_hook_installed(void) { return compat_get_eval_frame() == dynamo_eval_frame; }

PyObject *eval_frame_swap_callback(PyObject *callback) {
    if (callback == Py_None) {
        callback = NULL;
    }
    PyObject *previous = tls_callback;
    if (previous == NULL && callback != NULL && threads_with_callback++ == 0) {
        _PyFrameEvalFunction current = compat_get_eval_frame();
        if (current != dynamo_eval_frame) {
            /* chain to whoever was there (a debugger, a profiler) instead of replacing them */
            previous_eval_frame = current == _PyEval_EvalFrameDefault ? NULL : current;
            compat_set_eval_frame(dynamo_eval_frame);
        }
    }
    else if (previous != NULL && callback == NULL && --threads_with_callback == 0) {
        if (compat_get_eval_frame() == dynamo_eval_frame) {
            compat_set_eval_frame(previous_eval_frame ? previous_eval_frame : _PyEval_EvalFrameDefault);
        }
        previous_eval_frame = NULL;
    }
    tls_callback = Py_XNewRef(callback);
    return previous != NULL ? previous : Py_NewRef(Py_None);
}

/* ---- FrameView: what the callback sees of a frame that has not started yet ------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *f_code, *f_func, *f_globals, *f_builtins, *f_closure, *f_args, *f_locals;
} FrameView;

/* A callback may keep views, and a view reaches the globals and closure that may hold the
 * keeper: views take part in garbage collection so that such cycles are freed. */
static int frame_view_traverse(FrameView *self, visitproc visit, void *arg) {
    Py_VISIT(self->f_code);
    Py_VISIT(self->f_func);
    Py_VISIT(self->f_globals);
    Py_VISIT(self->f_builtins);
    Py_VISIT(self->f_closure);
    Py_VISIT(self->f_args);
    Py_VISIT(self->f_locals);
    return 0;
}

static int frame_view_clear(FrameView *self) {
    Py_CLEAR(self->f_code);
    Py_CLEAR(self->f_func);
    Py_CLEAR(self->f_globals);
    Py_CLEAR(self->f_builtins);
    Py_CLEAR(self->f_closure);
    Py_CLEAR(self->f_args);
    Py_CLEAR(self->f_locals);
    return 0;
}

static void frame_view_dealloc(FrameView *self) {
    PyObject_GC_UnTrack(self);
    frame_view_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef frame_view_members[] = {
    {"f_code", T_OBJECT, offsetof(FrameView, f_code), READONLY, "the original code object"},
    {"f_func", T_OBJECT, offsetof(FrameView, f_func), READONLY, "the function being called"},
    {"f_globals", T_OBJECT, offsetof(FrameView, f_globals), READONLY, "globals of the frame"},
    {"f_builtins", T_OBJECT, offsetof(FrameView, f_builtins), READONLY, "builtins of the frame"},
    {"f_closure", T_OBJECT, offsetof(FrameView, f_closure), READONLY, "tuple of cells, or None"},
    {"f_args", T_OBJECT, offsetof(FrameView, f_args), READONLY,
     "the argument slots in order: positional, keyword-only, *args tuple, **kwargs dict"},
    {"f_locals", T_OBJECT, offsetof(FrameView, f_locals), READONLY,
     "arguments and free variables by name (cell contents for free variables)"},
    {NULL},
};

PyTypeObject FrameView_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.FrameView",
    .tp_basicsize = sizeof(FrameView),
    .tp_dealloc = (destructor)frame_view_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A frame about to run, as the compile callback sees it.",
    .tp_traverse = (traverseproc)frame_view_traverse,
    .tp_clear = (inquiry)frame_view_clear,
    .tp_members = frame_view_members,
};

static PyObject *frame_view_new(PyCodeObject *code, PyFunctionObject *func, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *globals, PyObject *builtins) {
    FrameView *view = PyObject_GC_New(FrameView, &FrameView_Type);
    if (view == NULL) {
        return NULL;
    }
    view->f_code = Py_NewRef(code);
    view->f_func = Py_NewRef(func);
    view->f_globals = Py_NewRef(globals);
    view->f_builtins = Py_NewRef(builtins);
    view->f_closure = Py_NewRef(func->func_closure ? func->func_closure : Py_None);
    view->f_args = PyTuple_New(nargs);
    view->f_locals = PyDict_New();
    if (view->f_args == NULL || view->f_locals == NULL) {
        Py_DECREF(view);
        return NULL;
    }
    PyObject *names = compat_localsplus_names(code);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *value = args[i] ? args[i] : Py_None;
        PyTuple_SET_ITEM(view->f_args, i, Py_NewRef(value));
        if (args[i] && PyDict_SetItem(view->f_locals, PyTuple_GET_ITEM(names, i), value) < 0) {
            Py_DECREF(view);
            return NULL;
        }
    }
    Py_ssize_t nnames = PyTuple_GET_SIZE(names);
    for (int i = 0; func->func_closure && i < code->co_nfreevars; i++) {
        PyObject *value = PyCell_GET(PyTuple_GET_ITEM(func->func_closure, i));
        PyObject *name = PyTuple_GET_ITEM(names, nnames - code->co_nfreevars + i);
        if (value && PyDict_SetItem(view->f_locals, name, value) < 0) {
            Py_DECREF(view);
            return NULL;
        }
    }
    PyObject_GC_Track(view);
    return (PyObject *)view;
}

/* ---- asking the callback ---------------------------------------------------------------- */

CacheEntry *eval_frame_consult_callback(PyObject *callback, PyCodeObject *code, PyObject *view) {
    /* Compiling is not the program: the floating-point exception flags it raises (an ordered
     * comparison with a NaN while deciding a guard sets "invalid") must not reach the frame. A
     * NumPy object ufunc whose Python function is compiled on its first call inside the loop
     * would otherwise warn "invalid value encountered" where plain Python does not. */
    fexcept_t flags_before;
    int saved_flags = fegetexceptflag(&flags_before, FE_ALL_EXCEPT) == 0;
    PyObject *answer = PyObject_CallOneArg(callback, view);
    if (saved_flags) {
        fesetexceptflag(&flags_before, FE_ALL_EXCEPT);
    }
    if (answer == NULL) {
        return NULL;
    }
    CacheEntry *entry = NULL;
    if (answer == dynamo_skip_marker || answer == dynamo_skip_unhooked_marker) {
        ExtraState *state = extra_state_get_or_create(code);
        if (state != NULL) {
            state->skip = 1;
            /* for good either way (recheck_after 0); unhooked: the frames it starts run plain too */
            state->skip_unhooked = answer == dynamo_skip_unhooked_marker;
            state->recheck_after = 0; /* for good */
            state->quiet_calls = 0;
        }
    }
    else if (answer == dynamo_cache_full_marker) {
        ExtraState *state = extra_state_get_or_create(code);
        if (state != NULL) {
            Py_XSETREF(state->full_for, Py_NewRef(callback));
        }
    }
    else if (answer != Py_None) {
        /* (guard, code), (guard, code, unhooked) or (guard, code, unhooked, probe[, recheck[,
         * part_of_caller]]): a true third item says that the code starts no frame the hook must
         * see, so that a call of it need not turn the hook on; the fourth, how many hits take timed
         * turns with the original (negative: deferred until retime() or `recheck` hits); the fifth,
         * after how many calls a version so dropped is timed again; a true sixth, that the code
         * is a resume function, timed with its frame */
        Py_ssize_t size = PyTuple_Check(answer) ? PyTuple_GET_SIZE(answer) : 0;
        int unhooked = size >= 3 ? PyObject_IsTrue(PyTuple_GET_ITEM(answer, 2)) : 0;
        long probe = size >= 4 ? PyLong_AsLong(PyTuple_GET_ITEM(answer, 3)) : 0;
        Py_ssize_t recheck = size >= 5 && !PyErr_Occurred() ? PyLong_AsSsize_t(PyTuple_GET_ITEM(answer, 4)) : 0;
        int part_of_caller = size == 6 && !PyErr_Occurred() ? PyObject_IsTrue(PyTuple_GET_ITEM(answer, 5)) : 0;
        if (size < 2 || size > 6) {
            PyErr_Format(PyExc_TypeError,
                         "compile callback must return None, SKIP, SKIP_UNHOOKED, CACHE_FULL, (guard, code), "
                         "(guard, code, unhooked) or (guard, code, unhooked, probe[, recheck[, part_of_caller]]), not %.100s",
                         Py_TYPE(answer)->tp_name);
        }
        else if (unhooked >= 0 && part_of_caller >= 0 && !PyErr_Occurred()) {
            entry = cache_insert(code, callback, PyTuple_GET_ITEM(answer, 0), PyTuple_GET_ITEM(answer, 1),
                                 unhooked, probe < -1000000 ? -1000000 : (probe > 1000000 ? 1000000 : (int)probe),
                                 recheck < 0 ? 0 : recheck, part_of_caller);
            Py_XINCREF(entry);
        }
    }
    Py_DECREF(answer);
    return entry;
}

/* ---- the hook ------------------------------------------------------------------------------ */

/* Tests time the turns with a clock of their own (set_turn_timer): deterministic drops. */
static PyObject *turn_timer = NULL;

void eval_frame_set_turn_timer(PyObject *timer) {
    Py_XSETREF(turn_timer, timer == Py_None ? NULL : Py_NewRef(timer));
}

static double monotonic_seconds(void) {
    if (turn_timer != NULL) { /* called with no exception set: before a turn, after one that returned */
        PyObject *suspended = eval_frame_suspend(); /* the clock is not the user's code */
        PyObject *now = PyObject_CallNoArgs(turn_timer);
        eval_frame_resume(suspended);
        double seconds = now != NULL ? PyFloat_AsDouble(now) : 0.0;
        Py_XDECREF(now);
        if (PyErr_Occurred()) {
            PyErr_WriteUnraisable(turn_timer);
        }
        return seconds;
    }
#ifdef _WIN32
    LARGE_INTEGER counter, frequency;
    QueryPerformanceCounter(&counter);
    QueryPerformanceFrequency(&frequency);
    return (double)counter.QuadPart / (double)frequency.QuadPart;
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
#endif
}

/* Whether every entry of the code runs the original code (dropped, or the original itself). */
static int all_run_the_original(ExtraState *state) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(state->entries); i++) {
        if (!((CacheEntry *)PyList_GET_ITEM(state->entries, i))->in_place) {
            return 0;
        }
    }
    return 1;
}

/* When `dropped` was just dropped after its turns: the versions not hit since it was made or last
 * rearmed (made for values that did not come again, as a float specialized once; some still in
 * their turns) are dropped with it, so that the code can run as written without checking their
 * guards first. They are timed again with it at its next re-measure. */
static void retire_never_hit(ExtraState *state, CacheEntry *dropped) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(state->entries); i++) {
        CacheEntry *other = (CacheEntry *)PyList_GET_ITEM(state->entries, i);
        if (other != dropped && other->owner == dropped->owner && other->last_hit <= dropped->armed_at &&
            !other->in_place) {
            other->dropped = 1;
            other->in_place = 1;
            other->unhooked = 1;
            other->probe = 0;
            other->recheck_at = 0; /* rearmed with the code's skip lifted, or never */
        }
    }
}

/* One timed hit of a probed entry: the original code (this frame as it is, the hook off for
 * the frames it starts) or the compiled code, in turns; the compiled code first, whose
 * first call may compile its resume functions (the fastest call of each is compared). */
static PyObject *probe_turn(PyThreadState *tstate, DynamoFrame *frame, int throwflag, CacheEntry *entry,
                            GuardInputs *inputs, PyCodeObject *code) {
    int original_turn = entry->probe-- % 2 == 1;
    Py_INCREF(code); /* its state is looked at after the call */
    double start = monotonic_seconds();
    PyObject *result;
    if (original_turn) {
        /* as plain Python runs it, the hook off: the price to beat, and no frame it starts is
         * compiled for a version that may never run again (once dropped, the hook is on) */
        PyObject *suspended = eval_frame_suspend();
        result = eval_default(tstate, frame, throwflag);
        eval_frame_resume(suspended);
    }
    else {
        /* the compiled code's price includes its guards, checked before every hit: once more
         * here, timed (the original, once dropped for good, checks none) */
        Py_ssize_t failed_at;
        PyObject *suspended = eval_frame_suspend(); /* guards run unhooked, as in the lookup */
        if (guard_program_run(entry->guard, inputs, &failed_at) < 0) {
            PyErr_Clear(); /* the lookup just ran the same checks without raising */
        }
        eval_frame_resume(suspended);
        int outer_turn = tls_compiled_turn;
        tls_compiled_turn = 1;
        result = cache_entry_call(entry, frame->localsplus, inputs->nargs, inputs->globals, inputs->closure, 1);
        tls_compiled_turn = outer_turn;
        compat_dispose_unstarted_frame(tstate, frame);
    }
    if (result != NULL) {
        cache_entry_probed(entry, original_turn, monotonic_seconds() - start);
        ExtraState *state = entry->dropped ? extra_state_get(code) : NULL;
        if (state != NULL) {
            retire_never_hit(state, entry);
        }
        if (state != NULL && all_run_the_original(state)) {
            state->skip = 1; /* no guards to check first: the code runs as written, as fast */
            state->skip_unhooked = 1;
            state->skipped_calls = 0;
            state->recheck_after = entry->recheck; /* then timed again: its inputs may have grown */
        }
    }
    Py_DECREF(code);
    Py_DECREF(entry);
    return result;
}

#define UNCOMPILABLE_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

static PyObject *dynamo_eval_frame(PyThreadState *tstate, DynamoFrame *frame, int throwflag) {
    if (tls_moved != NULL) {
        take_over_moved(frame);
    }
    PyObject *callback = tls_callback;
    if (callback == NULL || throwflag || compat_thread_is_tracing(tstate) || compat_trace_installed(tstate) ||
        compat_frame_owned_by_generator(frame)) {
        return eval_default(tstate, frame, throwflag);
    }
    PyCodeObject *code = compat_frame_code(frame);
    if (code == tls_checked_code) {
        tls_checked_code = NULL;
        return eval_default(tstate, frame, throwflag);
    }
    if (!(code->co_flags & CO_OPTIMIZED) || (code->co_flags & UNCOMPILABLE_FLAGS) ||
        !compat_frame_is_replaceable(frame)) {
        return eval_default(tstate, frame, throwflag);
    }
    ExtraState *state = extra_state_get(code);
    if (state != NULL && state->skip && !cache_skipped_call(state)) {
        if (!state->skip_unhooked) {
            return eval_default(tstate, frame, throwflag);
        }
        PyObject *suspended = eval_frame_suspend(); /* every version dropped: plain Python, callees too */
        PyObject *result = eval_default(tstate, frame, throwflag);
        eval_frame_resume(suspended);
        return result;
    }
    tls_lookups++;
    PyFunctionObject *func = compat_frame_function(frame);
    GuardInputs inputs = {
        .args = frame->localsplus,
        .nargs = code_argument_slots(code),
        .globals = frame->f_globals,
        .builtins = frame->f_builtins,
        .closure = func->func_closure,
    };

    eval_frame_suspend(); /* guards and the callback run unhooked; `callback` keeps the reference */
    CacheEntry *entry = state != NULL ? cache_lookup(state, callback, &inputs) : NULL;
    /* a miss of a full cache runs the original: asking the callback would only say so again */
    if (entry == NULL && !PyErr_Occurred() && (state == NULL || state->full_for != callback)) {
        PyObject *view = frame_view_new(code, func, inputs.args, inputs.nargs, inputs.globals,
                                        inputs.builtins);
        if (view != NULL) {
            entry = eval_frame_consult_callback(callback, code, view);
            Py_DECREF(view);
        }
    }
    eval_frame_resume(callback);

    if (entry == NULL) {
        if (PyErr_Occurred()) {
            compat_dispose_unstarted_frame(tstate, frame);
            return NULL;
        }
        ExtraState *answered = extra_state_get(code);
        if (answered != NULL && answered->skip && answered->skip_unhooked) {
            /* SKIP_UNHOOKED just now: this call too runs as its later calls will, callees plain */
            PyObject *suspended = eval_frame_suspend();
            PyObject *result = eval_default(tstate, frame, throwflag);
            eval_frame_resume(suspended);
            return result;
        }
        return eval_default(tstate, frame, throwflag);
    }
    if (entry->probe > 0 && !entry->in_place && !(tls_compiled_turn && entry->part_of_caller)) {
        return probe_turn(tstate, frame, throwflag, entry, &inputs, code);
    }
    if (entry->in_place) {
        /* the original code is what runs: this very frame, so no arguments are copied or held */
        int unhooked = entry->unhooked;
        Py_DECREF(entry);
        if (!unhooked) {
            return eval_default(tstate, frame, throwflag);
        }
        PyObject *suspended = eval_frame_suspend();
        PyObject *result = eval_default(tstate, frame, throwflag);
        eval_frame_resume(suspended);
        return result;
    }
    /* the frame's argument references move to the transformed code's frame: this frame, which
     * never runs, must not keep them alive meanwhile (its slots are emptied) */
    PyObject *result = cache_entry_call(entry, frame->localsplus, inputs.nargs, inputs.globals, inputs.closure, 1);
    Py_DECREF(entry);
    compat_dispose_unstarted_frame(tstate, frame);
    return result;
}
