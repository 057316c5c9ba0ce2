/* Declarations shared by the files of dynamo._C: the guard program, the per-code cache,
 * the eval-frame hook and the compiled-function wrapper. Knows nothing of numpy or graphs. */
#ifndef DYNAMO_C_H
#define DYNAMO_C_H

#include "cpython_compat.h"

/* ---- guards.c: a small program of checks on a frame's arguments ------------------------ */

extern PyTypeObject GuardProgram_Type;

/* Where a guard program reads its roots: argument slots, globals, builtins, closure. */
typedef struct {
    PyObject *const *args;
    Py_ssize_t nargs;
    PyObject *globals;
    PyObject *builtins;
    PyObject *closure; /* tuple of cells or NULL */
} GuardInputs;

/* 1: every check passed, 0: a check failed, -1: an exception was raised. */
int guard_program_run(PyObject *program, const GuardInputs *inputs, Py_ssize_t *failed_at);
/* class_shape.c: whether value (of_type: type(value)) is a class whose MRO has `shape` (a tuple:
 * a class by identity, or (name, qualname, module, attribute names, their types) for one made by a
 * call). 1 yes, 0 no, -1 error. */
int class_shape_matches(PyObject *value, int of_type, PyObject *shape);

/* ---- cache.c: the per-code-object state kept in co_extra ------------------------------- */

typedef struct CacheEntry {
    PyObject_HEAD
    PyObject *guard;          /* a GuardProgram */
    PyObject *code;           /* the transformed code: flat signature, same free variables */
    PyObject *owner;          /* the callback that compiled it; entries serve only their owner */
    PyObject *function;       /* function object for `code`, reused while globals/closure match */
    Py_ssize_t hits;
    int unhooked;             /* `code` starts no frame the hook must see: it runs with the hook off */
    int in_place;             /* `code` is the original: the frame runs as it is, no new frame or function */
    /* Timed turns: while `probe` > 0, hits alternate between `code` and the original, each call
     * timed; once done, an entry whose fastest call was slower than the original's is dropped
     * (`dropped`, and `in_place` from then on: hits run the frame as it is). */
    int probe;
    int dropped;
    double best_compiled;     /* seconds of the fastest timed call of each (0: none yet) */
    double best_original;
    int turns;                /* the timed turns it started with: a re-measure takes as many */
    int compiled_unhooked;    /* `unhooked` of the compiled code, kept while dropped */
    /* a resume function's version: while a compiled turn of its frame (or of any entry) runs, it
     * runs compiled and takes no turn, so that the turn times the frame's version as a whole */
    int part_of_caller;
    /* A dropped version is timed again after `recheck` more calls (0: never), four times later at
     * each re-measure: inputs that grow (new shapes under dynamic sizes) may make it pay. */
    Py_ssize_t recheck;
    /* hits at which a dropped entry is timed again, or a deferred one first timed (0: neither) */
    Py_ssize_t recheck_at;
    /* Stamps from the code's count of hits (ExtraState.hit_serial): of this entry's last hit, and
     * of when it was made or last rearmed. A version not hit since another was armed is stale. */
    Py_ssize_t last_hit;
    Py_ssize_t armed_at;
} CacheEntry;

extern PyTypeObject CacheEntry_Type;

typedef struct ExtraState {
    struct ExtraState *prev, *next; /* every live state, so that reset() can find them */
    PyCodeObject *code;             /* borrowed: the state lives inside the code object */
    int skip;                       /* never intercept frames of this code */
    PyObject *full_for;             /* a callback whose cache for this code is full: its misses
                                       run the original code without asking it (strong ref) */
    PyObject *entries;              /* list of CacheEntry, most recently used first */
    /* skip set because every entry was dropped by timed turns: after `recheck_after` calls run
     * as written (`skipped_calls` counts them) the dropped entries are timed again */
    Py_ssize_t recheck_after;
    Py_ssize_t skipped_calls;
    Py_ssize_t hit_serial;          /* hits of any of its entries so far: stamps for staleness */
    int skip_unhooked;              /* skip set for drops: its frames run with the hook off too, as
                                       the original's turns were timed (plain Python, callees included) */
    /* A code skipped for good (it recompiled for new values, or cannot be compiled) that a
     * compiled function calls: the hook is on around such a call only so that the frames it
     * starts are compiled. `quiet_calls` counts its calls in a row that started none the hook
     * would compile; past QUIET_CALLS its calls run with the hook off, all but one in
     * QUIET_RECHECK (`unhooked_runs` counts them), which looks again. */
    Py_ssize_t quiet_calls;
    Py_ssize_t unhooked_runs;
} ExtraState;

