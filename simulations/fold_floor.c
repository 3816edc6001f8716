/* The floor under an exact HCMS fold on this core, for simulations/bench_fold.py (issue 61, item 1).
 *
 * An exact HCMS fold must at least add each report's sign into its (hash, cell) cell of the k x m table and count
 * it: one scattered increment per report. This program times the barest loops that do that, with no validation and
 * no partial sums to flush, beside a read of the same bytes (a sum of them as 64-bit words, as numpy's read), each run
 * after the caches were emptied (a 96 MiB read), as the benchmark's numpy pair does; the table is then zeroed, which
 * brings it into the caches (the reports stay cold, the table warm: the most generous start for the scatter):
 *   read       the sum of the groups, cells and bits columns' bytes
 *   scatter32  sums32[g * m + cell] += 2 * bit - 1 and counts[g] += 1 (an int32 table: 1 MiB for k = 256, m = 1024)
 *   scatter16  sums16[g * m + cell] += 2 * bit - 1 alone (an int16 table, half the size: the most generous floor)
 *   part16     scatter16 in two passes, so that each scatter stays in L1: 65536 reports at a time are split by
 *              g / 16 into 16-bit keys ((g % 16) m + cell, then the bit), then each part goes into its 16 rows of
 *              sums16 (32 KiB for m = 1024); when 16 m > 32768 the keys do not fit and it is not run (-1)
 * Input: a file of n (uint64), k, m (uint32 each), then the groups (n bytes), cells (n uint16), bits (n bytes).
 * Output: one line of JSON, the best time of each loop in seconds. Built by the benchmark with the system's cc
 * (-O2 -march=native); not part of the package. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor_timing.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fold_floor FILE REPEATS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    uint64_t n;
    uint32_t km[2];
    if (!f || fread(&n, 8, 1, f) != 1 || fread(km, 4, 2, f) != 2 || n == 0 || n > (1ULL << 32)) {
        fprintf(stderr, "fold_floor: cannot read %s\n", argv[1]);
        return 2;
    }
    const uint32_t k = km[0], m = km[1];
    const int repeats = atoi(argv[2]);
    uint8_t *cols = malloc(4 * n + 8), *g = cols, *b = cols + 3 * n;
    uint16_t *c = (uint16_t *)(cols + n);
    const size_t big_words = (96u << 20) / 8;
    uint64_t *big = calloc(big_words, 8);
    int32_t *s32 = calloc((size_t)k * m, 4);
    int16_t *s16 = calloc((size_t)k * m, 2);
    int64_t *counts = calloc(k, 8);
    if (!cols || !big || !s32 || !s16 || !counts || fread(cols, 1, 4 * n, f) != 4 * n) {
        fprintf(stderr, "fold_floor: out of memory or short file\n");
        return 2;
    }
    fclose(f);
    for (uint64_t i = 0; i < n; i++)
        if (g[i] >= k || c[i] >= m || b[i] > 1) {
            fprintf(stderr, "fold_floor: report %llu out of range\n", (unsigned long long)i);
            return 2;
        }
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    enum { PART = 1 << 16 };
    const uint32_t parts = (k + 15) / 16, fits = 16 * m <= 32768;
    uint16_t *keys = malloc((size_t)parts * PART * 2);
    uint32_t *filled = calloc(parts, 4);
    if (!keys || !filled) {
        fprintf(stderr, "fold_floor: out of memory\n");
        return 2;
    }
    for (int r = 0; r <= repeats; r++)
        for (int loop = 0; loop < 3 + fits; loop++) {
            evict(big, big_words);
            if (loop == 1) /* the table zeroed, so in the caches: the scatter's most generous start */
                memset(s32, 0, (size_t)k * m * 4), memset(counts, 0, (size_t)k * 8);
            else if (loop >= 2)
                memset(s16, 0, (size_t)k * m * 2);
            const double t0 = now();
            if (loop == 0) {
                uint64_t s = 0, w;
                for (uint64_t i = 0; i + 8 <= 4 * n; i += 8)
                    memcpy(&w, cols + i, 8), s += w;
                sink += s;
            } else if (loop == 1) {
                for (uint64_t i = 0; i < n; i++)
                    s32[(size_t)g[i] * m + c[i]] += 2 * (int32_t)b[i] - 1, counts[g[i]] += 1;
            } else if (loop == 2) {
                for (uint64_t i = 0; i < n; i++)
                    s16[(size_t)g[i] * m + c[i]] += (int16_t)(2 * b[i] - 1);
            } else {
                for (uint64_t i0 = 0; i0 < n; i0 += PART) {
                    const uint64_t i1 = i0 + PART < n ? i0 + PART : n;
                    memset(filled, 0, (size_t)parts * 4);
                    for (uint64_t i = i0; i < i1; i++) {
                        const uint32_t q = g[i] / 16;
                        keys[(size_t)q * PART + filled[q]++] = (uint16_t)(((g[i] % 16) * m + c[i]) << 1 | b[i]);
                    }
                    for (uint32_t q = 0; q < parts; q++) {
                        int16_t *rows16 = s16 + (size_t)q * 16 * m;
                        for (const uint16_t *key = keys + (size_t)q * PART, *end = key + filled[q]; key < end; key++)
                            rows16[*key >> 1] += (int16_t)(2 * (*key & 1) - 1);
                    }
                }
            }
            const double dt = now() - t0;
            if (loop == 2 && r == repeats) /* part16 must add what scatter16 added */
                memcpy(s32, s16, (size_t)k * m * 2);
            if (loop == 3 && r == repeats && memcmp(s32, s16, (size_t)k * m * 2)) {
                fprintf(stderr, "fold_floor: part16 differs from scatter16\n");
                return 2;
            }
            if (r && dt < best[loop]) /* the first round warms up */
                best[loop] = dt;
        }
    for (size_t i = 0; i < (size_t)k * m; i++)
        sink += (uint64_t)s32[i] + (uint64_t)s16[i];
    for (uint32_t g0 = 0; g0 < k; g0++)
        sink += (uint64_t)counts[g0];
    printf("{\"n\": %llu, \"read_s\": %.9f, \"scatter32_s\": %.9f, \"scatter16_s\": %.9f, \"part16_s\": %.9f, "
           "\"sink\": %llu}\n", (unsigned long long)n, best[0], best[1], best[2], fits ? best[3] : -1.0,
           (unsigned long long)(sink & 1));
    return 0;
}
