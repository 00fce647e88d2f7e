/* How many of a text's words a vocabulary holds: `classifiers/privacy/languages.py` tells the
 * language only of text with words outside English's commonest and the names, which is little
 * of what English-speaking users send. Counting them in Python (the words split out, a set built
 * and looked up) took 0.1-0.3 ms a 1,000-token conversation; here it is one pass.
 *
 * A word is a run of letters (str.isalpha), read in lower case a code point at a time (simple
 * case mapping: the vocabulary's words are read the same way).
 */
#include "scan.h"
#include "spans.h"

typedef struct {
    PyObject_HEAD
    KeySet words;
} Vocabulary;

static inline int is_letter(Py_UCS4 c) { return c < 128 ? is_ascii_letter(c) : Py_UNICODE_ISALPHA(c) != 0; }
static inline Py_UCS4 lowered(Py_UCS4 c) { return c < 128 ? ((c >= 'A' && c <= 'Z') ? c + 32 : c) : Py_UNICODE_TOLOWER(c); }

static void Vocabulary_dealloc(Vocabulary *self) {
    PyMem_Free(self->words.keys);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Vocabulary(words: list[str]): each word read as a text's words are */
static int Vocabulary_init(Vocabulary *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    PyObject *words;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &words)) return -1;
    PyMem_Free(self->words.keys);
    if (keyset_init(&self->words, PyList_GET_SIZE(words))) return PyErr_NoMemory(), -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(words); i++) {
        PyObject *word = PyList_GET_ITEM(words, i);
        if (!PyUnicode_Check(word)) return PyErr_SetString(PyExc_TypeError, "words are str"), -1;
        int kind = PyUnicode_KIND(word);
        const void *data = PyUnicode_DATA(word);
        uint64_t h = HASH_START;
        for (Py_ssize_t j = 0; j < PyUnicode_GET_LENGTH(word); j++) h = mix(h, lowered(PyUnicode_READ(kind, data, j)));
        keyset_add(&self->words, finish(h));
    }
    return 0;
}

/* Words in t[s:e] and how many of them the vocabulary does not hold. */
static void count_words(const Vocabulary *v, const Text *t, Py_ssize_t s, Py_ssize_t e, Py_ssize_t *words,
                        Py_ssize_t *others) {
    *words = *others = 0;
    for (Py_ssize_t i = s; i < e;) {
        if (!is_letter(t->cps[i])) {
            i++;
            continue;
        }
        uint64_t h = HASH_START;
        for (; i < e && is_letter(t->cps[i]); i++) h = mix(h, lowered(t->cps[i]));
        (*words)++;
        *others += !keyset_has(&v->words, finish(h));
    }
}

typedef struct {
    Py_ssize_t start, end, words, others;
} Piece;

/* A text's pieces: its lines, each longer than `cut` characters cut at its last space before
 * `cut` (past half of it), or at `cut`. Returns how many, or -1 with no memory. */
static Py_ssize_t pieces_of(const Text *t, Py_ssize_t cut, Piece **out) {
    Py_ssize_t n = 0, room = 16;
    Piece *p = PyMem_Malloc(room * sizeof(Piece));
    for (Py_ssize_t i = 0; p && i < t->len;) {
        if (t->cps[i] == '\n') {
            i++;
            continue;
        }
        Py_ssize_t end = i;
        while (end < t->len && t->cps[end] != '\n') end++;
        while (p && i < end) {
            Py_ssize_t stop = end;
            if (end - i > cut) {
                stop = i + cut;
                for (Py_ssize_t j = i + cut - 1; j >= i + cut / 2; j--)
                    if (t->cps[j] == ' ') {
                        stop = j;
                        break;
                    }
            }
            if (n == room) {
                Piece *grown = PyMem_Realloc(p, (room *= 2) * sizeof(Piece));
                if (!grown) PyMem_Free(p);
                p = grown;
                if (!p) break;
            }
            p[n++] = (Piece){i, stop, 0, 0};
            i = stop;
        }
        i = end;
    }
    *out = p;
    return p ? n : -1;
}

