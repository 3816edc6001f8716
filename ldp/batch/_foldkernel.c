/* Optional compiled fold kernel of ldp (server side only; clients never load it).
 *
 * fold_rows(groups, width, rows, nbytes, nbits, counts, ones, hist, tested, masks, nmasks, chosen, hits): one pass
 *   over packed little-endian rows (bit b in byte b/8 at position b%8), each part optional (None): the fold,
 *   counts[g_i] += 1 and ones[g_i*nbits + b] += bit b (b < nbits); hist[popcount of the row's first nbits bits] += 1;
 *   RAPPOR's poisoning tests (ldp/batch/rappor_evidence.py): for a row with bit i of tested set whose group g has
 *   chosen[g], hits[0] += 1 and hits[1 + j] += 1 when it holds every bit of masks[g][j] (nbytes bytes); or, hits of
 *   G*(nmasks + 1), the same per group (hits[g*(nmasks + 1) + j]).
 * add_signs_by_group(groups, gw, cells, cw, bits, bw, m, counts, sums): counts[g] += 1, sums[g*m + cell] += 2*bit - 1
 *   (HCMS; int16 partial sums for large batches: signs16).
 * pair_counts(cols, k, words, out): out[i, j] = popcount(cols[i] & cols[j]) (X^T X of 0/1 rows packed as bit sets).
 * choose_sets(rows, nmax, k, n, sizes, out[, threads]): RAPPOR's choice of bits (ldp/batch/rappor_evidence.py,
 *   chosen_sets_of) from each of m samples of packed rows (uint8 (m, nmax, ceil(k/8)), sample g's first n[g] rows, int64
 *   n (m,)), for each size s of sizes (int64, 1..65536): out[g, t, :s] the bits (int64 (m, len(sizes), max(sizes)), -1
 *   past s); the samples split between up to `threads` threads (0: the cores online, at most 8; each sample's choice
 *   is its own, so the result is the same for any number).
 * free_counts(groups, width, tested, hi, counts), latest_free(groups, width, tested, hi, limit, rows, nbytes, want,
 *   got, out): RAPPOR's rows to choose from (bit clear in tested) counted per group, and each group's latest copied
 *   (ldp/batch/rappor_evidence.py, BitsTogether); see their definitions.
 * Groups, cells, bits: native-endian unsigned, 1, 2, 4 or 8 bytes; tables: int64; all C-contiguous.
 *
 * The fold itself and its engines are in _foldengines.h and _foldbytes.h (each included here once); their choice and
 * the run that allocates a job's state are below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_foldengines.h"
#if X86
#include "_foldbytes.h"
#endif

/* ---- the engines' table and the run: the job's working state allocated, the chosen engine called --------------- */
enum { GENERIC, AVX2, AVX512 };
static const char *const ENGINE_NAMES[] = {"generic", "avx2", "avx512"};
static const int ENGINE_WORDS[] = {2, 4, 8}; /* 64-bit words per vector */
static int engine_ok[3] = {1, 0, 0}, engine = GENERIC;
#if X86
#define ENGINES(F) {generic_##F, avx2_##F, avx512_##F}
#else
#define ENGINES(F) {generic_##F}
#endif
static void (*const RUN[])(job_t *) = ENGINES(run);
static void (*const PAIRS[])(const uint64_t *, Py_ssize_t, Py_ssize_t, int64_t *) = ENGINES(pairs);

