/* The span model's hot loop: candidate spans, their features and the linear labeler.
 *
 * `classifiers/privacy/contextual.py` is the documentation of what this computes: the candidate
 * shapes (written there as the regular expressions they stand for), the features, the labeler.
 * In Python the model cost about 20 us a candidate (building a dozen feature strings, a dict
 * lookup each) and a regex pass of 200 us over a 1,000-token conversation. Features are hashed
 * (FNV-1a over their code points) and never built as strings, except by `features()`, which
 * training calls so that the model learns from exactly what is scored.
 */
#include <math.h>

#include "scan.h"
#include "spans.h"

enum { UNIT, NUM_STREET, POSTAL, CAP };
static const char *KIND_NAMES[] = {"unit", "num-street", "postal", "cap"};

static const char *PARTICLES[] = {"van", "von", "de", "da", "del", "der", "den", "di", "du", "le", "la", "bin",
                                  "al", "y", "dos", "das", NULL};

static void Model_dealloc(Model *self) {
    PyMem_Free(self->common.keys);
    PyMem_Free(self->streets.keys);
    table_free(&self->weights);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Model(up: bytes, common: list[str], features: list[str], rows: list[sequence of 4 floats],
 *       bias: sequence of 4 floats, threshold: float, street_words: list[str]) */
static int Model_init(Model *self, PyObject *args, PyObject *kwargs) {
    (void)kwargs;  /* the signature CPython calls with */
    Py_buffer up;
    PyObject *common, *names, *rows, *bias, *streets;
    double threshold;
    if (!PyArg_ParseTuple(args, "y*O!O!O!OdO!", &up, &PyList_Type, &common, &PyList_Type, &names, &PyList_Type,
                          &rows, &bias, &threshold, &PyList_Type, &streets))
        return -1;
    if (up.len != UP_LIMIT || PyList_GET_SIZE(names) != PyList_GET_SIZE(rows)) {
        PyBuffer_Release(&up);
        PyErr_SetString(PyExc_ValueError, "up must be 0x500 bytes; one row per feature");
        return -1;
    }
    memcpy(self->up, up.buf, UP_LIMIT);
    for (int c = 0; c < 256; c++) self->starts[c] = self->up[c] || is_digit((Py_UCS4)c);
    PyBuffer_Release(&up);
    Py_ssize_t n = PyList_GET_SIZE(names);
    if (keyset_init(&self->common, PyList_GET_SIZE(common)) || keyset_init(&self->streets, PyList_GET_SIZE(streets)) ||
        table_init(&self->weights, n)) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(streets); i++) {
        PyObject *word = PyList_GET_ITEM(streets, i);
        if (!PyUnicode_Check(word)) return PyErr_SetString(PyExc_TypeError, "street words are str"), -1;
        keyset_add(&self->streets, hash_str(word));
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(common); i++) {
        PyObject *word = PyList_GET_ITEM(common, i);
        if (!PyUnicode_Check(word)) return PyErr_SetString(PyExc_TypeError, "common words are str"), -1;
        keyset_add(&self->common, hash_str(word));
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyList_GET_ITEM(names, i);
        PyObject *row = PySequence_Fast(PyList_GET_ITEM(rows, i), "a row is a sequence");
        if (!row || !PyUnicode_Check(name) || PySequence_Fast_GET_SIZE(row) != N_TYPES) {
            Py_XDECREF(row);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a row has one weight per type");
            return -1;
        }
        uint64_t h = hash_str(name);
        Slot *slot = table_slot(&self->weights, h);
        slot->key = h;
        self->weights.known[known_bit(h) >> 6] |= 1ULL << (known_bit(h) & 63);
        for (int k = 0; k < N_TYPES; k++) {
            double w = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(row, k)) * WEIGHT_SCALE;
            if (w > INT16_MAX || w < INT16_MIN || fabs(w - round(w)) > 1e-6) {
                Py_DECREF(row);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "weights have four decimals and stay below 3.2");
                return -1;
            }
            slot->weights[k] = (int16_t)lround(w);
        }
        Py_DECREF(row);
    }
    PyObject *b = PySequence_Fast(bias, "bias is a sequence");
    if (!b || PySequence_Fast_GET_SIZE(b) != N_TYPES) {
        Py_XDECREF(b);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "one bias per type");
        return -1;
    }
    for (int k = 0; k < N_TYPES; k++) self->bias[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(b, k));
    Py_DECREF(b);
    self->threshold = threshold;
    return PyErr_Occurred() ? -1 : 0;
}

