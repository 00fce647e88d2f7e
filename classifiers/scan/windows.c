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
    /* Lengths, compared and added to offsets: negative or near-overflow ones are refused here. */
    const Py_ssize_t bound = PY_SSIZE_T_MAX >> 2;
    if (w->max_gap < 0 || w->min_digits < 0 || w->min_separators < 0 || w->margin < 0 || w->max_gap > bound ||
        w->margin > bound)
        return PyErr_SetString(PyExc_ValueError, "a window's lengths are whole numbers within range"), -1;
    if (w->separators.decimal) memset(&w->separators, 0, sizeof w->separators);   /* "" separators: none */
    const uint64_t digits_lo = w->digits.decimal ? 0x03FF000000000000ULL : w->digits.bits[0];
    if ((digits_lo & w->separators.bits[0]) || (w->digits.bits[1] & w->separators.bits[1]))
        return PyErr_SetString(PyExc_ValueError, "a window's digits and separators are different characters"), -1;
    for (Py_UCS4 c = 0; c < 128; c++)
        w->ascii[c] = (unsigned char)((in_set(c, &w->digits) ? W_DIGIT : 0) | (in_set(c, &w->separators) ? W_SEPARATOR : 0));
    return 0;
}

/* Whether c is one of the spec's digits, or of its separators (which are ASCII). */
static inline int is_window_digit(const WindowSpec *w, Py_UCS4 c) {
    return c < 128 ? w->ascii[c] & W_DIGIT : w->digits.decimal && Py_UNICODE_ISDECIMAL(c);
}
static inline int is_window_separator(const WindowSpec *w, Py_UCS4 c) { return c < 128 && (w->ascii[c] & W_SEPARATOR); }

static int append_window(PyObject *out, Py_ssize_t start, Py_ssize_t end) {
    PyObject *item = Py_BuildValue("(nn)", start, end);
    int failed = !item || PyList_Append(out, item);
    Py_XDECREF(item);
    return failed ? -1 : 0;
}

int is_rare(const WindowSpec *w) {
    for (Py_UCS4 c = 'A'; c <= 'z'; c++)
        if (is_ascii_letter(c) && (w->ascii[c] & W_DIGIT)) return 0;
    return 1;
}

int find_digits(const Text *t, const unsigned char digits[128], int decimal, Digits *out) {
    Py_ssize_t room = 0;
    out->at = NULL;
    out->n = 0;
    for (Py_ssize_t i = 0; i < t->len; i++) {
        const Py_UCS4 c = t->cps[i];
        if (!(c < 128 ? digits[c] : decimal && Py_UNICODE_ISDECIMAL(c))) continue;
        if (out->n == room) {
            room = room ? 2 * room : 64;
            Py_ssize_t *grown = PyMem_Realloc(out->at, sizeof(Py_ssize_t) * (size_t)room);
            if (!grown) {
                PyMem_Free(out->at);
                out->at = NULL;
                return PyErr_NoMemory(), -1;
            }
            out->at = grown;
        }
        out->at[out->n++] = i;
    }
    return 0;
}

