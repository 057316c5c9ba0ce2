/* The per-code-object cache kept in co_extra: a SKIP flag and a list of (guard, transformed
 * code) entries, most recently used first. reset() finds every state through a linked list. */
#include "dynamo_c.h"

#include <structmember.h>

static Py_ssize_t extra_index = -1;
static ExtraState all_states = {&all_states, &all_states, NULL, 0, NULL}; /* list head */

/* ---- CacheEntry ------------------------------------------------------------------------ */

static void cache_entry_dealloc(CacheEntry *self) {
    Py_XDECREF(self->guard);
    Py_XDECREF(self->code);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->function);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cache_entry_repr(CacheEntry *self) {
    return PyUnicode_FromFormat("<CacheEntry for %U, %zd hits>",
                                ((PyCodeObject *)self->code)->co_qualname, self->hits);
}

static PyMemberDef cache_entry_members[] = {
    {"guard", T_OBJECT, offsetof(CacheEntry, guard), READONLY, "the GuardProgram"},
    {"code", T_OBJECT, offsetof(CacheEntry, code), READONLY, "the transformed code"},
    {"owner", T_OBJECT, offsetof(CacheEntry, owner), READONLY, "the callback that made it"},
    {"hits", T_PYSSIZET, offsetof(CacheEntry, hits), READONLY, "calls served"},
    {"in_place", T_INT, offsetof(CacheEntry, in_place), READONLY,
     "true when the entry's code is the original: a hit runs the frame as it is"},
    {"unhooked", T_INT, offsetof(CacheEntry, unhooked), READONLY,
     "the code starts no frame the hook must see, so it runs with the hook off"},
    {"probe", T_INT, offsetof(CacheEntry, probe), READONLY,
     "timed calls left in which the original and the compiled code take turns"},
    {"dropped", T_INT, offsetof(CacheEntry, dropped), READONLY,
     "the timed turns found the compiled code slower than the original: hits run the original"},
    {"best_compiled", T_DOUBLE, offsetof(CacheEntry, best_compiled), READONLY,
     "seconds of the fastest timed call of the compiled code (0.0: none)"},
    {"best_original", T_DOUBLE, offsetof(CacheEntry, best_original), READONLY,
     "seconds of the fastest timed call of the original code (0.0: none)"},
    {"recheck", T_PYSSIZET, offsetof(CacheEntry, recheck), READONLY,
     "calls after which a dropped version is timed again (0: never)"},
    {"part_of_caller", T_INT, offsetof(CacheEntry, part_of_caller), READONLY,
     "a resume function's version: it takes no turns while a compiled turn runs"},
    {NULL},
};

PyTypeObject CacheEntry_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.CacheEntry",
    .tp_basicsize = sizeof(CacheEntry),
    .tp_dealloc = (destructor)cache_entry_dealloc,
    .tp_repr = (reprfunc)cache_entry_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One compiled version of a code object: guard, transformed code, owner.",
    .tp_members = cache_entry_members,
};

/* ---- ExtraState ---------------------------------------------------------------------- */

/* Called by CPython when the code object dies or its slot is overwritten. */
static void extra_state_free(void *ptr) {
    ExtraState *state = (ExtraState *)ptr;
    if (state == NULL) {
        return; /* CPython calls this for every slot of a dying code object, empty ones too */
    }
    state->prev->next = state->next;
    state->next->prev = state->prev;
    PyObject *entries = state->entries;
    PyObject *full_for = state->full_for;
    PyMem_Free(state);
    /* Last: dropping entries can free other code objects and re-enter this function. */
    Py_XDECREF(entries);
    Py_XDECREF(full_for);
}

int cache_module_init(void) {
    extra_index = compat_request_code_extra_index(extra_state_free);
    if (extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "dynamo._C: no free co_extra slot");
        return -1;
    }
    return 0;
}