/* Allocate the working state (one block) and run the engine; -1 with an exception set when memory runs out. */
static int run(job_t *J)
{
    const int e = engine == AVX512 && J->nbytes > 16 && J->nbytes <= 32 ? AVX2 : engine;
    const Py_ssize_t G = J->num_groups;
    J->single = J->fold && G == 1;
    J->narrow = J->nbytes <= 16 && !J->single;
    J->bytes = e == AVX512 && J->narrow && J->fold && J->nmasks <= 2;
    const int vw = ENGINE_WORDS[e];
    J->nch = J->narrow ? 1 : (J->nbytes + 8 * vw - 1) / (8 * vw);
    J->nw4 = J->narrow ? 8 : 4 * vw * J->nch;
    J->reach = J->narrow ? 16 : 8 * vw * J->nch > 8 * J->nw ? 8 * vw * J->nch : 8 * J->nw;
    J->n_safe = J->n * J->nbytes >= J->reach ? (J->n * J->nbytes - J->reach) / J->nbytes + 1 : 0;
    const size_t gw = J->fold ? (size_t)G : 0, nw4 = (size_t)J->nw4, reach = ((size_t)J->reach + 63) & ~(size_t)63;
    if ((size_t)G > SIZE_MAX / 128 / nw4)
        return PyErr_NoMemory(), -1;
    const size_t lanes = 8 * 3 * gw * nw4 + 2 * 16 * gw * nw4, counters = 8 * (size_t)G + 4 * 16 * nw4 + 8 * nw4;
    const size_t recs = J->bytes ? (256 + 8) * (size_t)G : 0;
    uint8_t *mem = calloc(lanes + counters + 8 * (size_t)J->nw + reach + recs + 128, 1);
    if (!mem)
        return PyErr_NoMemory(), -1;
    /* lanes at a cache line's start (each group's a whole number of lines): no vector access spans two lines */
    J->acc4 = (uint64_t *)(mem + (-(uintptr_t)mem & 63)), J->l8 = J->acc4 + gw * nw4, J->pmask = J->l8 + 2 * gw * nw4;
    J->stage = (uint8_t *)(J->pmask + J->nw), J->l16 = (uint16_t *)(J->stage + reach);
    J->r16 = (uint32_t *)(J->l16 + 16 * gw * nw4), J->bit = (int32_t *)(J->r16 + G);
    J->c4 = (uint16_t *)(J->bit + 16 * nw4), J->r8 = J->c4 + G;
    J->recs = (uint8_t *)(J->r8 + G), J->recs += -(uintptr_t)J->recs & 63; /* each record a whole number of lines */
    for (Py_ssize_t p = 0; p < 16 * J->nw4; p++) { /* the bit byte lane p counts: see job_t */
        const Py_ssize_t k = (p / 8) % J->nw4, j = p % 8, half = p / (8 * J->nw4);
        const Py_ssize_t w = J->narrow ? (k % vw) % 2 : (k / (4 * vw)) * vw + k % vw;
        const Py_ssize_t s = J->narrow ? (k / vw) * (vw / 2) + (k % vw) / 2 : (k / vw) % 4;
        const Py_ssize_t b = J->bytes ? p : 64 * w + 8 * j + 4 * half + s;
        J->bit[p] = b < J->nbits ? (int32_t)b : -1;
    }
    for (Py_ssize_t b = 0; b < J->nbits; b++)
        J->pmask[b / 64] |= 1ULL << (b % 64);
    J->chunk = SORT_CHUNK / J->nbytes > 64 ? SORT_CHUNK / J->nbytes : 64; /* sorted when >= 2 rows a group */
    if (!J->fold || J->single || J->narrow || J->hist_on || J->tests_on || J->n_safe < 2 * G || J->chunk < 2 * G)
        J->chunk = 0;
    else if (!(J->order = calloc((size_t)(J->chunk + G + 1), 4)))
        return free(mem), PyErr_NoMemory(), -1;
    Py_BEGIN_ALLOW_THREADS
#if X86
    if (J->bytes)
        avx512_bytes(J);
    else
#endif
        RUN[e](J);
    for (Py_ssize_t g = 0; J->fold && g < G; g++) { /* what is left in the lanes, level by level */
        if (J->c4[g])
            generic_flush4(J, g);
        if (J->r8[g])
            flush8(J, g);
        if (J->r16[g])
            flush16(J, g);
    }
    Py_END_ALLOW_THREADS
    free(J->order), free(mem);
    return 0;
}

/* ---- entry points: arguments checked before anything is written ------------------------------------------------ */
#define NBUF 9
typedef struct { Py_buffer b[NBUF]; } bufs_t;
static PyObject *release(bufs_t *B, PyObject *result)
{
    for (int k = 0; k < NBUF; k++)
        B->b[k].obj ? PyBuffer_Release(&B->b[k]) : (void)0;
    return result;
}

/* Buffer k of B from objs[k] for k < count, C-contiguous (writable: bit k of `writable`); None leaves one empty where
 * bit k of `optional` is set. Returns the widths, or -1 with an exception set. */
