/* RAPPOR's choice of bits for the fold kernel (_foldkernel.c includes it once, after its engines and pair counts):
 * the popcounts of ANDs per engine, each sample's columns as bit sets, and one sample's whole choice. */
#ifndef LDP_FOLDCHOICE_H
#define LDP_FOLDCHOICE_H

/* ---- RAPPOR's choice of bits (ldp/batch/rappor_evidence.py, chosen_sets_of): every sample's in one call ---------
 * Each sample's columns as bit sets over its rows (8x8 blocks transposed by delta swaps, as _stack_words), the pair
 * counts, the four seeds, the greedy growth and the final pick, with the numpy path's float formulas in the same order
 * (double precision, no contraction into fused multiply-adds) and its ties: to the lowest index in numpy's argmax
 * order. The popcounts of ANDs (the only heavy part) run in the engine's instructions; the scores in plain code. */
#define AND_COUNTS(NAME, ATTR, HW)                                                                                 \
    static ATTR void NAME##_and_counts(const uint64_t *cols, Py_ssize_t count, Py_ssize_t words,                   \
                                       const uint64_t *mask, int64_t *out)                                          \
    {                                                                                                              \
        for (Py_ssize_t b = 0; b < count; b++, cols += words) {                                                    \
            int64_t t = 0;                                                                                         \
            for (Py_ssize_t w = 0; w < words; w++)                                                                 \
                t += popc(cols[w] & mask[w], HW);                                                                  \
            out[b] = t;                                                                                            \
        }                                                                                                          \
    }
