/* Every occurrence of a set of literals in one pass: where the privacy patterns can start
 * (classifiers/privacy/anchors.py). Folded literals are found as re's IGNORECASE finds them. */
#include "scan.h"

/* Most positions start no literal; bit tests over the next four (folded) characters say so: first
 * of the two characters there, then of the four for literals of four characters or more, of
 * three ("api") and of two ("né"), so that a common English "her" or "pre" is not taken for the
 * start of "herpes" or "pregnan". The characters are packed seven bits each, anything past ASCII
 * as one of the 18 control characters 14 to 31 that text never holds (by its code point, so that
 * " четыре" and " пять" start chains apart, and no ASCII pair is taken for a literal's); two
 * index a bitmap of 2 KB, four or three are hashed with one multiply. */
#define GRAM_BITS 32768
static inline uint32_t seven(Py_UCS4 c) { return c < 128 ? c : 14 + c % 18; }
static inline unsigned gram(uint32_t packed) { return (packed * 0x9E3779B1u) >> (32 - 15); }
#define MASK2 ((1u << 14) - 1)
#define MASK3 ((1u << 21) - 1)
static inline int gram_bit(const uint64_t *bits, unsigned g) { return (bits[g >> 6] >> (g & 63)) & 1; }


typedef struct {
    Py_UCS4 *chars;   /* lower case when folded */
    Py_ssize_t len;
    int folded;
    int next;         /* the next literal in its chain (`head_key`), or -1 */
    uint32_t head;    /* its first four characters folded and packed as the scan packs the text's, */
    uint32_t mask;    /* so that one compare passes over most literals of a long chain */
} Literal;

typedef struct {
    PyObject_HEAD
    Literal *literals;
    Py_ssize_t count;
    PyObject *names;        /* tuple of the literals as given */
    int16_t *heads;         /* head_key -> first literal, or -1 */
    uint64_t grams[3][GRAM_BITS / 64];   /* [length - 2]: the folded first 2, 3 or 4 characters of a literal, hashed */
    uint64_t pairs[(MASK2 + 1) / 64];    /* the folded first two characters of a literal, packed: no hash */
} Anchors;

/* Literals are keyed by their first four characters folded (two or three for shorter ones), packed
 * as the scan packs the text's and hashed into a table small enough to stay in the L1 cache: a
 * chain holds the literals that begin alike ("account number", "account no", ...) and the few
 * others that hash with them. Keyed by their first two, "me" chained every "medical record" and
 * "membership" spelling, and every "medicine" in a text walked them. */
#define HEAD_SLOTS 2048
static inline int head_key(uint32_t packed) { return (int)((packed * 2654435761u) >> (32 - 11)); }

static void Anchors_dealloc(Anchors *self) {
    for (Py_ssize_t i = 0; i < self->count; i++) PyMem_Free(self->literals[i].chars);
    PyMem_Free(self->literals);
    PyMem_Free(self->heads);
    Py_XDECREF(self->names);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Anchors(exact: list[str], folded: list[str]); every literal starts with an ASCII character */
static int Anchors_init(Anchors *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    PyObject *exact, *folded;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &exact, &PyList_Type, &folded)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(exact) + PyList_GET_SIZE(folded);
    self->literals = PyMem_Calloc((size_t)n + 1, sizeof(Literal));
    self->names = PyTuple_New(n);
    self->heads = PyMem_Malloc(HEAD_SLOTS * sizeof(int16_t));
    if (!self->literals || !self->names || !self->heads || n > 30000) return PyErr_NoMemory(), -1;
    for (int k = 0; k < HEAD_SLOTS; k++) self->heads[k] = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int is_folded = i >= PyList_GET_SIZE(exact);
        PyObject *s = PyList_GET_ITEM(is_folded ? folded : exact, is_folded ? i - PyList_GET_SIZE(exact) : i);
        if (!PyUnicode_Check(s) || PyUnicode_GET_LENGTH(s) < 2 || PyUnicode_READ_CHAR(s, 0) >= 128)
            return PyErr_SetString(PyExc_ValueError, "a literal is a str of two characters or more that starts with an ASCII one"), -1;
        Literal *lit = &self->literals[i];
        lit->len = PyUnicode_GET_LENGTH(s);
        lit->chars = PyMem_Malloc((size_t)lit->len * sizeof(Py_UCS4));
        if (!lit->chars) return PyErr_NoMemory(), -1;
        for (Py_ssize_t j = 0; j < lit->len; j++) {
            Py_UCS4 c = PyUnicode_READ_CHAR(s, j);
            lit->chars[j] = is_folded ? fold(c) : c;
        }
        lit->folded = is_folded;
        self->count = i + 1;
        int n = lit->len < 4 ? (int)lit->len : 4;
        uint32_t packed = 0;
        for (int j = 0; j < n; j++) packed |= seven(fold(lit->chars[j])) << (7 * j);
        lit->head = packed;
        lit->mask = (1u << (7 * n)) - 1;
        unsigned g = gram(packed);
        self->grams[n - 2][g >> 6] |= 1ULL << (g & 63);
        self->pairs[(packed & MASK2) >> 6] |= 1ULL << (packed & 63);
        int key = head_key(packed);
        lit->next = self->heads[key];
        self->heads[key] = (int16_t)i;
        Py_INCREF(s);
        PyTuple_SET_ITEM(self->names, i, s);
    }
    return 0;
}

