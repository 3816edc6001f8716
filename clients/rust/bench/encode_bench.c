/* Per-report encode time through the C interface (run by simulations/bench_rust.py, never as a timed test).
 *
 * encode_bench SPEC_JSON_FILE METRIC VALUE_JSON CALLS: one encoder of METRIC (OS generator; a memoizing protocol
 * gets a fixed 32-byte secret, a RAPPOR one cohort 0) prepares and randomizes VALUE_JSON into an upload line CALLS
 * times in batches of 1,000 after a warm-up; prints {"us_mean":…,"us_median_of_batches":…,"us_best_batch":…,
 * "calls":…,"batch":1000}. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ldp_client.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int check(LdpStatus s, const char *what) {
    if (s != LDP_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, ldp_last_error_type(), ldp_last_error_message());
        exit(1);
    }
    return 0;
}

static size_t encode_once(LdpEncoder *enc, const char *value) {
    LdpPrepared *p = NULL;
    char *line = NULL;
    size_t n;
    check(ldp_encoder_prepare(enc, (const uint8_t *)value, strlen(value), &p), "prepare");
    check(ldp_encoder_randomize(enc, p, -1, 0, &line), "randomize");
    n = strlen(line);
    ldp_string_free(line);
    ldp_prepared_free(p);
    return n;
}

int main(int argc, char **argv) {
    FILE *f;
    long size;
    char *spec_text;
    LdpSpec *spec = NULL;
    LdpEncoder *enc = NULL;
    uint8_t secret[32];
    long calls, batches, b, i;
    const long batch = 1000;
    double *per, sum = 0;
    size_t sink = 0;

    if (argc != 5) {
        fprintf(stderr, "usage: encode_bench SPEC_JSON_FILE METRIC VALUE_JSON CALLS\n");
        return 2;
    }
    f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    spec_text = malloc((size_t)size);
    if (!spec_text || fread(spec_text, 1, (size_t)size, f) != (size_t)size) return 2;
    fclose(f);
    check(ldp_spec_parse((const uint8_t *)spec_text, (size_t)size, &spec), "spec");
    for (i = 0; i < 32; i++) secret[i] = (uint8_t)i;
    /* Protocols that take no secret or cohort ignore them. */
    check(ldp_encoder_new(spec, argv[2], secret, 32, 0, NULL, &enc), "encoder");
    calls = atol(argv[4]);
    batches = calls / batch;
    if (batches < 1) batches = 1;
    per = malloc(sizeof(double) * (size_t)batches);
    if (!per) return 2;
    for (i = 0; i < batch; i++) sink += encode_once(enc, argv[3]);
    for (b = 0; b < batches; b++) {
        double t0 = now_us();
        for (i = 0; i < batch; i++) sink += encode_once(enc, argv[3]);
        per[b] = (now_us() - t0) / (double)batch;
        sum += per[b];
    }
    qsort(per, (size_t)batches, sizeof(double), cmp);
    printf("{\"us_mean\":%.6f,\"us_median_of_batches\":%.6f,\"us_best_batch\":%.6f,\"calls\":%ld,\"batch\":%ld,"
           "\"check\":%s}\n",
           sum / (double)batches, per[batches / 2], per[0], batches * batch, batch, sink > 0 ? "true" : "false");
    free(per);
    free(spec_text);
    ldp_encoder_free(enc);
    ldp_spec_free(spec);
    return 0;
}
