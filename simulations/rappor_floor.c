/* The floor under RAPPOR's fold with its statistics on this core, for simulations/bench_fold.py (issue 61, item 1).
 *
 * RAPPOR's add(batch) folds each report (a row of k <= 128 bits) into its cohort's k counters and counts it, and, for
 * the poisoning checks (ldp.batch.rappor_evidence), adds its number of 1 bits to a histogram and, when its coin says
 * so, tests it against its cohort's two chosen bit sets. This program times the fastest exact loops measured for
 * each part alone and for both in one pass, beside a read of the same bytes (the cohorts and the rows summed as
 * 64-bit words), each run after the caches were emptied (a 96 MiB read), as the benchmark's numpy pair does:
 *   read   the sum of the cohorts' and the rows' bytes
 *   fold   every row into its cohort's 128 byte lanes by a masked subtract of -1 (AVX-512BW), with 8 copies of each
 *          cohort's lanes (row i into copy i mod 8: a cohort's lanes are seldom read just after they were written,
 *          which is what limits one copy); every 1984 rows (at most 248 into any copy) every copy widened into its
 *          cohort's 16-bit lanes, every 33 of those into the int64 table; the reports per cohort counted per copy
 *   stats  the statistics alone: every row's 1 bits into a histogram (8 copies), every row whose coin is set
 *          tested against its cohort's two sets (a masked and-not), into packed counters per cohort and copy
 *          (rows, rows holding set 0, set 1: 21 bits each, unpacked every 2^20 rows); no branch per row
 *   both   the fold and the statistics in one pass, as the kernel does them (ldp/batch/_foldbytes.h): a record of
 *          256 bytes per cohort (lanes, sets, packed counters), its lanes widened at a check every 192 rows
 * Every loop's result is checked equal to a bit-by-bit reference (exit 2 when not). fold and both need AVX-512BW,
 * found at run time: without it they are not run (-1).
 * Input: a file of n (uint64), k, m (uint32 each), then the cohorts (n bytes), the rows (16 n bytes: k <= 128 bits,
 * the others 0), the coins ((n + 7) / 8 bytes, bit i of report i) and the sets (m x 2 x 16 bytes).
 * Output: one line of JSON, the best time of each loop in seconds. Built by the benchmark with the system's cc
 * (-O2 -march=native); not part of the package. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor_timing.h"
#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 9)
#include <immintrin.h>
#define HAVE_X86 1
#define T_BW __attribute__((target("avx512f,avx512bw")))
#else
#define HAVE_X86 0
#endif

/* WINDOW: whole blocks of 64 rows, at most 255 into any copy; WIDE widenings fit 16 bits */
enum { COPIES = 8, WINDOW = 64 * (255 * COPIES / 64), WIDE = 65535 / WINDOW, UNPACK = 1 << 20 };

typedef struct {
    uint64_t n;
    uint32_t k, m;
    const uint8_t *cohorts, *rows, *coins;
    const uint64_t *sets;             /* per cohort: set 0 (2 words), set 1 (2 words) */
    int64_t *ones, *counts, *hist, *tests; /* (m, 128), (m,), (129,), (m, 3) */
    uint8_t *l8;                      /* (m * COPIES, 128), at a cache line's start */
    uint16_t *l16;                    /* (m, 128) */
    int64_t *n_copy, *h_copy;         /* (m * COPIES,), (129 * COPIES,) */
    uint64_t *packed;                 /* (m * COPIES,) */
} job_t;

