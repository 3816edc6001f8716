/* The fold kernel's engines, included once by _foldkernel.c (after Python.h): the job and its loops per engine (the
 * avx512 engine's byte lanes are in _foldbytes.h; _foldkernel.c allocates the job's state and runs the chosen engine
 * with the GIL released).
 *
 * The fold is a positional popcount per group in SWAR lanes, no loop per bit: each vector x of a row adds
 * (x >> s) & 0x1111..11 (s = 0..3) into its group's 4-bit lanes; at most 15 rows later those are split into byte lanes
 * (mask 0x0F..0F, before and after a shift by 4), at most 255 rows later widened into 16-bit lanes, at most 65535 rows
 * later added to the int64 table: no lane can overflow. Engines, chosen at run time (engines, use_engine): "avx512"
 * (AVX-512F and BW: rows of at most 16 bytes go straight into byte lanes, avx512_bytes) and "avx2" (AVX2, POPCNT,
 * BMI) on x86-64, "generic" (128-bit GCC vector extensions: SSE2 on any x86-64,
 * NEON on arm64); all give the same numbers. Only the Python buffer protocol is used (no numpy headers): building needs
 * GCC or Clang, and ldp.batch.bits falls back to numpy without this module. Every group is checked before anything is
 * written; the GIL is released while folding. Tested against row-by-row references on every engine
 * (tests/jobs/test_fold_fast.py, tests/jobs/test_rappor_evidence.py).
 */
#ifndef LDP_FOLDENGINES_H
#define LDP_FOLDENGINES_H

#if !defined(__GNUC__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the fold kernel needs GCC or Clang (vector extensions) and a little-endian machine"
#endif
#define INLINE static inline __attribute__((always_inline))
#ifndef SORT_CHUNK
#define SORT_CHUNK 262144 /* bytes of rows _sorted takes at a time: a quarter of a common L2 */
#endif
#define M1 0x1111111111111111ULL
#define M4 0x0F0F0F0F0F0F0F0FULL
typedef uint64_t v2 __attribute__((vector_size(16), aligned(1)));

typedef struct {
    const uint8_t *groups, *rows, *tested, *chosen;
    int width, narrow, fold, hist_on, tests_on, single;
    Py_ssize_t n, nbytes, nbits, num_groups, nmasks, nch, nw4, nw, reach, n_safe, ts; /* nw: row words tested, >= 2 */
    int64_t *counts, *ones, *hist, *tg;  /* tg: per group, ts apart: tested rows, then those holding each mask */
    uint64_t *tp;                        /* per group: the packed test counters of the rows tested 64 at a time */
    uint64_t *masks, *pmask;   /* masks as (G, max(nmasks, 2), nw) words; the nbits mask of a row */
    uint64_t *acc4, *l8;       /* per group: nibble lanes (nw4 words: word k's lane j counts bit 64w + 4j + s, w and
                                  s as the engine's steps put them), byte lanes (2*nw4: 8j+s, then 8j+4+s, of word k) */
    uint16_t *l16, *c4, *r8;   /* per group: 16-bit lanes (16*nw4); rows in acc4; rows in l8 */
    uint32_t *r16;             /* per group: rows in l16 */
    int32_t *bit;              /* byte lane p (of 16*nw4) of a group: its bit, or -1 */
    uint8_t *stage;            /* a row near the end of the buffer, zero-padded to reach bytes */
    uint32_t *order;           /* _sorted: a chunk's rows by group (numbers from the chunk's start), then G + 1 ends */
    Py_ssize_t chunk;          /* _sorted: rows per chunk; 0: not sorted */
    int bytes;                 /* avx512_bytes: byte lane p of a group counts bit p */
    uint8_t *recs;             /* avx512_bytes: 256 bytes of record, then 8 of counts, per group (_foldbytes.h) */
} job_t;

INLINE Py_ssize_t group_at(const uint8_t *groups, int width, Py_ssize_t i)
{
    switch (width) {
    case 1: return groups[i];
    case 2: { uint16_t v; memcpy(&v, groups + 2 * i, 2); return (Py_ssize_t)v; }
    case 4: { uint32_t v; memcpy(&v, groups + 4 * i, 4); return (Py_ssize_t)v; }
    default: { uint64_t v; memcpy(&v, groups + 8 * i, 8); return v > (uint64_t)PY_SSIZE_T_MAX ? -1 : (Py_ssize_t)v; }
    }
}