int cache_module_init(void);
ExtraState *extra_state_get(PyCodeObject *code);
ExtraState *extra_state_get_or_create(PyCodeObject *code);
void cache_reset_all(void);

/* Number of argument slots of a code object: positional, keyword-only, *args, **kwargs. */
static inline int code_argument_slots(PyCodeObject *code) {
    return code->co_argcount + code->co_kwonlyargcount + !!(code->co_flags & CO_VARARGS) +
           !!(code->co_flags & CO_VARKEYWORDS);
}

/* New reference to the entry whose guards pass, or NULL (with an exception set on error). */
CacheEntry *cache_lookup(ExtraState *state, PyObject *owner, const GuardInputs *inputs);
/* New entry at the front of the code's cache; borrowed result, NULL on error. */
CacheEntry *cache_insert(PyCodeObject *code, PyObject *owner, PyObject *guard, PyObject *transformed,
                         int unhooked, int probe, Py_ssize_t recheck, int part_of_caller);
/* Called after a timed turn of a probed entry: stops probing early when the compiled code is
 * clearly faster, and drops the entry once probing ends with it slower. */
void cache_entry_probed(CacheEntry *entry, int original_turn, double seconds);
/* Times a dropped entry again: it takes its turns with the original from its next hit. */
void cache_entry_rearm(CacheEntry *entry, Py_ssize_t now);
/* A call of a code skipped because all its entries were dropped: 1 when it is time to measure
 * them again (the skip is lifted and the entries rearmed), else 0. */
int cache_skipped_call(ExtraState *state);
/* Calls the entry's transformed code with the argument slots (with the hook off for an
 * unhooked entry); new reference. move: the slots' references are handed over (see
 * eval_frame_call) and the slots are emptied. */
PyObject *cache_entry_call(CacheEntry *entry, PyObject **args, Py_ssize_t nargs,
                           PyObject *globals, PyObject *closure, int move);

/* ---- eval_frame.c: the PEP 523 hook and the per-thread callback ------------------------ */

extern PyObject *dynamo_skip_marker; /* the callback's answer "never intercept this code" */
/* its answer "never intercept this code, nor the frames it starts" */
extern PyObject *dynamo_skip_unhooked_marker;
extern PyObject *dynamo_cache_full_marker; /* its answer "run the original on every miss of mine" */
extern PyTypeObject FrameView_Type;

/* Borrowed; NULL when compilation is off on this thread. */
PyObject *eval_frame_callback(void);
/* Sets this thread's callback (NULL or None: off), installing the hook while any thread has
 * one. Returns the previous callback as a new reference (None when there was none). */
PyObject *eval_frame_swap_callback(PyObject *callback);
int eval_frame_hook_installed(void);
/* Turns this thread's hook off without giving up the callback (for guards and the callback
 * itself); resume() puts back what suspend() returned. */
PyObject *eval_frame_suspend(void);
/* A clock for timed turns (None: the monotonic clock), so that tests can decide what is slower. */
void eval_frame_set_turn_timer(PyObject *timer);
void eval_frame_resume(PyObject *suspended);
/* How many frames this thread's hook has looked up in a cache so far (those of codes it does not
 * skip): a call that changes it started a frame that may be compiled. */
Py_ssize_t eval_frame_lookups(void);
/* The next frame of `code` on this thread runs as it is, without a cache lookup (set right
 * before calling a function whose guards passed; NULL clears it). */
void eval_frame_run_next_as_is(PyCodeObject *code);
/* Calls fn with positional args. move: args are owned references that the call takes over:
 * released (and set to NULL) as soon as the frame fn starts holds its own, so that the frame is
 * their only holder while it runs; or when fn returns, if no such frame started. */
PyObject *eval_frame_call(PyObject *fn, PyObject **args, Py_ssize_t nargs, int move);
/* Runs the callback's answer for a frame or call: (guard, code) -> new entry; None -> NULL
 * without error; SKIP -> marks the code, NULL without error. */
CacheEntry *eval_frame_consult_callback(PyObject *callback, PyCodeObject *code, PyObject *view);

/* ---- compiled_function.c ---------------------------------------------------------------- */

extern PyTypeObject CompiledFunction_Type;
PyObject *compiled_function_set_reducer(PyObject *reducer);

/* ---- native_call.c: running a compiled C function (backend "c") on buffers --------------- */

PyObject *native_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* ---- allocator.c: the C library's allocator keeps freed memory for reuse ---------------------- */

PyObject *keep_freed_memory(PyObject *module, PyObject *args);

#endif /* DYNAMO_C_H */