PyObject *find_windows(const Text *t, const WindowSpec *w, const Digits *digits) {
    PyObject *out = PyList_New(0);
    Py_ssize_t open_start = -1, open_end = -1;   /* the window being widened */
    const Py_UCS4 *cps = t->cps;
    const Py_ssize_t n = t->len;
    Py_ssize_t next = 0;   /* in `digits` */
    for (Py_ssize_t i = 0; out && i < n;) {
        if (digits) {   /* most text has no digit: go from one to the next */
            while (next < digits->n && (digits->at[next] < i || !is_window_digit(w, cps[digits->at[next]]))) next++;
            if (next >= digits->n) break;
            i = digits->at[next];
        } else {
            while (i < n && !is_window_digit(w, cps[i])) i++;
            if (i >= n) break;
        }
        Py_ssize_t start = i, end = i + 1, count = 1, seps = 0;
        for (;;) {   /* extend over the digits that follow, then over a gap of separators before a digit */
            while (end < n && is_window_digit(w, cps[end])) end++, count++;
            Py_ssize_t k = end;
            while (k < n && k - end < w->max_gap && is_window_separator(w, cps[k])) k++;
            if (k == end || k >= n || !is_window_digit(w, cps[k])) break;
            seps += k - end;
            count++;
            end = k + 1;
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
    (void)module;  /* the signature CPython calls with */
    PyObject *text, *spec;
    Text t;
    WindowSpec w;
    if (!PyArg_ParseTuple(args, "UO!", &text, &PyTuple_Type, &spec) || read_spec(spec, &w) || read_text(text, &t))
        return NULL;
    PyObject *out = find_windows(&t, &w, NULL);
    release_text(&t);
    return out;
}
/* counts(text, symbols) -> (spaces, newlines, ASCII digits, symbols, extra UTF-8 bytes, length):
 * what the token estimate reads (classifiers/tokens.py); a lone surrogate is 3 bytes, as "surrogatepass" writes it.
 * Read in place, one loop per width of str: asked of every text, where the copy to code points cost
 * as much as the count. */
#define COUNT_CHARS(type)                                                                     \
    for (Py_ssize_t i = 0; i < n; i++) {                                                      \
        Py_UCS4 c = ((const type *)data)[i];                                                  \
        if (c < 128) {                                                                        \
            spaces += c == ' ';                                                               \
            newlines += c == '\n';                                                            \
            digits += c >= '0' && c <= '9';                                                   \
            marks += (symbols.bits[c >> 6] >> (c & 63)) & 1;                                  \
        } else {                                                                              \
            extra += c < 0x800 ? 1 : c < 0x10000 ? 2 : 3;                                     \
        }                                                                                     \
    }
PyObject *counts(PyObject *module, PyObject *args) {
    (void)module;  /* the signature CPython calls with */
    PyObject *text, *symbol_chars;
    CharSet symbols;
    if (!PyArg_ParseTuple(args, "UU", &text, &symbol_chars) || charset(symbol_chars, &symbols)) return NULL;
    Py_ssize_t spaces = 0, newlines = 0, digits = 0, marks = 0, extra = 0;
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    switch (PyUnicode_KIND(text)) {
        case PyUnicode_1BYTE_KIND: COUNT_CHARS(Py_UCS1) break;
        case PyUnicode_2BYTE_KIND: COUNT_CHARS(Py_UCS2) break;
        default: COUNT_CHARS(Py_UCS4) break;
    }
    return Py_BuildValue("(nnnnnn)", spaces, newlines, digits, marks, extra, n);
}
#undef COUNT_CHARS

/* reading_cues(text) -> int: which of the privacy readings' tests (classifiers/privacy/readings.py)
 * a text passes, in one pass read in place. Each bit is what a Python test says:
 *   CUE_ESCAPE   re's `\\u[0-9A-Fa-f]{4}` matches: a JSON escape
 *   CUE_PERCENT  "%" in text
 *   CUE_ENTITY   "&#" in text
 * Asked of every text: as `in` tests and a regex search, they cost 4 us a text. (A number broken
 * over lines is found by the scan's separated-number windows, classifiers/privacy/canonical.py.) */
enum { CUE_ESCAPE = 1, CUE_PERCENT = 2, CUE_ENTITY = 4 };

static inline int is_hex_char(Py_UCS4 c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f'); }

/* The ASCII characters a cue begins with: "%", "&", a backslash. */
static const unsigned char CUE_CHARS[128] = {['%'] = 1, ['&'] = 1, ['\\'] = 1};

/* whether the four characters from i are ASCII hexadecimal digits */
static int escape_at(int kind, const void *data, Py_ssize_t i) {
    for (Py_ssize_t k = i; k < i + 4; k++)
        if (!is_hex_char(PyUnicode_READ(kind, data, k))) return 0;
    return 1;
}

/* One loop per width of str: every cue begins with an ASCII character. */
#define READ_CUES(type)                                                                                  \
    for (Py_ssize_t i = 0; i < n; i++) {                                                                 \
        const Py_UCS4 c = ((const type *)data)[i];                                                       \
        if (c >= 128 || !CUE_CHARS[c]) continue;   /* most characters */                                  \
        if (c == '%') cues |= CUE_PERCENT;                                                               \
        else if (c == '&' && i + 1 < n && ((const type *)data)[i + 1] == '#') cues |= CUE_ENTITY;        \
        else if (c == '\\' && i + 5 < n && ((const type *)data)[i + 1] == 'u')                           \
            cues |= escape_at(kind, data, i + 2) ? CUE_ESCAPE : 0;                                       \
    }

PyObject *reading_cues(PyObject *module, PyObject *text) {
    (void)module;  /* the signature CPython calls with */
    if (!PyUnicode_Check(text)) return PyErr_SetString(PyExc_TypeError, "text must be str"), NULL;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int cues = 0;
    switch (kind) {
        case PyUnicode_1BYTE_KIND: READ_CUES(Py_UCS1) break;
        case PyUnicode_2BYTE_KIND: READ_CUES(Py_UCS2) break;
        default: READ_CUES(Py_UCS4) break;
    }
    return PyLong_FromLong(cues);
}
#undef READ_CUES

/* any_in(text, ranges) -> bool: whether a code point of `text` lies in one of `ranges`, a tuple of
 * (first, last) pairs. Read in place, without the copy a scan makes: it is asked of most non-ASCII
 * messages and answered no, where a regular expression's character class cost 100 instructions a
 * character. */
PyObject *any_in(PyObject *module, PyObject *args) {
    (void)module;  /* the signature CPython calls with */
    PyObject *text, *ranges;
    if (!PyArg_ParseTuple(args, "UO!", &text, &PyTuple_Type, &ranges)) return NULL;
    Py_ssize_t n_ranges = PyTuple_GET_SIZE(ranges);
    Py_UCS4 lo[64], hi[64], lowest = 0x10FFFF;
    if (n_ranges > 64) return PyErr_SetString(PyExc_ValueError, "at most 64 ranges"), NULL;
    for (Py_ssize_t r = 0; r < n_ranges; r++) {
        unsigned int first, last;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ranges, r), "II", &first, &last)) return NULL;
        lo[r] = first;
        hi[r] = last;
        if (first < lowest) lowest = first;
    }
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (lowest > PyUnicode_MAX_CHAR_VALUE(text)) Py_RETURN_FALSE;   /* this kind of str cannot hold one */
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < lowest) continue;
        for (Py_ssize_t r = 0; r < n_ranges; r++)
            if (c >= lo[r] && c <= hi[r]) Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}