INLINE uint64_t word_at(const uint8_t *p) { uint64_t x; memcpy(&x, p, 8); return x; }
/* Bits i0..i1-1 of a packed bit array (i0 a multiple of 64, i1 - i0 <= 64, i1 at most its length in bits). */
INLINE uint64_t bits_at(const uint8_t *packed, Py_ssize_t i0, Py_ssize_t i1)
{
    uint64_t w = 0;
    if (i1 - i0 == 64) /* one load; the last bytes one by one (no call, which would cost the caller its registers) */
        return memcpy(&w, packed + i0 / 8, 8), w;
    for (Py_ssize_t k = 0; 8 * k < i1 - i0; k++)
        w |= (uint64_t)packed[i0 / 8 + k] << (8 * k);
    return w & ((1ULL << (i1 - i0)) - 1);
}
/* Set bits of a word: the popcnt instruction where the engine has it, else by halves (SWAR). */
INLINE int64_t popc(uint64_t x, const int hw)
{
    if (hw)
        return __builtin_popcountll(x);
    x = x - ((x >> 1) & 0x5555555555555555ULL), x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    return (int64_t)((((x + (x >> 4)) & M4) * 0x0101010101010101ULL) >> 56);
}

/* Group g's 16-bit lanes into the int64 table; its byte lanes into the 16-bit lanes (make_room: before r more rows go
 * into the byte lanes). */
static void flush16(job_t *J, Py_ssize_t g)
{
    uint16_t *restrict l16 = J->l16 + g * 16 * J->nw4;
    for (Py_ssize_t p = 0; p < 16 * J->nw4; p++)
        if (J->bit[p] >= 0)
            J->ones[g * J->nbits + J->bit[p]] += l16[p];
    memset(l16, 0, (size_t)(32 * J->nw4)), J->r16[g] = 0;
}
static void flush8(job_t *J, Py_ssize_t g)
{
    if (J->r16[g] + J->r8[g] > 65535)
        flush16(J, g);
    uint16_t *restrict l16 = J->l16 + g * 16 * J->nw4;
    uint8_t *restrict l8 = (uint8_t *)(J->l8 + g * 2 * J->nw4);
    for (Py_ssize_t p = 0; p < 16 * J->nw4; p++)
        l16[p] += l8[p];
    memset(l8, 0, (size_t)(16 * J->nw4)), J->r16[g] += J->r8[g], J->r8[g] = 0;
}
INLINE void make_room(job_t *J, Py_ssize_t g, int r)
{
    if (J->r8[g] + r > 255)
        flush8(J, g);
    J->r8[g] += (uint16_t)r, J->counts[g] += r;
}

/* The histogram and the tests of row i of group g, any width and number of masks. */
INLINE void row_stats(job_t *J, Py_ssize_t g, Py_ssize_t i, const uint8_t *row, const int hw)
{
    const Py_ssize_t nw = J->nw;
    if (J->hist_on) {
        int64_t ones = 0;
        for (Py_ssize_t w = 0; w < nw; w++)
            ones += popc(word_at(row + 8 * w) & J->pmask[w], hw);
        J->hist[ones] += 1;
    }
    if (!J->tests_on || !((J->tested[i >> 3] >> (i & 7)) & 1) || !J->chosen[g])
        return;
    int64_t *h = J->tg + g * J->ts;
    h[0] += 1;
    const uint64_t *mask = J->masks + g * (J->nmasks > 2 ? J->nmasks : 2) * nw;
    for (Py_ssize_t j = 0; j < J->nmasks; j++, mask += nw) {
        uint64_t missing = 0; /* bits of the mask the row lacks */
        for (Py_ssize_t w = 0; w < nw; w++)
            missing |= mask[w] & ~word_at(row + 8 * w);
        h[1 + j] += missing == 0;
    }
}
/* A tested row of <= 16 bytes against its group's 2 masks (mk: 4 words) as an increment of the group's packed test
 * counters (tp: 21 bits each: rows, rows holding mask 0, mask 1; unpacked into tg every UNPACK blocks of 64 rows). */
