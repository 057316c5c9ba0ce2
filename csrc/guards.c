/* GuardProgram: a flat list of checks on a frame's arguments, globals and closure, run in C
 * on every call before cached code may run. The Python side (dynamo/guards.py) builds it. */
#include "dynamo_c.h"

#include <structmember.h>

typedef enum {
    OP_LOAD_ARG,    /* reg[dst] = args[index] */
    OP_LOAD_GLOBAL, /* reg[dst] = globals[obj] or builtins[obj]; missing -> fail */
    OP_LOAD_CELL,   /* reg[dst] = closure[index].cell_contents; empty -> fail */
    OP_LOAD_ATTR,   /* reg[dst] = getattr(reg[src], obj); missing -> fail */
    OP_LOAD_ITEM,   /* reg[dst] = reg[src][obj]; missing -> fail */
    OP_TYPE_IS,     /* type(reg[src]) is obj */
    OP_ID_IS,       /* reg[src] is obj */
    OP_EQUALS,      /* reg[src] == obj */
    OP_LEN_IS,      /* len(reg[src]) == index */
    OP_CALL,        /* obj(reg[src]) is truthy */
    OP_CALL_MANY,   /* obj(*[reg[i] for i in regs]) is truthy */
    OP_STRUCT_IS,   /* type(reg[src]) is T and fields of its C struct hold expected values */
    OP_SIZES,       /* a relation between sizes of arrays in regs, as a small integer stack program */
    OP_TYPE_IN,     /* type(reg[src]) is one of the types of the tuple obj */
    OP_CLASS_SHAPE, /* reg[src] (index 1: its type) is a class whose MRO has the shape obj */
    OP_COUNT
} GuardOp;

static const char *const op_names[OP_COUNT] = {
    "load_arg", "load_global", "load_cell", "load_attr", "load_item", "type_is",
    "id_is",    "equals",      "len_is",    "call",      "call_many", "struct_is",
    "sizes",    "type_in",     "class_shape",
};

/* OP_SIZES programs (dynamo/shapes/guards.py writes them): a flat sequence of integers.
 * SZ_DIM k d pushes size d of the array in the instruction's k-th register (it fails unless that
 * is exactly the expected type with more than d dimensions); SZ_CONST c pushes c; arithmetic pops
 * its operands and pushes the result with Python's semantics (floor division and remainder);
 * a comparison pops two values and fails the check when it does not hold; SZ_INT k pushes the
 * value of the exact int in the k-th register (a dynamic int argument). Overflow and division by
 * zero fail the check, as does an int outside Py_ssize_t. */
typedef enum {
    SZ_DIM, SZ_CONST, SZ_ADD, SZ_MUL, SZ_FLOORDIV, SZ_MOD, SZ_NEG, SZ_ABS, SZ_MIN, SZ_MAX,
    SZ_EQ, SZ_NE, SZ_LT, SZ_LE, SZ_GT, SZ_GE, SZ_INT, SZ_COUNT
} SizeOp;

#define SIZES_STACK 16

/* One field of OP_STRUCT_IS: a word read at a byte offset of the object. The Python side
 * computes offsets from the documented layout of the type and verifies them on a live object;
 * the type check before the reads keeps them in bounds (offsets are checked against
 * tp_basicsize when the program is built). */
typedef enum { FIELD_PTR, FIELD_INT, FIELD_SSIZE_ARRAY, FIELD_SSIZE_PATTERN } FieldKind;

typedef struct {
    FieldKind kind;
    Py_ssize_t offset;
    PyObject *expected;     /* FIELD_PTR: the object the pointer must be (strong) */
    int expected_int;       /* FIELD_INT */
    Py_ssize_t *values;     /* FIELD_SSIZE_ARRAY: the pointed-to array must start with these;
                             * FIELD_SSIZE_PATTERN: the same, except that a negative entry -m
                             * accepts any value >= m (a dynamic size: dynamo/shapes) */
    Py_ssize_t nvalues;
} FieldCheck;