static int literal_at(const Literal *lit, const Text *t, Py_ssize_t i) {
    if (i + lit->len > t->len) return 0;
    for (Py_ssize_t j = 0; j < lit->len; j++) {
        Py_UCS4 c = at(t, i + j);
        if ((lit->folded ? fold(c) : c) != lit->chars[j]) return 0;
    }
    return 1;
}

/* {literal: [positions]} for the literals that occur */
PyObject *anchors_find(PyObject *anchors, const Text *text) {
    Anchors *self = (Anchors *)anchors;
    Text t = *text;
    PyObject *out = PyDict_New();
    uint32_t packed = seven(fold(at(&t, 0))) | seven(fold(at(&t, 1))) << 7 | seven(fold(at(&t, 2))) << 14;
    for (Py_ssize_t i = 0; out && i < t.len; i++, packed >>= 7) {
        packed |= seven(fold(at(&t, i + 3))) << 21;
        if (!gram_bit(self->pairs, packed & MASK2)) continue;   /* most pairs of characters begin no literal */
        if (!gram_bit(self->grams[2], gram(packed)) && !gram_bit(self->grams[1], gram(packed & MASK3)) &&
            !gram_bit(self->grams[0], gram(packed & MASK2)))
            continue;
        /* the literals of four characters or more that begin as the text does here, then of three, of two */
        static const uint32_t masks[3] = {(1u << 28) - 1, MASK3, MASK2};
        for (int m = 0; out && m < 3; m++)
            for (int k = self->heads[head_key(packed & masks[m])]; k >= 0; k = self->literals[k].next) {
                const Literal *lit = &self->literals[k];
                if (lit->mask != masks[m] || (packed & lit->mask) != lit->head || !literal_at(lit, &t, i)) continue;
                PyObject *name = PyTuple_GET_ITEM(self->names, k);
                PyObject *positions = PyDict_GetItemWithError(out, name);
                PyObject *position = PyLong_FromSsize_t(i);
                if (!positions && !PyErr_Occurred() && (positions = PyList_New(0))) {
                    if (PyDict_SetItem(out, name, positions)) Py_CLEAR(positions);
                    else Py_DECREF(positions);   /* the dict holds it */
                }
                if (!positions || !position || PyList_Append(positions, position)) Py_CLEAR(out);
                Py_XDECREF(position);
                if (!out) break;
            }
    }
    return out;
}

static PyObject *Anchors_find(PyObject *self, PyObject *arg) { return on_text(self, arg, anchors_find); }

static PyMethodDef Anchors_methods[] = {
    {"find", (PyCFunction)Anchors_find, METH_O, "find(text) -> {literal: [positions]}"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject AnchorsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Anchors",
    .tp_basicsize = sizeof(Anchors),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Anchors_init,
    .tp_dealloc = (destructor)Anchors_dealloc,
    .tp_methods = Anchors_methods,
    .tp_doc = "Literals found in one pass; folded ones as re's IGNORECASE finds them.",
};