/* --- candidate shapes ---------------------------------------------------------------------- */
/* CAPWORD: [UP][\w'’&]*(?:[.-][\w'’]+)*\.?   (t[i] is a capital; \w less the unspaced scripts) */
static Py_ssize_t capword(const Text *t, Py_ssize_t i) {
    Py_ssize_t e = i + 1;
    Py_UCS4 c;
    while ((c = at(t, e)) && (is_spaced_word(c) || is_apos(c) || c == '&')) e++;
    while (((c = at(t, e)) == '.' || c == '-') && (is_spaced_word(at(t, e + 1)) || is_apos(at(t, e + 1)))) {
        e += 2;
        while ((c = at(t, e)) && (is_spaced_word(c) || is_apos(c))) e++;
    }
    if (at(t, e) == '.') e++;
    return e;
}

/* `\d{1,max}[A-Za-z]?\b` after the digits starting at `i` (greedy, backtracking as re does) */
static Py_ssize_t number_then_boundary(const Text *t, Py_ssize_t i, int max) {
    int n = 0;
    while (n < max && is_digit(at(t, i + n))) n++;
    for (; n >= 1; n--) {
        Py_ssize_t p = i + n;
        if (is_ascii_letter(at(t, p)) && boundary(t, p + 1)) return p + 1;
        if (boundary(t, p)) return p;
    }
    return -1;
}

/* unit: \b(?:Suite|Apt\.?|Apartment|Unit|P\.?O\.? Box|Box|Flat|Floor|PSC)[ \t]*#?\d+[A-Za-z]?\b */
static Py_ssize_t unit(const Text *t, Py_ssize_t i) {
    static const char *WORDS[] = {"Suite", "Apt", "Apartment", "Unit", "P", "Box", "Flat", "Floor", "PSC", NULL};
    if (!boundary(t, i)) return -1;
    for (const char **w = WORDS; *w; w++) {
        if (!starts_with(t, i, *w)) continue;
        Py_ssize_t j = i + (Py_ssize_t)strlen(*w);
        if (!strcmp(*w, "Apt") && at(t, j) == '.') j++;
        if (!strcmp(*w, "P")) {   /* P\.?O\.? Box */
            if (at(t, j) == '.') j++;
            if (at(t, j) != 'O') continue;
            j++;
            if (at(t, j) == '.') j++;
            if (!starts_with(t, j, " Box")) continue;
            j += 4;
        }
        j = skip_blank(t, j);
        if (at(t, j) == '#') j++;
        if (!is_digit(at(t, j))) continue;
        Py_ssize_t e = number_then_boundary(t, j, INT32_MAX);
        if (e >= 0) return e;
    }
    return -1;
}

/* num-street: \b\d{1,6}[A-Za-z]?(?:[ \t]+[\w'’.-]+){0,3}[ \t]+CAPWORD(?:[ \t]+\d{1,5}[A-Za-z]?\b)?
 * where no word but an initial or an abbreviation ("N.", "St.") ends in a full stop, CAPWORD
 * is not "I": "$8 each. How" and "12 eggs. I drop" are two sentences, not a street; and no
 * number of one or two digits is followed by a month's name ("3 May 2021" is a date). */
static inline int street_char(Py_UCS4 c) { return is_word(c) || is_apos(c) || c == '.' || c == '-'; }

/* Whether a month's name or its abbreviation ("March", "Mar.", "Sept") starts at `i`. */
static int month_at(const Text *t, Py_ssize_t i) {
    static const char *MONTHS[] = {"January", "February", "March", "April", "May", "June", "July", "August",
                                   "September", "October", "November", "December", "Jan", "Feb", "Mar", "Apr",
                                   "Jun", "Jul", "Aug", "Sept", "Sep", "Oct", "Nov", "Dec", NULL};
    for (const char **w = MONTHS; *w; w++) {
        Py_ssize_t e = i + (Py_ssize_t)strlen(*w);
        if (starts_with(t, i, *w) && !is_word(at(t, e))) return 1;
    }
    return 0;
}

