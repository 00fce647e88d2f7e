/* Street addresses: the pieces of one joined, and each run on to a house number, a town, a
 * postcode; what is no street dropped. `classifiers/privacy/contextual.py` says it in words and
 * tests/test_scan_rules.py holds each rule to the regular expression it stands for. */
#include "spans.h"

/* --- addresses: pieces joined, and run on to a house number, a town, a postcode -------------
 * What contextual.py's address rules say, as regular expressions there; each function here is
 * one of them, with re's backtracking worked out (tests/test_classifiers.py holds them to it). */

static inline int gap_separator(Py_UCS4 c) {   /* [\s,>?–-] */
    return c == ',' || c == '>' || c == '?' || c == '-' || c == 0x2013 || (c && Py_UNICODE_ISSPACE(c));
}
static inline int gap_word(Py_UCS4 c) {   /* [\w.'’()] */
    return is_word(c) || c == '.' || c == '\'' || c == 0x2019 || c == '(' || c == ')';
}

/* fullmatch of [\s,>?–-]*(?:[\w.'’()]+[\s,>?–-]*){0,4}: those characters only, four words at most */
int address_gap(const Text *t, Py_ssize_t s, Py_ssize_t e) {
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
Py_ssize_t address_end(const Model *m, const Text *t, Py_ssize_t end) {
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
int street_like(const Model *m, const Text *t, Py_ssize_t s, Py_ssize_t e) {
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
/* Joins the pieces of one street address (street, unit, town, postcode) into one span, runs each
 * address on to where it stops, and drops the ones that are no street. In place; the new count.
 * Only pieces that are more likely than not an address are joined: the model keeps unlikely
 * candidates too, for texts that read as private, and "21 253 109 8211" after a postcode is a
 * phone number, not the address's next line. */
#define JOIN_CONFIDENCE 0.5
Py_ssize_t settle_addresses(const Model *m, const Text *t, Labeled *found, Py_ssize_t n) {
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Labeled f = found[i];
        Labeled *last = kept ? &found[kept - 1] : NULL;
        if (last && last->label == STREET_ADDRESS && f.label == STREET_ADDRESS && f.start - last->end <= 40 &&
            last->confidence >= JOIN_CONFIDENCE && f.confidence >= JOIN_CONFIDENCE && address_gap(t, last->end, f.start)) {
            last->end = f.end > last->end ? f.end : last->end;
            last->confidence = f.confidence > last->confidence ? f.confidence : last->confidence;
            last->name_confidence = 0;   /* pieces of one address: no name if it is none */
        } else {
            found[kept++] = f;
        }
    }
    n = kept;
    kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Labeled f = found[i];
        if (f.label == STREET_ADDRESS) {
            Py_ssize_t end = address_end(m, t, f.end);
            int street = street_like(m, t, f.start, end);
            if (street < 0) return -1;
            if (street) {
                f.end = end;
            } else if (f.name_confidence >= m->threshold) {
                /* no number, no street word: "Nouf Water Factory", "Mishdad Beauty Website" are
                 * names the model found likelier an address */
                f.label = f.name_label;
                f.confidence = f.name_confidence;
            } else {
                continue;
            }
        }
        found[kept++] = f;
    }
    return kept;
}
