/* avx512_bytes, the avx512 engine's fold of rows of at most 16 bytes (any number of groups, at most 2 masks) straight
 * into byte lanes, with the histogram and the tests in the same pass; included once by _foldengines.h (x86-64).
 *
 * Each group has a record of 256 bytes (its 128 byte lanes, its two masks, its packed counters: one address serves a
 * row's every update) and a count of its rows. Bit b of a row (its two words as masks) adds 1 to byte lane b of its
 * group (a masked subtract of -1 on each of two vectors). The lanes are widened into the group's 16-bit lanes (widen,
 * then flush16 into the table) before they can pass 255: with the statistics and at most WIDE_GROUPS groups, a
 * group's lanes are widened when more than 255 - WINDOW rows went in since they last were, checked once every WINDOW
 * rows (no test per row); otherwise when a row brings them to 255. Every row is tested against both its group's masks
 * and adds its tally (TALLY: the row, and when its coin says it is tested, that and the masks it holds) to its
 * group's packed counters in one addition: no branch per row (unpack16 applies the groups' choices). RAPPOR k = 128,
 * m = 16, 10^6 rows with their statistics: 3.3 ms with nibble lanes, 2.5 with byte lanes in per-group arrays, 2.05
 * with the coin shifted out of a word and no choice or popcount mask read per row, 1.9 with the records and the
 * window, 1.85 with the row counted in the tally (simulations/bench_fold.py; simulations/rappor_floor.c times the
 * fold and the statistics apart). */
#ifndef LDP_FOLDBYTES_H
#define LDP_FOLDBYTES_H

typedef struct {
    uint8_t lanes[128];  /* byte lane b: the group's rows with bit b set since the lanes were last widened */
    uint64_t masks[4];   /* the group's two masks, a word pair each */
    uint64_t tp;         /* with the tests, its packed counters (TALLY, unpack16) */
    uint8_t pad[88];
} brec_t;
_Static_assert(sizeof(brec_t) == 256, "a record is 256 bytes: its address is the group's number shifted");
typedef struct { /* a group's rows (with the tests, those unpacked: rows_of), and its rows when its lanes were last
                    widened (each counted into J->counts then), modulo 2^32; apart from the records, so a fold without
                    statistics touches the lanes' two lines and this table's line (8 groups to a line) */
    uint32_t rows, widened;
} bcount_t;
enum { WINDOW = 192, WIDE_GROUPS = 256 }; /* WINDOW: whole blocks of 64 rows, at most 255 */

/* Group g's byte lanes into its 16-bit lanes (byte lane p counts bit p: J->bit), its 16-bit lanes first into the
 * table when they could pass 65535; rows: the group's rows now. */
INLINE T_AVX512 void widen(job_t *J, brec_t *R, bcount_t *C, Py_ssize_t g, uint32_t rows)
{
    const uint32_t since = rows - C->widened;
    if (J->r16[g] + since > 65535)
        flush16(J, g);
    uint16_t *const l16 = J->l16 + g * 16 * J->nw4;
    for (int h = 0; h < 128; h += 32) {
        const __m512i x = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(R->lanes + h)));
        _mm512_storeu_si512(l16 + h, _mm512_add_epi16(_mm512_loadu_si512(l16 + h), x));
    }
    memset(R->lanes, 0, 128), J->r16[g] += since, J->counts[g] += since, C->widened = rows;
}

/* With the tests, a group's rows are counted in its packed counters: 16 bits each, its rows, its tested rows, those
 * holding mask 0, mask 1 (TALLY, by the row's 4 bits of held mask words, plus 16 when it is tested); unpacked into
 * C->rows and J->tg (its choice applied) every UNPACK16 blocks of 64 rows, before a field can pass 65535. */
enum { UNPACK16 = 65535 / 64 };
#define T16(h) (1 | 1ULL << 16 | (uint64_t)((h) & 1) << 32 | (uint64_t)((h) >> 1) << 48)
static const uint64_t TALLY[32] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                   T16(0), T16(0), T16(0), T16(1), T16(0), T16(0), T16(0), T16(1),
                                   T16(0), T16(0), T16(0), T16(1), T16(2), T16(2), T16(2), T16(3)};
static void unpack16(job_t *J, brec_t *R, bcount_t *C)
{
    for (Py_ssize_t g = 0; g < J->num_groups; g++) {
        C[g].rows += (uint32_t)(R[g].tp & 0xFFFF);
        for (int j = 0; J->chosen[g] && j < 3; j++)
            J->tg[4 * g + j] += (int64_t)(R[g].tp >> 16 * (j + 1) & 0xFFFF);
        R[g].tp = 0;
    }
}
INLINE uint32_t rows_of(const brec_t *R, const bcount_t *C, const int tests)
{
    return tests ? C->rows + (uint32_t)(R->tp & 0xFFFF) : C->rows;
}

/* Row `row` of group g into its record; tested: 1 when it is tested, else 0. full: the row's 128 bits are all
 * counted (no mask before the popcounts). windowed: its lanes are widened by the window's check, not here. */
