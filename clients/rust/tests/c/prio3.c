/* Prio3 sharding and DAP-09 reports through the C interface (feature "prio"), driven by tests/c_prio3.rs and
 * tests/c_dap.rs.
 *
 *   prio3 CASES      replays a case file, one record a line, fields separated by tabs:
 *       client TYPE A B C CTX_HEX   a new LdpPrio3 (TYPE count, sum: A max; sumvec: A max, B length, C chunk length;
 *                                   histogram: A length, B chunk length; unused fields are 0); prints
 *                                   "client\tok\t<rand_len>" or a refusal
 *       client TYPE A B C CTX_HEX DRAFT   the same of the VDAF draft DRAFT (the `_draft` constructors); prints
 *                                   "client\tok\t<rand_len>\t<draft>\t<verify_key_len>" or a refusal
 *       shard_os M                  ldp_prio3_shard of the last client (OS randomness), printed as `shard`
 *       shard M NONCE_HEX RAND_HEX  ldp_prio3_shard_with_random of the last client, M the measurement's integers
 *                                   separated by commas ("-" for none); prints "shares\t<nonce>\t<public share>\t
 *                                   <leader share>\t<helper share>" in hex, or a refusal
 *       report M TASK_HEX TIME PRECISION LEADER_HEX HELPER_HEX REPORT_ID_HEX RAND_HEX
 *                                   ldp_dap_report_with_random of the last client (the configs in DAP's encoding);
 *                                   prints "report\t<report id>\t<report>" in hex, or a refusal
 *       report_os M TASK_HEX TIME PRECISION LEADER_HEX HELPER_HEX
 *                                   ldp_dap_report (OS randomness), printed as `report`
 *       rand_len LEADER_HEX HELPER_HEX   ldp_dap_report_rand_len of the last client: "rand_len\t<n>" or a refusal
 *       select LIST_HEX             ldp_dap_hpke_config_select: "selected\t<config>" in hex, or a refusal
 *     a refusal is "refused\t<status>\t<type>\t<code>\t<fields>\t<message>" (the message's tabs and newlines escaped).
 *   prio3 --selftest the boundary: null pointers, handles of the wrong kind, bad lengths, sharding and reports from
 *                    the OS generator; prints "selftest: N passed, M failed".
 *
 * The program parses no JSON: the test writes the vectors as case files and compares each printed line. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldp_client.h"
#include "prio3_io.h"

/* A `client` record: 6 fields, a client of the constructor without `_draft` (VDAF draft 18); 7 fields, the last
   the draft, of the `_draft` constructor, its line "client\tok\t<rand_len>\t<draft>\t<verify_key_len>". */
static void client_record(char **fields, int n, LdpPrio3 **client) {
    size_t ctx_len;
    uint8_t *ctx = parse_hex(fields[5], &ctx_len);
    uint64_t a = strtoull(fields[2], NULL, 10), b = strtoull(fields[3], NULL, 10), c = strtoull(fields[4], NULL, 10);
    uint32_t draft = n == 7 ? (uint32_t)strtoul(fields[6], NULL, 10) : 0;
    LdpStatus s = LDP_INVALID_ARGUMENT;
    if (strcmp(fields[1], "count") == 0)
        s = n == 7 ? ldp_prio3_new_count_draft(draft, ctx, ctx_len, client) : ldp_prio3_new_count(ctx, ctx_len, client);
    else if (strcmp(fields[1], "sum") == 0)
        s = n == 7 ? ldp_prio3_new_sum_draft(draft, a, ctx, ctx_len, client)
                   : ldp_prio3_new_sum(a, ctx, ctx_len, client);
    else if (strcmp(fields[1], "sumvec") == 0)
        s = n == 7 ? ldp_prio3_new_sum_vec_draft(draft, a, (size_t)b, (size_t)c, ctx, ctx_len, client)
                   : ldp_prio3_new_sum_vec(a, (size_t)b, (size_t)c, ctx, ctx_len, client);
    else if (strcmp(fields[1], "histogram") == 0)
        s = n == 7 ? ldp_prio3_new_histogram_draft(draft, (size_t)a, (size_t)b, ctx, ctx_len, client)
                   : ldp_prio3_new_histogram((size_t)a, (size_t)b, ctx, ctx_len, client);
    if (s != LDP_OK) print_refusal(s);
    else if (n == 6) printf("client\tok\t%lu\n", (unsigned long)ldp_prio3_rand_len(*client));
    else
        printf("client\tok\t%lu\t%u\t%lu\n", (unsigned long)ldp_prio3_rand_len(*client), ldp_prio3_draft(*client),
               (unsigned long)ldp_prio3_verify_key_len(*client));
    free(ctx);
}

