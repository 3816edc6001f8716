/* Optional compiled fold kernel of ldp (server side only; clients never load it).
 *
 * add_ones_by_group(groups, width, rows, nbytes, counts, ones, nbits):
 *   for every record i: counts[g_i] += 1 and, for every bit b < nbits of its packed little-endian
 *   row (bit b in byte b/8 at position b%8), ones[g_i*nbits + b] += bit.
 *
 * Positional popcount per group with SWAR lanes, no loop per bit:
 *   each 64-bit word x of a row adds (x >> s) & 0x1111..11 (s = 0..3) into 4 per-group words of
 *   4-bit lanes (lane k counts bit 4k+s of the word); every 15 rows of a group the nibble lanes are
 *   split into 8 words of byte lanes (mask 0x0F0F..0F, before and after a shift by 4), and every
 *   255 rows of a group the byte lanes are added to the int64 table. No lane can overflow: a
 *   nibble lane receives at most 15 ones, a byte lane at most 17*15 = 255.
 *
 * report_stats(groups, width, rows, nbytes, nbits, tested, masks, nmasks, chosen, hist, hits):
 *   for every record i: hist[popcount of its first nbits bits] += 1; and for every record whose bit i of
 *   tested (packed little-endian) is set and whose group g has chosen[g] set: hits[0] += 1 and, for each j < nmasks, hits[1 + j] += 1 when
 *   the row has every bit of masks[g][j] (nbytes bytes) set. RAPPOR's per-report poisoning
 *   statistics (ldp/batch/rappor_evidence.py, whose numpy path it is tested against).
 *
 * pair_counts(cols, k, words, out): out[i, j] = popcount(cols[i] & cols[j]): the rows two bits share, from
 *   the bits' columns packed as bit sets (the co-occurrence counts of a sample, X^T X of 0/1 rows).
 *
 * Only the Python buffer protocol is used (no numpy headers): building needs a C compiler and
 * nothing else, and ldp.batch.bits falls back to pure numpy when this module is absent. The GIL
 * is released while folding. The reference it is tested against: tests/server/test_fold_fast.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define M1 0x1111111111111111ULL
#define M4 0x0F0F0F0F0F0F0F0FULL

typedef struct {
    Py_ssize_t nw;          /* 64-bit words per row (the last one zero-padded) */
    Py_ssize_t nbits;
    uint64_t *acc4;         /* [group][nw][4] nibble lanes */
    uint64_t *acc8;         /* [group][nw][8] byte lanes */
    uint8_t *c4, *c8;       /* rows in acc4, nibble flushes in acc8, per group */
} lanes_t;

static void flush8(lanes_t *L, Py_ssize_t g, int64_t *ones)
{
    uint64_t *a8 = L->acc8 + g * 8 * L->nw;
    int64_t *out = ones + g * L->nbits;
    for (Py_ssize_t w = 0; w < L->nw; w++) {
        for (Py_ssize_t s = 0; s < 8; s++) {
            uint64_t a = a8[8 * w + s];
            if (!a)
                continue;
            for (Py_ssize_t j = 0; j < 8; j++) {
                Py_ssize_t bit = 64 * w + 8 * j + s;
                if (bit < L->nbits)
                    out[bit] += (int64_t)((a >> (8 * j)) & 0xFF);
            }
            a8[8 * w + s] = 0;
        }
    }
    L->c8[g] = 0;
}

static void flush4(lanes_t *L, Py_ssize_t g, int64_t *ones)
{
    uint64_t *a4 = L->acc4 + g * 4 * L->nw, *a8 = L->acc8 + g * 8 * L->nw;
    for (Py_ssize_t w = 0; w < L->nw; w++) {
        for (Py_ssize_t s = 0; s < 4; s++) {
            uint64_t a = a4[4 * w + s];
            a8[8 * w + s] += a & M4;            /* byte lane j: bit 8j + s */
            a8[8 * w + s + 4] += (a >> 4) & M4; /* byte lane j: bit 8j + 4 + s */
            a4[4 * w + s] = 0;
        }
    }
    L->c4[g] = 0;
    if (++L->c8[g] == 17)
        flush8(L, g, ones);
}

