/* The module `classifiers._scan`: the scanner that runs the other parts over one text in one
 * call, and the module's functions and types. */
#include "scan.h"

unsigned char ASCII[128];

static void fill_ascii(void) {
    for (int c = 0; c < 128; c++) {
        int word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        ASCII[c] = (unsigned char)((word ? C_WORD | C_WORDISH : 0) | (c >= '0' && c <= '9' ? C_DIGIT : 0) |
                                   (c == '\'' || c == '&' ? C_WORDISH : 0));
    }
}

#define MAX_SPECS 8

typedef struct {
    PyObject_HEAD
    PyObject *anchors;   /* an Anchors */
    PyObject *model;     /* a Model */
    WindowSpec specs[MAX_SPECS];
    Py_ssize_t n_specs;
    int rare[MAX_SPECS];              /* `is_rare` of each spec */
    unsigned char rare_digits[128];   /* the rare specs' ASCII digits */
    int rare_decimal;                 /* whether a rare spec's digits are every decimal digit */
} Scanner;

static void Scanner_dealloc(Scanner *self) {
    Py_XDECREF(self->anchors);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Scanner(anchors: Anchors, model: Model, specs: tuple of window specs) */
static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    PyObject *specs, *anchors, *model;
    if (!PyArg_ParseTuple(args, "O!O!O!", &AnchorsType, &anchors, &ModelType, &model, &PyTuple_Type, &specs)) return -1;
    if (PyTuple_GET_SIZE(specs) > MAX_SPECS) return PyErr_SetString(PyExc_ValueError, "too many window specs"), -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(specs); i++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, i);
        if (!PyTuple_Check(spec)) return PyErr_SetString(PyExc_TypeError, "a window spec is a tuple"), -1;
        if (read_spec(spec, &self->specs[i])) return -1;
    }
    self->n_specs = PyTuple_GET_SIZE(specs);
    memset(self->rare_digits, 0, sizeof self->rare_digits);
    self->rare_decimal = 0;
    for (Py_ssize_t i = 0; i < self->n_specs; i++) {
        const WindowSpec *w = &self->specs[i];
        if (!(self->rare[i] = is_rare(w))) continue;
        for (int c = 0; c < 128; c++) self->rare_digits[c] |= w->ascii[c] & W_DIGIT;
        self->rare_decimal |= w->digits.decimal;
    }
    Py_INCREF(anchors);
    Py_XSETREF(self->anchors, anchors);
    Py_INCREF(model);
    Py_XSETREF(self->model, model);
    return 0;
}

/* scan(text) -> (anchors' hits, (windows per spec), the model's labeled spans) */
static PyObject *scan(PyObject *scanner, const Text *t) {
    Scanner *self = (Scanner *)scanner;
    PyObject *out = NULL, *hits = NULL, *spans = NULL, *windows = PyTuple_New(self->n_specs);
    Digits digits;   /* one pass finds where the rare specs' clusters can start, for all of them */
    if (find_digits(t, self->rare_digits, self->rare_decimal, &digits)) Py_CLEAR(windows);
    for (Py_ssize_t i = 0; windows && i < self->n_specs; i++) {
        PyObject *found = find_windows(t, &self->specs[i], self->rare[i] ? &digits : NULL);
        if (!found) Py_CLEAR(windows);
        else PyTuple_SET_ITEM(windows, i, found);
    }
    PyMem_Free(digits.at);
    if (windows && (hits = anchors_find(self->anchors, t)) && (spans = model_find(self->model, t)))
        out = PyTuple_Pack(3, hits, windows, spans);
    Py_XDECREF(hits);
    Py_XDECREF(windows);
    Py_XDECREF(spans);
    return out;
}

static PyObject *Scanner_scan(PyObject *self, PyObject *arg) { return on_text(self, arg, scan); }

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_O, "scan(text) -> (hits, windows per spec, labeled spans)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_doc = "Anchors, windows and the span model over one text in one call.",
};
static PyMethodDef module_functions[] = {
    {"counts", counts, METH_VARARGS, "counts(text, symbols) -> (spaces, newlines, digits, symbols, extra UTF-8 bytes, length)"},
    {"reading_cues", reading_cues, METH_O, "reading_cues(text) -> which of the privacy readings' tests the text passes"},
    {"any_in", any_in, METH_VARARGS, "any_in(text, ((first, last), ...)) -> whether a code point lies in a range"},
    {"windows", windows, METH_VARARGS, "windows(text, (digits, separators, max_gap, min_digits, min_separators, margin))"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_scan", .m_doc = NULL, .m_size = -1, .m_methods = module_functions};

static int add_type(PyObject *m, PyTypeObject *type, const char *name) {
    if (PyType_Ready(type) < 0) return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__scan(void) {
    fill_ascii();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (add_type(m, &ModelType, "Model") || add_type(m, &AnchorsType, "Anchors") || add_type(m, &ScannerType, "Scanner") ||
        add_type(m, &GramsType, "Grams") || add_type(m, &PiecesType, "Pieces") || add_type(m, &PhrasesType, "Phrases") ||
        add_type(m, &VocabularyType, "Vocabulary")) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