/* A `report` (with_random: 9 fields) or `report_os` (7 fields) record of the last client. */
static void report_record(const LdpPrio3 *client, char **fields, int n) {
    size_t m_len;
    uint64_t *m = parse_u64s(fields[1], &m_len);
    struct report_task t;
    LdpDapReport *report = NULL;
    LdpStatus s;
    parse_report_task(fields, n, &t);
    if (n == 9)
        s = ldp_dap_report_with_random(client, m, m_len, t.task, t.task_len, t.time, t.precision, t.leader,
                                       t.leader_len, t.helper, t.helper_len, t.id, t.id_len, t.rand, t.rand_len,
                                       &report);
    else
        s = ldp_dap_report(client, m, m_len, t.task, t.task_len, t.time, t.precision, t.leader, t.leader_len,
                           t.helper, t.helper_len, &report);
    print_report_or_refusal(s, report);
    free(m);
    free_report_task(&t);
}

/* A `shard` (with_random: 4 fields) or `shard_os` (2 fields) record of the last client. */
static void shard_record(const LdpPrio3 *client, char **fields, int n) {
    size_t m_len, nonce_len = 0, rand_len = 0;
    uint64_t *m = parse_u64s(fields[1], &m_len);
    uint8_t *nonce = n == 4 ? parse_hex(fields[2], &nonce_len) : NULL;
    uint8_t *rand = n == 4 ? parse_hex(fields[3], &rand_len) : NULL;
    LdpPrio3Shares *shares = NULL;
    LdpStatus s = n == 4 ? ldp_prio3_shard_with_random(client, m, m_len, nonce, nonce_len, rand, rand_len, &shares)
                         : ldp_prio3_shard(client, m, m_len, &shares);
    if (s == LDP_OK) print_shares(shares);
    else print_refusal(s);
    ldp_prio3_shares_free(shares);
    free(m);
    free(nonce);
    free(rand);
}

/* One record of the case file; `state` is the last client (an LdpPrio3 *). An unknown record is printed as one. */
static int record(char **fields, int n, void *state) {
    LdpPrio3 **client = state;
    if (strcmp(fields[0], "client") == 0 && (n == 6 || n == 7)) {
        ldp_prio3_free(*client);
        *client = NULL;
        client_record(fields, n, client);
    } else if ((strcmp(fields[0], "shard_os") == 0 && n == 2) || (strcmp(fields[0], "shard") == 0 && n == 4)) {
        shard_record(*client, fields, n);
    } else if ((strcmp(fields[0], "report") == 0 && n == 9) || (strcmp(fields[0], "report_os") == 0 && n == 7)) {
        report_record(*client, fields, n);
    } else if (strcmp(fields[0], "rand_len") == 0 && n == 3) {
        size_t leader_len, helper_len, len = 0;
        uint8_t *leader = parse_hex(fields[1], &leader_len), *helper = parse_hex(fields[2], &helper_len);
        LdpStatus s = ldp_dap_report_rand_len(*client, leader, leader_len, helper, helper_len, &len);
        if (s == LDP_OK) printf("rand_len\t%lu\n", (unsigned long)len);
        else print_refusal(s);
        free(leader);
        free(helper);
    } else if (strcmp(fields[0], "select") == 0 && n == 2) {
        size_t list_len, len = 0;
        uint8_t *list = parse_hex(fields[1], &list_len);
        const uint8_t *config = NULL;
        LdpStatus s = ldp_dap_hpke_config_select(list, list_len, &config, &len);
        if (s == LDP_OK) {
            printf("selected\t");
            print_hex(config, len);
            putchar('\n');
        } else {
            print_refusal(s);
        }
        free(list);
    } else {
        printf("bad record %s\n", fields[0]);
    }
    return 0;
}

