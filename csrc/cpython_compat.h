/* Every CPython version difference the hook depends on (3.11, 3.12, 3.13), in one place.
 * This is the only file of csrc/ that tests PY_VERSION_HEX or includes internal headers. */
#ifndef DYNAMO_CPYTHON_COMPAT_H
#define DYNAMO_CPYTHON_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "dynamo._C supports CPython 3.11, 3.12 and 3.13: re-check the frame layout before adding a version"
#endif
#ifdef Py_GIL_DISABLED
#error "dynamo._C does not support free-threaded CPython builds yet"
#endif

#define Py_BUILD_CORE 1
#if PY_VERSION_HEX >= 0x030C0000
#undef _PyGC_FINALIZED
#endif
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

typedef _PyInterpreterFrame DynamoFrame;

/* ---- frame fields -------------------------------------------------------------------- */

static inline PyCodeObject *compat_frame_code(DynamoFrame *frame) {
#if PY_VERSION_HEX >= 0x030D0000
    return (PyCodeObject *)frame->f_executable;
#else
    return frame->f_code;
#endif
}

static inline PyFunctionObject *compat_frame_function(DynamoFrame *frame) {
#if PY_VERSION_HEX >= 0x030C0000
    return (PyFunctionObject *)frame->f_funcobj;
#else
    return frame->f_func;
#endif
}

/* Frames owned by a generator, coroutine or async generator object. */
static inline int compat_frame_owned_by_generator(DynamoFrame *frame) {
    return frame->owner == FRAME_OWNED_BY_GENERATOR;
}

/* True while a trace, profile or sys.monitoring callback runs on this thread (the hook
 * must leave the frames of those callbacks alone). */
static inline int compat_thread_is_tracing(PyThreadState *tstate) {
    return tstate->tracing > 0;
}

/* True while a trace function (sys.settrace: a debugger, coverage's tracer) is installed on this
 * thread: it must see every line of the original code, so frames run as written. */
static inline int compat_trace_installed(PyThreadState *tstate) {
    return tstate->c_tracefunc != NULL;
}

/* ---- disposing of a frame the hook did not hand to the evaluator ----------------------
 * 3.11: the caller (_PyEval_Vector) clears and pops the frame it passed to the hook.
 * 3.12+: the evaluator clears and pops the frame it runs, so a frame the hook replaced by
 * a call of the transformed code must be cleared and popped here. The frame never started:
 * it has no frame object, no cells yet and an empty value stack. */
#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(void) _PyEval_FrameClearAndPop(PyThreadState *tstate, _PyInterpreterFrame *frame);
static inline void compat_dispose_unstarted_frame(PyThreadState *tstate, DynamoFrame *frame) {
    _PyEval_FrameClearAndPop(tstate, frame);
}
#elif PY_VERSION_HEX >= 0x030C0000
static inline void compat_dispose_unstarted_frame(PyThreadState *tstate, DynamoFrame *frame) {
    for (int i = 0; i < frame->stacktop; i++) {
        Py_XDECREF(frame->localsplus[i]);
    }
    Py_XDECREF(frame->f_locals);
    Py_DECREF(frame->f_funcobj);
    Py_DECREF(frame->f_code);
    /* Pop it off the thread's data stack, freeing its chunk when it opened one. */
    PyObject **base = (PyObject **)frame;
    _PyStackChunk *chunk = tstate->datastack_chunk;
    if (base == &chunk->data[0]) {
        _PyStackChunk *previous = chunk->previous;
        PyObjectArenaAllocator arena;
        PyObject_GetArenaAllocator(&arena);
        tstate->datastack_top = &previous->data[previous->top];
        tstate->datastack_chunk = previous;
        tstate->datastack_limit = (PyObject **)(((char *)previous) + previous->size);
        arena.free(arena.ctx, chunk, chunk->size);
    }
    else {
        tstate->datastack_top = base;
    }
}
#else
static inline void compat_dispose_unstarted_frame(PyThreadState *tstate, DynamoFrame *frame) {
    (void)tstate;
    (void)frame;
}
#endif

/* Whether the hook may replace this frame by a call of other code: it must not have a
 * frame object yet (nothing can have made one before the evaluator starts, but the check
 * is cheap and keeps the disposal above exact). */
static inline int compat_frame_is_replaceable(DynamoFrame *frame) {
    return frame->frame_obj == NULL;
}

/* ---- code objects -------------------------------------------------------------------- */

static inline PyObject *compat_localsplus_names(PyCodeObject *code) {
    return code->co_localsplusnames;
}

#if PY_VERSION_HEX >= 0x030C0000
#define compat_request_code_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#define compat_code_get_extra PyUnstable_Code_GetExtra
#define compat_code_set_extra PyUnstable_Code_SetExtra
#else
#define compat_request_code_extra_index _PyEval_RequestCodeExtraIndex
#define compat_code_get_extra _PyCode_GetExtra
#define compat_code_set_extra _PyCode_SetExtra
#endif

/* ---- the evaluator ------------------------------------------------------------------- */

static inline _PyFrameEvalFunction compat_get_eval_frame(void) {
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get());
}

static inline void compat_set_eval_frame(_PyFrameEvalFunction fn) {
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), fn);
}

#endif /* DYNAMO_CPYTHON_COMPAT_H */
