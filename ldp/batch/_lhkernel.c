/* Optional compiled kernel of local hashing's server (ldp/batch/local_hashing.py; clients never load it).
 *
 * support_counts(seeds, ys, n, g, counts, d):
 *   for every v < d: counts[v] += #{i < n : MurmurHash3_x86_32(uint32_LE(v), seeds[i]) mod g == ys[i]}
 *   (seeds, ys: native uint32; counts: int64 of d entries; all C-contiguous).
 *
 * The key is one 4-byte block, so the hash is fmix32((rotl(seed ^ k_v, 13)*5 + 0xe6546b64) ^ 4) with
 * k_v = rotl(v*c1, 15)*c2; rotl distributes over xor, so each report contributes rotl(seed, 13) and each
 * item rotl(k_v, 13). Items are processed in blocks of BLOCK (their keys and int32 counts stay in L1),
 * and the inner loop over the items of a block is branch-free so that the compiler vectorizes it.
 * h mod g == y: a mask when g is a power of two, else the divisibility test of the numpy path
 * (rotr((h - y) * odd^-1, k) <= limit_y, see ldp/batch/local_hashing.py). Only the buffer protocol is
 * used (no numpy headers); the GIL is released while counting. Tested against the numpy path and mmh3
 * in tests/protocols/test_local_hashing.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#define BLOCK 2048
#define FLUSH 65536 /* reports per int32 flush (a count grows by at most 1 per report) */

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* one build for every x86-64: an AVX2 clone (8 lanes with vpmulld) chosen at load time where the CPU has it */
__attribute__((target_clones("avx2", "default")))
#endif
static void count(const uint32_t *seeds, const uint32_t *ys, Py_ssize_t n, uint64_t g, int64_t *counts,
                  Py_ssize_t d)
{
    uint32_t keys[BLOCK];
    int32_t acc[BLOCK];
    int pow2 = (g & (g - 1)) == 0;
    uint32_t mask = (uint32_t)(g - 1);
    int k = 0;
    uint64_t odd = g;
    while (!(odd & 1)) { odd >>= 1; k++; }
    uint32_t inv = 1; /* odd^-1 mod 2^32 by Newton's iteration */
    for (int it = 0; it < 5; it++)
        inv *= 2u - (uint32_t)odd * inv;
    uint32_t top = pow2 ? 0 : (uint32_t)(0xFFFFFFFFull / g);
    uint32_t wrap = pow2 ? 0 : (uint32_t)((1ull << 32) % g);
    for (Py_ssize_t j0 = 0; j0 < d; j0 += BLOCK) {
        Py_ssize_t w = d - j0 < BLOCK ? d - j0 : BLOCK;
        for (Py_ssize_t j = 0; j < w; j++) {
            uint32_t v = (uint32_t)(j0 + j);
            keys[j] = rotl32(rotl32(v * 0xcc9e2d51u, 15) * 0x1b873593u, 13);
            acc[j] = 0;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t r = rotl32(seeds[i], 13), y = ys[i];
            uint32_t limit = y >= wrap ? top - 1 : top;
            if (pow2) {
                for (Py_ssize_t j = 0; j < w; j++) {
                    uint32_t h = ((r ^ keys[j]) * 5u + 0xe6546b64u) ^ 4u;
                    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
                    acc[j] += (h & mask) == y;
                }
            } else {
                for (Py_ssize_t j = 0; j < w; j++) {
                    uint32_t h = ((r ^ keys[j]) * 5u + 0xe6546b64u) ^ 4u;
                    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
                    uint32_t x = (h - y) * inv;
                    x = (x >> k) | (x << ((32 - k) & 31)); /* rotr by k (k = 0: x) */
                    acc[j] += x <= limit;
                }
            }
            if ((i + 1) % FLUSH == 0) {
                for (Py_ssize_t j = 0; j < w; j++) { counts[j0 + j] += acc[j]; acc[j] = 0; }
            }
        }
        for (Py_ssize_t j = 0; j < w; j++)
            counts[j0 + j] += acc[j];
    }
}

static PyObject *support_counts(PyObject *self, PyObject *args)
{
    Py_buffer s, y, c;
    Py_ssize_t n, d;
    unsigned long long g;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*nKw*n", &s, &y, &n, &g, &c, &d))
        return NULL;
    PyObject *res = NULL;
    if (g < 2 || g > (1ull << 32) || n < 0 || d < 0 || s.len < n * 4 || y.len < n * 4 || c.len < d * 8) {
        PyErr_SetString(PyExc_ValueError, "support_counts: bad sizes (need 2 <= g <= 2**32, uint32 seeds and "
                        "ys of n entries, int64 counts of d entries)");
    } else {
        Py_BEGIN_ALLOW_THREADS
        count((const uint32_t *)s.buf, (const uint32_t *)y.buf, n, g, (int64_t *)c.buf, d);
        Py_END_ALLOW_THREADS
        res = Py_None;
        Py_INCREF(res);
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&y);
    PyBuffer_Release(&c);
    return res;
}

static PyMethodDef methods[] = {
    {"support_counts", support_counts, METH_VARARGS, "Local hashing's support counts (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lhkernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lhkernel(void) { return PyModule_Create(&module); }