ExtraState *extra_state_get(PyCodeObject *code) {
    void *extra = NULL;
    if (compat_code_get_extra((PyObject *)code, extra_index, &extra) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return (ExtraState *)extra;
}

ExtraState *extra_state_get_or_create(PyCodeObject *code) {
    ExtraState *state = extra_state_get(code);
    if (state != NULL) {
        return state;
    }
    state = PyMem_Calloc(1, sizeof(ExtraState));
    if (state == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    state->entries = PyList_New(0);
    if (state->entries == NULL) {
        PyMem_Free(state);
        return NULL;
    }
    state->code = code;
    state->prev = &all_states;
    state->next = all_states.next;
    all_states.next->prev = state;
    all_states.next = state;
    if (compat_code_set_extra((PyObject *)code, extra_index, state) < 0) {
        extra_state_free(state);
        return NULL;
    }
    return state;
}

void cache_reset_all(void) {
    /* Clearing a slot runs extra_state_free, which unlinks the state (and possibly others
     * whose code objects die with the dropped entries): always restart from the head. */
    while (all_states.next != &all_states) {
        ExtraState *state = all_states.next;
        if (compat_code_set_extra((PyObject *)state->code, extra_index, NULL) < 0) {
            PyErr_Clear();
            state->prev->next = state->next; /* cannot happen; never loop forever */
            state->next->prev = state->prev;
        }
    }
}

/* ---- lookup, insert, call ---------------------------------------------------------------- */

CacheEntry *cache_lookup(ExtraState *state, PyObject *owner, const GuardInputs *inputs) {
    /* Guards may run Python code (even reset()): hold the list and the entry being checked. */
    PyObject *entries = Py_NewRef(state->entries);
    CacheEntry *found = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        CacheEntry *entry = (CacheEntry *)PyList_GET_ITEM(entries, i);
        if (entry->owner != owner) {
            continue;
        }
        Py_INCREF(entry);
        int ok = guard_program_run(entry->guard, inputs, NULL);
        if (ok < 0) {
            Py_DECREF(entry);
            break;
        }
        if (ok) {
            entry->hits++;
            entry->last_hit = ++state->hit_serial;
            if (entry->recheck_at > 0 && entry->hits >= entry->recheck_at) {
                cache_entry_rearm(entry, state->hit_serial); /* dropped (or deferred) a while ago: time it */
            }
            /* the guard may have changed the list (clear_cache(), a compile it ran): move
             * the entry only if it is still where it was */
            if (i > 0 && i < PyList_GET_SIZE(entries) && PyList_GET_ITEM(entries, i) == (PyObject *)entry) {
                /* move to the front: the entry used last is checked first next time */
                PyObject **items = ((PyListObject *)entries)->ob_item;
                memmove(&items[1], &items[0], i * sizeof(PyObject *));
                items[0] = (PyObject *)entry;
            }
            found = entry;
            break;
        }
        Py_DECREF(entry);
    }
    Py_DECREF(entries);
    return found;
}

CacheEntry *cache_insert(PyCodeObject *code, PyObject *owner, PyObject *guard, PyObject *transformed,
                         int unhooked, int probe, Py_ssize_t recheck, int part_of_caller) {
    if (!PyObject_TypeCheck(guard, &GuardProgram_Type)) {
        PyErr_Format(PyExc_TypeError, "cache entry guard must be a GuardProgram, not %.100s",
                     Py_TYPE(guard)->tp_name);
        return NULL;
    }
    if (!PyCode_Check(transformed)) {
        PyErr_Format(PyExc_TypeError, "cache entry code must be a code object, not %.100s",
                     Py_TYPE(transformed)->tp_name);
        return NULL;
    }
    PyCodeObject *new_code = (PyCodeObject *)transformed;
    int in_place = new_code == code;
    int slots = code_argument_slots(code);
    if (!in_place && (new_code->co_argcount != slots || new_code->co_kwonlyargcount != 0 ||
        (new_code->co_flags & (CO_VARARGS | CO_VARKEYWORDS)) ||
        new_code->co_nfreevars != code->co_nfreevars)) {
        PyErr_Format(PyExc_ValueError,
                     "transformed code for %U must take the %d argument slots positionally "
                     "and keep the %d free variables of the original",
                     code->co_qualname, slots, code->co_nfreevars);
        return NULL;
    }
    ExtraState *state = extra_state_get_or_create(code);
    if (state == NULL) {
        return NULL;
    }
    if (!in_place) {
        ExtraState *transformed_state = extra_state_get_or_create(new_code);
        if (transformed_state == NULL) {
            return NULL;
        }
        transformed_state->skip = 1; /* its own frames run as they are */
    }
    CacheEntry *entry = PyObject_New(CacheEntry, &CacheEntry_Type);
    if (entry == NULL) {
        return NULL;
    }
    entry->guard = Py_NewRef(guard);
    entry->code = Py_NewRef(transformed);
    entry->owner = Py_NewRef(owner);
    entry->function = NULL;
    entry->hits = 0;
    entry->unhooked = unhooked;
    entry->in_place = in_place;
    /* a negative probe defers the turns: the code it runs is provisional (a graph of backend
     * "tiered" still on numpy); retime() arms them when it changes, or `recheck` hits do */
    int deferred = probe < 0 && !in_place;
    entry->probe = in_place || deferred ? 0 : probe;
    entry->dropped = 0;
    entry->best_compiled = entry->best_original = 0.0;
    entry->turns = deferred ? -probe : entry->probe;
    entry->compiled_unhooked = unhooked;
    entry->recheck = recheck;
    entry->part_of_caller = part_of_caller;
    entry->recheck_at = deferred ? recheck : 0;
    entry->last_hit = entry->armed_at = state->hit_serial;
    int err = PyList_Insert(state->entries, 0, (PyObject *)entry);
    Py_DECREF(entry);
    return err < 0 ? NULL : entry;
}

/* Turns of each kind before a version clearly faster than the original stops taking them: a first
 * call of the original is often slow (CPython's instruction specialization, NumPy's first use of a
 * loop), and one such call alone made a slower version look twice as fast. */
#define EARLY_STOP_TURNS 3

void cache_entry_probed(CacheEntry *entry, int original_turn, double seconds) {
    double *best = original_turn ? &entry->best_original : &entry->best_compiled;
    if (*best == 0.0 || seconds < *best) {
        *best = seconds;
    }
    if (entry->best_original == 0.0 || entry->best_compiled == 0.0) {
        return;
    }
    if (entry->best_original > 2.0 * entry->best_compiled && entry->turns - entry->probe >= 2 * EARLY_STOP_TURNS) {
        entry->probe = 0; /* clearly faster: no more turns of the original */
    }
    else if (entry->probe == 0 && entry->best_compiled > entry->best_original) {
        entry->dropped = 1;
        entry->in_place = 1;
        entry->unhooked = 1; /* as its turns were timed: plain Python, its callees included */
        entry->recheck_at = entry->recheck > 0 ? entry->hits + entry->recheck : 0;
    }
}

void cache_entry_rearm(CacheEntry *entry, Py_ssize_t now) {
    if (!entry->dropped) {
        if (entry->recheck_at > 0 && entry->probe == 0) { /* deferred turns: due now */
            entry->probe = entry->turns;
            entry->best_compiled = entry->best_original = 0.0;
            entry->recheck_at = 0;
            entry->armed_at = now;
        }
        return;
    }
    entry->dropped = 0;
    entry->in_place = 0;
    entry->unhooked = entry->compiled_unhooked;
    entry->probe = entry->turns;
    entry->best_compiled = entry->best_original = 0.0; /* the inputs may have changed since */
    entry->recheck_at = 0;
    entry->armed_at = now;
    entry->recheck = entry->recheck > PY_SSIZE_T_MAX / 4 ? entry->recheck : 4 * entry->recheck;
}

int cache_skipped_call(ExtraState *state) {
    if (state->recheck_after <= 0 || ++state->skipped_calls < state->recheck_after) {
        return 0;
    }
    state->skip = state->skip_unhooked = 0;
    state->recheck_after = state->skipped_calls = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(state->entries); i++) {
        cache_entry_rearm((CacheEntry *)PyList_GET_ITEM(state->entries, i), state->hit_serial);
    }
    return 1;
}