static int buffers(bufs_t *B, PyObject *const *objs, int count, const char *const *what, unsigned writable,
                   unsigned optional, const int *widths, int nwidths)
{
    for (int k = 0; k < nwidths; k++)
        if (widths[k] != 1 && widths[k] != 2 && widths[k] != 4 && widths[k] != 8)
            return PyErr_SetString(PyExc_ValueError, "group width must be 1, 2, 4 or 8 bytes"), -1;
    for (int k = 0; k < count; k++) {
        const int w = writable >> k & 1;
        if (!((optional >> k & 1) && objs[k] == Py_None)
            && PyObject_GetBuffer(objs[k], &B->b[k], PyBUF_C_CONTIGUOUS | (w ? PyBUF_WRITABLE : 0)) < 0)
            return PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous%s buffer", what[k], w ? " writable" : ""),
                   -1;
    }
    return 0;
}

static PyObject *size_error(bufs_t *B, const char *what)
{
    return PyErr_Format(PyExc_ValueError, "buffer sizes do not match: %s", what), release(B, NULL);
}

/* The largest value of a column of n unsigned integers of `width` bytes (0 if none): loops the compiler vectorizes,
 * with the engine's instructions (SSE2 has no unsigned 16- or 32-bit max). */
#define MAX_OF(T)                                                                                                  \
    { T t = 0, v; for (Py_ssize_t i = 0; i < n; i++) memcpy(&v, col + sizeof(T) * i, sizeof(T)), t = v > t ? v : t; \
      return t; }
#define COL_MAX(NAME, ATTR)                                                                                        \
    static ATTR uint64_t NAME##_colmax(const uint8_t *col, int width, Py_ssize_t n)                                \
    {                                                                                                              \
        switch (width) {                                                                                           \
        case 1: MAX_OF(uint8_t)                                                                                    \
        case 2: MAX_OF(uint16_t)                                                                                   \
        case 4: MAX_OF(uint32_t)                                                                                   \
        default: MAX_OF(uint64_t)                                                                                  \
        }                                                                                                          \
    }
COL_MAX(generic, )
#if X86
COL_MAX(avx2, T_AVX2)
COL_MAX(avx512, T_AVX512)
#endif
static uint64_t (*const COLMAX[])(const uint8_t *, int, Py_ssize_t) = ENGINES(colmax);
#define col_max(col, width, n) COLMAX[engine](col, width, n)

/* Every value of a column of n unsigned integers of `width` bytes below `limit`, else ValueError naming the first. */
static int check_below(const uint8_t *col, int width, Py_ssize_t n, Py_ssize_t limit, const char *what)
{
    const uint64_t top = col_max(col, width, n); /* the record is looked for only when one is out of range */
    for (Py_ssize_t i = 0; top >= (uint64_t)limit && i < n; i++) {
        const Py_ssize_t g = group_at(col, width, i);
        if (g < 0 || g >= limit)
            return PyErr_Format(PyExc_ValueError, "record %zd: %s out of [0, %zd)", i, what, limit), -1;
    }
    return 0;
}

/* Checks the job's buffers (B: 0 groups, 1 rows, 2 counts, 3 ones, 4 hist, 5 tested, 6 masks, 7 chosen, 8 hits;
 * each but groups and rows may be empty), runs it and releases them. */