static uint64_t word(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* A row's packed test increment: 1 (tested), + 2^21 when it holds set 0, + 2^42 when it holds set 1; 0 untested. */
static inline uint64_t tested_holds(const uint64_t *s, uint64_t coin, uint64_t w0, uint64_t w1)
{
    const uint64_t h0 = ((s[0] & ~w0) | (s[1] & ~w1)) == 0, h1 = ((s[2] & ~w0) | (s[3] & ~w1)) == 0;
    return (1 | h0 << 21 | h1 << 42) & (0 - coin);
}

static void unpack(const job_t *J)
{
    for (size_t q = 0; q < (size_t)J->m * COPIES; q++) {
        for (int j = 0; j < 3; j++)
            J->tests[3 * (q / COPIES) + j] += (int64_t)(J->packed[q] >> 21 * j & 0x1FFFFF);
        J->packed[q] = 0;
    }
}

/* The 1 bits of rows i0 .. i1 - 1 (at most 64): with VPOPCNTDQ, 8 rows at a time (two vectors of 4 rows, each
 * row's two word counts summed), the last rows of the batch one by one. */
static inline void block_ones(const job_t *J, uint64_t i0, uint64_t i1, uint8_t *ones)
{
    const uint8_t *restrict rows = J->rows;
    uint64_t i = i0;
#if defined(__AVX512VPOPCNTDQ__) && defined(__AVX512BW__)
    for (; i + 8 <= i1; i += 8) {
        __m512i a = _mm512_popcnt_epi64(_mm512_loadu_si512(rows + 16 * i));
        __m512i b = _mm512_popcnt_epi64(_mm512_loadu_si512(rows + 16 * i + 64));
        a = _mm512_add_epi64(a, _mm512_shuffle_epi32(a, 0x4E)), b = _mm512_add_epi64(b, _mm512_shuffle_epi32(b, 0x4E));
        const __m128i eight = _mm512_cvtepi64_epi8(_mm512_mask_blend_epi64(0xAA, a, b)); /* rows 0, 4, 1, 5, ... */
        uint8_t o[8];
        memcpy(o, &eight, 8);
        for (int r = 0; r < 4; r++)
            ones[i - i0 + r] = o[2 * r], ones[i - i0 + 4 + r] = o[2 * r + 1];
    }
#endif
    for (; i < i1; i++)
        ones[i - i0] = (uint8_t)(__builtin_popcountll(word(rows + 16 * i))
                                 + __builtin_popcountll(word(rows + 16 * i + 8)));
}

/* Row i (of 1 bits ones, coin the lowest bit of coin) into the histogram and the tests: with AVX2, both sets in one
 * 256-bit and-not. */
static inline void row_stats(const job_t *J, uint64_t i, unsigned ones, uint64_t coin)
{
    const uint64_t c = i % COPIES;
    const uint32_t g = J->cohorts[i];
    J->h_copy[COPIES * (size_t)ones + c] += 1;
#if defined(__AVX2__)
    static const uint64_t HOLDS[16] = {1, 1, 1, 1 | 1ULL << 21, 1, 1, 1, 1 | 1ULL << 21, 1, 1, 1, 1 | 1ULL << 21,
                                       1 | 1ULL << 42, 1 | 1ULL << 42, 1 | 1ULL << 42, 1 | 1ULL << 21 | 1ULL << 42};
    const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(J->rows + 16 * i)));
    const __m256i z = _mm256_andnot_si256(x, _mm256_loadu_si256((const __m256i *)(J->sets + 4 * (size_t)g)));
    const int holds = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(z, _mm256_setzero_si256())));
    J->packed[COPIES * (size_t)g + c] += HOLDS[holds] & (0 - (coin & 1));
#else
    const uint8_t *row = J->rows + 16 * i;
    J->packed[COPIES * (size_t)g + c] += tested_holds(J->sets + 4 * (size_t)g, coin & 1, word(row), word(row + 8));
#endif
}

static inline void block_stats(const job_t *J, uint64_t i0, uint64_t i1)
{
    uint8_t ones[64];
    uint64_t coins = 0;
    block_ones(J, i0, i1, ones);
    memcpy(&coins, J->coins + i0 / 8, (i1 - i0 + 7) / 8);
    for (uint64_t i = i0; i < i1; i++, coins >>= 1)
        row_stats(J, i, ones[i - i0], coins);
    if (i0 / 64 % (UNPACK / 64) == UNPACK / 64 - 1)
        unpack(J);
}

static void stats(const job_t *J)
{
    for (uint64_t i0 = 0; i0 < J->n; i0 += 64)
        block_stats(J, i0, i0 + 64 < J->n ? i0 + 64 : J->n);
}

static void finish(const job_t *J, int folded, int counted)
{
    for (size_t q = 0; folded && q < (size_t)J->m * COPIES; q++)
        J->counts[q / COPIES] += J->n_copy[q], J->n_copy[q] = 0;
    for (size_t b = 0; b < (size_t)J->m * 128; b++)
        J->ones[b] += J->l16[b], J->l16[b] = 0;
    for (size_t p = 0; counted && p < 129 * COPIES; p++)
        J->hist[p / COPIES] += J->h_copy[p], J->h_copy[p] = 0;
    if (counted)
        unpack(J);
}

