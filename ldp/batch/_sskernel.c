/* Optional compiled kernel of Subset Selection's batch path (ldp/batch/subset_selection.py; clients never load it).
 *
 * floyd_rows(seed, v, own, w, d, rows):
 *   for each row i: a uniform (w - own[i])-subset of the d - 1 columns other than v[i], by Floyd's algorithm
 *   over their positions 0..d-2 (position t is column t + (t >= v[i])), its bits OR-ed into the packed
 *   little-endian row i of `rows` (n rows of (d + 7) / 8 bytes), then bit v[i] if own[i]. The draws come from
 *   xoshiro256** (Blackman & Vigna 2018) seeded with the four 64-bit words of `seed` (the caller's numpy
 *   generator): each R(j + 1) takes the next bit_length(j) bits of its 64-bit outputs (low bits first, a word's
 *   leftover bits dropped when too few remain) and rejects a value above j: exactly uniform given uniform bits.
 *
 * fixup_rows(seed, v, own, w, d, threshold, planes, rows):
 *   the same law by another route, for large subsets: each of the d columns is set independently with
 *   probability threshold / 2^planes (bit-sliced, 64 columns per word: plane by plane from the most significant,
 *   one xoshiro256** output per plane, stopping once no column is tied with the threshold or the threshold has
 *   no lower bit set), column v[i] and the columns >= d cleared; then, while the set has fewer than
 *   k = w - own[i] columns, a uniform column other than v[i] (position t = one output's low bit_length(d - 2)
 *   bits, rejected when >= d - 1; column t + (t >= v[i])) is added if absent, and while it has more, a uniform one
 *   is removed if present. The first set's law is invariant under permutations of the d - 1 columns, and so is
 *   each uniform addition or removal: the result is a k-subset with a permutation-invariant law, i.e. uniform.
 *   Rows are written whole (no OR), then bit v[i] if own[i].
 *
 * seed: 4 native uint64, not all zero; v: int64; own, rows: uint8; all C-contiguous. Only the buffer protocol is
 * used (no numpy headers); the GIL is released. Both are tested against Python transcriptions in
 * tests/protocols/test_subset_selection.py.
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

/* The checks both entry points make: buffer sizes against n = len(v) rows of d bits, 1 <= w <= d - 1, a 32-byte
 * seed (copied to state) not all zero, every value in [0, d). Returns n, or -1 with ValueError set. */
static Py_ssize_t check_rows(const char *name, const Py_buffer *sb, const Py_buffer *vb, const Py_buffer *ob,
                             long long w, long long d, const Py_buffer *rb, uint64_t state[4])
{
    Py_ssize_t n = vb->len / 8;
    if (sb->len != 32 || d < 2 || d > (1LL << 31) || w < 1 || w > d - 1 || ob->len != n
        || rb->len != n * ((d + 7) / 8)) {
        PyErr_Format(PyExc_ValueError, "%s: inconsistent buffer sizes, seed, w or d", name);
        return -1;
    }
    const int64_t *v = (const int64_t *)vb->buf;
    memcpy(state, sb->buf, 32);
    int ok = (state[0] | state[1] | state[2] | state[3]) != 0;
    for (Py_ssize_t i = 0; i < n; i++)
        ok &= v[i] >= 0 && v[i] < d;
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s: a value out of range, or an all-zero seed", name);
        return -1;
    }
    return n;
}

static void release(Py_buffer *sb, Py_buffer *vb, Py_buffer *ob, Py_buffer *rb)
{
    PyBuffer_Release(sb);
    PyBuffer_Release(vb);
    PyBuffer_Release(ob);
    PyBuffer_Release(rb);
}

static PyObject *floyd_rows(PyObject *self, PyObject *args)
{
    Py_buffer sb, vb, ob, rb;
    long long w, d;
    if (!PyArg_ParseTuple(args, "y*y*y*LLw*", &sb, &vb, &ob, &w, &d, &rb))
        return NULL;
    uint64_t state[4];
    Py_ssize_t n = check_rows("floyd_rows", &sb, &vb, &ob, w, d, &rb, state);
    if (n >= 0) {
        Py_BEGIN_ALLOW_THREADS
        floyd(state, (const int64_t *)vb.buf, (const uint8_t *)ob.buf, w, n, d, (uint8_t *)rb.buf);
        Py_END_ALLOW_THREADS
    }
    release(&sb, &vb, &ob, &rb);
    if (n < 0)
        return NULL;
    Py_RETURN_NONE;
}