static inline Py_ssize_t group_at(const uint8_t *groups, int width, Py_ssize_t i)
{
    switch (width) {
    case 1: return groups[i];
    case 2: { uint16_t v; memcpy(&v, groups + 2 * i, 2); return (Py_ssize_t)v; }
    case 4: { uint32_t v; memcpy(&v, groups + 4 * i, 4); return (Py_ssize_t)v; }
    default: { uint64_t v; memcpy(&v, groups + 8 * i, 8); return v > (uint64_t)PY_SSIZE_T_MAX ? -1 : (Py_ssize_t)v; }
    }
}

static inline void add_word(uint64_t *a, uint64_t x)
{
    a[0] += x & M1;
    a[1] += (x >> 1) & M1;
    a[2] += (x >> 2) & M1;
    a[3] += (x >> 3) & M1;
}

/* One instance per group width, so that the loop holds no switch. */
#define FOLD_LOOP(WIDTH)                                                                          \
    for (Py_ssize_t i = 0; i < n; i++) {                                                          \
        const Py_ssize_t g = group_at(groups, WIDTH, i);                                          \
        const uint8_t *row = rows + i * nbytes;                                                   \
        uint64_t *a4 = L->acc4 + g * 4 * nw;                                                      \
        for (Py_ssize_t w = 0; w < full; w++) {                                                   \
            uint64_t x;                                                                           \
            memcpy(&x, row + 8 * w, 8);                                                           \
            add_word(a4 + 4 * w, x);                                                              \
        }                                                                                         \
        if (tail) {                                                                               \
            uint64_t x = 0;                                                                       \
            memcpy(&x, row + 8 * full, (size_t)tail);                                             \
            add_word(a4 + 4 * full, x);                                                           \
        }                                                                                         \
        counts[g] += 1;                                                                           \
        if (++L->c4[g] == 15)                                                                     \
            flush4(L, g, ones);                                                                   \
    }

static void fold(lanes_t *L, const uint8_t *groups, int width, const uint8_t *rows, Py_ssize_t n,
                 Py_ssize_t nbytes, Py_ssize_t num_groups, int64_t *counts, int64_t *ones)
{
    const Py_ssize_t nw = L->nw, full = nbytes / 8, tail = nbytes % 8;
    switch (width) {
    case 1: FOLD_LOOP(1) break;
    case 2: FOLD_LOOP(2) break;
    case 4: FOLD_LOOP(4) break;
    default: FOLD_LOOP(8) break;
    }
    for (Py_ssize_t g = 0; g < num_groups; g++) {
        if (L->c4[g])
            flush4(L, g, ones);
        if (L->c8[g])
            flush8(L, g, ones);
    }
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous%s buffer", what, writable ? " writable" : "");
        return -1;
    }
    return 0;
}

static PyObject *add_ones_by_group(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *go, *ro, *co, *oo;
    int width;
    Py_ssize_t nbytes, nbits;
    if (!PyArg_ParseTuple(args, "OiOnOOn", &go, &width, &ro, &nbytes, &co, &oo, &nbits))
        return NULL;
    if (width != 1 && width != 2 && width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "group width must be 1, 2, 4 or 8 bytes");
        return NULL;
    }
    if (nbytes < 1 || nbits < 1 || nbits > 8 * nbytes || nbytes > (PY_SSIZE_T_MAX >> 6)) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= nbits <= 8*nbytes");
        return NULL;
    }
    Py_buffer gb = {0}, rb = {0}, cb = {0}, ob = {0};
    PyObject *result = NULL;
    lanes_t L = {0};
    if (get_buffer(go, &gb, 0, "groups") || get_buffer(ro, &rb, 0, "rows") || get_buffer(co, &cb, 1, "counts")
        || get_buffer(oo, &ob, 1, "ones"))
        goto done;
    Py_ssize_t n = gb.len / width, num_groups = cb.len / 8;
    if (gb.len % width || rb.len % nbytes || rb.len / nbytes != n || cb.len % 8 || num_groups < 1 || ob.len / 8 / nbits != num_groups
        || ob.len != num_groups * nbits * 8) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match: groups n*width, rows n*nbytes, "
                                          "counts G*8, ones G*nbits*8 bytes");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* every group checked before anything is written */
        Py_ssize_t g = group_at(gb.buf, width, i);
        if (g < 0 || g >= num_groups) {
            PyErr_Format(PyExc_ValueError, "record %zd: group out of [0, %zd)", i, num_groups);
            goto done;
        }
    }
    L.nw = (nbytes + 7) / 8;
    L.nbits = nbits;
    if ((size_t)num_groups > SIZE_MAX / 96 / (size_t)L.nw) {
        PyErr_NoMemory();
        goto done;
    }
    L.acc4 = calloc((size_t)num_groups * 4 * L.nw, 8);
    L.acc8 = calloc((size_t)num_groups * 8 * L.nw, 8);
    L.c4 = calloc((size_t)num_groups, 1);
    L.c8 = calloc((size_t)num_groups, 1);
    if (!L.acc4 || !L.acc8 || !L.c4 || !L.c8) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    fold(&L, gb.buf, width, rb.buf, n, nbytes, num_groups, cb.buf, ob.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    free(L.acc4);
    free(L.acc8);
    free(L.c4);
    free(L.c8);
    if (gb.obj) PyBuffer_Release(&gb);
    if (rb.obj) PyBuffer_Release(&rb);
    if (cb.obj) PyBuffer_Release(&cb);
    if (ob.obj) PyBuffer_Release(&ob);
    return result;
}

