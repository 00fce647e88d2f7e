/* Pieces: the sums `classifiers.pieces.PieceModel.logit` takes over a text's word pieces.
 *
 * `classifiers/pieces.py` defines the pieces (and finds them in Python for training): each run of
 * non-space characters is "▁" + the run, split by longest match against the vocabulary, a
 * character no piece starts with as its UTF-8 bytes' pieces ("<0xC3>"), a line break as its byte
 * piece. Here each piece's score is keyed by the hash of its code points (text.h); at each
 * position the hashes of the next 1..longest characters are made in one pass and tried from the
 * longest down. In Python, with a cache of the runs seen before, the same sums took 15-25 us for
 * a 1,300-character message. */
#include "scan.h"

#define MAX_PIECE 64   /* code points (classifiers.pieces.LONGEST); SmolLM2's longest piece has 128 */

typedef struct {
    uint64_t key;
    double score;
} PieceSlot;

typedef struct {
    PyObject_HEAD
    PieceSlot *slots;
    size_t mask;
    Filter filter;   /* a run is looked up at every length up to the longest piece's: most are no piece */
    Py_ssize_t longest;
    double bytes[256];   /* the score of each byte's piece, "<0x00>".."<0xFF>" */
} Pieces;

static void Pieces_dealloc(Pieces *self) {
    PyMem_Free(self->slots);
    filter_free(&self->filter);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static const PieceSlot *piece_get(const Pieces *p, uint64_t h) {
    if (!filter_may(&p->filter, h)) return NULL;
    for (size_t j = h & p->mask; p->slots[j].key; j = (j + 1) & p->mask)
        if (p->slots[j].key == h) return &p->slots[j];
    return NULL;
}

/* Pieces(pieces: list[str], scores: list[float]) */
static int Pieces_init(Pieces *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    PyObject *pieces, *scores;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &pieces, &PyList_Type, &scores)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(pieces);
    if (PyList_GET_SIZE(scores) != n) return PyErr_SetString(PyExc_ValueError, "one score a piece"), -1;
    size_t size = slots_for(n);
    PyMem_Free(self->slots);
    if (!(self->slots = PyMem_Calloc(size, sizeof(PieceSlot))) || filter_init(&self->filter, filter_bits_for(n)))
        return PyErr_NoMemory(), -1;
    self->mask = size - 1;
    self->longest = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *piece = PyList_GET_ITEM(pieces, i);
        if (!PyUnicode_Check(piece) || PyUnicode_GET_LENGTH(piece) == 0 || PyUnicode_GET_LENGTH(piece) > MAX_PIECE)
            return PyErr_SetString(PyExc_ValueError, "a piece is a str of 1 to 64 characters"), -1;
        double score = PyFloat_AsDouble(PyList_GET_ITEM(scores, i));
        if (PyErr_Occurred()) return -1;
        uint64_t h = hash_str(piece);
        size_t j = h & self->mask;
        while (self->slots[j].key && self->slots[j].key != h) j = (j + 1) & self->mask;
        if (self->slots[j].key) return PyErr_Format(PyExc_ValueError, "piece %R repeats or its hash does", piece), -1;
        self->slots[j] = (PieceSlot){h, score};
        filter_put(&self->filter, h);
        if (PyUnicode_GET_LENGTH(piece) > self->longest) self->longest = PyUnicode_GET_LENGTH(piece);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        const PieceSlot *slot = piece_get(self, finish(mix_ascii(HASH_START, name)));
        if (!slot) return PyErr_Format(PyExc_ValueError, "no piece %s (the byte fallback)", name), -1;
        self->bytes[b] = slot->score;
    }
    return 0;
}

/* The UTF-8 bytes' pieces of one code point. */
static void add_bytes(const Pieces *p, Py_UCS4 c, double *total, Py_ssize_t *count) {
    unsigned char b[4];
    int n;
    if (c < 0x80) b[0] = (unsigned char)c, n = 1;
    else if (c < 0x800) b[0] = 0xC0 | (c >> 6), b[1] = 0x80 | (c & 0x3F), n = 2;
    else if (c < 0x10000) b[0] = 0xE0 | (c >> 12), b[1] = 0x80 | ((c >> 6) & 0x3F), b[2] = 0x80 | (c & 0x3F), n = 3;
    else
        b[0] = 0xF0 | (c >> 18), b[1] = 0x80 | ((c >> 12) & 0x3F), b[2] = 0x80 | ((c >> 6) & 0x3F),
        b[3] = 0x80 | (c & 0x3F), n = 4;
    for (int k = 0; k < n; k++) *total += p->bytes[b[k]];
    *count += n;
}

/* One run t[s:e], read as "▁" + the run. */
static void add_run(const Pieces *p, const Text *t, Py_ssize_t s, Py_ssize_t e, double *total, Py_ssize_t *count) {
    Py_ssize_t len = e - s + 1;   /* with the "▁" */
    uint64_t hashes[MAX_PIECE + 1];
    for (Py_ssize_t i = 0; i < len;) {
        Py_ssize_t most = len - i < p->longest ? len - i : p->longest;
        uint64_t h = HASH_START;
        for (Py_ssize_t k = 0; k < most; k++) {
            Py_ssize_t at_k = i + k;
            h = mix(h, at_k == 0 ? 0x2581 : t->cps[s + at_k - 1]);
            hashes[k + 1] = h;
        }
        Py_ssize_t k = most;
        const PieceSlot *slot = NULL;
        for (; k >= 1 && !(slot = piece_get(p, finish(hashes[k]))); k--) {
        }
        if (slot) {
            *total += slot->score;
            *count += 1;
            i += k;
        } else {   /* Llama's byte fallback */
            add_bytes(p, i == 0 ? 0x2581 : t->cps[s + i - 1], total, count);
            i += 1;
        }
    }
}

static PyObject *sums(PyObject *self, const Text *t) {
    const Pieces *p = (const Pieces *)self;
    double total = 0.0;
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < t->len;) {
        Py_UCS4 c = t->cps[i];
        if (Py_UNICODE_ISSPACE(c)) {
            if (c == '\n') total += p->bytes['\n'], count++;
            i++;
            continue;
        }
        Py_ssize_t s = i;
        while (i < t->len && !Py_UNICODE_ISSPACE(t->cps[i])) i++;
        add_run(p, t, s, i, &total, &count);
    }
    return Py_BuildValue("(dn)", total, count);
}

static PyObject *Pieces_sums(PyObject *self, PyObject *arg) { return on_text(self, arg, sums); }

static PyMethodDef Pieces_methods[] = {
    {"sums", (PyCFunction)Pieces_sums, METH_O, "sums(text) -> (sum of the pieces' scores, number of pieces)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject PiecesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Pieces",
    .tp_basicsize = sizeof(Pieces),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Pieces_init,
    .tp_dealloc = (destructor)Pieces_dealloc,
    .tp_methods = Pieces_methods,
    .tp_doc = "Word pieces' scores, summed over a text's pieces as classifiers.pieces finds them.",
};