static PyObject *entry_function(CacheEntry *entry, PyObject *globals, PyObject *closure) {
    PyFunctionObject *fn = (PyFunctionObject *)entry->function;
    if (fn != NULL && fn->func_globals == globals && fn->func_closure == closure) {
        return Py_NewRef(fn);
    }
    PyObject *made = PyFunction_New(entry->code, globals);
    if (made == NULL) {
        return NULL;
    }
    if (closure != NULL) {
        if (PyFunction_SetClosure(made, closure) < 0) {
            Py_DECREF(made);
            return NULL;
        }
        /* not kept: the entry would hold the cells of the last call's function, and all they
         * reach, after that function is gone (plain Python frees them with it) */
        return made;
    }
    Py_XSETREF(entry->function, Py_NewRef(made));
    return made;
}

PyObject *cache_entry_call(CacheEntry *entry, PyObject **args, Py_ssize_t nargs,
                           PyObject *globals, PyObject *closure, int move) {
    PyObject *fn = entry_function(entry, globals, closure);
    if (fn == NULL) {
        return NULL;
    }
    if (!entry->unhooked) {
        PyObject *result = eval_frame_call(fn, args, nargs, move);
        Py_DECREF(fn);
        return result;
    }
    PyObject *suspended = eval_frame_suspend();
    PyObject *result = eval_frame_call(fn, args, nargs, move);
    eval_frame_resume(suspended);
    Py_DECREF(fn);
    return result;
}
