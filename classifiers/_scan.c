/* The classifiers' hot loops in C: the character counts behind the token estimate (`counts`), one pass over a text for every literal that a pattern begins
 * with (`Anchors`), the stretches of text that can hold a number-like identifier (`windows`), and
 * the span model's candidates, features and linear labeler (`Model`).
 *
 * The span model:
 * `classifiers/privacy/contextual.py` is the documentation of what this computes: the candidate
 * shapes (written there as the regular expressions they used to be, kept for reading), the
 * features, the labeler. In Python the model cost about 20 us a candidate (building a dozen
 * feature strings, a dict lookup each) and a regex pass of 200 us over a 1,000-token
 * conversation; here the whole of it is a few microseconds. Features are hashed (64-bit FNV-1a
 * over their code points) and never built as strings, except by `features()`, which training
 * calls so that the model learns from exactly what is scored.
 *
 * Character classes follow Python's `re` for str patterns: \w is alphanumeric or '_', \d a
 * decimal digit, both in the Unicode sense.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define N_TYPES 4         /* O, PERSON, ORGANIZATION, STREET_ADDRESS */
#define UP_LIMIT 0x500    /* every capital the candidates start with is below this */
#define MAX_FEATURES 48

enum { UNIT, NUM_STREET, POSTAL, CAP };
static const char *KIND_NAMES[] = {"unit", "num-street", "postal", "cap"};
static const char *PARTICLES[] = {"van", "von", "de", "da", "del", "der", "den", "di", "du", "le", "la", "bin",
                                  "al", "y", "dos", "das", NULL};

/* --- text access --------------------------------------------------------------------------- */
/* A text as code points, copied once from the str (whatever its internal width), so that every
 * loop below reads one plain array. */
typedef struct {
    PyObject *object;
    Py_UCS4 *cps;
    Py_ssize_t len;
} Text;

static int read_text(PyObject *arg, Text *t) {
    if (!PyUnicode_Check(arg)) return PyErr_SetString(PyExc_TypeError, "text must be str"), -1;
    t->object = arg;
    t->len = PyUnicode_GET_LENGTH(arg);
    t->cps = PyUnicode_AsUCS4Copy(arg);
    return t->cps ? 0 : -1;
}
static void release_text(Text *t) {
    PyMem_Free(t->cps);
    t->cps = NULL;
}

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return (i >= 0 && i < t->len) ? t->cps[i] : 0; }

enum { C_WORD = 1, C_DIGIT = 2, C_WORDISH = 4 };   /* \w, \d, [\w'&] */
static const unsigned char ASCII[128] = {
    ['0' ... '9'] = C_WORD | C_DIGIT | C_WORDISH, ['a' ... 'z'] = C_WORD | C_WORDISH, ['A' ... 'Z'] = C_WORD | C_WORDISH,
    ['_'] = C_WORD | C_WORDISH, ['\''] = C_WORDISH, ['&'] = C_WORDISH,
};
/* Each is 0 or 1. */
static inline int is_word(Py_UCS4 c) { return c < 128 ? (ASCII[c] & C_WORD) != 0 : Py_UNICODE_ISALNUM(c) != 0; }
static inline int is_digit(Py_UCS4 c) { return c < 128 ? (ASCII[c] & C_DIGIT) != 0 : Py_UNICODE_ISDECIMAL(c) != 0; }
static inline int is_digit_char(Py_UCS4 c) {   /* str.isdigit */
    return c < 128 ? (ASCII[c] & C_DIGIT) != 0 : Py_UNICODE_ISDIGIT(c) != 0;
}
/* The characters re's IGNORECASE takes for an ASCII letter (or é): their simple lower case, and
 * two that lower-case to themselves but upper-case to ASCII (checked against re for every code point). */
static inline Py_UCS4 fold(Py_UCS4 c) {
    if (c < 128) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c == 0x131) return 'i';   /* dotless i */
    if (c == 0x17F) return 's';   /* long s */
    return Py_UNICODE_TOLOWER(c);
}
static inline int is_blank(Py_UCS4 c) { return c == ' ' || c == '\t'; }
static inline int is_apos(Py_UCS4 c) { return c == '\'' || c == 0x2019; }
static inline int is_ascii_letter(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline int boundary(const Text *t, Py_ssize_t i) { return is_word(at(t, i - 1)) != is_word(at(t, i)); }
static inline Py_ssize_t skip_blank(const Text *t, Py_ssize_t i) {
    while (is_blank(at(t, i))) i++;
    return i;
}

/* --- hashing ------------------------------------------------------------------------------- */
/* FNV-1a over whole code points, finished with murmur3's mixer: one multiply a character. */
#define HASH_START 0xcbf29ce484222325ULL
static inline uint64_t mix(uint64_t h, Py_UCS4 c) { return (h ^ c) * 0x100000001b3ULL; }
static inline uint64_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h ? h : 1;   /* 0 marks an empty slot */
}
static uint64_t mix_ascii(uint64_t h, const char *s) {
    while (*s) h = mix(h, (unsigned char)*s++);
    return h;
}
static uint64_t mix_cps(uint64_t h, const Py_UCS4 *cps, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) h = mix(h, cps[i]);
    return h;
}