#if defined(__aarch64__) || defined(__POPCNT__)
AND_COUNTS(generic, , 1)
#else
AND_COUNTS(generic, , 0)
#endif
typedef void (*and_counts_t)(const uint64_t *, Py_ssize_t, Py_ssize_t, const uint64_t *, int64_t *);
static int vpopcnt_ok = 0; /* AVX-512 VPOPCNTDQ: the avx512 engine's popcounts of ANDs eight words at a time */
#if X86
AND_COUNTS(avx2, T_AVX2, 1)
#define T_VPOPCNT __attribute__((target("avx512f,avx512vpopcntdq,popcnt")))
/* The sums of the lanes of a0..a7, in order: unpacks then two levels of 128-bit lane shuffles, each adding pairs. */
static inline T_VPOPCNT __m512i vpopcnt_sum8(const __m512i *a)
{
    __m512i b[4], c[2];
    for (int i = 0; i < 4; i++)
        b[i] = _mm512_add_epi64(_mm512_unpacklo_epi64(a[2 * i], a[2 * i + 1]),
                                _mm512_unpackhi_epi64(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 2; i++)
        c[i] = _mm512_add_epi64(_mm512_shuffle_i64x2(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_i64x2(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_epi64(_mm512_shuffle_i64x2(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i64x2(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
}
/* Eight columns at a time (their counts summed across lanes together), the rest one at a time. */
static T_VPOPCNT void vpopcnt_and_counts(const uint64_t *cols, Py_ssize_t count, Py_ssize_t words,
                                         const uint64_t *mask, int64_t *out)
{
    Py_ssize_t b = 0;
    for (; b + 8 <= count; b += 8, cols += 8 * words) {
        __m512i acc[8];
        for (int i = 0; i < 8; i++)
            acc[i] = _mm512_setzero_si512();
        for (Py_ssize_t w = 0; w < words; w += 8) {
            const __mmask8 lanes = words - w >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (words - w)) - 1);
            const __m512i mk = _mm512_maskz_loadu_epi64(lanes, mask + w);
            for (int i = 0; i < 8; i++)
                acc[i] = _mm512_add_epi64(acc[i], _mm512_popcnt_epi64(_mm512_and_si512(
                                                      _mm512_maskz_loadu_epi64(lanes, cols + i * words + w), mk)));
        }
        _mm512_storeu_si512(out + b, vpopcnt_sum8(acc));
    }
    for (; b < count; b++, cols += words) {
        __m512i acc = _mm512_setzero_si512();
        for (Py_ssize_t w = 0; w < words; w += 8) {
            const __mmask8 lanes = words - w >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (words - w)) - 1);
            const __m512i x = _mm512_and_si512(_mm512_maskz_loadu_epi64(lanes, cols + w),
                                               _mm512_maskz_loadu_epi64(lanes, mask + w));
            acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
        }
        out[b] = _mm512_reduce_add_epi64(acc);
    }
}
#endif
static and_counts_t and_counts_of(void)
{
#if X86
    if (engine == AVX512 && vpopcnt_ok)
        return vpopcnt_and_counts;
    if (engine != GENERIC)
        return avx2_and_counts;
#endif
    return generic_and_counts;
}

/* One sample's working state: its columns (k x words), counts, the rows of a growing set, the candidates. */
typedef struct {
    Py_ssize_t k, width, smax, nsizes;
    const int64_t *sizes;
    and_counts_t counts;
    uint64_t *cols, *rows, *all;
    int64_t *ones, *cnt, *grown; /* grown: 4 x smax */
    double *overall, *base, *inv_base, *unit; /* unit: 1.0 for each bit (the frequency's base) */
    uint8_t *taken;
} choice_t;

/* Columns of the n packed rows (width bytes each) as bit sets: row i is bit i % 64 of word i / 64 of its columns. */
static void column_sets(choice_t *C, const uint8_t *rows, Py_ssize_t n, Py_ssize_t words)
{
    const Py_ssize_t k = C->k, width = C->width, stride = 8 * words; /* a column's bytes: byte r8 its rows 8r8.. */
    uint8_t *out = (uint8_t *)C->cols;
    memset(out, 0, (size_t)(k * stride));
    for (Py_ssize_t r8 = 0; 8 * r8 < n; r8++) {
        const uint8_t *block = rows + 8 * r8 * width;
        const Py_ssize_t span = n - 8 * r8 < 8 ? n - 8 * r8 : 8;
        for (Py_ssize_t c = 0; c < width; c++) {
            uint64_t x = 0, t;
            if (span == 8)
                for (int i = 0; i < 8; i++)
                    x |= (uint64_t)block[i * width + c] << (8 * i);
            else
                for (Py_ssize_t i = 0; i < span; i++)
                    x |= (uint64_t)block[i * width + c] << (8 * i);
            if (!x)
                continue;
            t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL, x ^= t ^ (t << 7);
            t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL, x ^= t ^ (t << 14);
            t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL, x ^= t ^ (t << 28);
            const Py_ssize_t top = k - 8 * c < 8 ? k - 8 * c : 8; /* byte j: column 8c + j of the block's rows */
            for (Py_ssize_t j = 0; j < top; j++)
                out[(8 * c + j) * stride + r8] = (uint8_t)(x >> (8 * j));
        }
    }
}

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
/* The choice from one sample of n rows (chosen_sets_of): out[t * smax + i], i < sizes[t], the bits of size t. */
static void choose_one(choice_t *C, const uint8_t *rows, Py_ssize_t n, int64_t *out)
{
    const Py_ssize_t k = C->k, words = (n + 63) / 64, smax = C->smax, start = k > 1 ? 2 : 1;
    const double dn = (double)n;
    int64_t seeds[4] = {0, 0, 0, 0}; /* (i, j) of the largest covariance, then of the most frequent pair */
    column_sets(C, rows, n, words);
    for (Py_ssize_t w = 0; w < words; w++)
        C->all[w] = ~0ULL;
    C->counts(C->cols, k, words, C->all, C->ones);
    for (Py_ssize_t b = 0; b < k; b++) {
        C->overall[b] = (double)C->ones[b] / dn; /* also mu, the diagonal of the pair counts over n */
        C->base[b] = C->overall[b] >= 1.0 / dn ? C->overall[b] : 1.0 / dn;
        C->inv_base[b] = 1.0 / C->base[b], C->unit[b] = 1.0;
    }
    if (k > 1) { /* argmax in row-major order, -inf on the diagonal: the first maximum is above it (symmetric) */
        double top = -INFINITY, inv = 1.0 / dn;
        int64_t most = -1;
        for (Py_ssize_t i = 0; i + 1 < k; i++) {
            C->counts(C->cols + (i + 1) * words, k - i - 1, words, C->cols + i * words, C->cnt);
            const double mi = C->overall[i];
            for (Py_ssize_t j = i + 1; j < k; j++) {
                const int64_t pair = C->cnt[j - i - 1];
                const double prod = mi * C->overall[j];
                /* pair * inv is within 2 ulp of pair / dn (at most 1): the covariance is computed only where it
                 * can beat the largest so far */
                if (pair * inv - prod + 0x1p-40 >= top) {
                    const double cov = (double)pair / dn - prod;
                    if (cov > top)
                        top = cov, seeds[0] = i, seeds[1] = j;
                }
                if (pair > most)
                    most = pair, seeds[2] = i, seeds[3] = j;
            }
        }
    }
    for (int c = 0; c < 4; c++) { /* seed c / 2, grown by lift (c even) or by frequency (c odd) */
        int64_t *g = C->grown + c * smax;
        Py_ssize_t len = start < smax ? start : smax;
        memset(C->taken, 0, (size_t)k);
        for (Py_ssize_t i = 0; i < len; i++)
            g[i] = seeds[2 * (c / 2) + i], C->taken[g[i]] = 1;
        for (Py_ssize_t w = 0; w < words; w++)
            C->rows[w] = len > 1 ? C->cols[g[0] * words + w] & C->cols[g[1] * words + w] : C->cols[g[0] * words + w];
        for (; len < smax; len++) {
            int64_t have;
            C->counts(C->rows, 1, words, C->rows, &have);
            C->counts(C->cols, k, words, C->rows, C->cnt);
            const double h = (double)(have > 1 ? have : 1), ih = 1.0 / h;
            const double *ib = c % 2 == 0 ? C->inv_base : C->unit;
            Py_ssize_t pick = 0;
            double top = -INFINITY;
            for (Py_ssize_t b = 0; b < k; b++) {
                /* scores are at least 0 (or -inf); cnt * ih * ib within 4 ulp of the score: it is computed only where
                 * it can beat the largest so far (the first b always) */
                if (C->taken[b] || (have && b && C->cnt[b] * ih * ib[b] * (1.0 + 0x1p-40) < top)) {
                    if (b == 0)
                        top = -INFINITY, pick = 0;
                    continue;
                }
                double score = have == 0 ? C->overall[b] : (double)C->cnt[b] / h;
                if (have && c % 2 == 0)
                    score = score / C->base[b];
                if (b == 0 || score > top)
                    top = score, pick = b;
            }
            g[len] = pick, C->taken[pick] = 1;
            for (Py_ssize_t w = 0; w < words; w++)
                C->rows[w] &= C->cols[pick * words + w];
        }
    }
    for (Py_ssize_t t = 0; t < C->nsizes; t++) { /* the first candidate the most rows have all of */
        const Py_ssize_t s = C->sizes[t];
        int64_t best = -1;
        int c_best = 0;
        for (int c = 0; c < 4; c++) {
            const int64_t *g = C->grown + c * smax;
            int64_t have;
            for (Py_ssize_t w = 0; w < words; w++) {
                C->rows[w] = ~0ULL;
                for (Py_ssize_t i = 0; i < s; i++)
                    C->rows[w] &= C->cols[g[i] * words + w];
            }
            C->counts(C->rows, 1, words, C->rows, &have);
            if (have > best)
                best = have, c_best = c;
        }
        for (Py_ssize_t i = 0; i < smax; i++)
            out[t * smax + i] = i < s ? C->grown[c_best * smax + i] : -1;
    }
}
#if defined(__clang__)
#pragma clang fp contract(on)
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

/* ---- every sample's choice, split between threads (choose_sets): each sample's choice is its own ---------------- */
enum { MAX_CHOICE_THREADS = 8, CHOICE_PER_THREAD = 8 }; /* a thread takes 8 samples at least: ~0.4 ms of work */
typedef struct {
    choice_t C;
    const uint8_t *rows;
    const int64_t *n;
    int64_t *out;
    Py_ssize_t nmax, g0, g1;
    uint8_t *mem;
} choice_job_t;

/* C's working memory for samples of up to `words` 64-row words, in *mem (free it); -1 when it runs out. */
static int choice_memory(choice_t *C, size_t words, uint8_t **mem)
{
    const size_t K = (size_t)C->k, smax = (size_t)C->smax;
    *mem = malloc(8 * (K * words + 2 * words + 2 * K + 4 * smax) + 32 * K + K);
    if (!*mem)
        return -1;
    C->cols = (uint64_t *)*mem, C->rows = C->cols + K * words, C->all = C->rows + words;
    C->ones = (int64_t *)(C->all + words), C->cnt = C->ones + K, C->grown = C->cnt + K;
    C->overall = (double *)(C->grown + 4 * smax), C->base = C->overall + K, C->inv_base = C->base + K;
    C->unit = C->inv_base + K, C->taken = (uint8_t *)(C->unit + K);
    return 0;
}

static void *choice_worker(void *arg)
{
    choice_job_t *J = arg;
    const Py_ssize_t width = J->C.width, stride = J->C.nsizes * J->C.smax;
    for (Py_ssize_t g = J->g0; g < J->g1; g++)
        choose_one(&J->C, J->rows + g * J->nmax * width, J->n[g], J->out + g * stride);
    return NULL;
}

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <unistd.h>
static int choice_threads(void)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > MAX_CHOICE_THREADS ? MAX_CHOICE_THREADS : (int)cores;
}
/* jobs[1..] on threads of their own, jobs[0] on this one; a job whose thread could not start runs here after: the
 * result is the same either way. */
static void run_choices(choice_job_t *jobs, int count)
{
    pthread_t th[MAX_CHOICE_THREADS];
    int started[MAX_CHOICE_THREADS] = {0};
    for (int t = 1; t < count; t++)
        started[t] = pthread_create(&th[t], NULL, choice_worker, &jobs[t]) == 0;
    choice_worker(&jobs[0]);
    for (int t = 1; t < count; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            choice_worker(&jobs[t]);
    }
}
#else
static int choice_threads(void) { return 1; }
static void run_choices(choice_job_t *jobs, int count)
{
    for (int t = 0; t < count; t++)
        choice_worker(&jobs[t]);
}
#endif


#endif /* LDP_FOLDCHOICE_H */