#if HAVE_X86
/* Every copy's byte lanes into its cohort's 16-bit lanes; every WIDE calls, those into the table. */
T_BW static void widen(const job_t *J, uint64_t *calls)
{
    for (size_t q = 0; q < (size_t)J->m * COPIES; q++) {
        uint8_t *l8 = J->l8 + 128 * q;
        uint16_t *l16 = J->l16 + 128 * (q / COPIES);
        for (int h = 0; h < 128; h += 32) {
            const __m512i a = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(l8 + h)));
            _mm512_storeu_si512(l16 + h, _mm512_add_epi16(_mm512_loadu_si512(l16 + h), a));
        }
        memset(l8, 0, 128);
    }
    if (++*calls % WIDE == 0)
        for (size_t b = 0; b < (size_t)J->m * 128; b++)
            J->ones[b] += J->l16[b], J->l16[b] = 0;
}

T_BW static inline void block_fold(const job_t *J, uint64_t i0, uint64_t i1)
{
    const __m512i minus1 = _mm512_set1_epi8(-1);
    const uint8_t *restrict rows = J->rows, *restrict cohorts = J->cohorts;
    uint8_t *restrict l8 = J->l8;
    int64_t *restrict n_copy = J->n_copy;
    for (uint64_t i = i0; i < i1; i++) {
        const size_t q = COPIES * (size_t)cohorts[i] + i % COPIES;
        uint8_t *lanes = l8 + 128 * q;
        const __m512i lo = _mm512_load_si512(lanes), hi = _mm512_load_si512(lanes + 64);
        _mm512_store_si512(lanes, _mm512_mask_sub_epi8(lo, _cvtu64_mask64(word(rows + 16 * i)), lo, minus1));
        _mm512_store_si512(lanes + 64, _mm512_mask_sub_epi8(hi, _cvtu64_mask64(word(rows + 16 * i + 8)), hi, minus1));
        n_copy[q] += 1;
    }
}

/* Every row into the byte lanes, a window of WINDOW rows at a time (then every copy widened). */
T_BW static void fold(const job_t *J)
{
    uint64_t calls = 0;
    for (uint64_t w0 = 0; w0 < J->n; w0 += WINDOW) {
        const uint64_t w1 = w0 + WINDOW < J->n ? w0 + WINDOW : J->n;
        for (uint64_t i0 = w0; i0 < w1; i0 += 64)
            block_fold(J, i0, i0 + 64 < w1 ? i0 + 64 : w1);
        widen(J, &calls);
    }
}
#endif

#if HAVE_X86
/* both: the fold and the statistics in one pass, as the kernel does them (avx512_bytes, ldp/batch/_foldbytes.h): a
 * record of 256 bytes per cohort (its byte lanes, its two sets, its packed counters: one address a row), its lanes
 * widened at a window's check (every 192 rows: those holding more than 63 rows), each row's coin shifted out of a
 * word, its 1 bits counted in two popcnt, its tests one 256-bit and-not, and its count, its test and the sets it holds
 * added to its cohort's packed counters in one addition (16-bit fields: rows, tested, holding set 0, set 1). */
typedef struct {
    uint8_t lanes[128];
    uint64_t sets[4], tally;
    uint8_t pad[88];
} rec_t;
typedef struct {
    rec_t *rec;
    uint32_t *rows, *widened, *wide; /* per cohort: rows unpacked; rows at the last widening; rows in 16-bit lanes */
} recs_t;
enum { UNPACK16 = 65535 / 64 }; /* blocks of 64 rows before a 16-bit field could pass 65535 */

static inline uint32_t rows_now(const recs_t *S, uint32_t g)
{
    return S->rows[g] + (uint32_t)(S->rec[g].tally & 0xFFFF);
}

T_BW static void widen_rec(const job_t *J, const recs_t *S, uint32_t g)
{
    const uint32_t now = rows_now(S, g), since = now - S->widened[g];
    uint16_t *l16 = J->l16 + 128 * (size_t)g;
    if (S->wide[g] + since > 65535) {
        for (int b = 0; b < 128; b++)
            J->ones[128 * (size_t)g + b] += l16[b], l16[b] = 0;
        S->wide[g] = 0;
    }
    for (int h = 0; h < 128; h += 32) {
        const __m512i a = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(S->rec[g].lanes + h)));
        _mm512_storeu_si512(l16 + h, _mm512_add_epi16(_mm512_loadu_si512(l16 + h), a));
    }
    memset(S->rec[g].lanes, 0, 128), S->wide[g] += since, J->counts[g] += since, S->widened[g] = now;
}

T_BW static void unpack_recs(const job_t *J, const recs_t *S)
{
    for (uint32_t g = 0; g < J->m; g++) {
        S->rows[g] += (uint32_t)(S->rec[g].tally & 0xFFFF);
        for (int j = 0; j < 3; j++)
            J->tests[3 * g + j] += (int64_t)(S->rec[g].tally >> 16 * (j + 1) & 0xFFFF);
        S->rec[g].tally = 0;
    }
}