static PyObject *fold_job(bufs_t *B, int width, Py_ssize_t nbytes, Py_ssize_t nbits, Py_ssize_t nmasks)
{
    job_t J = {0};
    Py_buffer *b = B->b;
    if (nbytes < 1 || nbits < 1 || nbits > 8 * nbytes || nbytes > (1 << 24) || nmasks < 0 || nmasks > 64)
        return PyErr_SetString(PyExc_ValueError, "need 1 <= nbits <= 8*nbytes (<= 16 MiB), 0 <= nmasks <= 64"),
               release(B, NULL);
    J.n = b[0].len / width, J.fold = b[2].obj != NULL, J.hist_on = b[4].obj != NULL, J.tests_on = b[5].obj != NULL;
    J.num_groups = J.fold ? b[2].len / 8 : J.tests_on ? b[7].len : 1;
    const Py_ssize_t G = J.num_groups, nw = (nbytes + 7) / 8 > 2 ? (nbytes + 7) / 8 : 2, ms = nmasks > 2 ? nmasks : 2;
    if (b[0].len % width || b[1].len % nbytes || b[1].len / nbytes != J.n)
        return size_error(B, "groups n*width, rows n*nbytes bytes");
    if ((J.fold && (G < 1 || b[2].len % 8 || b[3].len != G * nbits * 8)) || (J.hist_on && b[4].len != (nbits + 1) * 8))
        return size_error(B, "counts G*8, ones G*nbits*8, hist (nbits+1)*8 bytes");
    if (J.tests_on && (G < 1 || b[5].len != (J.n + 7) / 8 || b[6].len != G * nmasks * nbytes || b[7].len != G
                       || (b[8].len != (nmasks + 1) * 8 && b[8].len != G * (nmasks + 1) * 8)))
        return size_error(B, "tested (n+7)/8, masks G*nmasks*nbytes, chosen G, hits (nmasks+1)*8 or G times that");
    J.groups = b[0].buf, J.rows = b[1].buf, J.width = width, J.nbytes = nbytes, J.nbits = nbits, J.nw = nw;
    J.nmasks = J.tests_on ? nmasks : 0, J.counts = b[2].buf, J.ones = b[3].buf, J.hist = b[4].buf;
    J.tested = b[5].buf, J.chosen = b[7].buf, J.ts = nmasks > 2 ? nmasks + 1 : 4;
    if ((J.fold || J.tests_on) && check_below(J.groups, width, J.n, G, "group"))
        return release(B, NULL);
    if (!(J.masks = calloc((size_t)(G * ms * nw + G * J.ts + G), 8)))
        return PyErr_NoMemory(), release(B, NULL);
    J.tg = (int64_t *)(J.masks + G * ms * nw), J.tp = J.masks + G * ms * nw + G * J.ts;
    for (Py_ssize_t g = 0; g < G; g++) /* masks as zero-padded words, ms of them a group */
        for (Py_ssize_t j = 0; j < J.nmasks; j++)
            memcpy(J.masks + (g * ms + j) * nw, (const uint8_t *)b[6].buf + (g * nmasks + j) * nbytes, (size_t)nbytes);
    const int rc = run(&J), apart = J.tests_on && b[8].len > (nmasks + 1) * 8; /* hits per group */
    if (J.tests_on && nmasks <= 2)
        unpack(&J);
    for (Py_ssize_t g = 0; J.tests_on && !rc && g < G; g++)
        for (Py_ssize_t j = 0; j <= nmasks; j++)
            ((int64_t *)b[8].buf)[apart * g * (nmasks + 1) + j] += J.tg[g * J.ts + j];
    free(J.masks);
    return release(B, rc ? NULL : Py_NewRef(Py_None));
}
static const char *const NAMES[] = {"groups", "rows", "counts", "ones", "hist", "tested", "masks", "chosen", "hits"};
static PyObject *fold_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *o[NBUF];
    int width;
    Py_ssize_t nbytes, nbits, nmasks;
    bufs_t B = {0};
    if (!PyArg_ParseTuple(args, "OiOnnOOOOOnOO", &o[0], &width, &o[1], &nbytes, &nbits, &o[2], &o[3], &o[4], &o[5],
                          &o[6], &nmasks, &o[7], &o[8]))
        return NULL;
    return buffers(&B, o, NBUF, NAMES, 0x11C, 0x1FC, &width, 1) ? release(&B, NULL)
                                                                 : fold_job(&B, width, nbytes, nbits, nmasks);
}

/* HCMS's fold. Groups of 1 byte, cells of at most 2, bits 0/1, n < 2^31, n >= G m/4: into int16 partial sums (256 m +
 * 65536 cells, 640 KiB for m = 1024: in L2 with room to spare; every index a report can hold is in them) SIGNS_BLOCK
 * reports at a time, each block then checked from the cache (groups, cells, bits). A group's row of partial sums moves
 * into int32 ones (touched only then) once that group has had over 32767 - SIGNS_BLOCK reports since: no partial sum
 * can pass 32767 in the next block. The partial sums go into the tables at the end: 1.5x faster than straight into
 * them, and 10-15 % faster than int32 partial sums (1 MiB, a whole L2: 1.47 -> 1.27 ms per 10^6 reports). A block
 * out of range ends it (returns 1: nothing written); the reports are then checked (ValueError naming the first out of
 * range) and added straight in. */