static Py_ssize_t num_street(const Model *m, const Text *t, Py_ssize_t i) {
    /* after a colon the number is a time's seconds or a ratio ("10:22:31 ERROR"), not a house */
    if (!is_digit(at(t, i)) || !boundary(t, i) || at(t, i - 1) == ':') return -1;
    Py_ssize_t p = i;
    while (is_digit(at(t, p))) p++;
    if (p - i > 6) return -1;
    /* a day before a month is a date ("born on 14 March 1879 in Ulm"), not a house number */
    if (p - i <= 2 && is_blank(at(t, p)) && month_at(t, skip_blank(t, p))) return -1;
    if (is_ascii_letter(at(t, p))) p++;
    Py_ssize_t starts[4] = {i, 0, 0, 0}, ends[4] = {p, 0, 0, 0};   /* the number, and each word after it */
    int words = 0;
    while (words < 3 && is_blank(at(t, ends[words]))) {
        Py_ssize_t q = skip_blank(t, ends[words]), w = q;
        if (!street_char(at(t, q))) break;
        while (street_char(at(t, q))) q++;
        if (at(t, q - 1) == '.' && q - w > 3) break;   /* a sentence ends here */
        starts[++words] = w;
        ends[words] = q;
    }
    for (int k = words; k >= 0; k--) {   /* the most words before a capitalized one */
        if (!is_blank(at(t, ends[k]))) continue;
        Py_ssize_t q = skip_blank(t, ends[k]);
        if (!is_up(m, at(t, q))) continue;
        /* a day and its month are a date: "12345 shipped on 3 May 2021" holds no street */
        if (ends[k] - starts[k] <= 2 && is_digit(at(t, starts[k])) && is_digit(at(t, ends[k] - 1)) && month_at(t, q))
            continue;
        Py_ssize_t e = capword(t, q);
        if (e == q + 1 && at(t, q) == 'I') continue;
        if (is_blank(at(t, e))) {
            Py_ssize_t s = skip_blank(t, e);
            if (is_digit(at(t, s))) {
                Py_ssize_t house = number_then_boundary(t, s, 5);
                if (house >= 0) return house;
            }
        }
        return e;
    }
    return -1;
}

/* postal: \b(?:[A-Z]{2}[ \t]+\d{5}(?:-\d{4})?|\d{4,5}[ \t]+[UP][\w'’-]+)\b */
static Py_ssize_t postal(const Model *m, const Text *t, Py_ssize_t i) {
    if (!boundary(t, i)) return -1;
    Py_UCS4 a = at(t, i), b = at(t, i + 1);
    if (a >= 'A' && a <= 'Z' && b >= 'A' && b <= 'Z' && is_blank(at(t, i + 2))) {
        Py_ssize_t q = skip_blank(t, i + 2);
        int n = 0;
        while (n < 5 && is_digit(at(t, q + n))) n++;
        if (n == 5) {
            Py_ssize_t p = q + 5;
            if (at(t, p) == '-' && is_digit(at(t, p + 1)) && is_digit(at(t, p + 2)) && is_digit(at(t, p + 3)) &&
                is_digit(at(t, p + 4)) && boundary(t, p + 5))
                return p + 5;
            if (boundary(t, p)) return p;
        }
    }
    int digits = 0;
    while (digits < 5 && is_digit(at(t, i + digits))) digits++;
    for (; digits >= 4; digits--) {
        Py_ssize_t p = i + digits;
        if (!is_blank(at(t, p))) continue;
        Py_ssize_t q = skip_blank(t, p);
        if (!is_up(m, at(t, q))) continue;
        Py_ssize_t e = q + 1;
        Py_UCS4 c;
        while ((c = at(t, e)) && (is_word(c) || is_apos(c) || c == '-')) e++;
        for (; e > q + 1; e--)
            if (boundary(t, e)) return e;
    }
    return -1;
}

/* particle followed by [ \t]+ and a capital: "van", "de", "y" ... */
static Py_ssize_t particle(const Model *m, const Text *t, Py_ssize_t q) {
    Py_UCS4 c = at(t, q);
    if (c < 'a' || c > 'y') return -1;   /* every particle is lower case */
    for (const char **w = PARTICLES; *w; w++) {
        if (!starts_with(t, q, *w)) continue;
        Py_ssize_t e = q + (Py_ssize_t)strlen(*w);
        if (is_blank(at(t, e)) && is_up(m, at(t, skip_blank(t, e)))) return e;
    }
    return -1;
}

/* Whether the full stop that ends the CAPWORD t[s:e] ends a sentence: not after an initial, a
 * dotted acronym ("U.S."), a word of three letters or fewer ("St.", "Mr.", "Inc.") or one of a
 * few longer abbreviations ("Prof. Wang"). "Neil Stephenson." is a name and a full stop; "French.
 * Read the story" is two sentences. */