T_BW static void both(const job_t *J, const recs_t *S)
{
#define T16(h) (1 | 1ULL << 16 | (uint64_t)((h) & 1) << 32 | (uint64_t)((h) >> 1) << 48)
    static const uint64_t TALLY[32] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                       T16(0), T16(0), T16(0), T16(1), T16(0), T16(0), T16(0), T16(1),
                                       T16(0), T16(0), T16(0), T16(1), T16(2), T16(2), T16(2), T16(3)};
    const __m512i minus1 = _mm512_set1_epi8(-1);
    const uint8_t *restrict rows = J->rows, *restrict cohorts = J->cohorts;
    rec_t *restrict rec = S->rec;
    int64_t *restrict hist = J->hist;
    for (uint32_t g = 0; g < J->m; g++)
        memcpy(rec[g].sets, J->sets + 4 * (size_t)g, 32);
    for (uint64_t i0 = 0; i0 < J->n; i0 += 64) {
        const uint64_t i1 = i0 + 64 < J->n ? i0 + 64 : J->n;
        uint64_t coins = 0;
        memcpy(&coins, J->coins + i0 / 8, (i1 - i0 + 7) / 8);
        for (uint64_t i = i0; i < i1; i++, coins >>= 1) {
            const uint32_t g = cohorts[i];
            const uint64_t w0 = word(rows + 16 * i), w1 = word(rows + 16 * i + 8);
            uint8_t *lanes = rec[g].lanes;
            const __m512i lo = _mm512_load_si512(lanes), hi = _mm512_load_si512(lanes + 64);
            _mm512_store_si512(lanes, _mm512_mask_sub_epi8(lo, _cvtu64_mask64(w0), lo, minus1));
            _mm512_store_si512(lanes + 64, _mm512_mask_sub_epi8(hi, _cvtu64_mask64(w1), hi, minus1));
            hist[__builtin_popcountll(w0) + __builtin_popcountll(w1)] += 1;
            const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(rows + 16 * i)));
            const __m256i z = _mm256_andnot_si256(x, _mm256_loadu_si256((const __m256i *)rec[g].sets));
            const int held = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(z, _mm256_setzero_si256())));
            rec[g].tally += TALLY[held | (int)(coins & 1) << 4];
        }
        if ((i0 / 64 + 1) % 3 == 0) /* a window of 192 rows: room for the next one in every cohort's lanes */
            for (uint32_t g = 0; g < J->m; g++)
                if (rows_now(S, g) - S->widened[g] > 255 - 192)
                    widen_rec(J, S, g);
        if (i0 / 64 % UNPACK16 == UNPACK16 - 1)
            unpack_recs(J, S);
    }
    unpack_recs(J, S);
    for (uint32_t g = 0; g < J->m; g++) {
        widen_rec(J, S, g);
        for (int b = 0; b < 128; b++)
            J->ones[128 * (size_t)g + b] += J->l16[128 * (size_t)g + b], J->l16[128 * (size_t)g + b] = 0;
        S->wide[g] = 0, S->rows[g] = S->widened[g] = 0;
    }
}
#endif