enum { SIGNS16 = 1 << 22, SIGNS_BLOCK = 4096 };
#define SIGNS(GW, CW, BW, I0, I1, COUNTS, SUMS, T)                                                                 \
    for (Py_ssize_t i = I0; i < I1; i++) {                                                                         \
        const Py_ssize_t g = group_at(gs, GW, i);                                                                  \
        COUNTS[g] += 1, SUMS[g * m + group_at(cs, CW, i)] += (T)(2 * (int64_t)(uint64_t)group_at(bs, BW, i) - 1);  \
    }
static __attribute__((noinline)) int signs16(const uint8_t *gs, const uint8_t *cs, const uint8_t *bs, const int *w,
                                             Py_ssize_t n, Py_ssize_t G, Py_ssize_t m, int64_t *counts, int64_t *sums,
                                             int16_t *t, int32_t *rows)
{
    int64_t *tc = (int64_t *)(t + 256 * m + 65536), *moved = tc + 256; /* counts; counts when a row last moved */
    int any = 0;                                                       /* a row moved into `rows` */
    const Py_ssize_t groups = G < 256 ? G : 256;
    for (Py_ssize_t i0 = 0; i0 < n; i0 += SIGNS_BLOCK) {
        const Py_ssize_t r = n - i0 < SIGNS_BLOCK ? n - i0 : SIGNS_BLOCK;
        if (w[1] == 2 && w[2] == 1)
            SIGNS(1, 2, 1, i0, i0 + r, tc, t, int16_t)
    else
            SIGNS(1, w[1], w[2], i0, i0 + r, tc, t, int16_t)
        if (col_max(gs + i0, 1, r) >= (uint64_t)G || col_max(cs + i0 * w[1], w[1], r) >= (uint64_t)m
            || col_max(bs + i0 * w[2], w[2], r) > 1)
            return 1;
        for (Py_ssize_t g = 0; g < groups; g++)
            if (tc[g] - moved[g] > 32767 - SIGNS_BLOCK) { /* its row into the int32 partial sums */
                for (Py_ssize_t j = g * m; j < (g + 1) * m; j++)
                    rows[j] += t[j], t[j] = 0;
                moved[g] = tc[g], any = 1;
            }
    }
    for (Py_ssize_t k = 0; k < groups * m; k++) /* groups of 1 byte: below 256 */
        sums[k] += any ? (int64_t)rows[k] + t[k] : t[k];
    for (Py_ssize_t g = 0; g < groups; g++)
        counts[g] += tc[g];
    return 0;
}

static PyObject *add_signs_by_group(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *o[5];
    int w[3];
    Py_ssize_t m;
    bufs_t B = {0};
    static const char *const what[5] = {"groups", "cells", "bits", "counts", "sums"};
    if (!PyArg_ParseTuple(args, "OiOiOinOO", &o[0], &w[0], &o[1], &w[1], &o[2], &w[2], &m, &o[3], &o[4])
        || buffers(&B, o, 5, what, 0x18, 0, w, 3))
        return release(&B, NULL);
    const Py_ssize_t n = B.b[0].len / w[0], G = B.b[3].len / 8;
    const uint8_t *gs = B.b[0].buf, *cs = B.b[1].buf, *bs = B.b[2].buf;
    int64_t *counts = B.b[3].buf, *sums = B.b[4].buf;
    if (m < 1 || G < 1 || B.b[0].len % w[0] || B.b[1].len != n * w[1] || B.b[2].len != n * w[2] || B.b[3].len % 8
        || B.b[4].len / 8 / m != G || B.b[4].len != G * m * 8)
        return size_error(&B, "groups n*gw, cells n*cw, bits n*bw, counts G*8, sums G*m*8 bytes");
    int rc = 1;
    const int partial = w[0] == 1 && w[1] <= 2 && m <= (SIGNS16 - 65536) / 256 && n < INT32_MAX && n >= G * m / 4;
    int16_t *t = partial ? calloc((size_t)(256 * m + 65536) + 4 * 512, 2) : NULL; /* then 2 x 256 int64 counts */
    int32_t *rows = t ? calloc((size_t)(256 * m), 4) : NULL; /* zero pages until a row moves in */
    if (t && rows) {
        Py_BEGIN_ALLOW_THREADS
        rc = signs16(gs, cs, bs, w, n, G, m, counts, sums, t, rows);
        Py_END_ALLOW_THREADS
    }
    free(t), free(rows);
    if (rc && (check_below(gs, w[0], n, G, "group") || check_below(cs, w[1], n, m, "cell")))
        return release(&B, NULL);
    Py_BEGIN_ALLOW_THREADS
    if (rc)
        SIGNS(w[0], w[1], w[2], 0, n, counts, sums, int64_t)
    Py_END_ALLOW_THREADS
    return release(&B, Py_NewRef(Py_None));
}