static const char *LONG_ABBREVIATIONS[] = {"Prof", "Corp", "Dept", "Capt", "Univ", NULL};
static int ends_sentence(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    if (at(t, e - 1) != '.' || e - 1 - s <= 3) return 0;
    for (Py_ssize_t i = s; i < e - 1; i++)
        if (at(t, i) == '.') return 0;
    for (const char **a = LONG_ABBREVIATIONS; *a; a++) {
        Py_ssize_t n = (Py_ssize_t)strlen(*a), j = 0;
        while (j < n && j < e - 1 - s && at(t, s + j) == (Py_UCS4)(*a)[j]) j++;
        if (j == n && n == e - 1 - s) return 0;
    }
    return 1;
}

/* cap: (?<![\w@/])CAPWORD(?:[ \t]+(?:CAPWORD|&|PARTICLE(?=[ \t]+[UP]))){0,4}
 * (\w less the unspaced scripts: "我选择的是Nvidia"), ending, without its full stop, at a word
 * whose full stop ends a sentence */
static Py_ssize_t cap(const Model *m, const Text *t, Py_ssize_t i) {
    Py_UCS4 before = at(t, i - 1);
    if (!is_up(m, at(t, i)) || is_spaced_word(before) || before == '@' || before == '/') return -1;
    Py_ssize_t e = capword(t, i);
    if (ends_sentence(t, i, e)) return e - 1;
    for (int k = 0; k < 4 && is_blank(at(t, e)); k++) {
        Py_ssize_t q = skip_blank(t, e), p;
        if (is_up(m, at(t, q))) {
            e = capword(t, q);
            if (ends_sentence(t, q, e)) return e - 1;
        }
        else if (at(t, q) == '&')
            e = q + 1;
        else if ((p = particle(m, t, q)) >= 0)
            e = p;
        else
            break;
    }
    return e;
}

/* --- words, lower case, common words ------------------------------------------------------- */
/* str.lower() of t[s:e] into out (room for 3 code points per character); returns the length.
 * ASCII is lowered here; other words by str.lower itself (full case mapping, final sigma). */
static Py_ssize_t lower(const Text *t, Py_ssize_t s, Py_ssize_t e, Py_UCS4 *out) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = s; i < e; i++) {
        Py_UCS4 c = at(t, i);
        if (c >= 128) {
            PyObject *word = PyUnicode_Substring(t->object, s, e);
            PyObject *lowered = word ? PyObject_CallMethod(word, "lower", NULL) : NULL;
            Py_XDECREF(word);
            if (!lowered || PyUnicode_GET_LENGTH(lowered) > 3 * (e - s)) {   /* never: lower is at most 3x */
                PyErr_Clear();
                Py_XDECREF(lowered);
                for (n = 0, i = s; i < e; i++) out[n++] = Py_UNICODE_TOLOWER(at(t, i));
                return n;
            }
            n = PyUnicode_GET_LENGTH(lowered);
            for (Py_ssize_t j = 0; j < n; j++) out[j] = PyUnicode_READ_CHAR(lowered, j);
            Py_DECREF(lowered);
            return n;
        }
        out[n++] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
    }
    return n;
}

/* Marks a line or a quotation opens with, which leave the word after them where the sentence
 * starts: markdown's bullets, emphasis, headings and quotes ("- Patient Leonie", "> Hi Cory",
 * "**Call Diego"), other bullets and dashes, and opening quotes. */
static int is_opening_mark(Py_UCS4 c) {
    return c == '-' || c == '*' || c == '_' || c == '#' || c == '>' || c == '`' || c == '[' || c == '\'' ||
           c == 0x2022 || c == 0x2013 || c == 0x2014 || c == 0x2018 || c == 0xAB;
}

static int at_sentence_start(const Text *t, Py_ssize_t start) {
    Py_ssize_t i = start - 1;
    while (i >= 0 && (is_blank(at(t, i)) || is_opening_mark(at(t, i)))) i--;
    if (i < 0) return 1;
    Py_UCS4 c = at(t, i);
    return c == '.' || c == '!' || c == '?' || c == ':' || c == '\n' || c == '"' || c == 0x201C || c == '(';
}

static int ensure_scratch(Scratch *m, Py_ssize_t chars) {
    if (chars * 3 + 64 <= m->size) return 0;
    Py_ssize_t size = chars * 3 + 64;
    Py_UCS4 *grown = PyMem_Realloc(m->buf, (size_t)size * sizeof(Py_UCS4));
    if (!grown) return PyErr_NoMemory(), -1;
    m->buf = grown;
    m->size = size;
    return 0;
}

/* The next candidate at or after *pos; returns 0 when there is none. Capitalized runs lose a
 * first word that is only capitalized because a sentence starts with it. */