/* The reference: bit by bit. */
static void reference(const job_t *J)
{
    for (uint64_t i = 0; i < J->n; i++) {
        const uint8_t *row = J->rows + 16 * i;
        const uint32_t g = J->cohorts[i];
        int ones = 0;
        J->counts[g] += 1;
        for (int b = 0; b < 128; b++)
            if (row[b / 8] >> (b % 8) & 1)
                J->ones[128 * (size_t)g + b] += 1, ones++;
        J->hist[ones] += 1;
        if (J->coins[i / 8] >> (i % 8) & 1) {
            J->tests[3 * g] += 1;
            for (int j = 0; j < 2; j++) {
                int holds = 1;
                for (int b = 0; b < 128; b++)
                    if ((J->sets[4 * (size_t)g + 2 * j + b / 64] >> (b % 64) & 1) && !(row[b / 8] >> (b % 8) & 1))
                        holds = 0;
                J->tests[3 * g + 1 + j] += holds;
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rappor_floor FILE REPEATS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    uint64_t n;
    uint32_t km[2];
    if (!f || fread(&n, 8, 1, f) != 1 || fread(km, 4, 2, f) != 2 || n == 0 || n > (1ULL << 32) || km[0] == 0
        || km[0] > 128 || km[1] == 0 || km[1] > 256) {
        fprintf(stderr, "rappor_floor: cannot read %s (n >= 1, 1 <= k <= 128, 1 <= m <= 256)\n", argv[1]);
        return 2;
    }
    const uint32_t k = km[0], m = km[1];
    const int repeats = atoi(argv[2]);
    const size_t coin_bytes = (size_t)(n + 7) / 8, in_bytes = 17 * n + coin_bytes + 32 * (size_t)m;
    uint8_t *in = malloc(in_bytes + 8);
    const size_t table = (size_t)m * 128, copies = (size_t)m * COPIES, out_words = 2 * (table + m + 129 + 3 * m);
    int64_t *out = calloc(out_words + copies + 129 * COPIES, 8);
    uint64_t *packed = calloc(copies, 8), *big = calloc((96u << 20) / 8, 8);
    uint8_t *l8 = aligned_alloc(64, 128 * copies);
    uint16_t *l16 = calloc(table, 2);
    if (!in || !out || !packed || !big || !l8 || !l16 || fread(in, 1, in_bytes, f) != in_bytes) {
        fprintf(stderr, "rappor_floor: out of memory or short file\n");
        return 2;
    }
    fclose(f);
    memset(l8, 0, 128 * copies);
    job_t J = {n, k, m, in, in + n, in + 17 * n, NULL, out, out + table, out + table + m, out + table + m + 129,
               l8, l16, out + out_words, out + out_words + copies, packed};
    uint64_t *sets = malloc(32 * (size_t)m);
    if (!sets) {
        fprintf(stderr, "rappor_floor: out of memory\n");
        return 2;
    }
    memcpy(sets, in + 17 * n + coin_bytes, 32 * (size_t)m), J.sets = sets;
    const uint64_t pm0 = k >= 64 ? ~0ULL : (1ULL << k) - 1;
    const uint64_t pm1 = k >= 128 ? ~0ULL : k > 64 ? (1ULL << (k - 64)) - 1 : 0;
    for (uint64_t i = 0; i < n; i++) {
        if (J.cohorts[i] >= m || (word(J.rows + 16 * i) & ~pm0) || (word(J.rows + 16 * i + 8) & ~pm1)) {
            fprintf(stderr, "rappor_floor: report %llu out of range\n", (unsigned long long)i);
            return 2;
        }
    }
    int64_t *ref = out + out_words / 2; /* the reference's table, counts, histogram and tests, in the second half */
    job_t R = J;
    R.ones = ref, R.counts = ref + table, R.hist = ref + table + m, R.tests = ref + table + m + 129;
    reference(&R);
    rec_t *rec = aligned_alloc(64, sizeof(rec_t) * m);
    uint32_t *per = calloc(3 * (size_t)m, 4);
    if (!rec || !per) {
        fprintf(stderr, "rappor_floor: out of memory\n");
        return 2;
    }
    memset(rec, 0, sizeof(rec_t) * m);
    const recs_t S = {rec, per, per + m, per + 2 * m};
    const int have_bw = HAVE_X86 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f");
    const char *names[] = {"read", "fold", "stats", "both"};
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r <= repeats; r++)
        for (int loop = 0; loop < 4; loop++) {
            if ((loop == 1 || loop == 3) && !have_bw)
                continue;
            memset(out, 0, (out_words / 2) * 8);
            evict(big, (96u << 20) / 8);
            const double t0 = now();
            if (loop == 0) {
                uint64_t s = 0;
                for (uint64_t i = 0; i + 8 <= 17 * n; i += 8)
                    s += word(in + i);
                sink += s;
            } else if (loop == 2) {
                stats(&J);
            }
#if HAVE_X86
            else if (loop == 1)
                fold(&J);
            else
                both(&J, &S);
#endif
            const double dt = now() - t0;
            if (loop) {
                finish(&J, loop != 2, loop != 1);
                const size_t fold_part = table + m, stats_part = 129 + 3 * (size_t)m;
                if ((loop != 2 && memcmp(out, ref, 8 * fold_part))
                    || (loop != 1 && memcmp(out + fold_part, ref + fold_part, 8 * stats_part))) {
                    fprintf(stderr, "rappor_floor: %s differs from the reference\n", names[loop]);
                    return 2;
                }
            }
            if (r && dt < best[loop]) /* the first round warms up */
                best[loop] = dt;
        }
    printf("{\"n\": %llu, \"read_s\": %.9f, \"fold_s\": %.9f, \"stats_s\": %.9f, \"both_s\": %.9f, \"sink\": %llu}\n",
           (unsigned long long)n, best[0], have_bw ? best[1] : -1.0, best[2], have_bw ? best[3] : -1.0,
           (unsigned long long)(sink & 1));
    return 0;
}