static PyObject *pair_counts(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *o[2];
    Py_ssize_t k, words;
    bufs_t B = {0};
    static const char *const what[2] = {"cols", "out"};
    if (!PyArg_ParseTuple(args, "OnnO", &o[0], &k, &words, &o[1]))
        return NULL;
    if (k < 0 || words < 0 || (k && words > PY_SSIZE_T_MAX / 8 / k) || k > 46340)
        return PyErr_SetString(PyExc_ValueError, "need k >= 0 and words >= 0 within memory"), NULL;
    if (buffers(&B, o, 2, what, 2, 0, NULL, 0))
        return release(&B, NULL);
    if (B.b[0].len != k * words * 8 || B.b[1].len != k * k * 8)
        return size_error(&B, "cols k*words*8, out k*k*8 bytes");
    Py_BEGIN_ALLOW_THREADS
    PAIRS[engine](B.b[0].buf, k, words, B.b[1].buf);
    Py_END_ALLOW_THREADS
    return release(&B, Py_NewRef(Py_None));
}

#include "_foldchoice.h" /* RAPPOR's choice of bits: choice_t, and_counts_of, choose_one */

static PyObject *choose_sets(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *o[4];
    Py_ssize_t nmax, k;
    bufs_t B = {0};
    static const char *const what[4] = {"rows", "n", "sizes", "out"};
    int want_threads = 0;
    if (!PyArg_ParseTuple(args, "OnnOOO|i", &o[0], &nmax, &k, &o[1], &o[2], &o[3], &want_threads))
        return NULL;
    if (want_threads < 0 || want_threads > MAX_CHOICE_THREADS)
        return PyErr_Format(PyExc_ValueError, "threads must be in [0, %d] (0: as many as the cores)",
                            MAX_CHOICE_THREADS), NULL;
    want_threads = want_threads ? want_threads : choice_threads();
    if (k < 1 || k > (1 << 24) || nmax < 1 || nmax > (PY_SSIZE_T_MAX >> 8) / (k + 7))
        return PyErr_SetString(PyExc_ValueError, "need 1 <= k <= 2**24 and nmax >= 1 within memory"), NULL;
    if (buffers(&B, o, 4, what, 8, 0, NULL, 0))
        return release(&B, NULL);
    const Py_ssize_t width = (k + 7) / 8, m = B.b[1].len / 8, nsizes = B.b[2].len / 8;
    const int64_t *n = B.b[1].buf, *sizes = B.b[2].buf;
    if (B.b[1].len % 8 || B.b[2].len % 8 || B.b[0].len != m * nmax * width || nsizes < 1)
        return size_error(&B, "rows m*nmax*ceil(k/8), n m*8, sizes at least 8 bytes");
    Py_ssize_t smax = 0;
    for (Py_ssize_t t = 0; t < nsizes; t++) {
        if (sizes[t] < 1 || sizes[t] > 65536)
            return PyErr_SetString(PyExc_ValueError, "sizes must be in [1, 65536]"), release(&B, NULL);
        smax = sizes[t] > smax ? sizes[t] : smax;
    }
    for (Py_ssize_t g = 0; g < m; g++)
        if (n[g] < 1 || n[g] > nmax)
            return PyErr_Format(PyExc_ValueError, "sample %zd: %lld rows, not in [1, nmax]", g, (long long)n[g]),
                   release(&B, NULL);
    if (B.b[3].len != m * nsizes * smax * 8)
        return size_error(&B, "out m*len(sizes)*max(sizes)*8 bytes");
    const size_t words = (size_t)(nmax + 63) / 64;
    int threads = (int)(m / CHOICE_PER_THREAD);
    threads = threads < 1 ? 1 : threads > want_threads ? want_threads : threads;
    choice_job_t jobs[MAX_CHOICE_THREADS];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (choice_job_t){{k, width, smax, nsizes, sizes, and_counts_of()}, B.b[0].buf, n, B.b[3].buf, nmax,
                                 m * t / threads, m * (t + 1) / threads, NULL};
        if (choice_memory(&jobs[t].C, words, &jobs[t].mem)) {
            while (t-- > 0)
                free(jobs[t].mem);
            return PyErr_NoMemory(), release(&B, NULL);
        }
    }
    Py_BEGIN_ALLOW_THREADS
    run_choices(jobs, threads);
    Py_END_ALLOW_THREADS
    for (int t = 0; t < threads; t++)
        free(jobs[t].mem);
    return release(&B, Py_NewRef(Py_None));
}