/* The next position at or after i where a candidate can start (a capital or a digit). */
static Py_ssize_t skip_to_start(const Model *m, const Text *t, Py_ssize_t i) {
    Py_ssize_t n = t->len;
    for (; i < n; i++) {
        Py_UCS4 c = t->cps[i];
        if (c < 256 ? m->starts[c] : is_up(m, c) || is_digit(c)) return i;
    }
    return n;
}

static int next_candidate(Model *m, const Text *t, Scratch *scratch, Py_ssize_t *pos, int *kind, Py_ssize_t *start,
                          Py_ssize_t *end) {
    for (Py_ssize_t i = *pos; (i = skip_to_start(m, t, i)) < t->len;) {
        Py_UCS4 c = at(t, i);
        Py_ssize_t e = -1;
        int k = -1;
        if (is_up(m, c) || is_digit(c)) {
            if ((e = unit(t, i)) >= 0) k = UNIT;
            else if ((e = num_street(m, t, i)) >= 0) k = NUM_STREET;
            else if ((e = postal(m, t, i)) >= 0) k = POSTAL;
            else if ((e = cap(m, t, i)) >= 0) k = CAP;
        }
        if (k < 0) {
            i++;
            continue;
        }
        Py_ssize_t s = i;
        i = e;
        if (k == CAP) {
            Py_ssize_t space = s;
            while (space < e && at(t, space) != ' ') space++;
            if (e - s <= 12 && space == e) {   /* one word: skip it when common ("I", "A.", "Answer") */
                Py_ssize_t stripped = e;
                while (stripped > s && at(t, stripped - 1) == '.') stripped--;
                if (ensure_scratch(scratch, e - s)) return -1;
                Py_ssize_t n = lower(t, s, stripped, scratch->buf);
                if (n < 2 || is_common(m, scratch->buf, n)) continue;
            }
            if (at_sentence_start(t, s)) {
                Py_ssize_t first = s;
                while (first < e && !is_blank(at(t, first))) first++;
                Py_ssize_t stripped = first;
                while (stripped > s && at(t, stripped - 1) == '.') stripped--;
                if (ensure_scratch(scratch, first - s)) return -1;
                if (is_common(m, scratch->buf, lower(t, s, stripped, scratch->buf))) {
                    s = skip_blank(t, first);
                    if (s >= e) continue;
                }
            }
        }
        *pos = i;
        *kind = k;
        *start = s;
        *end = e;
        return 1;
    }
    *pos = t->len;
    return 0;
}

/* --- features ------------------------------------------------------------------------------ */
/* A feature is a name ("w=") and code points; the labeler hashes it, training reads it. */
typedef struct {
    uint64_t hashes[MAX_FEATURES];
    int n;
    PyObject *names;   /* a list to append the strings to, or NULL */
    int failed;
} Features;

static void emit(Features *f, const char *prefix, const Py_UCS4 *cps, Py_ssize_t n, const char *suffix) {
    if (f->n >= MAX_FEATURES || f->failed) return;
    uint64_t h = mix_cps(mix_ascii(HASH_START, prefix), cps, n);
    if (suffix) h = mix_ascii(h, suffix);
    h = finish(h);
    for (int i = 0; i < f->n; i++)
        if (f->hashes[i] == h) return;   /* a feature counts once, as in training */
    f->hashes[f->n++] = h;
    if (!f->names) return;
    Py_ssize_t a = (Py_ssize_t)strlen(prefix), b = suffix ? (Py_ssize_t)strlen(suffix) : 0;
    PyObject *s = PyUnicode_New(a + n + b, 0x10FFFF);
    if (!s) {
        f->failed = 1;
        return;
    }
    for (Py_ssize_t i = 0; i < a; i++) PyUnicode_WRITE(PyUnicode_4BYTE_KIND, PyUnicode_DATA(s), i, (Py_UCS4)prefix[i]);
    for (Py_ssize_t i = 0; i < n; i++) PyUnicode_WRITE(PyUnicode_4BYTE_KIND, PyUnicode_DATA(s), a + i, cps[i]);
    for (Py_ssize_t i = 0; i < b; i++) PyUnicode_WRITE(PyUnicode_4BYTE_KIND, PyUnicode_DATA(s), a + n + i, (Py_UCS4)suffix[i]);
    /* PyUnicode_New(.., 0x10FFFF) is 4-byte; compact it to the canonical kind so it equals str literals */
    PyObject *canonical = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, PyUnicode_DATA(s), a + n + b);
    Py_DECREF(s);
    if (!canonical || PyList_Append(f->names, canonical)) f->failed = 1;
    Py_XDECREF(canonical);
}

static void emit_ascii(Features *f, const char *name) { emit(f, name, NULL, 0, NULL); }

