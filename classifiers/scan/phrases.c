/* Phrases: where a set of names of one to a few words stands in a text (the place names of
 * classifiers/privacy/places.py), longest first, in one pass.
 *
 * A word is what Python's `[^\W\d_][\w'’-]*` finds, left to right: it begins with a letter and
 * goes on over \w, apostrophes and hyphens. At each word, the phrases of `longest` words down to
 * one that begin there (on one line) are looked up by the hash of their code points, lower-cased,
 * each run of white space read as one space, as `" ".join(phrase.split()).lower()` reads it; a
 * phrase found is skipped over. In Python the same walk took 15-25 us for a short message that
 * holds a place name; here, with the filters below, 3.9 us for a message of 460 characters. */
#include "scan.h"

#define MAX_WORDS 8
/* Two bits of a filter in cache say a hash is surely not in a table, before the table (a cache
 * miss a look) is asked: one of the words phrases begin with (a quarter of English words are:
 * "the", "a", "in", "new"), one of the phrases themselves (at 42,000 phrases, about 0.6% of
 * other hashes pass it). */
#define FIRSTS_BITS (1u << 18)
#define PHRASES_BITS (1u << 20)

typedef struct {
    PyObject_HEAD
    uint64_t *keys;     /* the phrases' hashes; open addressing, 0 = empty */
    Filter firsts;      /* FIRSTS_BITS: each word a phrase begins with */
    Filter filter;      /* PHRASES_BITS: each phrase */
    size_t mask;
    int longest;
} Phrases;

static void Phrases_dealloc(Phrases *self) {
    PyMem_Free(self->keys);
    filter_free(&self->firsts);
    filter_free(&self->filter);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Phrases(phrases: list[str], longest: int): each phrase in lower case, its words one space apart */
static inline int is_letter(Py_UCS4 c) { return is_word(c) && !is_digit(c) && c != '_'; }
static inline int in_word(Py_UCS4 c) { return is_word(c) || is_apos(c) || c == '-'; }
static inline Py_UCS4 lower(Py_UCS4 c) { return c < 128 ? ((c >= 'A' && c <= 'Z') ? c + 32 : c) : Py_UNICODE_TOLOWER(c); }
static inline int is_space(Py_UCS4 c) { return c < 128 ? (c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31)) : Py_UNICODE_ISSPACE(c); }

static void put(uint64_t *table, size_t mask, uint64_t h) {
    size_t j = h & mask;
    while (table[j] && table[j] != h) j = (j + 1) & mask;
    table[j] = h;   /* a key given twice is one key */
}

static int holds(const uint64_t *table, size_t mask, uint64_t h) {
    for (size_t j = h & mask; table[j]; j = (j + 1) & mask)
        if (table[j] == h) return 1;
    return 0;
}

/* The hash of the word a phrase begins with, as a text's words are read; 0 if it begins with none. */
static uint64_t first_word_hash(PyObject *phrase) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(phrase);
    int kind = PyUnicode_KIND(phrase);
    const void *data = PyUnicode_DATA(phrase);
    if (!n || !is_letter(PyUnicode_READ(kind, data, 0))) return 0;
    uint64_t h = HASH_START;
    for (Py_ssize_t i = 0; i < n && in_word(PyUnicode_READ(kind, data, i)); i++) h = mix(h, PyUnicode_READ(kind, data, i));
    return finish(h);
}