typedef struct {
    GuardOp op;
    int dst;
    int src;
    Py_ssize_t index;
    PyObject *obj;     /* strong */
    int *regs;         /* OP_CALL_MANY only */
    int nregs;
    FieldCheck *fields; /* OP_STRUCT_IS only */
    Py_ssize_t nfields;
    Py_ssize_t *code;   /* OP_SIZES only: the program, and where ndim and shape sit in the struct */
    Py_ssize_t ncode;
    Py_ssize_t nd_offset, dims_offset;
} GuardInstr;

typedef struct {
    PyObject_HEAD
    GuardInstr *instrs;
    Py_ssize_t ninstrs;
    int nregs;
    PyObject *spec; /* the list it was built from, kept for repr and introspection */
    PyObject *info; /* whatever the builder attached (readable guards per instruction) */
} GuardProgram;

#define MAX_STACK_REGS 32

static void guard_program_dealloc(GuardProgram *self) {
    for (Py_ssize_t i = 0; i < self->ninstrs; i++) {
        Py_XDECREF(self->instrs[i].obj);
        PyMem_Free(self->instrs[i].regs);
        for (Py_ssize_t f = 0; f < self->instrs[i].nfields; f++) {
            Py_XDECREF(self->instrs[i].fields[f].expected);
            PyMem_Free(self->instrs[i].fields[f].values);
        }
        PyMem_Free(self->instrs[i].fields);
        PyMem_Free(self->instrs[i].code);
    }
    PyMem_Free(self->instrs);
    Py_XDECREF(self->spec);
    Py_XDECREF(self->info);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse_register(PyObject *value, int nregs, int *out) {
    long r = PyLong_AsLong(value);
    if (r == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (r < 0 || r >= nregs) {
        PyErr_Format(PyExc_ValueError, "guard register %ld out of range [0, %d)", r, nregs);
        return -1;
    }
    *out = (int)r;
    return 0;
}

/* A register an instruction reads must have been loaded by an earlier instruction: a load
 * that fails ends the program, so at run time every register read then holds a value. */
static int parse_source_register(PyObject *value, int nregs, const char *loaded, int *out) {
    if (parse_register(value, nregs, out) < 0) {
        return -1;
    }
    if (!loaded[*out]) {
        PyErr_Format(PyExc_ValueError, "guard register %d is read before an instruction loads it", *out);
        return -1;
    }
    return 0;
}

/* Argument slot and closure cell indexes: a negative one would read before the array. */
static int parse_index(PyObject *value, const char *op, Py_ssize_t *out) {
    *out = PyLong_AsSsize_t(value);
    if (*out == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (*out < 0) {
        PyErr_Format(PyExc_ValueError, "%s index must be >= 0, got %zd", op, *out);
        return -1;
    }
    return 0;
}

static GuardOp parse_op(PyObject *name) {
    for (int i = 0; i < OP_COUNT; i++) {
        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, op_names[i]) == 0) {
            return (GuardOp)i;
        }
    }
    PyErr_Format(PyExc_ValueError, "unknown guard instruction %R", name);
    return OP_COUNT;
}

/* struct_is spec: (exact_type, ((offset, "ptr", obj) | (offset, "int", n) |
 * (offset, "ssize_array", (n0, n1, ...)) | (offset, "ssize_pattern", (n0, -2, ...)), ...)) */
static int parse_struct_spec(PyObject *spec, GuardInstr *ins) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2 || !PyType_Check(PyTuple_GET_ITEM(spec, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(spec, 1))) {
        PyErr_SetString(PyExc_TypeError, "struct_is takes (exact_type, (field checks...))");
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(spec, 0);
    PyObject *checks = PyTuple_GET_ITEM(spec, 1);
    ins->obj = Py_NewRef(type);
    ins->nfields = PyTuple_GET_SIZE(checks);
    ins->fields = PyMem_Calloc(ins->nfields ? ins->nfields : 1, sizeof(FieldCheck));
    if (ins->fields == NULL) {
        ins->nfields = 0;
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < ins->nfields; i++) {
        PyObject *check = PyTuple_GET_ITEM(checks, i);
        const char *kind;
        Py_ssize_t offset;
        PyObject *expected;
        if (!PyTuple_Check(check) || !PyArg_ParseTuple(check, "nsO:struct_is field", &offset, &kind, &expected)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "struct_is field must be (offset, kind, value)");
            return -1;
        }
        FieldCheck *field = &ins->fields[i];
        field->offset = offset;
        Py_ssize_t width = sizeof(void *);
        if (strcmp(kind, "ptr") == 0) {
            field->kind = FIELD_PTR;
            field->expected = Py_NewRef(expected);
        }
        else if (strcmp(kind, "int") == 0) {
            field->kind = FIELD_INT;
            width = sizeof(int);
            field->expected_int = (int)PyLong_AsLong(expected);
            if (field->expected_int == -1 && PyErr_Occurred()) return -1;
        }
        else if ((strcmp(kind, "ssize_array") == 0 || strcmp(kind, "ssize_pattern") == 0) && PyTuple_Check(expected)) {
            field->kind = kind[6] == 'a' ? FIELD_SSIZE_ARRAY : FIELD_SSIZE_PATTERN;
            field->nvalues = PyTuple_GET_SIZE(expected);
            field->values = PyMem_Calloc(field->nvalues ? field->nvalues : 1, sizeof(Py_ssize_t));
            if (field->values == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (Py_ssize_t v = 0; v < field->nvalues; v++) {
                field->values[v] = PyLong_AsSsize_t(PyTuple_GET_ITEM(expected, v));
                if (field->values[v] == -1 && PyErr_Occurred()) return -1;
            }
        }
        else {
            PyErr_Format(PyExc_ValueError, "unknown struct_is field kind %s", kind);
            return -1;
        }
        if (offset < (Py_ssize_t)sizeof(PyObject) || offset + width > type->tp_basicsize) {
            PyErr_Format(PyExc_ValueError, "struct_is offset %zd is outside %s's fields", offset, type->tp_name);
            return -1;
        }
    }
    return 0;
}

static int struct_matches(const GuardInstr *ins, PyObject *value) {
    if ((PyObject *)Py_TYPE(value) != ins->obj) {
        return 0;
    }
    const char *base = (const char *)value;
    for (Py_ssize_t i = 0; i < ins->nfields; i++) {
        const FieldCheck *field = &ins->fields[i];
        switch (field->kind) {
        case FIELD_PTR:
            if (*(PyObject *const *)(base + field->offset) != field->expected) return 0;
            break;
        case FIELD_INT:
            if (*(const int *)(base + field->offset) != field->expected_int) return 0;
            break;
        case FIELD_SSIZE_ARRAY: {
            /* a loop, not memcmp: shapes are a few words, and a libc call costs more than them */
            const Py_ssize_t *values = *(Py_ssize_t *const *)(base + field->offset);
            if (field->nvalues && values == NULL) return 0;
            for (Py_ssize_t v = 0; v < field->nvalues; v++) {
                if (values[v] != field->values[v]) return 0;
            }
            break;
        }
        case FIELD_SSIZE_PATTERN: {
            const Py_ssize_t *values = *(Py_ssize_t *const *)(base + field->offset);
            if (field->nvalues && values == NULL) return 0;
            for (Py_ssize_t v = 0; v < field->nvalues; v++) {
                Py_ssize_t want = field->values[v];
                if (want >= 0 ? values[v] != want : values[v] < -want) return 0;
            }
            break;
        }
        }
    }
    return 1;
}

/* sizes spec: (exact_type, nd_offset, dims_offset, (program...)); the program is validated here
 * (operands, register indexes, stack depth), so that running it needs no checks but the
 * per-array type and ndim ones. */
static int parse_sizes_spec(PyObject *spec, GuardInstr *ins) {
    PyObject *type, *program;
    if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "O!nnO!:sizes", &PyType_Type, &type, &ins->nd_offset,
                                                  &ins->dims_offset, &PyTuple_Type, &program)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "sizes takes (type, nd_offset, dims_offset, program)");
        return -1;
    }
    Py_ssize_t basic = ((PyTypeObject *)type)->tp_basicsize;
    if (ins->nd_offset < (Py_ssize_t)sizeof(PyObject) || ins->nd_offset + (Py_ssize_t)sizeof(int) > basic ||
        ins->dims_offset < (Py_ssize_t)sizeof(PyObject) || ins->dims_offset + (Py_ssize_t)sizeof(void *) > basic) {
        PyErr_SetString(PyExc_ValueError, "sizes offsets are outside the type's fields");
        return -1;
    }
    ins->obj = Py_NewRef(type);
    ins->ncode = PyTuple_GET_SIZE(program);
    ins->code = PyMem_Calloc(ins->ncode ? ins->ncode : 1, sizeof(Py_ssize_t));
    if (ins->code == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < ins->ncode; i++) {
        ins->code[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(program, i));
        if (ins->code[i] == -1 && PyErr_Occurred()) return -1;
    }
    int depth = 0;
    for (Py_ssize_t pc = 0; pc < ins->ncode;) {
        Py_ssize_t op = ins->code[pc++];
        int pops = 0, pushes = 0;
        Py_ssize_t operands = 0;
        if (op == SZ_DIM) {
            operands = 2;
            pushes = 1;
        }
        else if (op == SZ_INT) {
            operands = 1;
            pushes = 1;
        }
        else if (op == SZ_CONST) {
            operands = 1;
            pushes = 1;
        }
        else if (op == SZ_NEG || op == SZ_ABS) {
            pops = pushes = 1;
        }
        else if (op >= SZ_ADD && op < SZ_EQ) {
            pops = 2;
            pushes = 1;
        }
        else if (op >= SZ_EQ && op <= SZ_GE) {
            pops = 2;
        }
        else {
            PyErr_Format(PyExc_ValueError, "unknown sizes operation %zd", op);
            return -1;
        }
        if (pc + operands > ins->ncode) {
            PyErr_SetString(PyExc_ValueError, "sizes program ends inside an operation");
            return -1;
        }
        if ((op == SZ_DIM || op == SZ_INT) && (ins->code[pc] < 0 || ins->code[pc] >= ins->nregs)) {
            PyErr_SetString(PyExc_ValueError, "sizes: bad register");
            return -1;
        }
        if (op == SZ_DIM && ins->code[pc + 1] < 0) {
            PyErr_SetString(PyExc_ValueError, "sizes: bad register or dimension");
            return -1;
        }
        pc += operands;
        if (depth < pops) {
            PyErr_SetString(PyExc_ValueError, "sizes program pops an empty stack");
            return -1;
        }
        depth += pushes - pops;
        if (depth > SIZES_STACK) {
            PyErr_SetString(PyExc_ValueError, "sizes program is too deep");
            return -1;
        }
    }
    if (depth != 0) {
        PyErr_SetString(PyExc_ValueError, "sizes program leaves values on the stack");
        return -1;
    }
    return 0;
}

