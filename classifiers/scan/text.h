/* A text as the scan reads it, Python's `re` character classes, and the hash the tables use.
 *
 * Character classes follow Python's `re` for str patterns: \w is alphanumeric or '_', \d a
 * decimal digit, both in the Unicode sense; `fold` is what IGNORECASE takes a character for.
 */
#ifndef EDGEWAY_SCAN_TEXT_H
#define EDGEWAY_SCAN_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* --- text access --------------------------------------------------------------------------- */
/* A text as code points, copied once from the str (whatever its internal width), so that every
 * loop below reads one plain array. */
typedef struct {
    PyObject *object;
    Py_UCS4 *cps;
    Py_ssize_t len;
} Text;

static inline int read_text(PyObject *arg, Text *t) {
    if (!PyUnicode_Check(arg)) return PyErr_SetString(PyExc_TypeError, "text must be str"), -1;
    t->object = arg;
    t->len = PyUnicode_GET_LENGTH(arg);
    t->cps = PyUnicode_AsUCS4Copy(arg);
    return t->cps ? 0 : -1;
}
static inline void release_text(Text *t) {
    PyMem_Free(t->cps);
    t->cps = NULL;
}

/* fn(self, text) over the str `arg`, read and released here: what a method of one text does. */
typedef PyObject *(*TextFunction)(PyObject *self, const Text *t);
static inline PyObject *on_text(PyObject *self, PyObject *arg, TextFunction fn) {
    Text t;
    if (read_text(arg, &t)) return NULL;
    PyObject *out = fn(self, &t);
    release_text(&t);
    return out;
}

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return (i >= 0 && i < t->len) ? t->cps[i] : 0; }

enum { C_WORD = 1, C_DIGIT = 2, C_WORDISH = 4 };   /* \w, \d, [\w'&] */
extern unsigned char ASCII[128];   /* those classes of each ASCII character, filled when the module loads */
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
/* Scripts written without spaces between words (Chinese, Japanese, Korean, Thai): a Latin word in
 * such a text begins and ends right next to them ("告诉Tim，"). */
static inline int is_unspaced(Py_UCS4 c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0x0E00 && c <= 0x0E7F);
}
/* \w, but not a character of those scripts */
static inline int is_spaced_word(Py_UCS4 c) { return is_word(c) && !is_unspaced(c); }
static inline int is_blank(Py_UCS4 c) { return c == ' ' || c == '\t'; }
static inline int is_apos(Py_UCS4 c) { return c == '\'' || c == 0x2019; }
static inline int is_ascii_letter(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline int boundary(const Text *t, Py_ssize_t i) { return is_word(at(t, i - 1)) != is_word(at(t, i)); }
static inline Py_ssize_t skip_blank(const Text *t, Py_ssize_t i) {
    while (is_blank(at(t, i))) i++;
    return i;
}

static inline int starts_with(const Text *t, Py_ssize_t i, const char *s) {
    for (; *s; s++, i++)
        if (at(t, i) != (Py_UCS4)(unsigned char)*s) return 0;
    return 1;
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
static inline uint64_t mix_ascii(uint64_t h, const char *s) {
    while (*s) h = mix(h, (unsigned char)*s++);
    return h;
}
static inline uint64_t mix_cps(uint64_t h, const Py_UCS4 *cps, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) h = mix(h, cps[i]);
    return h;
}
static inline uint64_t hash_str(PyObject *s) {   /* a str's hash, as a text's code points hash */
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    uint64_t h = HASH_START;
    for (Py_ssize_t i = 0; i < n; i++) h = mix(h, PyUnicode_READ(kind, data, i));
    return finish(h);
}

/* Slots for n keys in an open-addressing table at most half full: a power of two. */
static inline size_t slots_for(Py_ssize_t n) {
    size_t size = 16;
    while (size < (size_t)n * 2) size <<= 1;
    return size;
}

/* A filter of two bits a key, kept small enough to stay in cache: when either bit of a hash is
 * clear the hash is surely not in the table it filters, which is then not read (a cache miss a
 * look). `size` is in bits, a power of two. */
typedef struct {
    uint64_t *bits;
    size_t size;
} Filter;

/* An empty filter of `size` bits in place of `f`'s (0, or -1 with no memory). */
static inline int filter_init(Filter *f, size_t size) {
    PyMem_Free(f->bits);
    f->size = size;
    f->bits = PyMem_Calloc(size / 64, sizeof(uint64_t));
    return f->bits ? 0 : -1;
}
static inline void filter_free(Filter *f) {
    PyMem_Free(f->bits);
    f->bits = NULL;
}
static inline void filter_put(Filter *f, uint64_t h) {
    size_t a = (size_t)(h & (f->size - 1)), b = (size_t)((h >> 32) & (f->size - 1));
    f->bits[a >> 6] |= 1ULL << (a & 63);
    f->bits[b >> 6] |= 1ULL << (b & 63);
}
static inline int filter_may(const Filter *f, uint64_t h) {
    size_t a = (size_t)(h & (f->size - 1)), b = (size_t)((h >> 32) & (f->size - 1));
    return (f->bits[a >> 6] >> (a & 63)) & (f->bits[b >> 6] >> (b & 63)) & 1;
}
/* Filter bits for a table of n keys: 16 a key, a power of two (about 1.4% of other hashes pass). */
static inline size_t filter_bits_for(Py_ssize_t n) {
    size_t bits = 4096;
    while (bits < (size_t)n * 16) bits <<= 1;
    return bits;
}

#endif
