/* Poplar1 sharding and its DAP-09 reports through the C interface (feature "poplar1"), driven by
 * tests/c_poplar1.rs.
 *
 *   poplar1 CASES    replays a case file, one record a line, fields separated by tabs:
 *       client BITS CTX_HEX         a new LdpPoplar1; prints "client\tok\t<measurement_len>" or a refusal
 *       shard M_HEX NONCE_HEX RAND_HEX   ldp_poplar1_shard_with_random of the last client, M the packed measurement
 *                                   ("-" for none); prints "shares\t<nonce>\t<public share>\t<leader share>\t
 *                                   <helper share>" in hex, or a refusal
 *       report M_HEX TASK_HEX TIME PRECISION LEADER_HEX HELPER_HEX REPORT_ID_HEX RAND_HEX
 *                                   ldp_poplar1_dap_report_with_random of the last client (the configs in DAP's
 *                                   encoding); prints "report\t<report id>\t<report>" in hex, or a refusal
 *       rand_len LEADER_HEX HELPER_HEX   ldp_poplar1_dap_report_rand_len: "rand_len\t<n>" or a refusal
 *       spec SPEC_JSON              ldp_spec_parse, then ldp_client_open_memory of it: "spec\tok" or a refusal
 *       task TASK_JSON              ldp_client_add_task of that client: "task\tok" or a refusal
 *       record METRIC VALUE_HEX     ldp_client_record_string of the value's bytes: "recorded\t<pending>" (the
 *                                   client's pending reports after it) or a refusal
 *       recordjson METRIC VALUE_JSON   ldp_client_record_json: the same
 *     a refusal is "refused\t<status>\t<type>\t<code>\t<fields>\t<message>", as tests/c/prio3.c prints it.
 *   poplar1 --selftest  the boundary: null pointers, handles of the wrong kind, bad lengths, sharding from the OS
 *                    generator; prints "selftest: N passed, M failed".
 *
 * Built with -DLDP_CLIENT_PRIO -DLDP_CLIENT_POPLAR1 (and -Wno-unused-function: prio3_io.h's helpers for Prio3 are
 * not all used here). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldp_client.h"
#include "prio3_io.h"

static void print_poplar1_shares(const LdpPoplar1Shares *shares) { PRINT_SHARES(ldp_poplar1, shares); }

static void shard_record(const LdpPoplar1 *client, char **fields) {
    size_t m_len, nonce_len, rand_len;
    uint8_t *m = parse_hex(fields[1], &m_len), *nonce = parse_hex(fields[2], &nonce_len);
    uint8_t *rand = parse_hex(fields[3], &rand_len);
    LdpPoplar1Shares *shares = NULL;
    LdpStatus s = ldp_poplar1_shard_with_random(client, m, m_len, nonce, nonce_len, rand, rand_len, &shares);
    if (s == LDP_OK) print_poplar1_shares(shares);
    else print_refusal(s);
    ldp_poplar1_shares_free(shares);
    free(m);
    free(nonce);
    free(rand);
}

static void report_record(const LdpPoplar1 *client, char **fields) {
    size_t m_len;
    uint8_t *m = parse_hex(fields[1], &m_len);
    struct report_task t;
    LdpDapReport *report = NULL;
    LdpStatus s;
    parse_report_task(fields, 9, &t);
    s = ldp_poplar1_dap_report_with_random(client, m, m_len, t.task, t.task_len, t.time, t.precision, t.leader,
                                           t.leader_len, t.helper, t.helper_len, t.id, t.id_len, t.rand, t.rand_len,
                                           &report);
    print_report_or_refusal(s, report);
    free(m);
    free_report_task(&t);
}

static void rand_len_record(const LdpPoplar1 *client, char **fields) {
    size_t leader_len, helper_len, n = 0;
    uint8_t *leader = parse_hex(fields[1], &leader_len), *helper = parse_hex(fields[2], &helper_len);
    LdpStatus s = ldp_poplar1_dap_report_rand_len(client, leader, leader_len, helper, helper_len, &n);
    if (s == LDP_OK) printf("rand_len\t%lu\n", (unsigned long)n);
    else print_refusal(s);
    free(leader);
    free(helper);
}

/* What a replay holds: the last Poplar1 client, and the last spec and its telemetry client. */
struct replay {
    LdpPoplar1 *poplar1;
    LdpSpec *spec;
    LdpClient *client;
};

static void spec_record(struct replay *r, const char *json) {
    LdpStatus s;
    ldp_client_free(r->client);
    ldp_spec_free(r->spec);
    r->client = NULL;
    r->spec = NULL;
    s = ldp_spec_parse((const uint8_t *)json, strlen(json), &r->spec);
    if (s == LDP_OK) s = ldp_client_open_memory(r->spec, NULL, &r->client);
    if (s == LDP_OK) printf("spec\tok\n");
    else print_refusal(s);
}

/* A value recorded (its bytes a string, or JSON text): the pending reports after it, or the refusal. */
static void value_record(const LdpClient *client, const char *metric, const char *value, int json) {
    size_t len;
    uint64_t pending = 0;
    uint8_t *bytes = json ? NULL : parse_hex(value, &len);
    LdpStatus s = json ? ldp_client_record_json(client, metric, (const uint8_t *)value, strlen(value), NULL)
                       : ldp_client_record_string(client, metric, bytes, len, NULL);
    if (s == LDP_OK) s = ldp_client_pending(client, &pending);
    if (s == LDP_OK) printf("recorded\t%lu\n", (unsigned long)pending);
    else print_refusal(s);
    free(bytes);
}