static int run_sizes(const GuardInstr *ins, PyObject **regs) {
    Py_ssize_t stack[SIZES_STACK];
    int sp = 0;
    const Py_ssize_t *code = ins->code;
    for (Py_ssize_t pc = 0; pc < ins->ncode;) {
        Py_ssize_t op = code[pc++], a, b;
        if (op == SZ_DIM) {
            const char *array = (const char *)regs[ins->regs[code[pc]]];
            Py_ssize_t d = code[pc + 1];
            pc += 2;
            if ((PyObject *)Py_TYPE((PyObject *)array) != ins->obj || *(const int *)(array + ins->nd_offset) <= d) {
                return 0;
            }
            stack[sp++] = (*(Py_ssize_t *const *)(array + ins->dims_offset))[d];
            continue;
        }
        if (op == SZ_CONST) {
            stack[sp++] = code[pc++];
            continue;
        }
        if (op == SZ_INT) {
            PyObject *value = regs[ins->regs[code[pc++]]];
            if (!PyLong_CheckExact(value)) return 0;
            Py_ssize_t v = PyLong_AsSsize_t(value);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear(); /* too large for a size: not the value it was compiled for */
                return 0;
            }
            stack[sp++] = v;
            continue;
        }
        if (op == SZ_NEG || op == SZ_ABS) {
            a = stack[sp - 1];
            if (op == SZ_ABS && a >= 0) continue;
            if (a == PY_SSIZE_T_MIN) return 0;
            stack[sp - 1] = -a;
            continue;
        }
        b = stack[--sp];
        a = stack[--sp];
        Py_ssize_t r = 0;
        switch (op) {
        case SZ_ADD:
            if (__builtin_add_overflow(a, b, &r)) return 0;
            break;
        case SZ_MUL:
            if (__builtin_mul_overflow(a, b, &r)) return 0;
            break;
        case SZ_FLOORDIV:
        case SZ_MOD:
            if (b == 0 || (a == PY_SSIZE_T_MIN && b == -1)) return 0;
            r = op == SZ_FLOORDIV ? a / b : a % b;
            if (a % b != 0 && ((a < 0) != (b < 0))) r = op == SZ_FLOORDIV ? r - 1 : r + b; /* Python's */
            break;
        case SZ_MIN: r = a < b ? a : b; break;
        case SZ_MAX: r = a > b ? a : b; break;
        case SZ_EQ: if (a != b) return 0; continue;
        case SZ_NE: if (a == b) return 0; continue;
        case SZ_LT: if (!(a < b)) return 0; continue;
        case SZ_LE: if (!(a <= b)) return 0; continue;
        case SZ_GT: if (!(a > b)) return 0; continue;
        case SZ_GE: if (!(a >= b)) return 0; continue;
        default: return 0;
        }
        stack[sp++] = r;
    }
    return 1;
}