enum { UNPACK = 32767 };
static const uint64_t HOLDS[16] = {1, 1, 1, 1 | 1ULL << 21, 1, 1, 1, 1 | 1ULL << 21, 1, 1, 1, 1 | 1ULL << 21,
                                   1 | 1ULL << 42, 1 | 1ULL << 42, 1 | 1ULL << 42, 1 | 1ULL << 21 | 1ULL << 42};
INLINE uint64_t generic_holds(const uint8_t *row, const uint64_t *mk)
{
    const uint64_t x0 = word_at(row), x1 = word_at(row + 8);
    return HOLDS[((mk[0] & ~x0) == 0) | ((mk[1] & ~x1) == 0) << 1 | ((mk[2] & ~x0) == 0) << 2
                 | ((mk[3] & ~x1) == 0) << 3];
}
static void unpack(job_t *J) /* a group with no choice adds nothing (avx512_bytes tests its rows all the same) */
{
    for (Py_ssize_t g = 0; g < J->num_groups; g++)
        for (int j = 0; J->chosen[g] && j < 3; j++)
            J->tg[4 * g + j] += (int64_t)(J->tp[g] >> 21 * j & 0x1FFFFF);
    memset(J->tp, 0, 8 * (size_t)J->num_groups);
}
INLINE const uint8_t *staged(job_t *J, const uint8_t *row)
{
    return memset(J->stage, 0, (size_t)J->reach), memcpy(J->stage, row, (size_t)J->nbytes);
}

/* An engine's steps in its vectors VT of VB bytes: _wide, a row of nch vectors into its group's nibble lanes (word
 * (4c + s) VB/8 + q counts bits 64 (c VB/8 + q) + 4j + s); _flush4, those into byte lanes, stored as they are read (a
 * load spanning smaller stores waits for them); _group, r <= 255 rows of one group summed in registers. */
#define STEPS(NAME, ATTR, VT, VB)                                                                                  \
    INLINE ATTR void NAME##_wide(uint64_t *a4, const uint8_t *row, Py_ssize_t nch)                                 \
    {                                                                                                              \
        VT x, a;                                                                                                   \
        for (Py_ssize_t c = 0; c < nch; c++)                                                                       \
            for (int s = 0; s < 4; s++) {                                                                          \
                memcpy(&x, row + VB * c, VB), memcpy(&a, a4 + (4 * c + s) * (VB / 8), VB);                        \
                a += (x >> (uint64_t)s) & M1, memcpy(a4 + (4 * c + s) * (VB / 8), &a, VB);                         \
            }                                                                                                      \
    }                                                                                                              \
    INLINE ATTR void NAME##_flush4(job_t *J, Py_ssize_t g)                                                         \
    {                                                                                                              \
        make_room(J, g, J->c4[g]);                                                                                 \
        const Py_ssize_t nw4 = J->nw4;                                                                             \
        uint64_t *a = J->acc4 + g * nw4, *lo = J->l8 + g * 2 * nw4;                                                \
        for (Py_ssize_t k = 0; k < nw4; k += VB / 8) {                                                             \
            VT x, l, h, z = {0};                                                                                   \
            memcpy(&x, a + k, VB), memcpy(&l, lo + k, VB), memcpy(&h, lo + nw4 + k, VB);                           \
            l += x & M4, h += (x >> 4) & M4;                                                                       \
            memcpy(lo + k, &l, VB), memcpy(lo + nw4 + k, &h, VB), memcpy(a + k, &z, VB);                           \
        }                                                                                                          \
        J->c4[g] = 0;                                                                                              \
    }                                                                                                              \
    INLINE ATTR void NAME##_group(uint64_t *lo, Py_ssize_t nw4, const uint8_t *const *rp, int r, Py_ssize_t nch)  \
    {                                                                                                              \
        for (Py_ssize_t c = 0; c < nch; c++) {                                                                     \
            VT b[8] = {0}, x, l;                                                                                   \
            for (int k0 = 0; k0 < r; k0 += 15) {                                                                   \
                VT a[4] = {0};                                                                                     \
                for (int k = k0; k < (k0 + 15 < r ? k0 + 15 : r); k++) {                                           \
                    memcpy(&x, rp[k] + VB * c, VB);                                                                \
                    for (int s = 0; s < 4; s++)                                                                    \
                        a[s] += (x >> (uint64_t)s) & M1;                                                           \
                }                                                                                                  \
                for (int s = 0; s < 4; s++)                                                                        \
                    b[s] += a[s] & M4, b[4 + s] += (a[s] >> 4) & M4;                                               \
            }                                                                                                      \
            for (int s = 0; s < 8; s++) {                                                                          \
                uint64_t *L = lo + (s / 4) * nw4 + (4 * c + s % 4) * (VB / 8);                                     \
                memcpy(&l, L, VB), l += b[s], memcpy(L, &l, VB);                                                   \
            }                                                                                                      \
        }                                                                                                          \
    }