/* Open addressing keyed by the 64-bit hash alone (with 12k keys a false match is a 1e-15 event),
 * a feature's weights in its slot: one cache line read a lookup. The weights are trained to four
 * decimals and below 3.2 (classifiers.train), so ten-thousandths in 16 bits hold them exactly and
 * a slot is 16 bytes. */
#define WEIGHT_SCALE 10000.0
typedef struct {
    uint64_t key;
    int16_t weights[N_TYPES];
} Slot;

/* 38% of the features a candidate has were never seen in training: a 16 KB bitmap of the known
 * ones (by the hash's top bits) answers most of those without touching the big table. */
#define KNOWN_BITS (1u << 17)
typedef struct {
    Slot *slots;
    size_t mask;
    uint64_t known[KNOWN_BITS / 64];
} Table;

static inline unsigned known_bit(uint64_t h) { return (unsigned)(h >> (64 - 17)); }

static int table_init(Table *t, Py_ssize_t n) {
    size_t size = 16;
    while (size < (size_t)n * 2) size <<= 1;
    t->slots = PyMem_Calloc(size, sizeof(Slot));
    t->mask = size - 1;
    return t->slots ? 0 : -1;
}
static void table_free(Table *t) { PyMem_Free(t->slots); }
static Slot *table_slot(const Table *t, uint64_t h) {   /* h's slot, or the empty one it would take */
    size_t i = h & t->mask;
    while (t->slots[i].key && t->slots[i].key != h) i = (i + 1) & t->mask;
    return &t->slots[i];
}
static const Slot *table_get(const Table *t, uint64_t h) {
    unsigned bit = known_bit(h);
    if (!((t->known[bit >> 6] >> (bit & 63)) & 1)) return NULL;
    const Slot *slot = table_slot(t, h);
    return slot->key ? slot : NULL;
}
typedef struct {   /* a set of hashes (the common words): 8 bytes a slot */
    uint64_t *keys;
    size_t mask;
} KeySet;

static int keyset_init(KeySet *k, Py_ssize_t n) {
    size_t size = 16;
    while (size < (size_t)n * 2) size <<= 1;
    k->keys = PyMem_Calloc(size, sizeof(uint64_t));
    k->mask = size - 1;
    return k->keys ? 0 : -1;
}
static void keyset_add(KeySet *k, uint64_t h) {
    size_t i = h & k->mask;
    while (k->keys[i] && k->keys[i] != h) i = (i + 1) & k->mask;
    k->keys[i] = h;
}
static int keyset_has(const KeySet *k, uint64_t h) {
    for (size_t i = h & k->mask; k->keys[i]; i = (i + 1) & k->mask)
        if (k->keys[i] == h) return 1;
    return 0;
}

static uint64_t hash_str(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    uint64_t h = HASH_START;
    for (Py_ssize_t i = 0; i < n; i++) h = mix(h, PyUnicode_READ(kind, data, i));
    return finish(h);
}

/* --- the model object ---------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    unsigned char up[UP_LIMIT];
    unsigned char starts[256];   /* up[c] or c a digit, for one-byte texts */
    KeySet common;     /* lower-case words */
    KeySet streets;    /* words that end a street's name: "street", "rue", "straße" */
    Table weights;     /* features */
    double bias[N_TYPES];
    double threshold;
    Py_UCS4 *scratch;  /* lower-cased words of the candidate being labeled */
    Py_ssize_t scratch_size;
} Model;

static inline int is_up(const Model *m, Py_UCS4 c) { return c < UP_LIMIT && m->up[c]; }

