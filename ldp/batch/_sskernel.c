/* Optional compiled kernel of Subset Selection's batch path (ldp/batch/subset_selection.py; clients never load it).
 *
 * floyd_rows(seed, v, own, w, d, rows):
 *   for each row i: a uniform (w - own[i])-subset of the d - 1 columns other than v[i], by Floyd's algorithm
 *   over their positions 0..d-2 (position t is column t + (t >= v[i])), its bits OR-ed into the packed
 *   little-endian row i of `rows` (n rows of (d + 7) / 8 bytes), then bit v[i] if own[i]. The draws come from
 *   xoshiro256** (Blackman & Vigna 2018) seeded with the four 64-bit words of `seed` (the caller's numpy
 *   generator): each R(j + 1) takes the next bit_length(j) bits of its 64-bit outputs (low bits first, a word's
 *   leftover bits dropped when too few remain) and rejects a value above j: exactly uniform given uniform bits.
 *   seed: 4 native uint64, not all zero; v: int64; own, rows: uint8; all C-contiguous. Only the buffer protocol is
 *   used (no numpy headers); the GIL is released. Tested against a Python transcription in
 *   tests/protocols/test_subset_selection.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t next(uint64_t *s)
{
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static void floyd(uint64_t *state, const int64_t *v, const uint8_t *own, int64_t w, Py_ssize_t n, int64_t d,
                  uint8_t *rows)
{
    Py_ssize_t nb = (Py_ssize_t)((d + 7) / 8);
    uint64_t word = 0;
    int left = 0; /* unused bits of `word` */
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t *row = rows + i * nb;
        int64_t vi = v[i];
        int64_t j = d - 1 - (w - (own[i] != 0));
        int bits = 0; /* bit_length(j), kept as j grows */
        while (bits < 63 && (j >> bits) != 0)
            bits++;
        for (; j < d - 1; j++) {
            uint64_t t = 0;
            if ((j >> bits) != 0)
                bits++;
            if (j > 0) {
                uint64_t mask = (1ULL << bits) - 1; /* bits <= 32: d <= 2^31 */
                do {
                    if (left < bits) {
                        word = next(state);
                        left = 64;
                    }
                    t = word & mask;
                    word >>= bits;
                    left -= bits;
                } while (t > (uint64_t)j);
            }
            int64_t c = (int64_t)t + ((int64_t)t >= vi);
            if (row[c >> 3] >> (c & 7) & 1)
                c = j + (j >= vi);
            row[c >> 3] |= (uint8_t)(1u << (c & 7));
        }
        if (own[i])
            row[vi >> 3] |= (uint8_t)(1u << (vi & 7));
    }
}

static PyObject *floyd_rows(PyObject *self, PyObject *args)
{
    Py_buffer sb, vb, ob, rb;
    long long w, d;
    if (!PyArg_ParseTuple(args, "y*y*y*LLw*", &sb, &vb, &ob, &w, &d, &rb))
        return NULL;
    Py_ssize_t n = vb.len / 8;
    int failed = 1;
    uint64_t state[4];
    if (sb.len != 32 || d < 2 || d > (1LL << 31) || w < 1 || w > d - 1 || ob.len != n
        || rb.len != n * ((d + 7) / 8)) {
        PyErr_SetString(PyExc_ValueError, "floyd_rows: inconsistent buffer sizes, seed, w or d");
    } else {
        const int64_t *v = (const int64_t *)vb.buf;
        memcpy(state, sb.buf, 32);
        int ok = (state[0] | state[1] | state[2] | state[3]) != 0;
        for (Py_ssize_t i = 0; i < n; i++)
            ok &= v[i] >= 0 && v[i] < d;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "floyd_rows: a value out of range, or an all-zero seed");
        } else {
            Py_BEGIN_ALLOW_THREADS
            floyd(state, v, (const uint8_t *)ob.buf, w, n, d, (uint8_t *)rb.buf);
            Py_END_ALLOW_THREADS
            failed = 0;
        }
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&vb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&rb);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"floyd_rows", floyd_rows, METH_VARARGS, "Floyd's subsets around each row's value (see the file's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sskernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sskernel(void) { return PyModule_Create(&module); }