/* Instruction tuples: (op, dst, index) for load_arg/load_cell; (op, dst, name) for
 * load_global; (op, dst, src, obj) for load_attr/load_item; (op, src, obj) for checks;
 * (op, src, n) for len_is; (op, obj, (regs...)) for call_many. `loaded` marks the registers
 * written by the instructions parsed so far. */
static int parse_instr(PyObject *item, int nregs, char *loaded, GuardInstr *ins) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 3) {
        PyErr_Format(PyExc_TypeError, "guard instruction must be a tuple (op, ...), got %R", item);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(item);
    ins->op = parse_op(PyTuple_GET_ITEM(item, 0));
    if (ins->op == OP_COUNT) {
        return -1;
    }
    Py_ssize_t expected = (ins->op == OP_LOAD_ATTR || ins->op == OP_LOAD_ITEM) ? 4 : 3;
    if (n != expected) {
        PyErr_Format(PyExc_TypeError, "guard instruction %s takes %zd elements, got %R",
                     op_names[ins->op], expected, item);
        return -1;
    }
    PyObject *a = PyTuple_GET_ITEM(item, 1), *b = PyTuple_GET_ITEM(item, 2);
    switch (ins->op) {
    case OP_LOAD_ARG:
    case OP_LOAD_CELL:
        if (parse_register(a, nregs, &ins->dst) < 0) return -1;
        if (parse_index(b, op_names[ins->op], &ins->index) < 0) return -1;
        break;
    case OP_LOAD_GLOBAL:
        if (parse_register(a, nregs, &ins->dst) < 0) return -1;
        if (!PyUnicode_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "load_global takes a str name");
            return -1;
        }
        ins->obj = Py_NewRef(b);
        break;
    case OP_LOAD_ATTR:
    case OP_LOAD_ITEM:
        if (parse_register(a, nregs, &ins->dst) < 0) return -1;
        if (parse_source_register(b, nregs, loaded, &ins->src) < 0) return -1;
        ins->obj = Py_NewRef(PyTuple_GET_ITEM(item, 3));
        if (ins->op == OP_LOAD_ATTR && !PyUnicode_Check(ins->obj)) {
            PyErr_SetString(PyExc_TypeError, "load_attr takes a str name");
            return -1;
        }
        break;
    case OP_LEN_IS:
        if (parse_source_register(a, nregs, loaded, &ins->src) < 0) return -1;
        ins->index = PyLong_AsSsize_t(b);
        return (ins->index == -1 && PyErr_Occurred()) ? -1 : 0;
    case OP_SIZES:
    case OP_CALL_MANY: {
        if (ins->op == OP_CALL_MANY) ins->obj = Py_NewRef(a);
        PyObject *registers = ins->op == OP_SIZES ? a : b;
        if (!PyTuple_Check(registers)) {
            PyErr_SetString(PyExc_TypeError, "call_many takes (op, fn, (registers...)), sizes (op, (registers...), spec)");
            return -1;
        }
        b = registers;
        if (PyTuple_GET_SIZE(b) > MAX_STACK_REGS) { /* run_instr passes them on the C stack */
            PyErr_Format(PyExc_ValueError, "call_many takes at most %d registers", MAX_STACK_REGS);
            return -1;
        }
        ins->nregs = (int)PyTuple_GET_SIZE(b);
        ins->regs = PyMem_Calloc(ins->nregs ? ins->nregs : 1, sizeof(int));
        if (ins->regs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (int i = 0; i < ins->nregs; i++) {
            if (parse_source_register(PyTuple_GET_ITEM(b, i), nregs, loaded, &ins->regs[i]) < 0) return -1;
        }
        return ins->op == OP_SIZES ? parse_sizes_spec(PyTuple_GET_ITEM(item, 2), ins) : 0;
    }
    case OP_STRUCT_IS:
        if (parse_source_register(a, nregs, loaded, &ins->src) < 0) return -1;
        return parse_struct_spec(b, ins);
    case OP_TYPE_IN:
        if (parse_source_register(a, nregs, loaded, &ins->src) < 0) return -1;
        if (!PyTuple_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "type_in takes a tuple of types");
            return -1;
        }
        ins->obj = Py_NewRef(b);
        return 0;
    case OP_CLASS_SHAPE: /* (op, src, (of_type, shape)) */
        if (parse_source_register(a, nregs, loaded, &ins->src) < 0) return -1;
        if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != 2 || !PyBool_Check(PyTuple_GET_ITEM(b, 0)) ||
            !PyTuple_Check(PyTuple_GET_ITEM(b, 1))) {
            PyErr_SetString(PyExc_TypeError, "class_shape takes (of_type: bool, shape: tuple)");
            return -1;
        }
        ins->index = PyTuple_GET_ITEM(b, 0) == Py_True;
        ins->obj = Py_NewRef(PyTuple_GET_ITEM(b, 1));
        return 0;
    default: /* type_is, id_is, equals, call */
        if (parse_source_register(a, nregs, loaded, &ins->src) < 0) return -1;
        ins->obj = Py_NewRef(b);
        return 0;
    }
    loaded[ins->dst] = 1; /* the loads end here */
    return 0;
}

