/* The helpers of tests/c/prio3.c and tests/c/poplar1.c (included by each, its only translation unit): replaying a
 * case file record by record, hex and integer lists in case files, printing shares (of either VDAF), reports and
 * refusals as the Rust tests read them, a report record's task fields, and the self-test's check(). Static
 * functions: each program that includes this file gets its own copy. */
#ifndef LDP_TESTS_PRIO3_IO_H
#define LDP_TESTS_PRIO3_IO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldp_client.h"

static void print_hex(const uint8_t *bytes, size_t len) {
    size_t i;
    for (i = 0; i < len; i++) printf("%02x", bytes[i]);
}

/* Parses hex into a new buffer (*len bytes); "-" or "" is empty. */
static uint8_t *parse_hex(const char *text, size_t *len) {
    size_t n = strlen(text), i;
    uint8_t *out;
    if (strcmp(text, "-") == 0) n = 0;
    *len = n / 2;
    out = malloc(*len + 1);
    if (out == NULL) abort();
    for (i = 0; i < *len; i++) {
        unsigned int b;
        if (sscanf(text + 2 * i, "%2x", &b) != 1) abort();
        out[i] = (uint8_t)b;
    }
    return out;
}

/* Parses "1,2,3" into a new array (*len values); "-" is none. */
static uint64_t *parse_u64s(const char *text, size_t *len) {
    size_t cap = 1, n = 0;
    const char *p = text;
    uint64_t *out;
    for (; *p; p++) cap += *p == ',';
    out = malloc(cap * sizeof(uint64_t));
    if (out == NULL) abort();
    p = text;
    if (strcmp(text, "-") != 0) {
        while (*p) {
            char *end;
            out[n++] = strtoull(p, &end, 10);
            p = *end == ',' ? end + 1 : end;
        }
    }
    *len = n;
    return out;
}

static void print_escaped(const char *s) {
    for (; *s; s++) {
        if (*s == '\t') fputs("\\t", stdout);
        else if (*s == '\n') fputs("\\n", stdout);
        else if (*s == '\\') fputs("\\\\", stdout);
        else putchar(*s);
    }
}

static void print_refusal(LdpStatus s) {
    printf("refused\t%d\t%s\t%s\t%s\t", (int)s, ldp_last_error_type(), ldp_last_error_code(), ldp_last_error_fields());
    print_escaped(ldp_last_error_message());
    putchar('\n');
}

/* Splits a line into at most `max` tab-separated fields (in place); the number found. */
static int split(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = 0;
    while (n < max) {
        fields[n++] = p;
        p = strchr(p, '\t');
        if (p == NULL) break;
        *p++ = 0;
    }
    return n;
}

/* Prints shares as "shares\t<nonce>\t<public share>\t<leader share>\t<helper share>" in hex, read with the getters
 * of the VDAF whose functions start with PREFIX (ldp_prio3, ldp_poplar1): one body for both VDAFs' shares. */
#define PRINT_SHARES(PREFIX, shares)                                                                                 \
    do {                                                                                                             \
        const uint8_t *bytes_ = NULL;                                                                                \
        size_t len_ = 0, i_;                                                                                         \
        if (PREFIX##_shares_nonce(shares, &bytes_) != LDP_OK) abort();                                               \
        printf("shares\t");                                                                                          \
        print_hex(bytes_, LDP_PRIO3_NONCE_LEN);                                                                      \
        if (PREFIX##_shares_public_share(shares, &bytes_, &len_) != LDP_OK) abort();                                 \
        putchar('\t');                                                                                               \
        print_hex(bytes_, len_);                                                                                     \
        for (i_ = 0; i_ < 2; i_++) {                                                                                 \
            if (PREFIX##_shares_input_share(shares, i_, &bytes_, &len_) != LDP_OK) abort();                          \
            putchar('\t');                                                                                           \
            print_hex(bytes_, len_);                                                                                 \
        }                                                                                                            \
        putchar('\n');                                                                                               \
    } while (0)

static void print_shares(const LdpPrio3Shares *shares) { PRINT_SHARES(ldp_prio3, shares); }

static void print_report(const LdpDapReport *report) {
    const uint8_t *bytes = NULL, *id = NULL;
    size_t len = 0;
    if (ldp_dap_report_id(report, &id) != LDP_OK || ldp_dap_report_bytes(report, &bytes, &len) != LDP_OK) abort();
    printf("report\t");
    print_hex(id, LDP_DAP_REPORT_ID_LEN);
    putchar('\t');
    print_hex(bytes, len);
    putchar('\n');
}

/* A report call's outcome: the report's line, or the refusal's; the report freed. */
static void print_report_or_refusal(LdpStatus s, LdpDapReport *report) {
    if (s == LDP_OK) print_report(report);
    else print_refusal(s);
    ldp_dap_report_free(report);
}

/* The task fields of a `report` record: TASK_HEX TIME PRECISION LEADER_HEX HELPER_HEX in fields[2..6], and with 9
 * fields REPORT_ID_HEX RAND_HEX (else none: NULL, 0); free them with free_report_task(). */
struct report_task {
    uint8_t *task, *leader, *helper, *id, *rand;
    size_t task_len, leader_len, helper_len, id_len, rand_len;
    uint64_t time, precision;
};

static void parse_report_task(char **fields, int n, struct report_task *r) {
    r->task = parse_hex(fields[2], &r->task_len);
    r->time = strtoull(fields[3], NULL, 10);
    r->precision = strtoull(fields[4], NULL, 10);
    r->leader = parse_hex(fields[5], &r->leader_len);
    r->helper = parse_hex(fields[6], &r->helper_len);
    r->id = n == 9 ? parse_hex(fields[7], &r->id_len) : NULL;
    r->rand = n == 9 ? parse_hex(fields[8], &r->rand_len) : NULL;
    if (n != 9) r->id_len = r->rand_len = 0;
}

static void free_report_task(struct report_task *r) {
    free(r->task);
    free(r->leader);
    free(r->helper);
    free(r->id);
    free(r->rand);
}

/* Replays the case file at `path`: each line split into tab-separated fields (at most 10) and handed to `record`
 * with `state`, stdout flushed after each. A record that `record` refuses (nonzero) stops the replay with 2, as a
 * file that does not open does; else 0. */
static int replay_file(const char *path, int (*record)(char **fields, int n, void *state), void *state) {
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int status = 0;
    if (f == NULL) {
        perror(path);
        return 2;
    }
    while (status == 0 && getline(&line, &cap, f) > 0) {
        char *fields[10];
        int n = split(line, fields, 10);
        if (record(fields, n, state) != 0) status = 2;
        fflush(stdout);
    }
    free(line);
    fclose(f);
    return status;
}

static int passed, failed;

static void check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s (last error: %s: %s)\n", what, ldp_last_error_type(), ldp_last_error_message());
    }
}

#endif
