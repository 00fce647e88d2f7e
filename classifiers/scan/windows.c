/* Where number-like identifiers can be (`windows`), and the character counts behind the token
 * estimate (`counts`). */
#include "scan.h"

/* windows(text, digits, separators, max_gap, min_digits, min_separators, margin) -> [(start, end)]
 * Clusters of digit characters ("" means any decimal digit, as re's \d) joined by at most
 * `max_gap` separator characters, with at least `min_digits` digits and `min_separators`
 * separators inside, each widened by `margin` on both sides; windows that overlap are merged. */
int charset(PyObject *chars, CharSet *set) {
    memset(set, 0, sizeof *set);
    set->decimal = PyUnicode_GET_LENGTH(chars) == 0;
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(chars); i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(chars, i);
        if (c >= 128) return PyErr_SetString(PyExc_ValueError, "window characters are ASCII"), -1;
        set->bits[c >> 6] |= 1ULL << (c & 63);
    }
    return 0;
}

static inline int in_set(Py_UCS4 c, const CharSet *set) {
    if (set->decimal) return is_digit(c);
    return c < 128 && ((set->bits[c >> 6] >> (c & 63)) & 1);
}

/* spec: (digits, separators, max_gap, min_digits, min_separators, margin) */
int read_spec(PyObject *spec, WindowSpec *w) {
    PyObject *digits, *separators;
    if (!PyArg_ParseTuple(spec, "UUnnnn", &digits, &separators, &w->max_gap, &w->min_digits, &w->min_separators,
                          &w->margin) ||
        charset(digits, &w->digits) || charset(separators, &w->separators))
        return -1;
    if (w->separators.decimal) memset(&w->separators, 0, sizeof w->separators);   /* "" separators: none */
    return 0;
}

static int append_window(PyObject *out, Py_ssize_t start, Py_ssize_t end) {
    PyObject *item = Py_BuildValue("(nn)", start, end);
    int failed = !item || PyList_Append(out, item);
    Py_XDECREF(item);
    return failed ? -1 : 0;
}

PyObject *find_windows(const Text *t, const WindowSpec *w) {
    PyObject *out = PyList_New(0);
    Py_ssize_t open_start = -1, open_end = -1;   /* the window being widened */
    const Py_UCS4 *cps = t->cps;
    const Py_ssize_t n = t->len;
    const uint64_t lo = w->digits.bits[0], hi = w->digits.bits[1];
    for (Py_ssize_t i = 0; out && i < n;) {
        if (w->digits.decimal) {   /* most text has no digit here: tight loops to the next one */
            while (i < n && (cps[i] < 128 ? !(ASCII[cps[i]] & C_DIGIT) : !Py_UNICODE_ISDECIMAL(cps[i]))) i++;
        } else {
            for (; i < n; i++) {
                Py_UCS4 c = cps[i];
                if (c < 64 ? (lo >> c) & 1 : c < 128 && (hi >> (c - 64)) & 1) break;
            }
        }
        if (i >= n) break;
        Py_ssize_t start = i, end = i + 1, count = 1, seps = 0;
        for (Py_ssize_t j = end;;) {   /* extend over gaps of separators followed by a digit */
            Py_ssize_t k = j;
            while (k < t->len && k - j < w->max_gap && in_set(at(t, k), &w->separators)) k++;
            if (k >= t->len || !in_set(at(t, k), &w->digits)) break;
            seps += k - j;
            count++;
            end = j = k + 1;
        }
        i = end;
        if (count < w->min_digits || seps < w->min_separators) continue;
        Py_ssize_t ws = start > w->margin ? start - w->margin : 0, we = end + w->margin < t->len ? end + w->margin : t->len;
        if (open_start >= 0 && ws <= open_end) {
            open_end = we > open_end ? we : open_end;
            continue;
        }
        if (open_start >= 0 && append_window(out, open_start, open_end)) Py_CLEAR(out);
        open_start = ws;
        open_end = we;
    }
    if (out && open_start >= 0 && append_window(out, open_start, open_end)) Py_CLEAR(out);
    return out;
}

/* windows(text, spec) -> [(start, end)]: clusters of spec's digit characters ("" means any decimal
 * digit, as re's \d) joined by at most `max_gap` separator characters, with at least `min_digits`
 * digits and `min_separators` separators inside, each widened by `margin` on both sides; windows
 * that overlap are merged. */
PyObject *windows(PyObject *module, PyObject *args) {
    PyObject *text, *spec;
    Text t;
    WindowSpec w;
    if (!PyArg_ParseTuple(args, "UO!", &text, &PyTuple_Type, &spec) || read_spec(spec, &w) || read_text(text, &t))
        return NULL;
    PyObject *out = find_windows(&t, &w);
    release_text(&t);
    return out;
}
/* counts(text, symbols) -> (spaces, newlines, ASCII digits, symbols, extra UTF-8 bytes, length):
 * what the token estimate reads (classifiers/tokens.py); a lone surrogate is 3 bytes, as "surrogatepass" writes it */
PyObject *counts(PyObject *module, PyObject *args) {
    PyObject *text, *symbol_chars;
    Text t;
    CharSet symbols;
    if (!PyArg_ParseTuple(args, "UU", &text, &symbol_chars) || charset(symbol_chars, &symbols) || read_text(text, &t))
        return NULL;
    Py_ssize_t spaces = 0, newlines = 0, digits = 0, marks = 0, extra = 0;
    for (Py_ssize_t i = 0; i < t.len; i++) {
        Py_UCS4 c = t.cps[i];
        if (c < 128) {
            spaces += c == ' ';
            newlines += c == '\n';
            digits += c >= '0' && c <= '9';
            marks += (symbols.bits[c >> 6] >> (c & 63)) & 1;
        } else {
            extra += c < 0x800 ? 1 : c < 0x10000 ? 2 : 3;
        }
    }
    release_text(&t);
    return Py_BuildValue("(nnnnnn)", spaces, newlines, digits, marks, extra, t.len);
}