static PyObject *guard_program_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"instructions", "nregs", "info", NULL};
    PyObject *spec, *info = Py_None;
    int nregs;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi|O:GuardProgram", kwlist, &spec, &nregs, &info)) {
        return NULL;
    }
    if (nregs < 0 || nregs > 1 << 16) {
        PyErr_SetString(PyExc_ValueError, "nregs out of range");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(spec, "instructions must be a sequence of tuples");
    if (seq == NULL) {
        return NULL;
    }
    GuardProgram *self = (GuardProgram *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    self->nregs = nregs;
    self->info = Py_NewRef(info);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    self->instrs = PyMem_Calloc(n ? n : 1, sizeof(GuardInstr));
    if (self->instrs == NULL) {
        Py_DECREF(seq);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    char *loaded = PyMem_Calloc(nregs ? nregs : 1, 1);
    if (loaded == NULL) {
        Py_DECREF(seq);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        self->ninstrs = i + 1; /* so that dealloc frees what parse_instr stored */
        if (parse_instr(PySequence_Fast_GET_ITEM(seq, i), nregs, loaded, &self->instrs[i]) < 0) {
            PyMem_Free(loaded);
            Py_DECREF(seq);
            Py_DECREF(self);
            return NULL;
        }
    }
    PyMem_Free(loaded);
    self->spec = PySequence_List(seq);
    Py_DECREF(seq);
    if (self->spec == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* A failed lookup (missing attribute, key, index or global) is a failed check, not an error. */
static int lookup_failed_quietly(void) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError) || PyErr_ExceptionMatches(PyExc_LookupError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

static int truthy_call_result(PyObject *result) {
    if (result == NULL) {
        return -1;
    }
    int ok = PyObject_IsTrue(result);
    Py_DECREF(result);
    return ok;
}

/* Runs one instruction: 1 passed, 0 failed, -1 error. Loads store strong references. */
static int run_instr(const GuardInstr *ins, PyObject **regs, const GuardInputs *in) {
    PyObject *value = NULL;
    switch (ins->op) {
    case OP_LOAD_ARG:
        if (ins->index >= in->nargs || in->args[ins->index] == NULL) return 0;
        value = Py_NewRef(in->args[ins->index]);
        break;
    case OP_LOAD_GLOBAL:
        value = PyDict_GetItemWithError(in->globals, ins->obj);
        if (value == NULL && !PyErr_Occurred() && in->builtins != NULL && PyDict_Check(in->builtins)) {
            value = PyDict_GetItemWithError(in->builtins, ins->obj);
        }
        if (value == NULL) return PyErr_Occurred() ? -1 : 0;
        Py_INCREF(value);
        break;
    case OP_LOAD_CELL:
        if (in->closure == NULL || ins->index >= PyTuple_GET_SIZE(in->closure)) return 0;
        value = PyCell_GET(PyTuple_GET_ITEM(in->closure, ins->index));
        if (value == NULL) return 0;
        Py_INCREF(value);
        break;
    case OP_LOAD_ATTR:
        value = PyObject_GetAttr(regs[ins->src], ins->obj);
        if (value == NULL) return lookup_failed_quietly() ? 0 : -1;
        break;
    case OP_LOAD_ITEM:
        value = PyObject_GetItem(regs[ins->src], ins->obj);
        if (value == NULL) return lookup_failed_quietly() ? 0 : -1;
        break;
    case OP_TYPE_IS:
        return (PyObject *)Py_TYPE(regs[ins->src]) == ins->obj;
    case OP_TYPE_IN: { /* exact types, compared by pointer: no subclass, no __class__ lookup */
        PyObject *kind = (PyObject *)Py_TYPE(regs[ins->src]);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ins->obj); i++) {
            if (PyTuple_GET_ITEM(ins->obj, i) == kind) return 1;
        }
        return 0;
    }
    case OP_CLASS_SHAPE:
        return class_shape_matches(regs[ins->src], (int)ins->index, ins->obj);
    case OP_STRUCT_IS:
        return struct_matches(ins, regs[ins->src]);
    case OP_SIZES:
        return run_sizes(ins, regs);
    case OP_ID_IS:
        return regs[ins->src] == ins->obj;
    case OP_EQUALS:
        return PyObject_RichCompareBool(regs[ins->src], ins->obj, Py_EQ);
    case OP_LEN_IS: {
        Py_ssize_t n = PyObject_Length(regs[ins->src]);
        if (n < 0) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
            PyErr_Clear(); /* no len(): a different kind of value, so the check fails */
            return 0;
        }
        return n == ins->index;
    }
    case OP_CALL:
        return truthy_call_result(PyObject_CallOneArg(ins->obj, regs[ins->src]));
    case OP_CALL_MANY: {
        PyObject *stack_args[MAX_STACK_REGS]; /* parse_instr allows no more */
        for (int i = 0; i < ins->nregs; i++) stack_args[i] = regs[ins->regs[i]];
        return truthy_call_result(PyObject_Vectorcall(ins->obj, stack_args, ins->nregs, NULL));
    }
    default:
        PyErr_SetString(PyExc_SystemError, "corrupt guard program");
        return -1;
    }
    Py_XSETREF(regs[ins->dst], value);
    return 1;
}

int guard_program_run(PyObject *program, const GuardInputs *inputs, Py_ssize_t *failed_at) {
    GuardProgram *self = (GuardProgram *)program;
    PyObject *stack_regs[MAX_STACK_REGS];
    PyObject **regs = stack_regs;
    if (self->nregs > MAX_STACK_REGS) {
        regs = PyMem_Calloc(self->nregs, sizeof(PyObject *));
        if (regs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    else {
        memset(stack_regs, 0, sizeof(PyObject *) * self->nregs);
    }
    int result = 1;
    for (Py_ssize_t i = 0; i < self->ninstrs; i++) {
        result = run_instr(&self->instrs[i], regs, inputs);
        if (result != 1) {
            if (failed_at) *failed_at = i;
            break;
        }
    }
    for (int r = 0; r < self->nregs; r++) Py_XDECREF(regs[r]);
    if (regs != stack_regs) PyMem_Free(regs);
    return result;
}

/* check(args, globals, builtins=None, closure=None) -> index of the first failing check,
 * or -1 when all pass. Used to explain guard failures and by tests. */
static PyObject *guard_program_check(GuardProgram *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"args", "globals", "builtins", "closure", NULL};
    PyObject *argtuple, *globals, *builtins = Py_None, *closure = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!|OO:check", kwlist, &PyTuple_Type, &argtuple,
                                     &PyDict_Type, &globals, &builtins, &closure)) {
        return NULL;
    }
    if (closure != Py_None) {
        /* load_cell reads the items as cells without checking: check them here */
        int cells = PyTuple_Check(closure);
        for (Py_ssize_t i = 0; cells && i < PyTuple_GET_SIZE(closure); i++) {
            cells = PyCell_Check(PyTuple_GET_ITEM(closure, i));
        }
        if (!cells) {
            PyErr_SetString(PyExc_TypeError, "closure must be a tuple of cells or None");
            return NULL;
        }
    }
    GuardInputs in = {
        .args = &PyTuple_GET_ITEM(argtuple, 0),
        .nargs = PyTuple_GET_SIZE(argtuple),
        .globals = globals,
        .builtins = builtins == Py_None ? NULL : builtins,
        .closure = closure == Py_None ? NULL : closure,
    };
    Py_ssize_t failed_at = -1;
    int ok = guard_program_run((PyObject *)self, &in, &failed_at);
    if (ok < 0) return NULL;
    return PyLong_FromSsize_t(ok ? -1 : failed_at);
}