/* An engine's loops (rows in [0, n_safe) are read `reach` bytes from their start, the others from a copy): _short,
 * rows of <= 16 bytes, <= 2 masks, 64 rows folded, then the tested ones tested (_holds, into tp); the inner loop makes
 * no call (so keeps its values in registers): lanes are flushed outside it. _single: one group (_group). _sorted: a
 * fold without statistics, >= 2 rows a group per chunk: a chunk of SORT_CHUNK bytes of rows at a time (read into L2
 * while the chunk before is folded), its rows sorted by group (a counting sort), each group's summed in registers
 * (_group) and added to its byte lanes once; CMS's 256 groups of 512 bytes of nibble lanes, four times L1, are not
 * touched. _rows: any other case. */
#define ENGINE(NAME, ATTR, HW)                                                                                     \
    INLINE ATTR void NAME##_rows(job_t *J, Py_ssize_t i0, const int width, const int fold, const int stats)       \
    {                                                                                                              \
        for (Py_ssize_t i = i0; i < J->n; i++) {                                                                   \
            const Py_ssize_t g = group_at(J->groups, width, i);                                                    \
            const uint8_t *row = i < J->n_safe ? J->rows + i * J->nbytes : staged(J, J->rows + i * J->nbytes);     \
            if (fold && J->narrow)                                                                                 \
                NAME##_narrow(J->acc4 + g * 8, row);                                                               \
            else if (fold)                                                                                         \
                NAME##_wide(J->acc4 + g * J->nw4, row, J->nch);                                                    \
            if (fold && ++J->c4[g] == 15)                                                                          \
                NAME##_flush4(J, g);                                                                               \
            if (stats)                                                                                             \
                row_stats(J, g, i, row, HW);                                                                       \
        }                                                                                                          \
    }                                                                                                              \
    static __attribute__((noinline)) ATTR void NAME##_sorted(job_t *J, const int width)                            \
    {                                                                                                              \
        const Py_ssize_t n = J->n_safe, nbytes = J->nbytes, nw4 = J->nw4, nch = J->nch, G = J->num_groups;        \
        const Py_ssize_t chunk = J->chunk, lines = (nbytes + 127) / 64;                                            \
        const uint8_t *const groups = J->groups, *const rows = J->rows, *next = rows, *end = rows;                 \
        uint32_t *const order = J->order, *const at = order + chunk; /* at[g]: where group g's rows go, then end */ \
        const uint8_t *rp[255];                                                                                    \
        for (Py_ssize_t c0 = 0; c0 < n; c0 += chunk) {                                                             \
            const Py_ssize_t c1 = c0 + chunk < n ? c0 + chunk : n;                                                 \
            for (; next < rows + c1 * nbytes; next += 64) /* the first chunk (the others: a chunk ahead) */        \
                __builtin_prefetch(next, 0, 2);                                                                    \
            end = rows + (c1 + chunk < n ? c1 + chunk : n) * nbytes;                                               \
            memset(at, 0, 4 * (size_t)(G + 1));                                                                    \
            for (Py_ssize_t i = c0; i < c1; i++)                                                                   \
                at[group_at(groups, width, i) + 1] += 1;                                                           \
            for (Py_ssize_t g = 0; g < G; g++)                                                                     \
                at[g + 1] += at[g];                                                                                \
            for (Py_ssize_t i = c0; i < c1; i++)                                                                   \
                order[at[group_at(groups, width, i)]++] = (uint32_t)(i - c0);                                      \
            for (Py_ssize_t g = 0, j = 0; g < G; g++)                                                              \
                while (j < at[g]) { /* group g's rows, 255 at most at a time (byte lanes) */                      \
                    const int r = at[g] - j < 255 ? (int)(at[g] - j) : 255;                                        \
                    for (Py_ssize_t k = 0; k < r * lines && next < end; k++, next += 64)                           \
                        __builtin_prefetch(next, 0, 2); /* the next chunk into L2, as fast as this one goes */    \
                    for (int k = 0; k < r; k++)                                                                    \
                        rp[k] = rows + (c0 + order[j + k]) * nbytes;                                               \
                    make_room(J, g, r);                                                                            \
                    NAME##_group(J->l8 + g * 2 * nw4, nw4, rp, r, nch);                                            \
                    j += r;                                                                                        \
                }                                                                                                  \
        }                                                                                                          \
        NAME##_rows(J, n, width, 1, 0);                                                                            \
    }                                                                                                              \
    INLINE ATTR void NAME##_short(job_t *J, const int width, const int fold, const int hist_on, const int tests)  \
    {                                                                                                              \
        const uint8_t *const groups = J->groups, *const rows = J->rows;                                            \
        const Py_ssize_t n = J->n_safe, nbytes = J->nbytes;                                                        \
        const uint64_t pm0 = J->pmask[0], pm1 = J->pmask[1];                                                       \
        uint64_t *const acc4 = J->acc4;                                                                            \
        uint16_t *const c4 = J->c4;                                                                                \
        int64_t *const hist = J->hist;                                                                             \
        for (Py_ssize_t i0 = 0; i0 < n; i0 += 64) {                                                                \
            const Py_ssize_t i1 = i0 + 64 < n ? i0 + 64 : n;                                                       \
            for (Py_ssize_t i = i0, full = -1; i < i1; full = -1) {                                                \
                for (const uint8_t *row = rows + i * nbytes; i < i1; i++, row += nbytes) {                         \
                    const Py_ssize_t g = group_at(groups, width, i);                                               \
                    if (hist_on)                                                                                   \
                        hist[popc(word_at(row) & pm0, HW) + popc(word_at(row + 8) & pm1, HW)] += 1;                \
                    if (fold) {                                                                                    \
                        NAME##_narrow(acc4 + g * 8, row);                                                          \
                        if (++c4[g] == 15 && (full = g, ++i))                                                      \
                            break;                                                                                 \
                    }                                                                                              \
                }                                                                                                  \
                if (full >= 0)                                                                                     \
                    NAME##_flush4(J, full);                                                                        \
            }                                                                                                      \
            for (uint64_t w = tests ? bits_at(J->tested, i0, i1) : 0; w; w &= w - 1) {                             \
                const Py_ssize_t i = i0 + __builtin_ctzll(w), g = group_at(groups, width, i);                      \
                J->tp[g] += NAME##_holds(rows + i * nbytes, J->masks + 4 * g) & (J->chosen[g] ? ~0ULL : 0);        \
            }                                                                                                      \
            if (tests && i0 / 64 % UNPACK == UNPACK - 1)                                                           \
                unpack(J);                                                                                         \
        }                                                                                                          \
        NAME##_rows(J, n, width, fold, hist_on || tests);                                                          \
    }                                                                                                              \
    INLINE ATTR void NAME##_single(job_t *J, const int width, const int stats)                                    \
    {                                                                                                              \
        for (Py_ssize_t i0 = 0; i0 < J->n_safe; i0 += 255) {                                                       \
            const int r = J->n_safe - i0 < 255 ? (int)(J->n_safe - i0) : 255;                                      \
            const uint8_t *rp[255];                                                                                \
            for (int k = 0; k < r; k++) {                                                                          \
                rp[k] = J->rows + (i0 + k) * J->nbytes;                                                            \
                if (stats)                                                                                         \
                    row_stats(J, 0, i0 + k, rp[k], HW);                                                            \
            }                                                                                                      \
            make_room(J, 0, r);                                                                                    \
            NAME##_group(J->l8, J->nw4, rp, r, J->nch);                                                            \
        }                                                                                                          \
        NAME##_rows(J, J->n_safe, width, 1, stats);                                                                \
    }                                                                                                              \
    INLINE ATTR void NAME##_w(job_t *J, const int width)                                                           \
    {                                                                                                              \
        const int stats = J->hist_on || J->tests_on, f = J->fold, h = J->hist_on, t = J->tests_on;                \
        if (J->single)                                                                                             \
            stats ? NAME##_single(J, width, 1) : NAME##_single(J, width, 0);                                       \
        else if (J->narrow && J->nmasks <= 2)                                                                      \
            f && h && t ? NAME##_short(J, width, 1, 1, 1) : f && !stats ? NAME##_short(J, width, 1, 0, 0)          \
                                                                        : NAME##_short(J, width, f, h, t);         \
        else if (J->chunk)                                                                                         \
            NAME##_sorted(J, width);                                                                               \
        else                                                                                                       \
            stats ? NAME##_rows(J, 0, width, f, 1) : NAME##_rows(J, 0, width, f, 0);                               \
    }                                                                                                              \
    static ATTR void NAME##_run(job_t *J) { J->width == 1 ? NAME##_w(J, 1) : NAME##_w(J, J->width); }              \
    static ATTR void NAME##_pairs(const uint64_t *c, Py_ssize_t k, Py_ssize_t words, int64_t *out)                \
    {                                                                                                              \
        for (Py_ssize_t i = 0; i < k; i++)                                                                         \
            for (Py_ssize_t j = i; j < k; j++) {                                                                   \
                int64_t t = 0;                                                                                     \
                for (Py_ssize_t w = 0; w < words; w++)                                                             \
                    t += popc(c[i * words + w] & c[j * words + w], HW);                                            \
                out[i * k + j] = out[j * k + i] = t;                                                               \
            }                                                                                                      \
    }