/* Set bits of a word, by halves (SWAR): no popcnt instruction is assumed of the machine it runs on. */
static inline int64_t popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & M4;
    return (int64_t)((x * 0x0101010101010101ULL) >> 56);
}

/* Popcount of a row's first nbits bits, and whether it holds every bit of each mask of its group. */
static void stats_loop(const uint8_t *groups, int width, const uint8_t *rows, Py_ssize_t n, Py_ssize_t nbytes,
                       Py_ssize_t nbits, const uint8_t *tested, const uint8_t *masks, Py_ssize_t nmasks,
                       const uint8_t *chosen, int64_t *hist, int64_t *hits)
{
    const Py_ssize_t full = nbits / 8, rest = nbits % 8;
    const uint8_t last = (uint8_t)((1u << rest) - 1u);
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *row = rows + i * nbytes;
        int64_t ones = 0;
        Py_ssize_t b = 0;
        for (; b + 8 <= full; b += 8) {
            uint64_t x;
            memcpy(&x, row + b, 8);
            ones += popcount64(x);
        }
        for (; b < full; b++)
            ones += popcount64(row[b]);
        if (rest)
            ones += popcount64(row[full] & last);
        hist[ones] += 1;
        if (!((tested[i >> 3] >> (i & 7)) & 1))
            continue;
        const Py_ssize_t g = group_at(groups, width, i);
        if (!chosen[g])
            continue;
        hits[0] += 1;
        const uint8_t *mask = masks + g * nmasks * nbytes;
        for (Py_ssize_t j = 0; j < nmasks; j++, mask += nbytes) {
            uint64_t missing = 0; /* bits of the mask the row lacks */
            Py_ssize_t k = 0;
            for (; k + 8 <= nbytes; k += 8) {
                uint64_t x, y;
                memcpy(&x, row + k, 8);
                memcpy(&y, mask + k, 8);
                missing |= y & ~x;
            }
            for (; k < nbytes; k++)
                missing |= (uint64_t)(mask[k] & (uint8_t)~row[k]);
            hits[1 + j] += (missing == 0);
        }
    }
}