static const char *shape(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    int digits = 1, cased = 0, upper = 1;
    for (Py_ssize_t i = s; i < e; i++) {
        Py_UCS4 c = at(t, i);
        if (!is_digit_char(c)) digits = 0;
        if (c < 128) {   /* the Unicode tables' calls only past ASCII */
            if (c >= 'a' && c <= 'z') upper = 0;
            else if (c >= 'A' && c <= 'Z') cased = 1;
        } else if (Py_UNICODE_ISLOWER(c) || Py_UNICODE_ISTITLE(c)) upper = 0;
        else if (Py_UNICODE_ISUPPER(c)) cased = 1;
    }
    if (digits) return "d";
    if (upper && cased) return e - s > 1 ? "XX" : "X";
    return Py_UNICODE_ISUPPER(at(t, s)) ? "Xx" : "x";
}

typedef struct {
    Py_ssize_t start, end;
} Span;

/* The runs of [\w'’&] in t[s:e], at most `max` of them, or the last `max` when `last`. */
/* The first `max` runs of [\w'’&] in t[s:e]. */
static int first_words(const Text *t, Py_ssize_t s, Py_ssize_t e, Span *out, int max) {
    int n = 0;
    for (Py_ssize_t i = s; i < e && n < max;) {
        if (!word_char(t->cps[i])) {
            i++;
            continue;
        }
        Py_ssize_t j = i;
        while (j < e && word_char(t->cps[j])) j++;
        out[n++] = (Span){i, j};
        i = j;
    }
    return n;
}

/* The last `max` runs of [\w'’&] in t[s:e] (a run cut by s counts from s), in text order:
 * read backwards from e, so only what is needed is looked at. */
static int last_words(const Text *t, Py_ssize_t s, Py_ssize_t e, Span *out, int max) {
    Span found[2];
    int n = 0;
    for (Py_ssize_t i = e; i > s && n < max && n < 2;) {
        if (!word_char(t->cps[i - 1])) {
            i--;
            continue;
        }
        Py_ssize_t j = i;
        while (j > s && word_char(t->cps[j - 1])) j--;
        found[n++] = (Span){j, i};
        i = j;
    }
    for (int k = 0; k < n; k++) out[k] = found[n - 1 - k];
    return n;
}

static int features(Model *m, const Text *t, Scratch *scratch, int kind, Py_ssize_t start, Py_ssize_t end,
                    Features *f) {
    Span spans[5], before[2], after[1];
    if (ensure_scratch(scratch, (end - start) + 80)) return -1;   /* the words, the last again, the context */
    /* One pass over the words: all count for n= and common=, the first five are named, and the
     * last one is kept (lower-cased into the scratch buffer as they come). */
    Py_UCS4 *buf = scratch->buf, *lw[5], *last = NULL;
    Py_ssize_t ln[5], last_n = 0, used = 0, count = 0, commons = 0;
    int named = 0;
    for (Py_ssize_t i = start; i < end;) {
        if (!word_char(at(t, i))) {
            i++;
            continue;
        }
        Py_ssize_t j = i;
        while (j < end && word_char(at(t, j))) j++;
        Py_UCS4 *word = buf + used;
        Py_ssize_t n = lower(t, i, j, word);
        commons += is_common(m, word, n);
        if (named < 5) {
            spans[named] = (Span){i, j};
            lw[named] = word;
            ln[named++] = n;
            used += n;
        }
        last = word;
        last_n = n;
        count++;
        i = j;
    }
    if (!count) return 0;
    if (count > 5) used += last_n;   /* a sixth word or later was lowered just past the kept ones: keep it */

    static const char *WORD_COUNTS[] = {"n=0", "n=1", "n=2", "n=3", "n=4"};
    emit(f, "gen=", NULL, 0, KIND_NAMES[kind]);
    emit_ascii(f, WORD_COUNTS[count < 4 ? count : 4]);
    {
        Py_UCS4 shapes[4 * 3];
        Py_ssize_t n = 0;
        for (int k = 0; k < named && k < 4; k++) {
            if (k) shapes[n++] = ' ';
            for (const char *s = shape(t, spans[k].start, spans[k].end); *s; s++) shapes[n++] = (Py_UCS4)*s;
        }
        emit(f, "shape=", shapes, n, NULL);
    }
    emit(f, "first=", lw[0], ln[0], NULL);
    emit(f, "last=", last, last_n, NULL);
    emit(f, "lsuf=", last + (last_n > 4 ? last_n - 4 : 0), last_n > 4 ? 4 : last_n, NULL);
    emit_ascii(f, at_sentence_start(t, start) ? "bos" : "mid");
    emit_ascii(f, is_common(m, lw[0], ln[0]) ? "common1" : "rare1");
    for (int k = 0; k < named; k++) emit(f, "w=", lw[k], ln[k], NULL);
    for (int k = 0; k < named; k++)
        if (ln[k] > 3) emit(f, "suf=", lw[k] + ln[k] - 3, 3, NULL);
    for (int k = 0; k < named; k++)
        if (ln[k] > 3) emit(f, "pre=", lw[k], 3, NULL);
    emit_ascii(f, commons * 2 / count == 0 ? "common=0" : commons * 2 / count == 1 ? "common=1" : "common=2");
    Py_UCS4 *ctx = buf + used;
    int nb = last_words(t, start > 40 ? start - 40 : 0, start, before, 2);
    if (nb) {
        Py_ssize_t n = lower(t, before[nb - 1].start, before[nb - 1].end, ctx);
        emit(f, "l1=", ctx, n, NULL);
        n = 0;
        for (int k = 0; k < nb; k++) {
            if (k) ctx[n++] = ' ';
            n += lower(t, before[k].start, before[k].end, ctx + n);
        }
        emit(f, "l2=", ctx, n, NULL);
    } else {
        emit_ascii(f, "l1=<s>");
    }
    if (first_words(t, end, end + 30 < t->len ? end + 30 : t->len, after, 1))
        emit(f, "r1=", ctx, lower(t, after[0].start, after[0].end, ctx), NULL);
    else
        emit_ascii(f, "r1=</s>");
    for (Py_ssize_t i = start; i < end; i++)
        if (is_digit_char(at(t, i))) {
            emit_ascii(f, "digit");
            break;
        }
    return f->failed ? -1 : 1;
}