/* RAPPOR's samples to choose from (ldp/batch/rappor_evidence.py, BitsTogether): the rows whose bit of `tested` is
 * clear. free_counts adds, per group, those among rows [0, hi); latest_free copies, per group g, its latest want[g]
 * of them among the last `limit` of [0, hi) (limit < 0: all), scanning back from hi and stopping once every want is
 * met: into out's slot of g (want[g] rows from the sum of the wants before it), ending at the slot's end, oldest
 * first; got[g] := how many. */
static PyObject *free_counts(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *o[3];
    int width;
    Py_ssize_t hi;
    bufs_t B = {0};
    static const char *const what[3] = {"groups", "tested", "counts"};
    if (!PyArg_ParseTuple(args, "OiOnO", &o[0], &width, &o[1], &hi, &o[2]) || buffers(&B, o, 3, what, 4, 0, &width, 1))
        return release(&B, NULL);
    const Py_ssize_t n = B.b[0].len / width, G = B.b[2].len / 8;
    if (B.b[0].len % width || B.b[1].len != (n + 7) / 8 || B.b[2].len % 8 || G < 1 || hi < 0 || hi > n)
        return size_error(&B, "groups n*width, tested (n+7)/8, counts G*8 bytes, 0 <= hi <= n");
    const uint8_t *gs = B.b[0].buf, *t = B.b[1].buf;
    int64_t *counts = B.b[2].buf;
    if (check_below(gs, width, hi, G, "group"))
        return release(&B, NULL);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < hi; i++)
        counts[group_at(gs, width, i)] += !(t[i >> 3] >> (i & 7) & 1);
    Py_END_ALLOW_THREADS
    return release(&B, Py_NewRef(Py_None));
}