static PyObject *report_stats(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *go, *ro, *to, *mo, *co, *ho, *xo;
    int width;
    Py_ssize_t nbytes, nbits, nmasks;
    if (!PyArg_ParseTuple(args, "OiOnnOOnOOO", &go, &width, &ro, &nbytes, &nbits, &to, &mo, &nmasks, &co, &ho, &xo))
        return NULL;
    if (width != 1 && width != 2 && width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "group width must be 1, 2, 4 or 8 bytes");
        return NULL;
    }
    if (nbytes < 1 || nbits < 1 || nbits > 8 * nbytes || nbytes > (PY_SSIZE_T_MAX >> 6) || nmasks < 0 || nmasks > 64) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= nbits <= 8*nbytes and 0 <= nmasks <= 64");
        return NULL;
    }
    Py_buffer gb = {0}, rb = {0}, tb = {0}, mb = {0}, cb = {0}, hb = {0}, xb = {0};
    PyObject *result = NULL;
    if (get_buffer(go, &gb, 0, "groups") || get_buffer(ro, &rb, 0, "rows") || get_buffer(to, &tb, 0, "tested")
        || get_buffer(mo, &mb, 0, "masks")
        || get_buffer(co, &cb, 0, "chosen") || get_buffer(ho, &hb, 1, "hist") || get_buffer(xo, &xb, 1, "hits"))
        goto done;
    Py_ssize_t n = gb.len / width, num_groups = cb.len;
    if (gb.len % width || rb.len % nbytes || rb.len / nbytes != n || tb.len != (n + 7) / 8 || num_groups < 1
        || mb.len != num_groups * nmasks * nbytes
        || hb.len != (nbits + 1) * 8 || xb.len != (nmasks + 1) * 8) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match: groups n*width, rows n*nbytes, tested (n+7)/8, "
                                          "masks G*nmasks*nbytes, chosen G, hist (nbits+1)*8, hits (nmasks+1)*8 bytes");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* the groups looked up, checked before anything is written */
        Py_ssize_t g = (((const uint8_t *)tb.buf)[i >> 3] >> (i & 7)) & 1 ? group_at(gb.buf, width, i) : 0;
        if (g < 0 || g >= num_groups) {
            PyErr_Format(PyExc_ValueError, "record %zd: group out of [0, %zd)", i, num_groups);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    stats_loop(gb.buf, width, rb.buf, n, nbytes, nbits, tb.buf, mb.buf, nmasks, cb.buf, hb.buf, xb.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (gb.obj) PyBuffer_Release(&gb);
    if (rb.obj) PyBuffer_Release(&rb);
    if (tb.obj) PyBuffer_Release(&tb);
    if (mb.obj) PyBuffer_Release(&mb);
    if (cb.obj) PyBuffer_Release(&cb);
    if (hb.obj) PyBuffer_Release(&hb);
    if (xb.obj) PyBuffer_Release(&xb);
    return result;
}

/* pair_counts(cols, k, words, out): out[i, j] = popcount(cols[i] & cols[j]) over `words` 64-bit words. */
static PyObject *pair_counts(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *co, *oo;
    Py_ssize_t k, words;
    if (!PyArg_ParseTuple(args, "OnnO", &co, &k, &words, &oo))
        return NULL;
    if (k < 0 || words < 0 || (k && words > PY_SSIZE_T_MAX / 8 / k) || k > 46340) {
        PyErr_SetString(PyExc_ValueError, "need k >= 0 and words >= 0 within memory");
        return NULL;
    }
    Py_buffer cb = {0}, ob = {0};
    PyObject *result = NULL;
    if (get_buffer(co, &cb, 0, "cols") || get_buffer(oo, &ob, 1, "out"))
        goto done;
    if (cb.len != k * words * 8 || ob.len != k * k * 8) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match: cols k*words*8, out k*k*8 bytes");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const uint64_t *c = cb.buf;
    int64_t *out = ob.buf;
    for (Py_ssize_t i = 0; i < k; i++) {
        const uint64_t *a = c + i * words;
        for (Py_ssize_t j = i; j < k; j++) {
            const uint64_t *b = c + j * words;
            int64_t t = 0;
            for (Py_ssize_t w = 0; w < words; w++)
                t += popcount64(a[w] & b[w]);
            out[i * k + j] = out[j * k + i] = t;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (cb.obj) PyBuffer_Release(&cb);
    if (ob.obj) PyBuffer_Release(&ob);
    return result;
}

static PyMethodDef methods[] = {
    {"add_ones_by_group", add_ones_by_group, METH_VARARGS,
     "add_ones_by_group(groups, width, rows, nbytes, counts, ones, nbits): counts[g] += 1 and "
     "ones[g, b] += bit b of the row, for every record (native-endian unsigned groups of `width` bytes, "
     "packed little-endian rows of `nbytes` bytes, int64 counts (G,) and ones (G, nbits))."},
    {"report_stats", report_stats, METH_VARARGS,
     "report_stats(groups, width, rows, nbytes, nbits, tested, masks, nmasks, chosen, hist, hits): hist[ones of the "
     "row] += 1 for every record; for a record with bit i of tested (packed) set whose group is chosen, hits[0] += 1 and hits[1 + j] "
     "+= 1 when it holds every bit of masks[g][j] (uint8 masks (G, nmasks, nbytes), uint8 chosen (G,), int64 hist "
     "(nbits + 1,) and hits (nmasks + 1,))."},
    {"pair_counts", pair_counts, METH_VARARGS,
     "pair_counts(cols, k, words, out): out[i, j] = the set bits of cols[i] & cols[j] (k bit sets of `words` "
     "uint64 words each; int64 out (k, k))."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_foldkernel", "Optional compiled fold kernel of ldp.",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__foldkernel(void) { return PyModule_Create(&module); }