/* --- Python interface ---------------------------------------------------------------------- */
static PyObject *Model_candidates(Model *self, PyObject *arg) {
    Text t;
    Scratch scratch = {NULL, 0};
    if (read_text(arg, &t)) return NULL;
    PyObject *out = PyList_New(0);
    Py_ssize_t pos = 0, start, end;
    int kind, found;
    while (out && (found = next_candidate(self, &t, &scratch, &pos, &kind, &start, &end)) > 0) {
        PyObject *item = Py_BuildValue("(snn)", KIND_NAMES[kind], start, end);
        if (!item || PyList_Append(out, item)) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    if (out && found < 0) Py_CLEAR(out);
    PyMem_Free(scratch.buf);
    release_text(&t);
    return out;
}

static PyObject *Model_features(Model *self, PyObject *args) {
    PyObject *text;
    const char *kind_name;
    Py_ssize_t start, end;
    Text t;
    Scratch scratch = {NULL, 0};
    if (!PyArg_ParseTuple(args, "Usnn", &text, &kind_name, &start, &end) || read_text(text, &t)) return NULL;
    int kind = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(kind_name, KIND_NAMES[k])) kind = k;
    Features f = {.n = 0, .names = NULL, .failed = 0};
    if (kind < 0 || start < 0 || end > t.len || start > end)
        PyErr_SetString(PyExc_ValueError, "unknown kind or span");
    else if ((f.names = PyList_New(0)) && features(self, &t, &scratch, kind, start, end, &f) < 0)
        Py_CLEAR(f.names);
    PyMem_Free(scratch.buf);
    release_text(&t);
    return f.names;
}