/* Appends (start, end, words, others) of stretch `p` to `found`, from its first letter or digit to
 * its last: a stretch is its words and numbers, not the quotes or the full stop around them.
 * Returns -1 on an error. */
static int append_stretch(PyObject *found, const Text *t, Piece p) {
    while (p.start < p.end && !is_word(t->cps[p.start])) p.start++;
    while (p.end > p.start && !is_word(t->cps[p.end - 1])) p.end--;
    PyObject *stretch = Py_BuildValue("(nnnn)", p.start, p.end, p.words, p.others);
    int failed = !stretch || PyList_Append(found, stretch);
    Py_XDECREF(stretch);
    return failed ? -1 : 0;
}

/* others(text, joined, cut, share, in_text) -> [(start, end, words, others), ...]: the stretches
 * of `text` of which `share` or more of the words are outside the vocabulary (with how many words
 * each holds, and how many of them are outside), none where fewer than `in_text` of the whole
 * text's are and under `share` of them. A stretch is a line, short ones joined until they hold
 * `joined` words (the last few with the stretch before them), long ones cut every `cut` characters
 * (`pieces_of`), from its first letter or digit to its last. */
static PyObject *others(PyObject *vocabulary, PyObject *args) {
    PyObject *text;
    Py_ssize_t joined, cut, in_text;
    double share;
    if (!PyArg_ParseTuple(args, "Unndn", &text, &joined, &cut, &share, &in_text)) return NULL;
    if (cut < 2) return PyErr_SetString(PyExc_ValueError, "cut must be 2 or more"), NULL;
    Text t;
    if (read_text(text, &t)) return NULL;
    Piece *p = NULL;
    Py_ssize_t n = pieces_of(&t, cut, &p), words = 0, others = 0;
    PyObject *found = n < 0 ? PyErr_NoMemory() : PyList_New(0);
    for (Py_ssize_t k = 0; found && k < n; k++) {
        count_words((Vocabulary *)vocabulary, &t, p[k].start, p[k].end, &p[k].words, &p[k].others);
        words += p[k].words;
        others += p[k].others;
    }
    if (found && (others >= in_text || others >= share * words)) {
        /* the pieces joined into stretches, in place (there are never more stretches than pieces) */
        Py_ssize_t m = 0;
        Piece held = {-1, 0, 0, 0};
        for (Py_ssize_t k = 0; k < n; k++) {
            held.start = held.start < 0 ? p[k].start : held.start;
            held.end = p[k].end;
            held.words += p[k].words;
            held.others += p[k].others;
            if (held.words >= joined) {
                p[m++] = held;
                held = (Piece){-1, 0, 0, 0};
            }
        }
        if (held.start >= 0 && m > 0) {   /* the last few words join the stretch before them */
            p[m - 1].end = held.end;
            p[m - 1].words += held.words;
            p[m - 1].others += held.others;
        }
        else if (held.start >= 0)
            p[m++] = held;
        for (Py_ssize_t k = 0; found && k < m; k++)
            if (p[k].others > 0 && p[k].others >= share * p[k].words && append_stretch(found, &t, p[k]))
                Py_CLEAR(found);
    }
    PyMem_Free(p);
    release_text(&t);
    return found;
}

static PyMethodDef Vocabulary_methods[] = {
    {"others", (PyCFunction)others, METH_VARARGS,
     "others(text, joined, cut, share, in_text) -> the stretches with `share` of their words outside the vocabulary"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject VocabularyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Vocabulary",
    .tp_basicsize = sizeof(Vocabulary),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Vocabulary_init,
    .tp_dealloc = (destructor)Vocabulary_dealloc,
    .tp_methods = Vocabulary_methods,
    .tp_doc = "A set of words, and how many of a text's words are outside it.",
};