static int replay(const char *path) {
    LdpPrio3 *client = NULL;
    int status = replay_file(path, record, &client);
    ldp_prio3_free(client);
    return status;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The self-test */

/* An HpkeConfig in DAP's encoding: id, KEM, KDF 0x0001, AEAD 0x0001, a 32-byte public key of bytes from `first`
   (any 32 bytes are an X25519 public key). */
static void config(uint8_t out[41], uint8_t id, uint16_t kem, uint8_t first) {
    int i;
    uint8_t head[9] = {0, 0, 0, 0, 1, 0, 1, 0, 32};
    head[0] = id;
    head[1] = (uint8_t)(kem >> 8);
    head[2] = (uint8_t)kem;
    memcpy(out, head, sizeof head);
    for (i = 0; i < 32; i++) out[9 + i] = (uint8_t)(first + i);
}

static void dap_selftest(const LdpPrio3 *hist, const LdpPrio3Shares *not_a_client) {
    static const uint8_t task[LDP_DAP_TASK_ID_LEN] = {1, 2, 3};
    uint8_t leader[41], helper[41], p384[41], id[LDP_DAP_REPORT_ID_LEN] = {7}, rand[128 + 64] = {0}, list[2 + 3 * 41];
    uint64_t m = 3, too_far = 8;
    LdpDapReport *a = NULL, *b = NULL, *c = NULL, *report = (LdpDapReport *)&m;
    const uint8_t *p = NULL, *q = NULL, *ida = NULL;
    size_t len = 0, len2 = 0, n = 0;

    config(leader, 1, 0x0020, 1);
    config(helper, 2, 0x0020, 100);
    config(p384, 3, 0x0011, 1);
    check(ldp_dap_report_rand_len(hist, leader, 41, helper, 41, &n) == LDP_OK && n == 128 + 64, "rand_len");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, &a) == LDP_OK && a != NULL,
          "a report from the OS generator");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, &b) == LDP_OK, "another");
    check(ldp_dap_report_bytes(a, &p, &len) == LDP_OK && ldp_dap_report_bytes(b, &q, &len2) == LDP_OK &&
              len == len2 && len > 100 && memcmp(p, q, len) != 0,
          "two reports of the same measurement differ, their lengths alike");
    check(ldp_dap_report_id(a, &ida) == LDP_OK && memcmp(ida, p, LDP_DAP_REPORT_ID_LEN) == 0,
          "the report ID opens the report's bytes");
    check(p[16] == 0 && p[21] == 0 && p[22] == 0x03 && p[23] == 0xc0, "the time, rounded down to 960 (0x03c0)");
    ldp_dap_report_free(b);
    b = NULL;
    check(ldp_dap_report_with_random(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, id, 16, rand,
                                     sizeof rand, &b) == LDP_OK &&
              ldp_dap_report_with_random(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, id, 16, rand,
                                         sizeof rand, &c) == LDP_OK &&
              ldp_dap_report_bytes(b, &p, &len) == LDP_OK && ldp_dap_report_bytes(c, &q, &len2) == LDP_OK &&
              len == len2 && memcmp(p, q, len) == 0 && p[0] == 7,
          "the same randomness gives the same report");

    /* Refusals. */
    check(ldp_dap_report(hist, &too_far, 1, task, 32, 1000, 60, leader, 41, helper, 41, &report) == LDP_VALUE_ERROR &&
              report == NULL && strcmp(ldp_last_error_code(), "value_range") == 0,
          "a bucket index past the histogram");
    check(ldp_dap_report(hist, &m, 1, task, 31, 1000, 60, leader, 41, helper, 41, &report) == LDP_VALUE_ERROR,
          "a 31-byte task ID");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 0, leader, 41, helper, 41, &report) == LDP_VALUE_ERROR &&
              strcmp(ldp_last_error_code(), "param_range") == 0,
          "a time precision of 0");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 60, leader, 40, helper, 41, &report) == LDP_VALUE_ERROR &&
              strstr(ldp_last_error_message(), "leader_config") != NULL,
          "a truncated leader config");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 60, leader, 41, p384, 41, &report) == LDP_VALUE_ERROR &&
              strstr(ldp_last_error_message(), "0x0011") != NULL,
          "a P-384 helper config");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 60, leader, 41, leader, 41, &report) == LDP_VALUE_ERROR,
          "one key for both aggregators");
    check(ldp_dap_report_with_random(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, id, 16, rand, 128,
                                     &report) == LDP_VALUE_ERROR,
          "the sharding randomness alone");
    check(ldp_dap_report_with_random(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, id, 15, rand,
                                     sizeof rand, &report) == LDP_VALUE_ERROR,
          "a 15-byte report ID");
    check(ldp_dap_report(hist, &m, 1, NULL, 32, 1000, 60, leader, 41, helper, 41, &report) == LDP_INVALID_ARGUMENT,
          "a null task ID");
    check(ldp_dap_report(hist, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, NULL) == LDP_INVALID_ARGUMENT,
          "a null out");
    check(ldp_dap_report(NULL, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41, &report) == LDP_INVALID_ARGUMENT,
          "a null client");
    check(ldp_dap_report((const LdpPrio3 *)not_a_client, &m, 1, task, 32, 1000, 60, leader, 41, helper, 41,
                         &report) == LDP_INVALID_ARGUMENT,
          "shares passed as a client");
    check(ldp_dap_report_bytes((const LdpDapReport *)hist, &p, &len) == LDP_INVALID_ARGUMENT && p == NULL && len == 0,
          "a client passed as a report");
    check(ldp_dap_report_id(a, NULL) == LDP_INVALID_ARGUMENT, "a null report ID out");
    check(ldp_dap_report_rand_len(hist, leader, 41, helper, 41, NULL) == LDP_INVALID_ARGUMENT, "a null len out");

    /* The first supported config of a list: past a P-384 one. */
    list[0] = 0;
    list[1] = 2 * 41;
    memcpy(list + 2, p384, 41);
    memcpy(list + 2 + 41, helper, 41);
    check(ldp_dap_hpke_config_select(list, 2 + 2 * 41, &p, &len) == LDP_OK && p == list + 2 + 41 && len == 41,
          "the first supported config of a list");
    list[1] = 41;
    check(ldp_dap_hpke_config_select(list, 2 + 41, &p, &len) == LDP_VALUE_ERROR && p == NULL && len == 0 &&
              strstr(ldp_last_error_message(), "config 3") != NULL,
          "a list of no supported config");
    memcpy(list + 2, helper, 41);
    memcpy(list + 2 + 41, helper, 41);
    list[1] = 2 * 41;
    check(ldp_dap_hpke_config_select(list, 2 + 2 * 41, &p, &len) == LDP_VALUE_ERROR, "a list repeating an id");
    check(ldp_dap_hpke_config_select(list, 2 + 2 * 41 - 1, &p, &len) == LDP_VALUE_ERROR, "a truncated list");
    check(ldp_dap_hpke_config_select(NULL, 5, &p, &len) == LDP_INVALID_ARGUMENT, "a null list");

    /* A handle of another kind is ignored by _free. */
    ldp_dap_report_free((LdpDapReport *)hist);
    ldp_dap_report_free(NULL);
    check(ldp_dap_report_bytes(a, &p, &len) == LDP_OK, "a report still live after a wrong-kind free");
    ldp_dap_report_free(a);
    ldp_dap_report_free(b);
    ldp_dap_report_free(c);
}