/* [(type index, start, end, confidence)] for the candidates not labeled O */
PyObject *model_find(PyObject *model, const Text *text) {
    Model *self = (Model *)model;
    Text t = *text;
    Scratch scratch = {NULL, 0};
    Labeled *labeled = NULL;
    Py_ssize_t count = 0, room = 0, pos = 0, start, end;
    int kind, found, failed = 0;
    while (!failed && (found = next_candidate(self, &t, &scratch, &pos, &kind, &start, &end)) > 0) {
        Features f;   /* not zeroed: `n` says how many hashes are set */
        f.n = 0;
        f.names = NULL;
        f.failed = 0;
        int ok = features(self, &t, &scratch, kind, start, end, &f);
        if (ok < 0) {
            failed = 1;
            break;
        }
        if (!ok) continue;
        int32_t sums[N_TYPES] = {0};
        for (int i = 0; i < f.n; i++) {
            const Slot *slot = table_get(&self->weights, f.hashes[i]);
            if (slot)
                for (int k = 0; k < N_TYPES; k++) sums[k] += slot->weights[k];
        }
        double score[N_TYPES];
        for (int k = 0; k < N_TYPES; k++) score[k] = self->bias[k] + sums[k] / WEIGHT_SCALE;
        /* the likeliest type other than none, with the chance that it is one of them at all:
         * 1 - P(none), which a low threshold reads as "possibly a name" */
        int best = 1;
        for (int k = 2; k < N_TYPES; k++)
            if (score[k] > score[best]) best = k;
        double total = 0, top = score[0] > score[best] ? score[0] : score[best];
        for (int k = 0; k < N_TYPES; k++) total += exp(score[k] - top);
        double confidence = 1.0 - exp(score[0] - top) / total;
        if (confidence < self->threshold) continue;
        int name = score[ORGANIZATION] > score[PERSON] ? ORGANIZATION : PERSON;
        double named = exp(score[PERSON] - top) + exp(score[ORGANIZATION] - top);
        /* only a run of capitalized words may be a name: "8 each. How" is no one's */
        double name_confidence = kind == CAP ? named / (named + exp(score[0] - top)) : 0.0;
        if (count == room) {
            room = room ? room * 2 : 16;
            Labeled *grown = PyMem_Realloc(labeled, (size_t)room * sizeof(Labeled));
            if (!grown) {
                PyErr_NoMemory();
                failed = 1;
                break;
            }
            labeled = grown;
        }
        labeled[count++] = (Labeled){best, start, end, confidence, name, name_confidence};
    }
    PyObject *out = NULL;
    if (!failed && found >= 0 && (count = settle_addresses(self, &t, labeled, count)) >= 0 && (out = PyList_New(count))) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *item = Py_BuildValue("(innd)", labeled[i].label, labeled[i].start, labeled[i].end, labeled[i].confidence);
            if (!item) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, i, item);
        }
    }
    PyMem_Free(labeled);
    PyMem_Free(scratch.buf);
    return out;
}

static PyObject *Model_find(PyObject *self, PyObject *arg) { return on_text(self, arg, model_find); }

/* The address rules one at a time, for tests that hold them to their regular expressions. */
static PyObject *Model_address_end(Model *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t end;
    Text t;
    if (!PyArg_ParseTuple(args, "Un", &text, &end) || read_text(text, &t)) return NULL;
    PyObject *out = end < 0 || end > t.len ? (PyErr_SetString(PyExc_ValueError, "end is outside the text"), NULL)
                                           : PyLong_FromSsize_t(address_end(self, &t, end));
    release_text(&t);
    return out;
}

static PyObject *Model_street_like(Model *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t start, end;
    Text t;
    if (!PyArg_ParseTuple(args, "Unn", &text, &start, &end) || read_text(text, &t)) return NULL;
    int street = start < 0 || end > t.len || start > end ? (PyErr_SetString(PyExc_ValueError, "not a span of the text"), -1)
                                                         : street_like(self, &t, start, end);
    release_text(&t);
    return street < 0 ? NULL : PyBool_FromLong(street);
}

static PyObject *Model_address_gap(Model *self, PyObject *args) {
    (void)self;  /* the signature CPython calls with */
    PyObject *text;
    Py_ssize_t start, end;
    Text t;
    if (!PyArg_ParseTuple(args, "Unn", &text, &start, &end) || read_text(text, &t)) return NULL;
    PyObject *out = start < 0 || end > t.len || start > end ? (PyErr_SetString(PyExc_ValueError, "not a span of the text"), NULL)
                                                            : PyBool_FromLong(address_gap(&t, start, end));
    release_text(&t);
    return out;
}

static PyMethodDef Model_methods[] = {
    {"address_end", (PyCFunction)Model_address_end, METH_VARARGS, "address_end(text, end) -> where an address reaching end stops"},
    {"street_like", (PyCFunction)Model_street_like, METH_VARARGS, "street_like(text, start, end) -> bool"},
    {"address_gap", (PyCFunction)Model_address_gap, METH_VARARGS, "address_gap(text, start, end) -> may two pieces of one address lie this far apart"},
    {"candidates", (PyCFunction)Model_candidates, METH_O, "candidates(text) -> [(kind, start, end)]"},
    {"features", (PyCFunction)Model_features, METH_VARARGS, "features(text, kind, start, end) -> [str]"},
    {"find", (PyCFunction)Model_find, METH_O, "find(text) -> [(type index, start, end, confidence)]"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "classifiers._scan.Model",
    .tp_basicsize = sizeof(Model),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Model_init,
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_methods = Model_methods,
    .tp_doc = "The span model: candidates, features and labels (see contextual.py).",
};
