/* Grams: the sums `SparseTextModel.logit` takes over a text's distinct word 1- and 2-grams.
 *
 * A word is what the model's token pattern finds in the (already lower-cased) text: maximal runs
 * of \w (`\b\w\w+\b`) or of ASCII [a-z0-9_] (`[a-z0-9_]{2,}`), two characters or more. A 2-gram
 * is two neighbouring words joined by one space, as scikit-learn joins them. Each gram of the
 * vocabulary is keyed by the hash of its code points (text.h); a text's grams are hashed as they
 * are read, so no string is made. In Python the same sums took 35-55 us for a 1,300-character
 * message, most of it making the 2-gram strings and the set.
 *
 * Most of a text's grams are in no vocabulary: a filter in cache (text.h) answers for them
 * without reading the table, and a gram found is marked with the call's number in its slot, so
 * a repeat is not counted twice and nothing is cleared after a call (the call holds the GIL
 * throughout, so no two calls mark at once). Against a set of the call's grams cleared after
 * each text: 1.5% fewer instructions for all signals, and 5-6% less time, the two alternating in
 * one process (docs/benchmarks.md). */
#include "scan.h"

typedef struct {
    uint64_t key;
    double weight, square;
    uint32_t stamp;   /* the call that last counted this gram: each distinct gram counts once a text */
} GramSlot;

typedef struct {
    PyObject_HEAD
    GramSlot *slots;
    size_t mask;
    Filter filter;   /* most of a text's grams are in no vocabulary: these bits answer for them */
    int ascii;
    uint32_t calls;
} Grams;

static void Grams_dealloc(Grams *self) {
    PyMem_Free(self->slots);
    filter_free(&self->filter);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Grams(grams: list[str], weights: list[float], squares: list[float], ascii: bool) */
static int Grams_init(Grams *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    PyObject *grams, *weights, *squares;
    int ascii;
    if (!PyArg_ParseTuple(args, "O!O!O!p", &PyList_Type, &grams, &PyList_Type, &weights, &PyList_Type, &squares,
                          &ascii))
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(grams);
    if (PyList_GET_SIZE(weights) != n || PyList_GET_SIZE(squares) != n)
        return PyErr_SetString(PyExc_ValueError, "one weight and one square a gram"), -1;
    size_t size = slots_for(n);
    PyMem_Free(self->slots);
    if (!(self->slots = PyMem_Calloc(size, sizeof(GramSlot))) || filter_init(&self->filter, filter_bits_for(n)))
        return PyErr_NoMemory(), -1;
    self->mask = size - 1;
    self->ascii = ascii;
    self->calls = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *gram = PyList_GET_ITEM(grams, i);
        if (!PyUnicode_Check(gram)) return PyErr_SetString(PyExc_TypeError, "grams are str"), -1;
        double w = PyFloat_AsDouble(PyList_GET_ITEM(weights, i)), q = PyFloat_AsDouble(PyList_GET_ITEM(squares, i));
        if (PyErr_Occurred()) return -1;
        uint64_t h = hash_str(gram);
        size_t j = h & self->mask;
        while (self->slots[j].key && self->slots[j].key != h) j = (j + 1) & self->mask;
        if (self->slots[j].key) return PyErr_Format(PyExc_ValueError, "gram %R repeats or its hash does", gram), -1;
        self->slots[j] = (GramSlot){h, w, q, 0};
        filter_put(&self->filter, h);
    }
    return 0;
}

static int in_word(const Grams *g, Py_UCS4 c) {
    return g->ascii ? (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' : is_word(c);
}

/* Adds the gram `h`, which passed the filter, to the sums, once per text. */
static void count(Grams *g, uint64_t h, double *weighted, double *squares) {
    for (size_t j = h & g->mask; g->slots[j].key; j = (j + 1) & g->mask) {
        GramSlot *slot = &g->slots[j];
        if (slot->key == h) {
            if (slot->stamp != g->calls) {
                slot->stamp = g->calls;
                *weighted += slot->weight;
                *squares += slot->square;
            }
            return;
        }
    }
}

/* The grams that pass the filter wait here, their slots' cache lines asked for, and are counted a
 * batch at a time in text order, so the sums add up exactly as one at a time: the table (32 bytes
 * a slot, two slots a gram) is larger than a core's cache once the rest of a request has run, and
 * looked up one gram after another, each lookup waited for its line. All signals of a cold
 * 1,000-token conversation took 2% less time, alternating with the build without it in one process. */
#define BATCH 32
typedef struct {
    uint64_t hashes[BATCH];
    int n;
} Pending;

static void flush(Grams *g, Pending *p, double *weighted, double *squares) {
    for (int k = 0; k < p->n; k++) count(g, p->hashes[k], weighted, squares);
    p->n = 0;
}

static void queue(Grams *g, Pending *p, uint64_t h, double *weighted, double *squares) {
    if (!filter_may(&g->filter, h)) return;
    __builtin_prefetch(&g->slots[h & g->mask]);
    p->hashes[p->n++] = h;
    if (p->n == BATCH) flush(g, p, weighted, squares);
}

static PyObject *sums(PyObject *self, const Text *t) {
    Grams *g = (Grams *)self;
    if (++g->calls == 0) {   /* the stamps wrapped: none may look like this call's */
        for (size_t j = 0; j <= g->mask; j++) g->slots[j].stamp = 0;
        g->calls = 1;
    }
    double weighted = 0.0, squares = 0.0;
    uint64_t previous = 0;   /* the word before, hashed and not yet finished */
    int after_word = 0;
    Pending pending = {.n = 0};
    for (Py_ssize_t i = 0; i < t->len;) {
        if (!in_word(g, t->cps[i])) {
            i++;
            continue;
        }
        Py_ssize_t s = i;
        while (i < t->len && in_word(g, t->cps[i])) i++;
        if (i - s < 2) continue;
        uint64_t word = mix_cps(HASH_START, t->cps + s, i - s);
        queue(g, &pending, finish(word), &weighted, &squares);
        if (after_word) queue(g, &pending, finish(mix_cps(mix(previous, ' '), t->cps + s, i - s)), &weighted, &squares);
        previous = word;
        after_word = 1;
    }
    flush(g, &pending, &weighted, &squares);
    return Py_BuildValue("(dd)", weighted, squares);
}

static PyObject *Grams_sums(PyObject *self, PyObject *arg) { return on_text(self, arg, sums); }

static PyMethodDef Grams_methods[] = {
    {"sums", (PyCFunction)Grams_sums, METH_O, "sums(text) -> (sum of weights, sum of squares) over distinct grams"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject GramsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Grams",
    .tp_basicsize = sizeof(Grams),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Grams_init,
    .tp_dealloc = (destructor)Grams_dealloc,
    .tp_methods = Grams_methods,
    .tp_doc = "A text model's vocabulary of word 1- and 2-grams, summed over a text's distinct ones.",
};