/* generic: vectors of two words (SSE2, NEON); a narrow row is a wide row of one vector (nibble word 2s + w). */
STEPS(generic, , v2, 16)
#define generic_narrow(a4, row) generic_wide(a4, row, 1)
#if defined(__aarch64__) || defined(__POPCNT__)
ENGINE(generic, , 1)
#else
ENGINE(generic, , 0)
#endif

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 9) && !defined(FOLD_GENERIC_ONLY) /* -D: as elsewhere */
#define X86 1
#include <immintrin.h>
#define T_AVX2 __attribute__((target("avx2,popcnt,bmi")))
#define T_AVX512 __attribute__((target("avx512f,avx512bw,avx2,popcnt,bmi")))
typedef uint64_t v4 __attribute__((vector_size(32), aligned(1)));
typedef uint64_t v8 __attribute__((vector_size(64), aligned(1)));
/* avx2: narrow nibble vector v = 0, 1 holds words (w, s) = (0, 2v), (1, 2v), (0, 2v + 1), (1, 2v + 1). */
INLINE T_AVX2 void avx2_narrow(uint64_t *a4, const uint8_t *row)
{
    const __m256i m1 = _mm256_set1_epi64x((long long)M1), *a = (const __m256i *)a4;
    __m256i y = _mm256_srlv_epi64(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)row)),
                                  _mm256_set_epi64x(1, 1, 0, 0));
    _mm256_storeu_si256((__m256i *)a4, _mm256_add_epi64(_mm256_loadu_si256(a), _mm256_and_si256(y, m1)));
    y = _mm256_and_si256(_mm256_srli_epi64(y, 2), m1);
    _mm256_storeu_si256((__m256i *)a4 + 1, _mm256_add_epi64(_mm256_loadu_si256(a + 1), y));
}
INLINE T_AVX2 uint64_t avx2_holds(const uint8_t *row, const uint64_t *mk)
{
    const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)row));
    const __m256i z = _mm256_andnot_si256(x, _mm256_loadu_si256((const __m256i *)mk));
    return HOLDS[_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(z, _mm256_setzero_si256())))];
}
#define avx512_holds avx2_holds
STEPS(avx2, T_AVX2, v4, 32)
ENGINE(avx2, T_AVX2, 1)
/* avx512: the narrow nibble lanes are one vector, word q = 2s + w. */
INLINE T_AVX512 void avx512_narrow(uint64_t *a4, const uint8_t *row)
{
    const __m512i x = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)row));
    const __m512i y = _mm512_and_si512(_mm512_srlv_epi64(x, _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0)),
                                       _mm512_set1_epi64((long long)M1));
    _mm512_storeu_si512(a4, _mm512_add_epi64(_mm512_loadu_si512(a4), y));
}
STEPS(avx512, T_AVX512, v8, 64)
ENGINE(avx512, T_AVX512, 1)
#else
#define X86 0
#endif

#endif /* LDP_FOLDENGINES_H */