static inline int popcount64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(x);
#else
    int c = 0;
    for (; x; c++)
        x &= x - 1;
    return c;
#endif
}

static void fixup(uint64_t *state, const int64_t *v, const uint8_t *own, int64_t w, Py_ssize_t n, int64_t d,
                  uint64_t threshold, int planes, uint8_t *rows, uint64_t *words)
{
    Py_ssize_t nb = (Py_ssize_t)((d + 7) / 8), nw = (Py_ssize_t)((d + 63) / 64);
    uint64_t last = (d % 64) ? ((1ULL << (d % 64)) - 1) : ~0ULL;
    int bits = 0; /* bit_length(d - 2) */
    while (bits < 63 && ((d - 2) >> bits) != 0)
        bits++;
    uint64_t mask = (bits ? (1ULL << bits) : 1ULL) - 1, others = (uint64_t)(d - 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t vi = v[i], m = 0, k = w - (own[i] != 0);
        for (Py_ssize_t b = 0; b < nw; b++) {
            uint64_t below = 0, tied = ~0ULL;
            for (int plane = planes - 1; plane >= 0; plane--) {
                uint64_t r = next(state), kept = tied & r;
                if (threshold >> plane & 1) {
                    below |= tied ^ kept;
                    tied = kept;
                } else {
                    tied ^= kept;
                }
                if (!tied || !(threshold & ((1ULL << plane) - 1)))
                    break;
            }
            words[b] = below;
        }
        words[nw - 1] &= last;
        words[vi >> 6] &= ~(1ULL << (vi & 63));
        for (Py_ssize_t b = 0; b < nw; b++)
            m += popcount64(words[b]);
        while (m != k) {
            uint64_t t = bits ? next(state) & mask : 0;
            if (t >= others)
                continue;
            int64_t c = (int64_t)t + ((int64_t)t >= vi);
            uint64_t bit = 1ULL << (c & 63), *wd = words + (c >> 6);
            if (m < k && !(*wd & bit)) {
                *wd |= bit;
                m++;
            } else if (m > k && (*wd & bit)) {
                *wd &= ~bit;
                m--;
            }
        }
        if (own[i])
            words[vi >> 6] |= 1ULL << (vi & 63);
        uint8_t *row = rows + i * nb;
        for (Py_ssize_t j = 0; j < nb; j++)
            row[j] = (uint8_t)(words[j >> 3] >> (8 * (j & 7)));
    }
}

static PyObject *fixup_rows(PyObject *self, PyObject *args)
{
    Py_buffer sb, vb, ob, rb;
    long long w, d, threshold, planes;
    if (!PyArg_ParseTuple(args, "y*y*y*LLLLw*", &sb, &vb, &ob, &w, &d, &threshold, &planes, &rb))
        return NULL;
    uint64_t state[4], *words = NULL;
    Py_ssize_t n = -1;
    if (planes < 1 || planes > 32 || threshold < 1 || threshold >= (1LL << planes)) {
        PyErr_SetString(PyExc_ValueError, "fixup_rows: threshold not in [1, 2^planes) or planes not in [1, 32]");
    } else if ((n = check_rows("fixup_rows", &sb, &vb, &ob, w, d, &rb, state)) >= 0) {
        words = (uint64_t *)PyMem_Malloc(sizeof(uint64_t) * (size_t)((d + 63) / 64));
        if (words == NULL) {
            PyErr_NoMemory();
            n = -1;
        } else {
            Py_BEGIN_ALLOW_THREADS
            fixup(state, (const int64_t *)vb.buf, (const uint8_t *)ob.buf, w, n, d, (uint64_t)threshold,
                  (int)planes, (uint8_t *)rb.buf, words);
            Py_END_ALLOW_THREADS
        }
    }
    PyMem_Free(words);
    release(&sb, &vb, &ob, &rb);
    if (n < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"floyd_rows", floyd_rows, METH_VARARGS, "Floyd's subsets around each row's value (see the file's comment)."},
    {"fixup_rows", fixup_rows, METH_VARARGS, "Bernoulli sets corrected to the subset size (see the file's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sskernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sskernel(void) { return PyModule_Create(&module); }