/* The `_draft` constructors: draft 18 as the constructors without `_draft`, draft 08 with its own lengths and
   refusals, and what follows from a client's draft. */
static void drafts_selftest(const LdpPrio3Shares *not_a_client) {
    static const uint8_t ctx[] = "ctx";
    uint8_t nonce[LDP_PRIO3_NONCE_LEN] = {0}, rand[80] = {0};
    uint64_t m = 2;
    LdpPrio3 *d08 = NULL, *d18 = NULL, *out = (LdpPrio3 *)&m;
    LdpPrio3Shares *shares = NULL;
    const uint8_t *p = NULL;
    size_t len = 0;

    check(ldp_prio3_new_histogram_draft(LDP_VDAF_DRAFT_08, 4, 0, NULL, 0, &d08) == LDP_OK &&
              ldp_prio3_draft(d08) == 8 && ldp_prio3_verify_key_len(d08) == 16 && ldp_prio3_rand_len(d08) == 80,
          "a draft 08 histogram: its draft, verify key and randomness lengths");
    check(ldp_prio3_new_histogram_draft(LDP_VDAF_DRAFT_18, 4, 0, ctx, 3, &d18) == LDP_OK &&
              ldp_prio3_draft(d18) == 18 && ldp_prio3_verify_key_len(d18) == 32 && ldp_prio3_rand_len(d18) == 128,
          "a draft 18 histogram through _draft");
    check(ldp_prio3_shard(d08, &m, 1, &shares) == LDP_OK && ldp_prio3_shares_public_share(shares, &p, &len) == LDP_OK &&
              len == 32 && ldp_prio3_shares_input_share(shares, 1, &p, &len) == LDP_OK && len == 48,
          "a draft 08 shard from the OS generator: 16-byte seeds");
    ldp_prio3_shares_free(shares);
    shares = (LdpPrio3Shares *)&m;
    check(ldp_prio3_shard_with_random(d08, &m, 1, nonce, 16, rand, 80, &shares) == LDP_VALUE_ERROR && shares == NULL &&
              strstr(ldp_last_error_message(), "draft 08") != NULL,
          "draft 08 shards with the OS generator only");
    check(ldp_prio3_new_count_draft(LDP_VDAF_DRAFT_08, ctx, 3, &out) == LDP_VALUE_ERROR && out == NULL &&
              strcmp(ldp_last_error_code(), "param_relation") == 0,
          "draft 08 has no context string");
    check(ldp_prio3_new_sum_draft(LDP_VDAF_DRAFT_08, 1000, NULL, 0, &out) == LDP_VALUE_ERROR &&
              strstr(ldp_last_error_fields(), "\"nearest\":[511,1023]") != NULL,
          "draft 08 takes a sum bound 2^b - 1, naming the nearest");
    check(ldp_prio3_new_sum_vec_draft(LDP_VDAF_DRAFT_08, 255, 3, 0, NULL, 0, &out) == LDP_OK, "a draft 08 sum_vec");
    ldp_prio3_free(out);
    out = NULL;
    check(ldp_prio3_new_count_draft(9, NULL, 0, &out) == LDP_VALUE_ERROR && strstr(ldp_last_error_message(), "9"),
          "no draft 9");
    check(ldp_prio3_new_count_draft(LDP_VDAF_DRAFT_08, NULL, 0, NULL) == LDP_INVALID_ARGUMENT, "a null out");
    check(ldp_prio3_draft(NULL) == 0 && ldp_prio3_verify_key_len(NULL) == 0, "the draft of null");
    check(ldp_prio3_draft((const LdpPrio3 *)not_a_client) == 0 &&
              ldp_prio3_verify_key_len((const LdpPrio3 *)not_a_client) == 0,
          "the draft of shares");
    ldp_prio3_free(d08);
    ldp_prio3_free(d18);
}

