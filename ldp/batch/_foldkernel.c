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

static PyMethodDef methods[] = {
    {"add_ones_by_group", add_ones_by_group, METH_VARARGS,
     "add_ones_by_group(groups, width, rows, nbytes, counts, ones, nbits): counts[g] += 1 and "
     "ones[g, b] += bit b of the row, for every record (native-endian unsigned groups of `width` bytes, "
     "packed little-endian rows of `nbytes` bytes, int64 counts (G,) and ones (G, nbits))."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_foldkernel", "Optional compiled fold kernel of ldp.",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__foldkernel(void) { return PyModule_Create(&module); }