static void Model_dealloc(Model *self) {
    PyMem_Free(self->common.keys);
    PyMem_Free(self->streets.keys);
    table_free(&self->weights);
    PyMem_Free(self->scratch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Model(up: bytes, common: list[str], features: list[str], rows: list[sequence of 4 floats],
 *       bias: sequence of 4 floats, threshold: float) */
static int Model_init(Model *self, PyObject *args, PyObject *kwargs) {
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
/* CAPWORD: [UP][\w'’&]*(?:[.-][\w'’]+)*\.?   (t[i] is a capital) */
static Py_ssize_t capword(const Text *t, Py_ssize_t i) {
    Py_ssize_t e = i + 1;
    Py_UCS4 c;
    while ((c = at(t, e)) && (is_word(c) || is_apos(c) || c == '&')) e++;
    while (((c = at(t, e)) == '.' || c == '-') && (is_word(at(t, e + 1)) || is_apos(at(t, e + 1)))) {
        e += 2;
        while ((c = at(t, e)) && (is_word(c) || is_apos(c))) e++;
    }
    if (at(t, e) == '.') e++;
    return e;
}

static int starts_with(const Text *t, Py_ssize_t i, const char *s) {
    for (; *s; s++, i++)
        if (at(t, i) != (Py_UCS4)(unsigned char)*s) return 0;
    return 1;
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

/* num-street: \b\d{1,6}[A-Za-z]?(?:[ \t]+[\w'’.-]+){0,3}[ \t]+CAPWORD(?:[ \t]+\d{1,5}[A-Za-z]?\b)? */
static inline int street_char(Py_UCS4 c) { return is_word(c) || is_apos(c) || c == '.' || c == '-'; }

static Py_ssize_t num_street(const Model *m, const Text *t, Py_ssize_t i) {
    if (!is_digit(at(t, i)) || !boundary(t, i)) return -1;
    Py_ssize_t p = i;
    while (is_digit(at(t, p))) p++;
    if (p - i > 6) return -1;
    if (is_ascii_letter(at(t, p))) p++;
    Py_ssize_t ends[4] = {p, 0, 0, 0};   /* where the number, and each word after it, ends */
    int words = 0;
    while (words < 3 && is_blank(at(t, ends[words]))) {
        Py_ssize_t q = skip_blank(t, ends[words]);
        if (!street_char(at(t, q))) break;
        while (street_char(at(t, q))) q++;
        ends[++words] = q;
    }
    for (int k = words; k >= 0; k--) {   /* the most words before a capitalized one */
        if (!is_blank(at(t, ends[k]))) continue;
        Py_ssize_t q = skip_blank(t, ends[k]);
        if (!is_up(m, at(t, q))) continue;
        Py_ssize_t e = capword(t, q);
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

/* cap: (?<![\w@/])CAPWORD(?:[ \t]+(?:CAPWORD|&|PARTICLE(?=[ \t]+[UP]))){0,4} */
static Py_ssize_t cap(const Model *m, const Text *t, Py_ssize_t i) {
    Py_UCS4 before = at(t, i - 1);
    if (!is_up(m, at(t, i)) || is_word(before) || before == '@' || before == '/') return -1;
    Py_ssize_t e = capword(t, i);
    for (int k = 0; k < 4 && is_blank(at(t, e)); k++) {
        Py_ssize_t q = skip_blank(t, e), p;
        if (is_up(m, at(t, q)))
            e = capword(t, q);
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
static inline int word_char(Py_UCS4 c) {   /* [\w'’&] */
    return c < 128 ? (ASCII[c] & C_WORDISH) != 0 : c == 0x2019 || Py_UNICODE_ISALNUM(c);
}

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

static inline int is_common(const Model *m, const Py_UCS4 *w, Py_ssize_t n) {
    return keyset_has(&m->common, finish(mix_cps(HASH_START, w, n)));
}

static int at_sentence_start(const Text *t, Py_ssize_t start) {
    Py_ssize_t i = start - 1;
    while (i >= 0 && is_blank(at(t, i))) i--;
    if (i < 0) return 1;
    Py_UCS4 c = at(t, i);
    return c == '.' || c == '!' || c == '?' || c == ':' || c == '\n' || c == '"' || c == 0x201C || c == '(';
}

static int ensure_scratch(Model *m, Py_ssize_t chars) {
    if (chars * 3 + 64 <= m->scratch_size) return 0;
    Py_ssize_t size = chars * 3 + 64;
    Py_UCS4 *grown = PyMem_Realloc(m->scratch, (size_t)size * sizeof(Py_UCS4));
    if (!grown) return PyErr_NoMemory(), -1;
    m->scratch = grown;
    m->scratch_size = size;
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

static int next_candidate(Model *m, const Text *t, Py_ssize_t *pos, int *kind, Py_ssize_t *start, Py_ssize_t *end) {
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
                if (ensure_scratch(m, e - s)) return -1;
                Py_ssize_t n = lower(t, s, stripped, m->scratch);
                if (n < 2 || is_common(m, m->scratch, n)) continue;
            }
            if (at_sentence_start(t, s)) {
                Py_ssize_t first = s;
                while (first < e && !is_blank(at(t, first))) first++;
                Py_ssize_t stripped = first;
                while (stripped > s && at(t, stripped - 1) == '.') stripped--;
                if (ensure_scratch(m, first - s)) return -1;
                if (is_common(m, m->scratch, lower(t, s, stripped, m->scratch))) {
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
        if (Py_UNICODE_ISLOWER(c) || Py_UNICODE_ISTITLE(c)) upper = 0;
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

static int features(Model *m, const Text *t, int kind, Py_ssize_t start, Py_ssize_t end, Features *f) {
    Span spans[5], before[2], after[1];
    if (ensure_scratch(m, (end - start) + 80)) return -1;   /* the words, the last again, the context */
    /* One pass over the words: all count for n= and common=, the first five are named, and the
     * last one is kept (lower-cased into the scratch buffer as they come). */
    Py_UCS4 *buf = m->scratch, *lw[5], *last = NULL;
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

    char text[] = "n=0";
    emit_ascii(f, kind == UNIT ? "gen=unit" : kind == NUM_STREET ? "gen=num-street" : kind == POSTAL ? "gen=postal" : "gen=cap");
    text[2] = (char)('0' + (count < 4 ? count : 4));
    emit_ascii(f, text);
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
    if (read_text(arg, &t)) return NULL;
    PyObject *out = PyList_New(0);
    Py_ssize_t pos = 0, start, end;
    int kind, found;
    while (out && (found = next_candidate(self, &t, &pos, &kind, &start, &end)) > 0) {
        PyObject *item = Py_BuildValue("(snn)", KIND_NAMES[kind], start, end);
        if (!item || PyList_Append(out, item)) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    if (out && found < 0) Py_CLEAR(out);
    release_text(&t);
    return out;
}

static PyObject *Model_features(Model *self, PyObject *args) {
    PyObject *text;
    const char *kind_name;
    Py_ssize_t start, end;
    Text t;
    if (!PyArg_ParseTuple(args, "Usnn", &text, &kind_name, &start, &end) || read_text(text, &t)) return NULL;
    int kind = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(kind_name, KIND_NAMES[k])) kind = k;
    Features f = {.n = 0, .names = NULL, .failed = 0};
    if (kind < 0 || start < 0 || end > t.len || start > end)
        PyErr_SetString(PyExc_ValueError, "unknown kind or span");
    else if ((f.names = PyList_New(0)) && features(self, &t, kind, start, end, &f) < 0)
        Py_CLEAR(f.names);
    release_text(&t);
    return f.names;
}

/* --- addresses: pieces joined, and run on to a house number, a town, a postcode -------------
 * What contextual.py's address rules say, as regular expressions there; each function here is
 * one of them, with re's backtracking worked out (tests/test_classifiers.py holds them to it). */
#define STREET_ADDRESS 3

static inline int gap_separator(Py_UCS4 c) {   /* [\s,>?–-] */
    return c == ',' || c == '>' || c == '?' || c == '-' || c == 0x2013 || (c && Py_UNICODE_ISSPACE(c));
}
static inline int gap_word(Py_UCS4 c) {   /* [\w.'’()] */
    return is_word(c) || c == '.' || c == '\'' || c == 0x2019 || c == '(' || c == ')';
}

/* fullmatch of [\s,>?–-]*(?:[\w.'’()]+[\s,>?–-]*){0,4}: those characters only, four words at most */
static int address_gap(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    int words = 0;
    for (Py_ssize_t i = s; i < e; i++) {
        Py_UCS4 c = t->cps[i];
        if (gap_word(c)) {
            if (i == s || !gap_word(t->cps[i - 1])) words++;
        } else if (!gap_separator(c)) {
            return 0;
        }
    }
    return words <= 4;
}

static inline int digit_ahead(const Text *t, Py_ssize_t x) {   /* [.,:/-]?\d */
    Py_UCS4 c = at(t, x);
    return is_digit(c) || ((c == '.' || c == ',' || c == ':' || c == '/' || c == '-') && is_digit(at(t, x + 1)));
}

static int starts_with_folded(const Text *t, Py_ssize_t i, const char *s) {
    for (; *s; s++, i++)
        if (fold(at(t, i)) != (Py_UCS4)(unsigned char)*s) return 0;
    return 1;
}

/* [ \t]+\d{1,5}[A-Za-z]?\b(?![.,:/-]?\d), case-insensitive */
static Py_ssize_t house_digits(const Text *t, Py_ssize_t p) {
    if (!is_blank(at(t, p))) return -1;
    Py_ssize_t q = skip_blank(t, p);
    int n = 0;
    while (n < 5 && is_digit(at(t, q + n))) n++;
    for (; n >= 1; n--) {
        Py_ssize_t x = q + n;
        Py_UCS4 f = fold(at(t, x));
        if (f >= 'a' && f <= 'z' && boundary(t, x + 1) && !digit_ahead(t, x + 1)) return x + 1;
        if (boundary(t, x) && !digit_ahead(t, x)) return x;
    }
    return -1;
}

/* (?:[ \t]+(?:u|ul|st|str)\.)?[ \t]+\d{1,5}[A-Za-z]?\b(?![.,:/-]?\d), case-insensitive: "Via Tasso 129" */
static Py_ssize_t house_number(const Text *t, Py_ssize_t p) {
    static const char *ABBREVIATIONS[] = {"u", "ul", "st", "str", NULL};
    if (is_blank(at(t, p))) {
        Py_ssize_t q = skip_blank(t, p);
        for (const char **w = ABBREVIATIONS; *w; w++) {
            Py_ssize_t e = q + (Py_ssize_t)strlen(*w);
            if (starts_with_folded(t, q, *w) && at(t, e) == '.') {
                Py_ssize_t end = house_digits(t, e + 1);
                if (end >= 0) return end;
                break;
            }
        }
    }
    return house_digits(t, p);
}

static inline int postcode_word(Py_UCS4 c) { return gap_word(c); }   /* [\w'’.()] */

/* [ \t,]*\n?[ \t]*(?:[\w'’.()]+[ \t]+){0,3}\d{4,6}\b: a postcode up to three words on */
static Py_ssize_t trailing_postcode(const Text *t, Py_ssize_t p) {
    while (at(t, p) == ' ' || at(t, p) == '\t' || at(t, p) == ',') p++;
    if (at(t, p) == '\n') p++;
    Py_ssize_t starts[4] = {skip_blank(t, p), 0, 0, 0};
    int k = 0;
    while (k < 3 && postcode_word(at(t, starts[k]))) {
        Py_ssize_t q = starts[k];
        while (postcode_word(at(t, q))) q++;
        if (!is_blank(at(t, q))) break;
        starts[++k] = skip_blank(t, q);
    }
    for (; k >= 0; k--) {
        Py_ssize_t q = starts[k];
        int n = 0;
        while (n < 6 && is_digit(at(t, q + n))) n++;
        for (; n >= 4; n--)
            if (boundary(t, q + n)) return q + n;
    }
    return -1;
}

static inline int piece_char(Py_UCS4 c) { return gap_word(c) || c == '-'; }   /* [\w'’.()-] */

/* [ \t]*(?:,[ \t]*\n{0,2}|\n{1,2})[ \t>]*(?:,[ \t]*)?[UP\d][\w'’.()-]*
 *     (?:[ \t]+(?:[UP\d][\w'’.()-]*|(?:d[eiu]|la|del|am|an|upon)\b))*
 * the next piece of a written address: a town, a region, a country, after a comma or a line break */
static Py_ssize_t address_piece(const Model *m, const Text *t, Py_ssize_t p) {
    static const char *SMALL[] = {"de", "di", "du", "la", "del", "am", "an", "upon", NULL};
    Py_ssize_t q = skip_blank(t, p);
    if (at(t, q) == ',') {
        q = skip_blank(t, q + 1);
        for (int n = 0; n < 2 && at(t, q) == '\n'; n++) q++;
    } else if (at(t, q) == '\n') {
        q += at(t, q + 1) == '\n' ? 2 : 1;
    } else {
        return -1;
    }
    while (is_blank(at(t, q)) || at(t, q) == '>') q++;
    if (at(t, q) == ',') q = skip_blank(t, q + 1);
    if (!is_up(m, at(t, q)) && !is_digit(at(t, q))) return -1;
    q++;
    while (piece_char(at(t, q))) q++;
    while (is_blank(at(t, q))) {
        Py_ssize_t r = skip_blank(t, q), e = -1;
        if (is_up(m, at(t, r)) || is_digit(at(t, r))) {
            e = r + 1;
            while (piece_char(at(t, e))) e++;
        } else {
            for (const char **w = SMALL; *w && e < 0; w++) {
                Py_ssize_t end = r + (Py_ssize_t)strlen(*w);
                if (starts_with(t, r, *w) && boundary(t, end)) e = end;
            }
        }
        if (e < 0) break;
        q = e;
    }
    return q;
}

/* \d+ runs in t[s:e], and whether one of its words is a 4-6 digit number (\b\d{4,6}\b) */
static void numbers_in(const Text *t, Py_ssize_t s, Py_ssize_t e, int *runs, int *postcode) {
    *runs = 0;
    *postcode = 0;
    for (Py_ssize_t i = s; i < e;) {
        if (!is_word(t->cps[i])) {
            i++;
            continue;
        }
        Py_ssize_t j = i;
        int all_digits = 1;
        for (; j < e && is_word(t->cps[j]); j++) {
            int d = is_digit(t->cps[j]);
            if (d && (j == i || !is_digit(t->cps[j - 1]))) (*runs)++;
            all_digits &= d;
        }
        if (all_digits && j - i >= 4 && j - i <= 6) *postcode = 1;
        i = j;
    }
}

/* Where an address that has reached `end` stops: past a house number written after the street
 * ("Via Tasso 129"), past the pieces after it on the same line, and past the lines below it when
 * they run to a postcode ("Porto Alegre / , RS / Brazil 95828"). */
static Py_ssize_t address_end(const Model *m, const Text *t, Py_ssize_t end) {
    Py_ssize_t number = house_number(t, end);
    if (number >= 0) end = number;
    Py_ssize_t tail = trailing_postcode(t, end);
    Py_ssize_t best = tail >= 0 ? tail : end, position = end;
    for (int k = 0; k < 5; k++) {
        Py_ssize_t piece = address_piece(m, t, position);
        if (piece < 0) break;
        int runs, postcode;
        numbers_in(t, position, piece, &runs, &postcode);
        if (runs > 2) break;   /* a line of numbers is a phone or an account, not a town and its postcode */
        position = piece;
        int newline = 0;
        for (Py_ssize_t i = end; i < position && !newline; i++) newline = t->cps[i] == '\n';
        if ((postcode || !newline) && position > best) best = position;
    }
    return best;
}

/* A street address has a number (house, unit, postcode) or ends in a street word: "France" alone,
 * or "Paris", is a place, not an address. The last word is that of the span lower-cased whole. */
static int street_like(const Model *m, const Text *t, Py_ssize_t s, Py_ssize_t e) {
    int ascii = 1;
    for (Py_ssize_t i = s; i < e; i++) {
        if (is_digit_char(t->cps[i])) return 1;
        ascii &= t->cps[i] < 128;
    }
    Py_UCS4 *chars = t->cps + s, *lowered = NULL;
    Py_ssize_t n = e - s;
    if (!ascii) {
        PyObject *span = PyUnicode_Substring(t->object, s, e), *low = span ? PyObject_CallMethod(span, "lower", NULL) : NULL;
        Py_XDECREF(span);
        if (!low || !(lowered = PyUnicode_AsUCS4Copy(low))) {
            Py_XDECREF(low);
            return -1;
        }
        n = PyUnicode_GET_LENGTH(low);
        Py_DECREF(low);
        chars = lowered;
    }
    Py_ssize_t last_end = n;
    while (last_end > 0 && !word_char(chars[last_end - 1])) last_end--;
    Py_ssize_t last_start = last_end;
    while (last_start > 0 && word_char(chars[last_start - 1])) last_start--;
    uint64_t h = HASH_START;
    for (Py_ssize_t i = last_start; i < last_end; i++) {
        Py_UCS4 c = chars[i];
        h = mix(h, ascii && c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    int found = last_end > last_start && keyset_has(&m->streets, finish(h));
    PyMem_Free(lowered);
    return found;
}

typedef struct {
    int label;
    Py_ssize_t start, end;
    double confidence;
} Labeled;

/* Joins the pieces of one street address (street, unit, town, postcode) into one span, runs each
 * address on to where it stops, and drops the ones that are no street. In place; the new count. */
static Py_ssize_t settle_addresses(const Model *m, const Text *t, Labeled *found, Py_ssize_t n) {
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Labeled f = found[i];
        Labeled *last = kept ? &found[kept - 1] : NULL;
        if (last && last->label == STREET_ADDRESS && f.label == STREET_ADDRESS && f.start - last->end <= 40 &&
            address_gap(t, last->end, f.start)) {
            last->end = f.end > last->end ? f.end : last->end;
            last->confidence = f.confidence > last->confidence ? f.confidence : last->confidence;
        } else {
            found[kept++] = f;
        }
    }
    n = kept;
    kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Labeled f = found[i];
        if (f.label == STREET_ADDRESS) {
            f.end = address_end(m, t, f.end);
            int street = street_like(m, t, f.start, f.end);
            if (street < 0) return -1;
            if (!street) continue;
        }
        found[kept++] = f;
    }
    return kept;
}

/* [(type index, start, end, confidence)] for the candidates not labeled O */
static PyObject *model_find(Model *self, const Text *text) {
    Text t = *text;
    Labeled *labeled = NULL;
    Py_ssize_t count = 0, room = 0, pos = 0, start, end;
    int kind, found, failed = 0;
    while (!failed && (found = next_candidate(self, &t, &pos, &kind, &start, &end)) > 0) {
        Features f;   /* not zeroed: `n` says how many hashes are set */
        f.n = 0;
        f.names = NULL;
        f.failed = 0;
        int ok = features(self, &t, kind, start, end, &f);
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
        int best = 0;
        for (int k = 1; k < N_TYPES; k++)
            if (score[k] > score[best]) best = k;
        double total = 0;
        for (int k = 0; k < N_TYPES; k++) total += exp(score[k] - score[best]);
        double confidence = 1.0 / total;
        if (best == 0 || confidence < self->threshold) continue;
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
        labeled[count++] = (Labeled){best, start, end, confidence};
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
    return out;
}

static PyObject *Model_find(Model *self, PyObject *arg) {
    Text t;
    if (read_text(arg, &t)) return NULL;
    PyObject *out = model_find(self, &t);
    release_text(&t);
    return out;
}

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

static PyTypeObject ModelType = {
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

/* --- anchors: every occurrence of a set of literals, in one pass ----------------------------- */
/* Most positions start no literal; bit tests over the next four (folded) characters say so, for
 * literals of four characters or more, of three ("api") and of two ("né"), so that a common
 * English "her" or "pre" is not taken for the start of "herpes" or "pregnan". The characters are
 * packed seven bits each (anything past ASCII as 127) and hashed with one multiply. */
#define GRAM_BITS 32768
static inline uint32_t seven(Py_UCS4 c) { return c < 127 ? c : 127; }
static inline unsigned gram(uint32_t packed) { return (packed * 0x9E3779B1u) >> (32 - 15); }
#define MASK2 ((1u << 14) - 1)
#define MASK3 ((1u << 21) - 1)
static inline int gram_bit(const uint64_t *bits, unsigned g) { return (bits[g >> 6] >> (g & 63)) & 1; }


typedef struct {
    Py_UCS4 *chars;   /* lower case when folded */
    Py_ssize_t len;
    int folded;
    int next;         /* the next literal that begins with the same two characters, or -1 */
} Literal;

typedef struct {
    PyObject_HEAD
    Literal *literals;
    Py_ssize_t count;
    PyObject *names;        /* tuple of the literals as given */
    int16_t *heads;         /* pair_key -> first literal, or -1 */
    uint64_t grams[3][GRAM_BITS / 64];   /* [length - 2]: the folded first 2, 3 or 4 characters of a literal, hashed */
} Anchors;

/* Literals are keyed by their first two characters (a non-ASCII second one, as in "né", as 127),
 * hashed into a table small enough to stay in the L1 cache; a chain may hold unrelated pairs. */
#define PAIR_SLOTS 2048
static inline int pair_key(int folded, Py_UCS4 a, Py_UCS4 b) {
    unsigned key = (a * 128u + (b < 127 ? b : 127u)) * 2654435761u;
    return (int)(folded * (PAIR_SLOTS / 2) + (key >> 22) % (PAIR_SLOTS / 2));
}

static void Anchors_dealloc(Anchors *self) {
    for (Py_ssize_t i = 0; i < self->count; i++) PyMem_Free(self->literals[i].chars);
    PyMem_Free(self->literals);
    PyMem_Free(self->heads);
    Py_XDECREF(self->names);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Anchors(exact: list[str], folded: list[str]); every literal starts with an ASCII character */
static int Anchors_init(Anchors *self, PyObject *args, PyObject *kwargs) {
    PyObject *exact, *folded;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &exact, &PyList_Type, &folded)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(exact) + PyList_GET_SIZE(folded);
    self->literals = PyMem_Calloc((size_t)n + 1, sizeof(Literal));
    self->names = PyTuple_New(n);
    self->heads = PyMem_Malloc(PAIR_SLOTS * sizeof(int16_t));
    if (!self->literals || !self->names || !self->heads || n > 30000) return PyErr_NoMemory(), -1;
    for (int k = 0; k < PAIR_SLOTS; k++) self->heads[k] = -1;
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
        unsigned g = gram(packed);
        self->grams[n - 2][g >> 6] |= 1ULL << (g & 63);
        int key = pair_key(is_folded, lit->chars[0], lit->chars[1]);
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
static PyObject *anchors_find(Anchors *self, const Text *text) {
    Text t = *text;
    PyObject *out = PyDict_New();
    Py_UCS4 next;
    uint32_t packed = seven(fold(at(&t, 0))) | seven(fold(at(&t, 1))) << 7 | seven(fold(at(&t, 2))) << 14;
    for (Py_ssize_t i = 0; out && i < t.len; i++, packed >>= 7) {
        packed |= seven(fold(at(&t, i + 3))) << 21;
        if (!gram_bit(self->grams[2], gram(packed)) && !gram_bit(self->grams[1], gram(packed & MASK3)) &&
            !gram_bit(self->grams[0], gram(packed & MASK2)))
            continue;
        Py_UCS4 c = t.cps[i];
        next = at(&t, i + 1);
        int buckets[2] = {-1, -1};
        if (c < 128) {
            int key = pair_key(0, c, next);
            buckets[0] = self->heads[key];
        }
        Py_UCS4 f = fold(c);
        if (f < 128) {
            int key = pair_key(1, f, fold(next));
            buckets[1] = self->heads[key];
        }
        if (buckets[0] < 0 && buckets[1] < 0) continue;
        for (int b = 0; b < 2; b++)
            for (int k = buckets[b]; k >= 0; k = self->literals[k].next) {
                if (!literal_at(&self->literals[k], &t, i)) continue;
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

static PyObject *Anchors_find(Anchors *self, PyObject *arg) {
    Text t;
    if (read_text(arg, &t)) return NULL;
    PyObject *out = anchors_find(self, &t);
    release_text(&t);
    return out;
}

static PyMethodDef Anchors_methods[] = {
    {"find", (PyCFunction)Anchors_find, METH_O, "find(text) -> {literal: [positions]}"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject AnchorsType = {
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

/* --- windows: where number-like identifiers can be -------------------------------------------- */
/* windows(text, digits, separators, max_gap, min_digits, min_separators, margin) -> [(start, end)]
 * Clusters of digit characters ("" means any decimal digit, as re's \d) joined by at most
 * `max_gap` separator characters, with at least `min_digits` digits and `min_separators`
 * separators inside, each widened by `margin` on both sides; windows that overlap are merged. */
typedef struct {   /* a set of ASCII characters, or (`decimal`) every decimal digit */
    uint64_t bits[2];
    int decimal;
} CharSet;

static int charset(PyObject *chars, CharSet *set) {
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

typedef struct {
    CharSet digits, separators;
    Py_ssize_t max_gap, min_digits, min_separators, margin;
} WindowSpec;

/* spec: (digits, separators, max_gap, min_digits, min_separators, margin) */
static int read_spec(PyObject *spec, WindowSpec *w) {
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

static PyObject *find_windows(const Text *t, const WindowSpec *w) {
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
static PyObject *windows(PyObject *module, PyObject *args) {
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
static PyObject *counts(PyObject *module, PyObject *args) {
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

static PyMethodDef module_functions[] = {
    {"counts", counts, METH_VARARGS, "counts(text, symbols) -> (spaces, newlines, digits, symbols, extra UTF-8 bytes, length)"},
    {"windows", windows, METH_VARARGS, "windows(text, (digits, separators, max_gap, min_digits, min_separators, margin))"},
    {NULL, NULL, 0, NULL},
};

/* --- the scanner: all of the above over one text, in one call ------------------------------- */
#define MAX_SPECS 8

typedef struct {
    PyObject_HEAD
    Anchors *anchors;
    Model *model;
    WindowSpec specs[MAX_SPECS];
    Py_ssize_t n_specs;
} Scanner;

static void Scanner_dealloc(Scanner *self) {
    Py_XDECREF(self->anchors);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Scanner(anchors: Anchors, model: Model, specs: tuple of window specs) */
static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwargs) {
    PyObject *specs;
    Anchors *anchors;
    Model *model;
    if (!PyArg_ParseTuple(args, "O!O!O!", &AnchorsType, &anchors, &ModelType, &model, &PyTuple_Type, &specs)) return -1;
    if (PyTuple_GET_SIZE(specs) > MAX_SPECS) return PyErr_SetString(PyExc_ValueError, "too many window specs"), -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(specs); i++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, i);
        if (!PyTuple_Check(spec)) return PyErr_SetString(PyExc_TypeError, "a window spec is a tuple"), -1;
        if (read_spec(spec, &self->specs[i])) return -1;
    }
    self->n_specs = PyTuple_GET_SIZE(specs);
    Py_INCREF(anchors);
    Py_XSETREF(self->anchors, anchors);
    Py_INCREF(model);
    Py_XSETREF(self->model, model);
    return 0;
}

/* scan(text) -> (anchors' hits, (windows per spec), the model's labeled spans) */
static PyObject *Scanner_scan(Scanner *self, PyObject *arg) {
    Text t;
    if (read_text(arg, &t)) return NULL;
    PyObject *out = NULL, *hits = NULL, *spans = NULL, *windows = PyTuple_New(self->n_specs);
    for (Py_ssize_t i = 0; windows && i < self->n_specs; i++) {
        PyObject *found = find_windows(&t, &self->specs[i]);
        if (!found) Py_CLEAR(windows);
        else PyTuple_SET_ITEM(windows, i, found);
    }
    if (windows && (hits = anchors_find(self->anchors, &t)) && (spans = model_find(self->model, &t)))
        out = PyTuple_Pack(3, hits, windows, spans);
    Py_XDECREF(hits);
    Py_XDECREF(windows);
    Py_XDECREF(spans);
    release_text(&t);
    return out;
}

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

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, module_functions};

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
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (add_type(m, &ModelType, "Model") || add_type(m, &AnchorsType, "Anchors") || add_type(m, &ScannerType, "Scanner")) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
