/* The class_shape guard: a class made by a call (a class statement in a function, a namedtuple)
 * compared by its shape, as dynamo/class_shapes.py describes it, without a Python call per check. */
#include "dynamo_c.h"

/* Two names (str, or __module__'s value of any type): str contents compare without running code. */
static int same_name(PyObject *actual, PyObject *expected) {
    if (PyUnicode_Check(actual) && PyUnicode_Check(expected)) {
        return PyUnicode_Compare(actual, expected) == 0;
    }
    return PyObject_RichCompareBool(actual, expected, Py_EQ);
}

/* One class of an MRO against its expected own shape (name, qualname, module, attribute names,
 * their values' types): a class of metaclass `type` written in Python whose namespace has the same
 * str keys in the same order, each holding a value of the same type. */
static int own_shape_matches(PyTypeObject *cls, PyObject *shape) {
    if (Py_TYPE(cls) != &PyType_Type || !(cls->tp_flags & Py_TPFLAGS_HEAPTYPE) || PyTuple_GET_SIZE(shape) != 5) {
        return 0;
    }
    PyHeapTypeObject *heap = (PyHeapTypeObject *)cls;
    PyObject *keys = PyTuple_GET_ITEM(shape, 3), *kinds = PyTuple_GET_ITEM(shape, 4);
    PyObject *namespace = cls->tp_dict;
    if (namespace == NULL || !PyTuple_Check(keys) || !PyTuple_Check(kinds) ||
        PyDict_GET_SIZE(namespace) != PyTuple_GET_SIZE(keys) || PyTuple_GET_SIZE(kinds) != PyTuple_GET_SIZE(keys)) {
        return 0;
    }
    int same = same_name(heap->ht_name, PyTuple_GET_ITEM(shape, 0));
    if (same == 1) {
        same = same_name(heap->ht_qualname, PyTuple_GET_ITEM(shape, 1));
    }
    if (same != 1) {
        return same;
    }
    PyObject *key, *value;
    Py_ssize_t position = 0, i = 0;
    while (PyDict_Next(namespace, &position, &key, &value)) {
        /* a key of another type would run its __eq__: such a class is guarded by identity */
        if (!PyUnicode_CheckExact(key) || PyUnicode_Compare(key, PyTuple_GET_ITEM(keys, i)) != 0 ||
            (PyObject *)Py_TYPE(value) != PyTuple_GET_ITEM(kinds, i)) {
            return 0;
        }
        i++;
    }
    static PyObject *module_key = NULL; /* interned once: the key every class statement sets */
    if (module_key == NULL && (module_key = PyUnicode_InternFromString("__module__")) == NULL) {
        return -1;
    }
    PyObject *module = PyDict_GetItemWithError(namespace, module_key);
    if (module == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(module); /* comparing a module value that is not a str may run code */
    same = same_name(module, PyTuple_GET_ITEM(shape, 2));
    Py_DECREF(module);
    return same;
}

int class_shape_matches(PyObject *value, int of_type, PyObject *shape) {
    PyObject *cls = of_type ? (PyObject *)Py_TYPE(value) : value;
    if (Py_TYPE(cls) != &PyType_Type) {
        return 0;
    }
    PyObject *mro = ((PyTypeObject *)cls)->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro) || PyTuple_GET_SIZE(mro) != PyTuple_GET_SIZE(shape)) {
        return 0;
    }
    Py_INCREF(cls); /* a comparison that runs code must not see it freed */
    Py_INCREF(mro);
    int result = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro) && result == 1; i++) {
        PyObject *expected = PyTuple_GET_ITEM(shape, i);
        PyObject *actual = PyTuple_GET_ITEM(mro, i);
        /* a class not made by a call is expected by identity */
        result = PyTuple_CheckExact(expected) ? own_shape_matches((PyTypeObject *)actual, expected) : actual == expected;
    }
    Py_DECREF(mro);
    Py_DECREF(cls);
    return result;
}