static PyObject *guard_program_repr(GuardProgram *self) {
    return PyUnicode_FromFormat("GuardProgram(%zd checks, %d registers)", self->ninstrs, self->nregs);
}

static PyMethodDef guard_program_methods[] = {
    {"check", (PyCFunction)(void (*)(void))guard_program_check, METH_VARARGS | METH_KEYWORDS,
     "check(args, globals, builtins=None, closure=None) -> index of the first failing check, or -1"},
    {NULL},
};

static PyMemberDef guard_program_members[] = {
    {"instructions", T_OBJECT, offsetof(GuardProgram, spec), READONLY, "the instruction tuples"},
    {"nregs", T_INT, offsetof(GuardProgram, nregs), READONLY, "number of registers"},
    {"info", T_OBJECT, offsetof(GuardProgram, info), READONLY, "what the builder attached"},
    {NULL},
};

PyTypeObject GuardProgram_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.GuardProgram",
    .tp_basicsize = sizeof(GuardProgram),
    .tp_dealloc = (destructor)guard_program_dealloc,
    .tp_repr = (reprfunc)guard_program_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GuardProgram(instructions, nregs, info=None): checks run in C before cached code runs.",
    .tp_methods = guard_program_methods,
    .tp_members = guard_program_members,
    .tp_new = guard_program_new,
};
