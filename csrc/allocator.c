/* The C library's allocator told to keep freed memory for reuse: NumPy's temporaries of 128 KiB to
 * 32 MiB were given back to the system at each free (the heap top trimmed, or unmapped) and faulted
 * in again, page by page, at the next allocation of the same size. */
#include "dynamo_c.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

PyObject *keep_freed_memory(PyObject *module, PyObject *args) {
    int trim_threshold, mmap_threshold;
    if (!PyArg_ParseTuple(args, "ii", &trim_threshold, &mmap_threshold)) return NULL;
#ifdef __GLIBC__
    /* blocks up to mmap_threshold come from the heap; its top is returned past trim_threshold */
    int done = mallopt(M_MMAP_THRESHOLD, mmap_threshold) && mallopt(M_TRIM_THRESHOLD, trim_threshold);
    return PyBool_FromLong(done);
#else
    Py_RETURN_FALSE;
#endif
}
