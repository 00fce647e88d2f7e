/* What the parts of the compiled scan (`classifiers._scan`) give one another. */
#ifndef EDGEWAY_SCAN_H
#define EDGEWAY_SCAN_H

#include "text.h"

typedef struct {   /* a set of ASCII characters, or (`decimal`) every decimal digit */
    uint64_t bits[2];
    int decimal;
} CharSet;

enum { W_DIGIT = 1, W_SEPARATOR = 2 };
typedef struct {
    CharSet digits, separators;
    Py_ssize_t max_gap, min_digits, min_separators, margin;
    unsigned char ascii[128];   /* W_DIGIT and W_SEPARATOR of each ASCII character: one load a character */
} WindowSpec;

/* windows.c */
int charset(PyObject *chars, CharSet *set);
int read_spec(PyObject *spec, WindowSpec *w);
/* Where the digits of some specs are in a text, in order: a spec whose digits are no letters (a
 * number's, an address's) finds its clusters from these instead of reading every character. */
typedef struct {
    Py_ssize_t *at;
    Py_ssize_t n;
} Digits;
int is_rare(const WindowSpec *w);   /* whether the spec's digits include no letter */
int find_digits(const Text *t, const unsigned char digits[128], int decimal, Digits *out);
PyObject *find_windows(const Text *t, const WindowSpec *w, const Digits *digits);   /* digits: NULL, or
                                                                                    the spec's among them */
PyObject *windows(PyObject *module, PyObject *args);
PyObject *any_in(PyObject *module, PyObject *args);
PyObject *counts(PyObject *module, PyObject *args);
PyObject *reading_cues(PyObject *module, PyObject *text);

/* spans.c */
extern PyTypeObject ModelType;
PyObject *model_find(PyObject *model, const Text *t);

/* grams.c, pieces.c, phrases.c, words.c */
extern PyTypeObject GramsType;
extern PyTypeObject PiecesType;
extern PyTypeObject PhrasesType;
extern PyTypeObject VocabularyType;

/* anchors.c */
extern PyTypeObject AnchorsType;
PyObject *anchors_find(PyObject *anchors, const Text *t);

#endif