INLINE T_AVX512 void avx512_byte_row(job_t *J, brec_t *R, bcount_t *C, Py_ssize_t g, const uint8_t *row,
                                     uint64_t tested, int64_t *hist, const int hist_on, const int tests,
                                     const int full, const int windowed)
{
    const __m512i minus1 = _mm512_set1_epi8(-1);
    const uint64_t w0 = word_at(row), w1 = word_at(row + 8);
    const __m512i lo = _mm512_load_si512(R->lanes), hi = _mm512_load_si512(R->lanes + 64);
    _mm512_store_si512(R->lanes, _mm512_mask_sub_epi8(lo, _cvtu64_mask64(w0), lo, minus1));
    _mm512_store_si512(R->lanes + 64, _mm512_mask_sub_epi8(hi, _cvtu64_mask64(w1), hi, minus1));
    if (hist_on)
        hist[full ? popc(w0, 1) + popc(w1, 1) : popc(w0 & J->pmask[0], 1) + popc(w1 & J->pmask[1], 1)] += 1;
    if (tests) {
        const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)row));
        const __m256i z = _mm256_andnot_si256(x, _mm256_loadu_si256((const __m256i *)R->masks));
        const int held = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(z, _mm256_setzero_si256())));
        R->tp += TALLY[held | (int)tested << 4];
    } else {
        C->rows += 1;
    }
    if (!windowed && __builtin_expect(rows_of(R, C, tests) - C->widened == 255, 0))
        widen(J, R, C, g, rows_of(R, C, tests));
}

INLINE T_AVX512 void avx512_bytes_w(job_t *J, brec_t *const R, bcount_t *const C, const int width,
                                    const int hist_on, const int tests, const int full, const int windowed)
{
    const Py_ssize_t n = J->n, nbytes = full ? 16 : J->nbytes, n_safe = J->n_safe, G = J->num_groups;
    const uint8_t *const groups = J->groups, *const rows = J->rows;
    int64_t *const hist = J->hist;
    for (Py_ssize_t i0 = 0; i0 < n; i0 += 64) {
        const Py_ssize_t i1 = i0 + 64 < n ? i0 + 64 : n, safe = i1 < n_safe ? i1 : n_safe;
        uint64_t coins = tests ? bits_at(J->tested, i0, i1) : 0;
        Py_ssize_t i = i0;
        for (const uint8_t *row = rows + i0 * nbytes; i < safe; i++, row += nbytes, coins >>= 1) {
            const Py_ssize_t g = group_at(groups, width, i);
            avx512_byte_row(J, R + g, C + g, g, row, coins & 1, hist, hist_on, tests, full, windowed);
        }
        for (; i < i1; i++, coins >>= 1) { /* the last rows: from a zero-padded copy */
            const Py_ssize_t g = group_at(groups, width, i);
            avx512_byte_row(J, R + g, C + g, g, staged(J, rows + i * nbytes), coins & 1, hist, hist_on, tests, full,
                            windowed);
        }
        if (windowed && (i0 / 64 + 1) % (WINDOW / 64) == 0) /* room for the next window's rows in every group */
            for (Py_ssize_t g = 0; g < G; g++)
                if (rows_of(R + g, C + g, tests) - C[g].widened > 255 - WINDOW)
                    widen(J, R + g, C + g, g, rows_of(R + g, C + g, tests));
        if (tests && i0 / 64 % UNPACK16 == UNPACK16 - 1)
            unpack16(J, R, C);
    }
}

/* The fold, its records set up before and emptied after (into the 16-bit lanes, counts and tp; run flushes the
 * lanes into the table). */
static T_AVX512 void avx512_bytes(job_t *J)
{
    const Py_ssize_t G = J->num_groups;
    const int h = J->hist_on, t = J->tests_on, full = J->nbits == 128, windowed = G <= WIDE_GROUPS;
    /* windowed: with statistics (1.9 ms against 2.05 with a test per row: RAPPOR k = 128, m = 16, 10^6 rows) */
    brec_t *const R = (brec_t *)J->recs;
    bcount_t *const C = (bcount_t *)(J->recs + 256 * G);
    for (Py_ssize_t g = 0; t && g < G; g++)
        memcpy(R[g].masks, J->masks + 4 * g, 32);
    if (J->width == 1 && h && t && windowed)
        full ? avx512_bytes_w(J, R, C, 1, 1, 1, 1, 1) : avx512_bytes_w(J, R, C, 1, 1, 1, 0, 1);
    else if (J->width == 1 && windowed && (h || t))
        avx512_bytes_w(J, R, C, 1, h, t, 0, 1);
    else if (J->width == 1 && !h && !t) /* the fold alone: faster with a test per row (1.5 ms against 1.65) */
        avx512_bytes_w(J, R, C, 1, 0, 0, 0, 0);
    else
        avx512_bytes_w(J, R, C, J->width, h, t, 0, 0);
    if (t)
        unpack16(J, R, C);
    for (Py_ssize_t g = 0; g < G; g++)
        widen(J, R + g, C + g, g, C[g].rows);
}

#endif /* LDP_FOLDBYTES_H */
