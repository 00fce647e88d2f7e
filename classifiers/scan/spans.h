/* The span model's data: its tables, the model object, and what the address rules share with it. */
#ifndef EDGEWAY_SCAN_SPANS_H
#define EDGEWAY_SCAN_SPANS_H

#include "text.h"

#define N_TYPES 4         /* O, PERSON, ORGANIZATION, STREET_ADDRESS */
#define UP_LIMIT 0x500    /* every capital the candidates start with is below this */
#define MAX_FEATURES 48
#define PERSON 1           /* SPAN_TYPES indexes */
#define ORGANIZATION 2
#define STREET_ADDRESS 3

/* Open addressing keyed by the 64-bit hash alone (with 12k keys a false match is a 1e-15 event),
 * a feature's weights in its slot: one cache line read a lookup. The weights are trained to four
 * decimals and below 3.2 (research.train), so ten-thousandths in 16 bits hold them exactly and
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

static inline int table_init(Table *t, Py_ssize_t n) {
    size_t size = slots_for(n);
    t->slots = PyMem_Calloc(size, sizeof(Slot));
    t->mask = size - 1;
    return t->slots ? 0 : -1;
}
static inline void table_free(Table *t) { PyMem_Free(t->slots); }
static inline Slot *table_slot(const Table *t, uint64_t h) {   /* h's slot, or the empty one it would take */
    size_t i = h & t->mask;
    while (t->slots[i].key && t->slots[i].key != h) i = (i + 1) & t->mask;
    return &t->slots[i];
}
static inline const Slot *table_get(const Table *t, uint64_t h) {
    unsigned bit = known_bit(h);
    if (!((t->known[bit >> 6] >> (bit & 63)) & 1)) return NULL;
    const Slot *slot = table_slot(t, h);
    return slot->key ? slot : NULL;
}

typedef struct {   /* a set of hashes (the common words): 8 bytes a slot */
    uint64_t *keys;
    size_t mask;
} KeySet;

static inline int keyset_init(KeySet *k, Py_ssize_t n) {
    size_t size = slots_for(n);
    k->keys = PyMem_Calloc(size, sizeof(uint64_t));
    k->mask = size - 1;
    return k->keys ? 0 : -1;
}
static inline void keyset_add(KeySet *k, uint64_t h) {
    size_t i = h & k->mask;
    while (k->keys[i] && k->keys[i] != h) i = (i + 1) & k->mask;
    k->keys[i] = h;
}
static inline int keyset_has(const KeySet *k, uint64_t h) {
    for (size_t i = h & k->mask; k->keys[i]; i = (i + 1) & k->mask)
        if (k->keys[i] == h) return 1;
    return 0;
}

typedef struct {
    PyObject_HEAD
    unsigned char up[UP_LIMIT];
    unsigned char starts[256];   /* up[c] or c a digit, for one-byte texts */
    KeySet common;     /* lower-case words */
    KeySet streets;    /* words that end a street's name: "street", "rue", "straße" */
    Table weights;     /* features */
    double bias[N_TYPES];
    double threshold;
} Model;

static inline int is_up(const Model *m, Py_UCS4 c) { return c < UP_LIMIT && m->up[c]; }

static inline int word_char(Py_UCS4 c) {   /* [\w'’&] */
    return c < 128 ? (ASCII[c] & C_WORDISH) != 0 : c == 0x2019 || Py_UNICODE_ISALNUM(c);
}

static inline int is_common(const Model *m, const Py_UCS4 *w, Py_ssize_t n) {
    return keyset_has(&m->common, finish(mix_cps(HASH_START, w, n)));
}

typedef struct {
    int label;
    Py_ssize_t start, end;
    double confidence;
    /* What a run of capitalized words is if it is no street address after all
     * (`settle_addresses`): the likelier of PERSON and ORGANIZATION, and P(either | not an
     * address), never above `confidence`; 0 for the other kinds of candidate. */
    int name_label;
    double name_confidence;
} Labeled;

/* Room for the lower-cased words of the candidate being labeled: one per call, never shared, so
 * that a model serves any thread. */
typedef struct {
    Py_UCS4 *buf;
    Py_ssize_t size;
} Scratch;

/* addresses.c */
Py_ssize_t settle_addresses(const Model *m, const Text *t, Labeled *found, Py_ssize_t n);
Py_ssize_t address_end(const Model *m, const Text *t, Py_ssize_t end);
int street_like(const Model *m, const Text *t, Py_ssize_t s, Py_ssize_t e);
int address_gap(const Text *t, Py_ssize_t s, Py_ssize_t e);

#endif
