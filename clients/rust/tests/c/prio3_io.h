/* The helpers of tests/c/prio3.c (included by it, its only translation unit): hex and integer lists in case files,
 * printing shares, reports and refusals as the Rust tests read them, and the self-test's check(). Static functions:
 * each program that includes this file gets its own copy. */
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

static void print_shares(const LdpPrio3Shares *shares) {
    const uint8_t *bytes = NULL;
    size_t len = 0, i;
    if (ldp_prio3_shares_nonce(shares, &bytes) != LDP_OK) abort();
    printf("shares\t");
    print_hex(bytes, LDP_PRIO3_NONCE_LEN);
    if (ldp_prio3_shares_public_share(shares, &bytes, &len) != LDP_OK) abort();
    putchar('\t');
    print_hex(bytes, len);
    for (i = 0; i < 2; i++) {
        if (ldp_prio3_shares_input_share(shares, i, &bytes, &len) != LDP_OK) abort();
        putchar('\t');
        print_hex(bytes, len);
    }
    putchar('\n');
}

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
