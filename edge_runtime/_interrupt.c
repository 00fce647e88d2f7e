/* The module `edge_runtime._interrupt`: the abort callback llama.cpp calls between the nodes of a
 * decode step's graph (`llama_set_abort_callback`), so that a step reading a long prompt can be cut
 * short when a short request arrives (edge_runtime/interrupt.py).
 *
 * It is C because llama.cpp calls it from its compute thread hundreds of times a step: a Python
 * callback would take the GIL for each call and stall the step whenever the event loop holds it.
 * It reads two ints the Python side owns: whether the step in flight may be cut, and whether a
 * request that should cut it has arrived. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static bool step_cut_requested(void *data) {
    atomic_int *flags = (atomic_int *)data; /* [0]: the step may be cut; [1]: a cut is requested */
    return atomic_load_explicit(&flags[0], memory_order_relaxed) != 0 &&
           atomic_load_explicit(&flags[1], memory_order_relaxed) != 0;
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "edge_runtime._interrupt",
    .m_doc = "The abort callback of a llama.cpp context: CALLBACK is its address.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__interrupt(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObject(m, "CALLBACK", PyLong_FromVoidPtr((void *)(uintptr_t)step_cut_requested)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