static int Phrases_init(Phrases *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    PyObject *phrases;
    int longest;
    if (!PyArg_ParseTuple(args, "O!i", &PyList_Type, &phrases, &longest)) return -1;
    if (longest < 1 || longest > MAX_WORDS) return PyErr_SetString(PyExc_ValueError, "longest is 1 to 8 words"), -1;
    Py_ssize_t n = PyList_GET_SIZE(phrases);
    size_t size = slots_for(n);
    PyMem_Free(self->keys);
    if (!(self->keys = PyMem_Calloc(size, sizeof(uint64_t))) || filter_init(&self->filter, PHRASES_BITS) ||
        filter_init(&self->firsts, FIRSTS_BITS))
        return PyErr_NoMemory(), -1;
    self->mask = size - 1;
    self->longest = longest;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *phrase = PyList_GET_ITEM(phrases, i);
        if (!PyUnicode_Check(phrase)) return PyErr_SetString(PyExc_TypeError, "phrases are str"), -1;
        uint64_t h = hash_str(phrase), first = first_word_hash(phrase);
        put(self->keys, self->mask, h);
        filter_put(&self->filter, h);
        if (first) filter_put(&self->firsts, first);
    }
    return 0;
}

/* The hashes of the phrases of 1 .. n words that begin at word k, as
 * `" ".join(text[start:end].split()).lower()` reads each, in one pass; 0 for one that spans a
 * line break. `hashes[m - 1]` is that of m words. */
static void phrase_hashes(const Text *t, const Py_ssize_t *starts, const Py_ssize_t *ends, Py_ssize_t k, Py_ssize_t n,
                          uint64_t *hashes) {
    uint64_t h = HASH_START;
    int space = 0, broken = 0;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = starts[k]; m < n; i++) {
        Py_UCS4 c = t->cps[i];
        if (c == '\n') broken = 1;
        if (is_space(c)) space = 1;
        else {
            if (space) h = mix(h, ' ');
            space = 0;
            h = mix(h, lower(c));
        }
        if (i + 1 == ends[k + m]) hashes[m++] = broken ? 0 : finish(h);
    }
}

static uint64_t word_hash(const Text *t, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = HASH_START;
    for (Py_ssize_t i = start; i < end; i++) h = mix(h, lower(t->cps[i]));
    return finish(h);
}

static PyObject *find(PyObject *self, const Text *t) {
    const Phrases *p = (const Phrases *)self;
    PyObject *out = PyList_New(0);
    Py_ssize_t *starts = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(t->len + 1));
    Py_ssize_t *ends = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(t->len + 1));
    if (!out || !starts || !ends) {
        Py_XDECREF(out);
        PyMem_Free(starts);
        PyMem_Free(ends);
        return PyErr_NoMemory();
    }
    Py_ssize_t words = 0;
    for (Py_ssize_t i = 0; i < t->len;) {
        if (!is_letter(t->cps[i])) {
            i++;
            continue;
        }
        starts[words] = i;
        while (i < t->len && in_word(t->cps[i])) i++;
        ends[words++] = i;
    }
    uint64_t hashes[MAX_WORDS];
    for (Py_ssize_t k = 0; k < words;) {
        Py_ssize_t n = 0;
        if (filter_may(&p->firsts, word_hash(t, starts[k], ends[k]))) {
            n = words - k < p->longest ? words - k : p->longest;
            phrase_hashes(t, starts, ends, k, n, hashes);
            while (n > 0 && !(hashes[n - 1] && filter_may(&p->filter, hashes[n - 1]) &&
                              holds(p->keys, p->mask, hashes[n - 1])))
                n--;
        }
        if (!n) {
            k++;
            continue;
        }
        PyObject *span = Py_BuildValue("(nn)", starts[k], ends[k + n - 1]);
        if (!span || PyList_Append(out, span)) {
            Py_XDECREF(span);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(span);
        k += n;
    }
    PyMem_Free(starts);
    PyMem_Free(ends);
    return out;
}

static PyObject *Phrases_find(PyObject *self, PyObject *arg) { return on_text(self, arg, find); }

static PyMethodDef Phrases_methods[] = {
    {"find", (PyCFunction)Phrases_find, METH_O, "find(text) -> [(start, end)] of the phrases in it, longest first"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject PhrasesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Phrases",
    .tp_basicsize = sizeof(Phrases),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Phrases_init,
    .tp_dealloc = (destructor)Phrases_dealloc,
    .tp_methods = Phrases_methods,
    .tp_doc = "Where names of one to a few words stand in a text.",
};