/* One record of the case file; `state` is the replay (struct replay *). An unknown record stops the replay. */
static int record(char **fields, int n, void *state) {
    struct replay *r = state;
    LdpPoplar1 **client = &r->poplar1;
    if (strcmp(fields[0], "spec") == 0 && n == 2) {
        spec_record(r, fields[1]);
    } else if (strcmp(fields[0], "task") == 0 && n == 2) {
        LdpStatus s = ldp_client_add_task(r->client, (const uint8_t *)fields[1], strlen(fields[1]));
        if (s == LDP_OK) printf("task\tok\n");
        else print_refusal(s);
    } else if ((strcmp(fields[0], "record") == 0 || strcmp(fields[0], "recordjson") == 0) && n == 3) {
        value_record(r->client, fields[1], fields[2], strcmp(fields[0], "recordjson") == 0);
    } else if (strcmp(fields[0], "client") == 0 && n == 3) {
        size_t ctx_len;
        uint8_t *ctx = parse_hex(fields[2], &ctx_len);
        LdpStatus s;
        ldp_poplar1_free(*client);
        *client = NULL;
        s = ldp_poplar1_new((size_t)strtoull(fields[1], NULL, 10), ctx, ctx_len, client);
        if (s == LDP_OK) printf("client\tok\t%lu\n", (unsigned long)ldp_poplar1_measurement_len(*client));
        else print_refusal(s);
        free(ctx);
    } else if (strcmp(fields[0], "shard") == 0 && n == 4) {
        shard_record(*client, fields);
    } else if (strcmp(fields[0], "report") == 0 && n == 9) {
        report_record(*client, fields);
    } else if (strcmp(fields[0], "rand_len") == 0 && n == 3) {
        rand_len_record(*client, fields);
    } else {
        fprintf(stderr, "bad record: %s\n", fields[0]);
        return 1;
    }
    return 0;
}

static int replay(const char *path) {
    struct replay r = {NULL, NULL, NULL};
    int status = replay_file(path, record, &r);
    ldp_poplar1_free(r.poplar1);
    ldp_client_free(r.client);
    ldp_spec_free(r.spec);
    return status;
}

static int selftest(void) {
    LdpPoplar1 *client = NULL;
    LdpPoplar1Shares *shares = NULL;
    LdpPrio3 *prio3 = NULL;
    const uint8_t *bytes = NULL;
    size_t len = 0;
    uint8_t m[8] = {'n', 'e', 'w', '-', 'w', 'o', 'r', 'd'}, nonce[16] = {0}, rand[LDP_POPLAR1_RAND_LEN] = {0};
    check(ldp_poplar1_new(64, NULL, 0, &client) == LDP_OK, "a client of 64 bits");
    check(ldp_poplar1_measurement_len(client) == 8, "8 packed bytes");
    ldp_poplar1_free(client);
    client = NULL;
    check(ldp_poplar1_new(0, NULL, 0, NULL) == LDP_INVALID_ARGUMENT, "a null out pointer");
    check(ldp_poplar1_new(8, NULL, 3, &client) == LDP_INVALID_ARGUMENT && client == NULL, "a null ctx of 3 bytes");
    check(ldp_poplar1_new(LDP_POPLAR1_MAX_BITS + 1, NULL, 0, &client) == LDP_VALUE_ERROR, "bits past the limit");
    check(strcmp(ldp_last_error_code(), "param_range") == 0, "its code");
    check(ldp_poplar1_new(64, NULL, 0, &client) == LDP_OK, "a client again");
    check(ldp_poplar1_shard(client, m, 8, &shares) == LDP_OK, "sharding from the OS generator");
    check(ldp_poplar1_shares_input_share(shares, 1, &bytes, &len) == LDP_OK && len == 16 + 32 + 16 * 63 + 64,
          "the helper's share's length");
    check(ldp_poplar1_shares_input_share(shares, 2, &bytes, &len) == LDP_INVALID_ARGUMENT && bytes == NULL,
          "a third aggregator");
    check(ldp_poplar1_shares_public_share(shares, NULL, &len) == LDP_INVALID_ARGUMENT, "a null bytes pointer");
    ldp_poplar1_shares_free(shares);
    shares = NULL;
    check(ldp_poplar1_shard(client, m, 7, &shares) == LDP_VALUE_ERROR && shares == NULL, "7 bytes for 64 bits");
    check(ldp_poplar1_shard(client, NULL, 8, &shares) == LDP_INVALID_ARGUMENT, "a null measurement");
    check(ldp_poplar1_shard_with_random(client, m, 8, nonce, 15, rand, sizeof rand, &shares) == LDP_VALUE_ERROR,
          "a nonce of 15 bytes");
    check(ldp_poplar1_shard_with_random(client, m, 8, nonce, 16, rand, 127, &shares) == LDP_VALUE_ERROR,
          "127 bytes of randomness");
    check(ldp_prio3_new_count(NULL, 0, &prio3) == LDP_OK, "a Prio3 client");
    check(ldp_poplar1_shard((const LdpPoplar1 *)(const void *)prio3, m, 8, &shares) == LDP_INVALID_ARGUMENT,
          "a Prio3 handle as a Poplar1 client");
    check(ldp_poplar1_measurement_len((const LdpPoplar1 *)(const void *)prio3) == 0, "its measurement length");
    ldp_poplar1_free((LdpPoplar1 *)(void *)prio3); /* ignored: another kind */
    ldp_prio3_free(prio3);
    check(ldp_poplar1_shard(NULL, m, 8, &shares) == LDP_INVALID_ARGUMENT, "a null client");
    ldp_poplar1_free(client);
    ldp_poplar1_free(NULL);
    ldp_poplar1_shares_free(NULL);
    printf("selftest: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--selftest") == 0) return selftest();
    if (argc == 2) return replay(argv[1]);
    fprintf(stderr, "usage: %s CASES | --selftest\n", argv[0]);
    return 2;
}