static int selftest(void) {
    static const uint8_t ctx[] = "selftest";
    uint8_t nonce[LDP_PRIO3_NONCE_LEN] = {0}, rand[128] = {0};
    uint64_t m = 3, vec[3] = {1, 2, 3};
    LdpPrio3 *hist = NULL, *sum_vec = NULL, *out = (LdpPrio3 *)&m;
    LdpPrio3Shares *a = NULL, *b = NULL, *fixed = NULL, *shares = (LdpPrio3Shares *)&m;
    const uint8_t *p = NULL, *q = NULL;
    size_t len = 0, len2 = 0;

    check(ldp_prio3_new_histogram(8, 3, ctx, sizeof ctx - 1, &hist) == LDP_OK && hist != NULL, "new histogram");
    check(ldp_prio3_rand_len(hist) == 128, "rand_len of a histogram");
    check(ldp_prio3_rand_len(NULL) == 0, "rand_len of null");
    check(ldp_prio3_new_sum_vec(3, 3, 2, NULL, 0, &sum_vec) == LDP_OK, "new sum_vec, null empty context");

    /* Sharding from the OS generator: two reports of the same measurement differ, and have the lengths of a
       shard with given randomness. */
    check(ldp_prio3_shard(hist, &m, 1, &a) == LDP_OK, "shard");
    check(ldp_prio3_shard(hist, &m, 1, &b) == LDP_OK, "shard again");
    check(ldp_prio3_shard_with_random(hist, &m, 1, nonce, sizeof nonce, rand, sizeof rand, &fixed) == LDP_OK,
          "shard with random");
    check(ldp_prio3_shares_nonce(a, &p) == LDP_OK && ldp_prio3_shares_nonce(b, &q) == LDP_OK &&
              memcmp(p, q, LDP_PRIO3_NONCE_LEN) != 0,
          "two nonces differ");
    check(ldp_prio3_shares_input_share(a, 1, &p, &len) == LDP_OK &&
              ldp_prio3_shares_input_share(b, 1, &q, &len2) == LDP_OK && len == 64 && len2 == 64 &&
              memcmp(p, q, len) != 0,
          "two helper shares differ");
    check(ldp_prio3_shares_input_share(a, 0, &p, &len) == LDP_OK &&
              ldp_prio3_shares_input_share(fixed, 0, &q, &len2) == LDP_OK && len == len2 && len > 0,
          "leader share length");
    check(ldp_prio3_shares_public_share(a, &p, &len) == LDP_OK && len == 64, "public share of a histogram");
    check(ldp_prio3_shares_input_share(a, 2, &p, &len) == LDP_INVALID_ARGUMENT && p == NULL && len == 0,
          "no third input share");
    check(ldp_prio3_shard(sum_vec, vec, 3, &shares) == LDP_OK, "shard a sum_vec");
    ldp_prio3_shares_free(shares);

    /* Refusals. */
    out = (LdpPrio3 *)&m;
    check(ldp_prio3_new_histogram(0, 3, NULL, 0, &out) == LDP_VALUE_ERROR && out == NULL &&
              strcmp(ldp_last_error_code(), "param_range") == 0,
          "a histogram of no bucket");
    check(ldp_prio3_new_sum(0, NULL, 0, &out) == LDP_VALUE_ERROR, "a sum of max 0");
    check(ldp_prio3_new_sum_vec(1, 0, 1, NULL, 0, &out) == LDP_VALUE_ERROR, "a sum_vec of length 0");
    check(ldp_prio3_new_count(NULL, 5, &out) == LDP_INVALID_ARGUMENT, "a null ctx of length 5");
    check(ldp_prio3_new_count(ctx, 3, NULL) == LDP_INVALID_ARGUMENT, "a null out");
    m = 8;
    shares = (LdpPrio3Shares *)&m;
    check(ldp_prio3_shard(hist, &m, 1, &shares) == LDP_VALUE_ERROR && shares == NULL &&
              strcmp(ldp_last_error_code(), "value_range") == 0 &&
              strcmp(ldp_last_error_fields(), "{\"got\":8,\"min\":0,\"max\":7}") == 0,
          "a bucket index past the histogram");
    m = 3;
    check(ldp_prio3_shard(hist, vec, 3, &shares) == LDP_VALUE_ERROR && ldp_last_error_code()[0] == 0,
          "three values for a histogram");
    check(ldp_prio3_shard(hist, NULL, 1, &shares) == LDP_INVALID_ARGUMENT, "a null measurement");
    check(ldp_prio3_shard(hist, NULL, 0, &shares) == LDP_VALUE_ERROR, "no value");
    check(ldp_prio3_shard(hist, &m, 1, NULL) == LDP_INVALID_ARGUMENT, "a null out");
    check(ldp_prio3_shard(NULL, &m, 1, &shares) == LDP_INVALID_ARGUMENT, "a null client");
    check(ldp_prio3_shard_with_random(hist, &m, 1, nonce, 15, rand, sizeof rand, &shares) == LDP_VALUE_ERROR,
          "a 15-byte nonce");
    check(ldp_prio3_shard_with_random(hist, &m, 1, nonce, 16, rand, 64, &shares) == LDP_VALUE_ERROR,
          "64 bytes of randomness for a histogram");
    check(ldp_prio3_shard_with_random(hist, &m, 1, NULL, 16, rand, 128, &shares) == LDP_INVALID_ARGUMENT,
          "a null nonce");
    check(ldp_prio3_shares_nonce(a, NULL) == LDP_INVALID_ARGUMENT, "a null nonce out");
    check(ldp_prio3_shares_public_share(a, &p, NULL) == LDP_INVALID_ARGUMENT, "a null len out");

    /* Handles of the wrong kind are refused, and their _free ignores them. */
    check(ldp_prio3_shard((const LdpPrio3 *)a, &m, 1, &shares) == LDP_INVALID_ARGUMENT,
          "shares passed as a client");
    check(ldp_prio3_shares_nonce((const LdpPrio3Shares *)hist, &p) == LDP_INVALID_ARGUMENT,
          "a client passed as shares");
    check(ldp_prio3_rand_len((const LdpPrio3 *)a) == 0, "rand_len of shares");
    ldp_prio3_free((LdpPrio3 *)a);
    ldp_prio3_shares_free((LdpPrio3Shares *)hist);
    ldp_prio3_free(NULL);
    ldp_prio3_shares_free(NULL);
    check(ldp_prio3_shares_nonce(a, &p) == LDP_OK, "shares still live after a wrong-kind free");

    dap_selftest(hist, (const LdpPrio3Shares *)a);
    drafts_selftest(a);
    ldp_prio3_shares_free(a);
    ldp_prio3_shares_free(b);
    ldp_prio3_shares_free(fixed);
    ldp_prio3_free(hist);
    ldp_prio3_free(sum_vec);
    printf("selftest: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--selftest") == 0) return selftest();
    if (argc == 2) return replay(argv[1]);
    fprintf(stderr, "usage: prio3 CASES | prio3 --selftest\n");
    return 2;
}