static PyObject *latest_free(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *o[6];
    int width;
    Py_ssize_t hi, limit, nbytes;
    bufs_t B = {0};
    static const char *const what[6] = {"groups", "tested", "rows", "want", "got", "out"};
    if (!PyArg_ParseTuple(args, "OiOnnOnOOO", &o[0], &width, &o[1], &hi, &limit, &o[2], &nbytes, &o[3], &o[4], &o[5])
        || buffers(&B, o, 6, what, 0x30, 0, &width, 1))
        return release(&B, NULL);
    const Py_ssize_t n = B.b[0].len / width, G = B.b[3].len / 8;
    const int64_t *want = B.b[3].buf;
    int64_t *got = B.b[4].buf;
    if (nbytes < 1 || B.b[0].len % width || B.b[1].len != (n + 7) / 8 || B.b[2].len != n * nbytes || B.b[3].len % 8
        || G < 1 || B.b[4].len != G * 8 || hi < 0 || hi > n)
        return size_error(&B, "groups n*width, tested (n+7)/8, rows n*nbytes, want and got G*8 bytes, 0 <= hi <= n");
    Py_ssize_t total = 0;
    for (Py_ssize_t g = 0; g < G; g++) {
        if (want[g] < 0 || want[g] > PY_SSIZE_T_MAX / nbytes - total)
            return PyErr_Format(PyExc_ValueError, "want[%zd] = %lld: negative or beyond memory", g, (long long)want[g]),
                   release(&B, NULL);
        total += want[g];
    }
    if (B.b[5].len != total * nbytes)
        return size_error(&B, "out sum(want)*nbytes bytes");
    const uint8_t *gs = B.b[0].buf, *t = B.b[1].buf, *rows = B.b[2].buf;
    int64_t *end = malloc(8 * (size_t)G + 8);
    if (!end)
        return PyErr_NoMemory(), release(&B, NULL);
    Py_ssize_t at = 0, bad = -1;
    for (Py_ssize_t g = 0; g < G; g++)
        at += want[g], end[g] = at, got[g] = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t left = total, seen = 0;
    for (Py_ssize_t i = hi - 1; i >= 0 && left > 0 && (limit < 0 || seen < limit); i--) {
        if (t[i >> 3] >> (i & 7) & 1)
            continue;
        seen++;
        const Py_ssize_t g = group_at(gs, width, i);
        if (g < 0 || g >= G) {
            bad = i;
            break;
        }
        if (got[g] < want[g]) {
            got[g]++, left--;
            memcpy((uint8_t *)B.b[5].buf + (end[g] - got[g]) * nbytes, rows + i * nbytes, (size_t)nbytes);
        }
    }
    Py_END_ALLOW_THREADS
    free(end);
    if (bad >= 0)
        return PyErr_Format(PyExc_ValueError, "record %zd: group out of [0, %zd)", bad, G), release(&B, NULL);
    return release(&B, Py_NewRef(Py_None));
}

static PyObject *engines(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused))
{
    return Py_BuildValue(engine_ok[AVX512] ? "[sss]" : engine_ok[AVX2] ? "[ss]" : "[s]", "generic", "avx2", "avx512");
}
static PyObject *use_engine(PyObject *Py_UNUSED(self), PyObject *args)
{
    const char *name = NULL;
    const int before = engine;
    int e = 0;
    if (!PyArg_ParseTuple(args, "|z", &name))
        return NULL;
    while (name && e < 3 && (strcmp(name, ENGINE_NAMES[e]) || !engine_ok[e]))
        e++;
    if (name && e == 3)
        return PyErr_Format(PyExc_ValueError, "no engine '%s' on this machine (see engines())", name);
    engine = name ? e : engine;
    return PyUnicode_FromString(ENGINE_NAMES[before]);
}

static PyMethodDef methods[] = { /* the module's docstring (top of this file) says what they do */
    {"fold_rows", fold_rows, METH_VARARGS, "fold_rows(groups, width, rows, nbytes, nbits, counts, ones, hist, tested, "
                                           "masks, nmasks, chosen, hits): fold and count in one pass (None: not)."},
    {"add_signs_by_group", add_signs_by_group, METH_VARARGS,
     "add_signs_by_group(groups, gw, cells, cw, bits, bw, m, counts, sums)"},
    {"pair_counts", pair_counts, METH_VARARGS, "pair_counts(cols, k, words, out)"},
    {"choose_sets", choose_sets, METH_VARARGS,
     "choose_sets(rows, nmax, k, n, sizes, out[, threads]): RAPPOR's choice of bits."},
    {"free_counts", free_counts, METH_VARARGS, "free_counts(groups, width, tested, hi, counts): rows to choose from."},
    {"latest_free", latest_free, METH_VARARGS,
     "latest_free(groups, width, tested, hi, limit, rows, nbytes, want, got, out): the latest rows to choose from."},
    {"engines", engines, METH_NOARGS, "engines(): the vector engines this machine runs, slowest first."},
    {"use_engine", use_engine, METH_VARARGS, "use_engine(name=None): fold with `name` from now on; return the former."},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_foldkernel", "Optional compiled fold kernel of ldp.",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__foldkernel(void)
{
#if X86
    __builtin_cpu_init();
    engine_ok[AVX2] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")
                      && __builtin_cpu_supports("bmi");
    engine_ok[AVX512] = engine_ok[AVX2] && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    vpopcnt_ok = engine_ok[AVX512] && __builtin_cpu_supports("avx512vpopcntdq");
#endif
    engine = engine_ok[AVX512] ? AVX512 : engine_ok[AVX2] ? AVX2 : GENERIC;
    return PyModule_Create(&module);
}
