/*
 * The conformance vectors and the C interface's contract, through include/ldp_client.h and the static library:
 * built and run by tests/c_api.rs (C99, -Wall -Wextra -Werror -pedantic).
 *
 *     vectors CASEFILE...           replays case files (below), printing one result line per step to stdout
 *     vectors --selftest STATE_DIR  checks null pointers, bad UTF-8, oversized inputs and the client API end to end,
 *                                   printing "FAIL ..." per failed check and "selftest: N checks, M failed"
 *
 * This program parses no JSON: tests/c_api.rs turns each vector file into a case file of tab-separated records,
 * one per line (JSON texts are compact, so they hold no tab or newline):
 *
 *     spec     SPEC_JSON                                  -> "fingerprint FP"
 *     case     METRIC WINDOW SECRET_HEX|- COHORT DRAWS     -> "case ok"  (DRAWS: k:hex,k:hex; COHORT -1: none)
 *     report   VALUE_JSON EPOCH                           -> "charge KIND EPS DELTA FIRST_EPS FIRST_DELTA CAP_EPS
 *                                                              CAP_DELTA KEY|- VALUE|-", then "line LINE"
 *     refuse   METRIC SECRET_HEX|- COHORT VALUE_JSON       -> "refused STATUS TYPE CODE FIELDS MESSAGE" or "accepted"
 *                                                            (CODE, FIELDS: ldp_last_error_code and _fields, empty
 *                                                            when the error is no refusal)
 *     refusehex METRIC SECRET_HEX|- COHORT VALUE_HEX       -> the same, the value's bytes given in hex (not UTF-8)
 *     recordhex METRIC VALUE_HEX                          -> ldp_client_record_string on a memory client of the
 *                                                            spec: "refused STATUS TYPE CODE FIELDS MESSAGE" or
 *                                                            "accepted"
 *     recorddouble METRIC nan|inf|-inf                   -> ldp_client_record_double on that client: the same
 *
 * Fields of a result line are separated by tabs. A failed call prints "error CALL STATUS TYPE MESSAGE" in place of
 * its step's line. Messages have backslash, tab, CR and newline escaped as \\, \t, \r and \n.
 */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldp_client.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* Small helpers */

static void print_escaped(const char *s) {
    for (; s != NULL && *s != '\0'; s++) {
        switch (*s) {
        case '\\': fputs("\\\\", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        default: putchar(*s);
        }
    }
}

static void print_error(const char *call, LdpStatus status) {
    printf("error\t%s\t%d\t", call, (int)status);
    print_escaped(ldp_last_error_type());
    putchar('\t');
    print_escaped(ldp_last_error_message());
    putchar('\n');
}

static void print_refusal(LdpStatus status) {
    if (status == LDP_OK) {
        puts("accepted");
        return;
    }
    printf("refused\t%d\t", (int)status);
    print_escaped(ldp_last_error_type());
    putchar('\t');
    print_escaped(ldp_last_error_code());
    putchar('\t');
    print_escaped(ldp_last_error_fields());
    putchar('\t');
    print_escaped(ldp_last_error_message());
    putchar('\n');
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes `hex` into a new buffer (free it); `*len` its length. NULL for "-" (no bytes) or bad hex. */
static uint8_t *from_hex(const char *hex, size_t *len) {
    size_t n = strlen(hex), i;
    uint8_t *out;
    *len = 0;
    if (strcmp(hex, "-") == 0 || n % 2 != 0) return NULL;
    out = malloc(n / 2 + 1);
    if (out == NULL) return NULL;
    for (i = 0; i < n / 2; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i] = (uint8_t)(hi * 16 + lo);
    }
    *len = n / 2;
    return out;
}

/* Reads one line (without its newline) into *buf, growing it; its length, or -1 at the end of the file. */
static long read_line(FILE *f, char **buf, size_t *cap) {
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n') {
        if (n + 1 >= *cap) {
            size_t bigger = *cap == 0 ? 4096 : *cap * 2;
            char *p = realloc(*buf, bigger);
            if (p == NULL) {
                fputs("out of memory\n", stderr);
                exit(2);
            }
            *buf = p;
            *cap = bigger;
        }
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && n == 0) return -1;
    if (*cap == 0) {
        *buf = malloc(1);
        if (*buf == NULL) exit(2);
        *cap = 1;
    }
    (*buf)[n] = '\0';
    return (long)n;
}

/* Splits `line` in place at tabs into at most `max` fields (empty fields kept); the number of fields. */
static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    fields[n++] = line;
    for (; *line != '\0' && n < max; line++) {
        if (*line == '\t') {
            *line = '\0';
            fields[n++] = line + 1;
        }
    }
    return n;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Replaying case files */

struct replay {
    LdpSpec *spec;
    LdpEncoder *encoder;
    LdpRandom *random;
    LdpClient *client;
    uint64_t window;
};

static void replay_reset_case(struct replay *r) {
    ldp_encoder_free(r->encoder);
    ldp_random_free(r->random);
    r->encoder = NULL;
    r->random = NULL;
}

static void replay_reset(struct replay *r) {
    replay_reset_case(r);
    ldp_client_free(r->client);
    ldp_spec_free(r->spec);
    r->client = NULL;
    r->spec = NULL;
}

/* An encoder of `metric` with `secret_hex`, `cohort` and the OS generator (refusals draw nothing). */
static LdpStatus refusal_encoder(struct replay *r, const char *metric, const char *secret_hex, const char *cohort,
                                 LdpEncoder **out) {
    size_t secret_len = 0;
    uint8_t *secret = from_hex(secret_hex, &secret_len);
    LdpStatus st = ldp_encoder_new(r->spec, metric, secret, secret_len, strtoll(cohort, NULL, 10), NULL, out);
    free(secret);
    return st;
}

static void replay_record(struct replay *r, char **f, int n) {
    LdpStatus st;
    if (strcmp(f[0], "spec") == 0 && n == 2) {
        char fp[17];
        replay_reset(r);
        st = ldp_spec_parse((const uint8_t *)f[1], strlen(f[1]), &r->spec);
        if (st == LDP_OK) st = ldp_spec_fingerprint(r->spec, fp);
        if (st == LDP_OK)
            printf("fingerprint\t%s\n", fp);
        else
            print_error("ldp_spec_parse", st);
    } else if (strcmp(f[0], "case") == 0 && n == 6) {
        size_t secret_len = 0;
        uint8_t *secret = from_hex(f[3], &secret_len);
        replay_reset_case(r);
        r->window = strtoull(f[2], NULL, 10);
        st = ldp_random_replay(f[5], &r->random);
        if (st == LDP_OK)
            st = ldp_encoder_new(r->spec, f[1], secret, secret_len, strtoll(f[4], NULL, 10), r->random, &r->encoder);
        free(secret);
        if (st == LDP_OK)
            puts("case\tok");
        else
            print_error("ldp_encoder_new", st);
    } else if (strcmp(f[0], "report") == 0 && n == 3) {
        LdpPrepared *prepared = NULL;
        LdpCharge charge;
        char *line = NULL;
        st = ldp_encoder_prepare(r->encoder, (const uint8_t *)f[1], strlen(f[1]), &prepared);
        if (st != LDP_OK) {
            print_error("ldp_encoder_prepare", st);
            print_error("ldp_encoder_prepare", st);
            return;
        }
        st = ldp_prepared_charge(prepared, &charge);
        if (st == LDP_OK)
            printf("charge\t%u\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%s\t%s\n", (unsigned)charge.kind,
                   charge.epsilon, charge.delta, charge.first_epsilon, charge.first_delta, charge.cap_epsilon,
                   charge.cap_delta, charge.key_hex[0] ? charge.key_hex : "-",
                   charge.value_hex[0] ? charge.value_hex : "-");
        else
            print_error("ldp_prepared_charge", st);
        st = ldp_encoder_randomize(r->encoder, prepared, strtoll(f[2], NULL, 10), r->window, &line);
        if (st == LDP_OK)
            printf("line\t%s\n", line);
        else
            print_error("ldp_encoder_randomize", st);
        ldp_string_free(line);
        ldp_prepared_free(prepared);
    } else if ((strcmp(f[0], "refuse") == 0 || strcmp(f[0], "refusehex") == 0) && n == 5) {
        LdpEncoder *encoder = NULL;
        LdpPrepared *prepared = NULL;
        st = refusal_encoder(r, f[1], f[2], f[3], &encoder);
        if (st != LDP_OK) {
            print_error("ldp_encoder_new", st);
            return;
        }
        if (strcmp(f[0], "refuse") == 0) {
            st = ldp_encoder_prepare(encoder, (const uint8_t *)f[4], strlen(f[4]), &prepared);
        } else {
            size_t len = 0;
            uint8_t *bytes = from_hex(f[4], &len);
            st = ldp_encoder_prepare(encoder, bytes, len, &prepared);
            free(bytes);
        }
        print_refusal(st);
        ldp_prepared_free(prepared);
        ldp_encoder_free(encoder);
    } else if (strcmp(f[0], "recordhex") == 0 && n == 3) {
        size_t len = 0;
        uint8_t *bytes;
        if (r->client == NULL && (st = ldp_client_open_memory(r->spec, NULL, &r->client)) != LDP_OK) {
            print_error("ldp_client_open_memory", st);
            return;
        }
        bytes = from_hex(f[2], &len);
        print_refusal(ldp_client_record_string(r->client, f[1], bytes, len, NULL));
        free(bytes);
    } else if (strcmp(f[0], "recorddouble") == 0 && n == 3) {
        double value = strcmp(f[2], "nan") == 0 ? NAN : strcmp(f[2], "inf") == 0 ? INFINITY : -INFINITY;
        if (r->client == NULL && (st = ldp_client_open_memory(r->spec, NULL, &r->client)) != LDP_OK) {
            print_error("ldp_client_open_memory", st);
            return;
        }
        print_refusal(ldp_client_record_double(r->client, f[1], value, NULL));
    } else {
        printf("error\tbad record\t-1\t\t%s (%d fields)\n", f[0], n);
    }
}

static int replay_file(const char *path) {
    struct replay r = {NULL, NULL, NULL, NULL, 0};
    char *buf = NULL, *fields[8];
    size_t cap = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    while (read_line(f, &buf, &cap) >= 0) {
        replay_record(&r, fields, split_tabs(buf, fields, 8));
    }
    replay_reset(&r);
    free(buf);
    fclose(f);
    return 0;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Self-test: the contract at the boundary, and the client API end to end */

static int checks = 0, failed = 0;

static void check_(int ok, const char *what, int line) {
    checks++;
    if (!ok) {
        failed++;
        printf("FAIL line %d: %s (last error: %s: ", line, what, ldp_last_error_type());
        print_escaped(ldp_last_error_message());
        puts(")");
    }
}

#define CHECK(cond) check_((cond) ? 1 : 0, #cond, __LINE__)

/* The call's status is `want`, and after a failure the thread's error type is `type` and its message starts with
 * `prefix` (a success keeps the last failure's error, as errno: EXPECT_OK checks the status alone). */
static void expect_(LdpStatus got, LdpStatus want, const char *type, const char *prefix, const char *call, int line) {
    const char *t = ldp_last_error_type(), *m = ldp_last_error_message();
    int error_ok = want == LDP_OK || (strcmp(t, type) == 0 && strncmp(m, prefix, strlen(prefix)) == 0);
    checks++;
    if (got != want || !error_ok) {
        failed++;
        printf("FAIL line %d: %s: status %d (want %d), type \"%s\" (want \"%s\"), message \"", line, call, (int)got,
               (int)want, t, type);
        print_escaped(m);
        printf("\" (want it to start with \"");
        print_escaped(prefix);
        puts("\")");
    }
}

#define EXPECT(call, want, type, prefix) expect_((call), (want), (type), (prefix), #call, __LINE__)
#define EXPECT_OK(call) expect_((call), LDP_OK, "", "", #call, __LINE__)
#define EXPECT_INVALID(call, prefix) expect_((call), LDP_INVALID_ARGUMENT, "ValueError", (prefix), #call, __LINE__)

static const char *GRR_SPEC =
    "{\"spec_version\": 1, \"name\": \"c.selftest\", \"window_seconds\": 86400, "
    "\"budget\": {\"per_window\": 100.0, \"lifetime\": 1000.0}, "
    "\"upload\": {\"min_interval_seconds\": 3600, \"max_batch\": 100}, "
    "\"metrics\": {\"m\": {\"protocol\": \"grr\", \"params\": {\"epsilon\": 1.0, \"domain_size\": 3, "
    "\"labels\": null}, \"budget\": {\"per_report\": 1.0}}}}";

/* The lifetime budget of m allows two reports. */
static const char *TWO_REPORTS_SPEC =
    "{\"spec_version\": 1, \"name\": \"c.selftest.two\", \"window_seconds\": 86400, "
    "\"budget\": {\"per_window\": 100.0, \"lifetime\": 1000.0}, "
    "\"upload\": {\"min_interval_seconds\": 3600, \"max_batch\": 100}, "
    "\"metrics\": {\"m\": {\"protocol\": \"grr\", \"params\": {\"epsilon\": 1.0, \"domain_size\": 3, "
    "\"labels\": null}, \"budget\": {\"per_report\": 1.0, \"lifetime\": 2.0}}}}";

static const uint8_t BAD_UTF8[] = {0x22, 0xed, 0xa0, 0x80, 0x22}; /* "<WTF-8 of U+D800>" */
static const char BAD_NAME[] = {'m', (char)0xff, (char)0xfe, '\0'};

static LdpSpec *parse_spec(const char *json) {
    LdpSpec *spec = NULL;
    EXPECT_OK(ldp_spec_parse((const uint8_t *)json, strlen(json), &spec));
    CHECK(spec != NULL);
    return spec;
}

static void selftest_errors(LdpSpec *spec) {
    LdpSpec *no_spec = (LdpSpec *)&checks; /* overwritten with NULL on failure */
    LdpRandom *random = NULL;
    LdpEncoder *encoder = NULL;
    LdpPrepared *prepared = NULL;
    LdpClient *client = NULL, *client2 = NULL;
    LdpRequest *request = NULL;
    LdpCharge charge;
    LdpReplyAction action = LDP_REPLY_DONE;
    char fp[17], *line = NULL;
    const char *name = NULL, *value = NULL;
    const uint8_t *body = NULL;
    size_t len = 0;
    uint64_t count = 0;
    double eps = -1.0, delta = -1.0;

    CHECK(strlen(ldp_version()) > 0);
    CHECK(strcmp(ldp_last_error_message(), "") == 0);

    /* Specs */
    EXPECT_INVALID(ldp_spec_parse(NULL, 5, &no_spec), "the spec is a null pointer");
    CHECK(no_spec == NULL);
    EXPECT_INVALID(ldp_spec_parse((const uint8_t *)"{}", 2, NULL), "out (an out pointer) is null");
    EXPECT_INVALID(ldp_spec_parse(BAD_UTF8, sizeof BAD_UTF8, &no_spec), "the spec is not valid UTF-8");
    EXPECT_INVALID(ldp_spec_parse((const uint8_t *)"{}", (size_t)LDP_MAX_INPUT + 1, &no_spec), "the spec is over");
    EXPECT(ldp_spec_parse((const uint8_t *)"{}", 2, &no_spec), LDP_SPEC_ERROR, "SpecError", "");
    CHECK(no_spec == NULL);
    EXPECT_INVALID(ldp_spec_fingerprint(NULL, fp), "spec is a null handle");
    EXPECT_INVALID(ldp_spec_fingerprint(spec, NULL), "out is a null pointer");
    EXPECT_OK(ldp_spec_fingerprint(spec, fp));
    CHECK(strlen(fp) == 16);
    /* A success keeps the thread's last error (as errno): it is the last FAILING call's. */
    EXPECT_INVALID(ldp_spec_fingerprint(NULL, fp), "spec is a null handle");
    EXPECT_OK(ldp_spec_fingerprint(spec, fp));
    CHECK(strcmp(ldp_last_error_type(), "ValueError") == 0 &&
          strstr(ldp_last_error_message(), "spec is a null handle") != NULL);

    /* Random sources */
    EXPECT_INVALID(ldp_random_replay(NULL, &random), "draws is a null pointer");
    EXPECT_INVALID(ldp_random_replay("64:00", NULL), "out (an out pointer) is null");
    EXPECT_INVALID(ldp_random_replay("nonsense", &random), "draw \"nonsense\" is not k:hex");
    EXPECT_INVALID(ldp_random_replay(BAD_NAME, &random), "draws is not valid UTF-8");
    EXPECT_INVALID(ldp_random_keyed(NULL, 3, (const uint8_t *)"m", 1, &random), "key is a null pointer");
    EXPECT_INVALID(ldp_random_os(NULL), "out (an out pointer) is null");
    CHECK(random == NULL);

    /* Encoders */
    EXPECT_INVALID(ldp_encoder_new(NULL, "m", NULL, 0, -1, NULL, &encoder), "spec is a null handle");
    EXPECT_INVALID(ldp_encoder_new(spec, NULL, NULL, 0, -1, NULL, &encoder), "metric is a null pointer");
    EXPECT_INVALID(ldp_encoder_new(spec, BAD_NAME, NULL, 0, -1, NULL, &encoder), "metric is not valid UTF-8");
    EXPECT_INVALID(ldp_encoder_new(spec, "m", NULL, 4, -1, NULL, &encoder), "secret is a null pointer");
    EXPECT_INVALID(ldp_encoder_new(spec, "m", NULL, 0, -2, NULL, &encoder), "cohort must be -1 or in [0, 2^32)");
    EXPECT_INVALID(ldp_encoder_new(spec, "m", NULL, 0, -1, NULL, NULL), "out (an out pointer) is null");
    CHECK(ldp_encoder_new(spec, "nope", NULL, 0, -1, NULL, &encoder) != LDP_OK);
    CHECK(encoder == NULL);
    EXPECT_OK(ldp_encoder_new(spec, "m", NULL, 0, -1, NULL, &encoder));
    EXPECT_INVALID(ldp_encoder_prepare(NULL, (const uint8_t *)"1", 1, &prepared), "encoder is a null handle");
    EXPECT_INVALID(ldp_encoder_prepare(encoder, NULL, 1, &prepared), "the value is a null pointer");
    EXPECT_INVALID(ldp_encoder_prepare(encoder, (const uint8_t *)"1", 1, NULL), "out (an out pointer) is null");
    EXPECT_INVALID(ldp_encoder_prepare(encoder, (const uint8_t *)"1", (size_t)LDP_MAX_INPUT + 1, &prepared),
                   "the value is over");
    EXPECT_INVALID(ldp_encoder_prepare(encoder, BAD_UTF8, sizeof BAD_UTF8, &prepared), "the value is not valid UTF-8");
    EXPECT_INVALID(ldp_encoder_prepare(encoder, (const uint8_t *)"[1,", 3, &prepared),
                   "the value is not one JSON document");
    EXPECT_INVALID(ldp_encoder_prepare(encoder, NULL, 0, &prepared), "the value is not one JSON document");
    EXPECT(ldp_encoder_prepare(encoder, (const uint8_t *)"3", 1, &prepared), LDP_VALUE_ERROR, "ValueError", "");
    CHECK(strcmp(ldp_last_error_code(), "value_range") == 0);
    CHECK(strcmp(ldp_last_error_fields(), "{\"got\":3,\"min\":0,\"max\":3,\"max_exclusive\":true}") == 0);
    EXPECT(ldp_encoder_prepare(encoder, (const uint8_t *)"\"x\"", 3, &prepared), LDP_TYPE_ERROR, "TypeError", "");
    CHECK(strcmp(ldp_last_error_code(), "value_type") == 0);
    CHECK(strcmp(ldp_last_error_fields(), "{\"expected\":\"index\",\"got\":\"string\"}") == 0);
    CHECK(strlen(ldp_last_error_message()) > 0);
    CHECK(prepared == NULL);
    EXPECT_OK(ldp_encoder_prepare(encoder, (const uint8_t *)"2", 1, &prepared));
    EXPECT_INVALID(ldp_prepared_charge(NULL, &charge), "prepared is a null handle");
    EXPECT_INVALID(ldp_prepared_charge(prepared, NULL), "out (an out pointer) is null");
    EXPECT_OK(ldp_prepared_charge(prepared, &charge));
    CHECK(charge.kind == 0 && charge.epsilon == 1.0 && charge.delta == 0.0 && charge.key_hex[0] == '\0');
    EXPECT_INVALID(ldp_encoder_randomize(NULL, prepared, -1, 1, &line), "encoder is a null handle");
    EXPECT_INVALID(ldp_encoder_randomize(encoder, NULL, -1, 1, &line), "prepared is a null handle");
    EXPECT_INVALID(ldp_encoder_randomize(encoder, prepared, -1, 1, NULL), "line (an out pointer) is null");
    CHECK(line == NULL);
    EXPECT_OK(ldp_encoder_randomize(encoder, prepared, -1, 7, &line));
    CHECK(line != NULL && strncmp(line, "{\"spec\":\"", 9) == 0 && strstr(line, "\"metric\":\"m\",\"window\":7,"));
    ldp_string_free(line);
    ldp_prepared_free(prepared);
    ldp_encoder_free(encoder);

    /* Clients */
    EXPECT_INVALID(ldp_client_open_memory(NULL, NULL, &client), "spec is a null handle");
    EXPECT_INVALID(ldp_client_open_memory(spec, NULL, NULL), "out (an out pointer) is null");
    EXPECT_INVALID(ldp_client_open(spec, NULL, NULL, &client), "state_dir is a null pointer");
    EXPECT_INVALID(ldp_client_open(spec, "", NULL, &client), "state_dir is empty");
    EXPECT_INVALID(ldp_client_open(spec, BAD_NAME, NULL, &client), "state_dir is not valid UTF-8");
    CHECK(client == NULL);
    EXPECT_OK(ldp_client_open_memory(spec, NULL, &client));
    /* Handles carry their kind: one of another kind is refused, never read as the wrong type. */
    EXPECT_INVALID(ldp_client_pending((const LdpClient *)(const void *)spec, &count), "client is not a client handle");
    EXPECT_INVALID(ldp_client_record_int((const LdpClient *)(const void *)spec, "m", 1, NULL),
                   "client is not a client handle");
    EXPECT_INVALID(ldp_client_opt_out((const LdpClient *)(const void *)spec), "client is not a client handle");
    EXPECT_INVALID(ldp_spec_fingerprint((const LdpSpec *)(const void *)client, fp), "spec is not a spec handle");
    EXPECT_INVALID(ldp_client_open_memory((const LdpSpec *)(const void *)client, NULL, &client2),
                   "spec is not a spec handle");
    EXPECT_INVALID(ldp_encoder_prepare((LdpEncoder *)(void *)client, (const uint8_t *)"1", 1, &prepared),
                   "encoder is not an encoder handle");
    CHECK(ldp_request_header_count((const LdpRequest *)(const void *)client) == 0);
    CHECK(ldp_request_report_count((const LdpRequest *)(const void *)spec) == 0);
    ldp_client_free((LdpClient *)(void *)spec); /* not a client: ignored */
    ldp_spec_free((LdpSpec *)(void *)client);   /* not a spec: ignored */
    EXPECT_OK(ldp_spec_fingerprint(spec, fp));
    EXPECT_OK(ldp_client_pending(client, &count));
    /* Options */
    EXPECT_INVALID(ldp_client_open_with_options(NULL, NULL, NULL, &client2), "spec is a null handle");
    EXPECT_INVALID(ldp_client_open_with_options(spec, "", NULL, &client2), "state_dir is empty");
    EXPECT_INVALID(ldp_client_open_with_options(spec, NULL, NULL, NULL), "out (an out pointer) is null");
    CHECK(client2 == NULL);
    EXPECT_INVALID(ldp_client_opted_out(client, NULL), "opted_out (an out pointer) is null");
    EXPECT_INVALID(ldp_client_pending_bytes(client, NULL), "bytes (an out pointer) is null");
    EXPECT_INVALID(ldp_client_opt_in(NULL), "client is a null handle");
    EXPECT_INVALID(ldp_client_record_int(NULL, "m", 1, NULL), "client is a null handle");
    EXPECT_INVALID(ldp_client_record_int(client, NULL, 1, NULL), "metric is a null pointer");
    EXPECT_INVALID(ldp_client_record_int(client, BAD_NAME, 1, NULL), "metric is not valid UTF-8");
    EXPECT_INVALID(ldp_client_record_json(client, "m", NULL, 1, NULL), "the value is a null pointer");
    EXPECT_INVALID(ldp_client_record_json(client, "m", (const uint8_t *)"1", (size_t)LDP_MAX_INPUT + 1, NULL),
                   "the value is over");
    EXPECT_INVALID(ldp_client_record_string(client, "m", BAD_UTF8 + 1, 3, NULL), "the value is not valid UTF-8");
    EXPECT_INVALID(ldp_client_record_string(client, "m", (const uint8_t *)"red", (size_t)LDP_MAX_INPUT + 1, NULL),
                   "the value is over");
    /* NaN and ±inf reach the protocol's checks, refused as Python refuses them: a float where grr takes an index. */
    EXPECT(ldp_client_record_double(client, "m", NAN, NULL), LDP_TYPE_ERROR, "TypeError", "");
    CHECK(strcmp(ldp_last_error_code(), "value_type") == 0 &&
          strcmp(ldp_last_error_fields(), "{\"expected\":\"index\",\"got\":\"float\"}") == 0);
    EXPECT(ldp_client_record_double(client, "m", -INFINITY, NULL), LDP_TYPE_ERROR, "TypeError", "");
    CHECK(strcmp(ldp_last_error_code(), "value_type") == 0);
    /* The refusal is kept through successes and the _free functions, and replaced whole by the next failure. */
    EXPECT_OK(ldp_client_pending(client, &count));
    ldp_string_free(NULL);
    CHECK(strcmp(ldp_last_error_code(), "value_type") == 0 && strcmp(ldp_last_error_type(), "TypeError") == 0);
    EXPECT_INVALID(ldp_client_pending(NULL, &count), "client is a null handle");
    CHECK(strcmp(ldp_last_error_code(), "") == 0 && strcmp(ldp_last_error_fields(), "") == 0); /* no refusal */
    EXPECT(ldp_client_record_int(client, "m", 3, NULL), LDP_VALUE_ERROR, "ValueError", "");
    EXPECT_INVALID(ldp_client_pending(NULL, &count), "client is a null handle");
    EXPECT_INVALID(ldp_client_pending(client, NULL), "count (an out pointer) is null");
    EXPECT_OK(ldp_client_pending(client, &count));
    CHECK(count == 0);
    EXPECT_INVALID(ldp_client_spent(NULL, NULL, 0, &eps, &delta), "client is a null handle");
    EXPECT_INVALID(ldp_client_spent(client, BAD_NAME, 0, &eps, &delta), "metric is not valid UTF-8");
    EXPECT_INVALID(ldp_client_spent(client, NULL, 0, NULL, &delta), "epsilon (an out pointer) is null");
    EXPECT_INVALID(ldp_client_spent(client, NULL, 0, &eps, NULL), "delta (an out pointer) is null");
    EXPECT_OK(ldp_client_spent(client, NULL, 0, &eps, &delta));
    CHECK(eps == 0.0 && delta == 0.0);

    /* Requests */
    EXPECT_INVALID(ldp_client_next_request(NULL, "t", 0, &request), "client is a null handle");
    EXPECT_INVALID(ldp_client_next_request(client, NULL, 0, &request), "token is a null pointer");
    EXPECT_INVALID(ldp_client_next_request(client, "t", 0, NULL), "request (an out pointer) is null");
    EXPECT(ldp_client_next_request(client, "a token", 0, &request), LDP_VALUE_ERROR, "ValueError",
           "upload token must be");
    EXPECT_OK(ldp_client_next_request(client, "t", 0, &request));
    CHECK(request == NULL); /* nothing queued */
    CHECK(ldp_request_header_count(NULL) == 0);
    CHECK(ldp_request_report_count(NULL) == 0);
    EXPECT_INVALID(ldp_request_header(NULL, 0, &name, &value), "request is a null handle");
    EXPECT_INVALID(ldp_request_body(NULL, &body, &len), "request is a null handle");
    EXPECT_INVALID(ldp_client_handle_reply(client, NULL, 200, NULL, 0, 0, NULL, &action, NULL),
                   "request is a null handle");
    CHECK(action == LDP_REPLY_FAIL);
    EXPECT_INVALID(ldp_client_handle_reply(client, NULL, 200, NULL, 0, 0, NULL, NULL, NULL),
                   "action (an out pointer) is null");

    /* Freeing null handles is a no-op. */
    ldp_spec_free(NULL);
    ldp_random_free(NULL);
    ldp_encoder_free(NULL);
    ldp_prepared_free(NULL);
    ldp_client_free(NULL);
    ldp_request_free(NULL);
    ldp_string_free(NULL);
    ldp_client_free(client);
}

/* Records three reports, uploads them with a fabricated collector reply, and checks a lifetime budget refusal. */
static void selftest_client(LdpSpec *spec, LdpSpec *two, const char *state_dir) {
    LdpClient *client = NULL, *small = NULL, *file = NULL;
    LdpRequest *request = NULL;
    LdpReplyAction action = LDP_REPLY_FAIL;
    char fp[17], reply[512], expected_auth[] = "Bearer secret-token";
    const char *name = NULL, *value = NULL, *batch = NULL;
    const uint8_t *body = NULL;
    size_t len = 0, i, lines = 0;
    uint64_t count = 99, id1 = 0, id2 = 0, id3 = 0;
    double eps = -1.0, delta = -1.0, wait = -1.0;

    EXPECT_OK(ldp_spec_fingerprint(spec, fp));
    EXPECT_OK(ldp_client_open_memory(spec, NULL, &client));
    EXPECT_OK(ldp_client_record_int(client, "m", 0, &id1));
    EXPECT_OK(ldp_client_record_int(client, "m", 1, &id2));
    EXPECT_OK(ldp_client_record_int(client, "m", 2, &id3));
    CHECK(id1 < id2 && id2 < id3);
    EXPECT_OK(ldp_client_pending(client, &count));
    CHECK(count == 3);
    EXPECT_OK(ldp_client_spent(client, "m", 0, &eps, &delta));
    CHECK(eps == 3.0 && delta == 0.0);
    EXPECT_OK(ldp_client_spent(client, NULL, 1, &eps, &delta));
    CHECK(eps == 3.0 && delta == 0.0);

    /* The upload request: headers and body. */
    EXPECT_OK(ldp_client_next_request(client, "secret-token", 0, &request));
    CHECK(request != NULL);
    if (request == NULL) return;
    CHECK(ldp_request_report_count(request) == 3);
    CHECK(ldp_request_header_count(request) == 4);
    for (i = 0; i < ldp_request_header_count(request); i++) {
        EXPECT_OK(ldp_request_header(request, i, &name, &value));
        if (strcmp(name, "Authorization") == 0) CHECK(strcmp(value, expected_auth) == 0);
        if (strcmp(name, "Content-Type") == 0) CHECK(strcmp(value, "application/x-ndjson") == 0);
        if (strcmp(name, "Ldp-Batch-Id") == 0) batch = value;
    }
    EXPECT_INVALID(ldp_request_header(request, 4, &name, &value), "header 4 of a request with 4 headers");
    CHECK(batch != NULL && strlen(batch) > 0);
    EXPECT_OK(ldp_request_body(request, &body, &len));
    for (i = 0; i < len; i++) lines += body[i] == '\n';
    CHECK(lines == 3 && len > 0 && body[len - 1] == '\n');
    CHECK(len > 10 && memcmp(body, "{\"spec\":\"", 9) == 0 && memcmp(body + 9, fp, 16) == 0);
    if (batch == NULL) batch = "";

    /* The collector's replies: a retry, an insane 200 (nothing acknowledged), then a sane 200. */
    EXPECT_OK(ldp_client_handle_reply(client, request, 503, NULL, 0, 0, "7", &action, &wait));
    CHECK(action == LDP_REPLY_RETRY_AFTER && wait == 7.0);
    EXPECT_OK(ldp_client_handle_reply(client, request, -1, NULL, 0, 0, NULL, &action, &wait));
    CHECK(action == LDP_REPLY_BACKOFF);
    EXPECT_INVALID(ldp_client_handle_reply(client, request, 42, NULL, 0, 0, NULL, &action, &wait),
                   "status 42 is not an HTTP status or -1");
    sprintf(reply, "{\"batch_id\":\"%s\",\"accepted\":2,\"rejected\":{},\"lines\":2}", batch);
    EXPECT(ldp_client_handle_reply(client, request, 200, (const uint8_t *)reply, strlen(reply), 0, NULL, &action,
                                   &wait),
           LDP_TRANSPORT_ERROR, "TransportError", "the collector's answer to batch");
    CHECK(action == LDP_REPLY_FAIL);
    EXPECT(ldp_client_handle_reply(client, request, 400, (const uint8_t *)"bad", 3, 0, NULL, &action, &wait),
           LDP_UPLOAD_REJECTED, "UploadRejected", "the collector refused the batch (400)");
    EXPECT_OK(ldp_client_pending(client, &count));
    CHECK(count == 3);
    sprintf(reply, "{\"batch_id\":\"%s\",\"accepted\":3,\"rejected\":{},\"lines\":3}", batch);
    EXPECT_OK(ldp_client_handle_reply(client, request, 200, (const uint8_t *)reply, strlen(reply), 0, NULL, &action,
                                      &wait));
    CHECK(action == LDP_REPLY_DONE);
    EXPECT_OK(ldp_client_pending(client, &count));
    CHECK(count == 0);
    ldp_request_free(request);
    request = NULL;
    /* Nothing queued, and the upload interval has not passed: no request. */
    EXPECT_OK(ldp_client_record_int(client, "m", 1, NULL));
    EXPECT_OK(ldp_client_next_request(client, "secret-token", 1, &request));
    CHECK(request == NULL);
    ldp_client_free(client);

    /* A lifetime budget of two reports: the third is refused, nothing charged or queued. */
    EXPECT_OK(ldp_client_open_memory(two, NULL, &small));
    EXPECT_OK(ldp_client_record_int(small, "m", 0, NULL));
    EXPECT_OK(ldp_client_record_json(small, "m", (const uint8_t *)"1", 1, NULL));
    EXPECT(ldp_client_record_int(small, "m", 2, NULL), LDP_BUDGET_EXCEEDED, "BudgetExceeded",
           "privacy budget exceeded for metric \"m\" (lifetime)");
    EXPECT_OK(ldp_client_pending(small, &count));
    CHECK(count == 2);
    EXPECT_OK(ldp_client_spent(small, NULL, 1, &eps, &delta));
    CHECK(eps == 2.0 && delta == 0.0);
    /* A gzip request. */
    EXPECT_OK(ldp_client_next_request(small, "t", 1, &request));
    CHECK(request != NULL && ldp_request_header_count(request) == 5);
    if (request != NULL) {
        EXPECT_OK(ldp_request_header(request, 4, &name, &value));
        CHECK(strcmp(name, "Content-Encoding") == 0 && strcmp(value, "gzip") == 0);
        EXPECT_OK(ldp_request_body(request, &body, &len));
        CHECK(len > 2 && body[0] == 0x1f && body[1] == 0x8b);
    }
    ldp_request_free(request);
    ldp_client_free(small);

    /* A client keeping its state in a folder: what it queued is there after a reopen. */
    if (state_dir != NULL) {
        EXPECT_OK(ldp_client_open(spec, state_dir, NULL, &file));
        EXPECT_OK(ldp_client_record_int(file, "m", 2, NULL));
        ldp_client_free(file);
        file = NULL;
        EXPECT_OK(ldp_client_open(spec, state_dir, NULL, &file));
        EXPECT_OK(ldp_client_pending(file, &count));
        CHECK(count == 1);
        ldp_client_free(file);
    }
}

/* The device's promises: a bounded outbox, opting out and in, replies handed to their own client, Retry-After
   clamped, and a state missing beside its outbox refused. */
static void selftest_device(LdpSpec *spec, const char *state_dir) {
    LdpClientOptions options;
    LdpClient *a = NULL, *b = NULL, *file = NULL;
    LdpRequest *request = NULL;
    LdpReplyAction action = LDP_REPLY_DONE;
    char path[4096], reply[512];
    const char *name = NULL, *value = NULL, *batch = "";
    char *counts = NULL;
    uint64_t count = 99, bytes = 0, one = 0;
    double eps = -1.0, delta = -1.0, wait = -1.0;
    int flag = -1;
    size_t i;
    FILE *f;

    /* A bounded outbox: room for two reports of this spec (each line is under 150 bytes). */
    EXPECT_OK(ldp_client_open_with_options(spec, NULL, NULL, &a));
    EXPECT_OK(ldp_client_record_int(a, "m", 0, NULL));
    EXPECT_OK(ldp_client_pending_bytes(a, &one));
    CHECK(one > 50 && one < 150);
    ldp_client_free(a);
    memset(&options, 0, sizeof options);
    options.max_outbox_bytes = 2 * one + one / 2;
    EXPECT_OK(ldp_client_open_with_options(spec, NULL, &options, &a));
    EXPECT_OK(ldp_client_record_int(a, "m", 0, NULL));
    EXPECT_OK(ldp_client_record_int(a, "m", 1, NULL));
    EXPECT(ldp_client_record_int(a, "m", 2, NULL), LDP_OUTBOX_FULL, "OutboxFull", "the outbox is full: ");
    EXPECT_OK(ldp_client_pending(a, &count));
    EXPECT_OK(ldp_client_pending_bytes(a, &bytes));
    CHECK(count == 2 && bytes == 2 * one);
    EXPECT_OK(ldp_client_spent(a, NULL, 1, &eps, &delta));
    CHECK(eps == 2.0); /* the refused report charged nothing */

    /* Opting out: nothing pending, nothing recorded, nothing sent; the budget spent stays; idempotent. */
    EXPECT_OK(ldp_client_opted_out(a, &flag));
    CHECK(flag == 0);
    EXPECT_OK(ldp_client_opt_out(a));
    EXPECT_OK(ldp_client_opt_out(a));
    EXPECT_OK(ldp_client_opted_out(a, &flag));
    CHECK(flag == 1);
    EXPECT_OK(ldp_client_pending(a, &count));
    EXPECT_OK(ldp_client_pending_bytes(a, &bytes));
    CHECK(count == 0 && bytes == 0);
    EXPECT(ldp_client_record_int(a, "m", 1, NULL), LDP_OPTED_OUT, "OptedOutError", "this device opted out");
    EXPECT_OK(ldp_client_next_request(a, "t", 0, &request));
    CHECK(request == NULL);
    EXPECT_OK(ldp_client_spent(a, NULL, 1, &eps, &delta));
    CHECK(eps == 2.0);
    EXPECT_OK(ldp_client_opt_in(a));
    EXPECT_OK(ldp_client_opt_in(a));
    EXPECT_OK(ldp_client_opted_out(a, &flag));
    CHECK(flag == 0);
    EXPECT_OK(ldp_client_record_int(a, "m", 1, NULL));

    /* A reply belongs to the client whose request it answers. */
    EXPECT_OK(ldp_client_open_with_options(spec, NULL, NULL, &b));
    EXPECT_OK(ldp_client_next_request(a, "t", 0, &request));
    CHECK(request != NULL);
    if (request != NULL) {
        for (i = 0; i < ldp_request_header_count(request); i++) {
            EXPECT_OK(ldp_request_header(request, i, &name, &value));
            if (strcmp(name, "Ldp-Batch-Id") == 0) batch = value;
        }
        sprintf(reply, "{\"batch_id\":\"%s\",\"accepted\":1,\"rejected\":{},\"lines\":1}", batch);
        EXPECT_INVALID(ldp_client_handle_reply(b, request, 200, (const uint8_t *)reply, strlen(reply), 0, NULL, &action,
                                               &wait),
                       "request was made by another client handle");
        CHECK(action == LDP_REPLY_FAIL);
        EXPECT_OK(ldp_client_pending(a, &count));
        CHECK(count == 1);
        /* Retry-After is clamped to LDP_MAX_RETRY_AFTER_SECONDS. */
        EXPECT_OK(ldp_client_handle_reply(a, request, 503, NULL, 0, 0, "86400", &action, &wait));
        CHECK(action == LDP_REPLY_RETRY_AFTER && wait == (double)LDP_MAX_RETRY_AFTER_SECONDS);
        EXPECT_OK(ldp_client_handle_reply(a, request, 429, NULL, 0, 0, "99999999999999999999999999", &action, &wait));
        CHECK(action == LDP_REPLY_RETRY_AFTER && wait == (double)LDP_MAX_RETRY_AFTER_SECONDS);
        EXPECT_OK(ldp_client_handle_reply(a, request, 503, NULL, 0, 0, "soon", &action, &wait));
        CHECK(action == LDP_REPLY_BACKOFF);
        EXPECT_OK(ldp_client_handle_reply(a, request, 503, NULL, 0, 0, "Tue, 01 Jan 2250 00:00:00 GMT", &action, &wait));
        CHECK(action == LDP_REPLY_RETRY_AFTER && wait == (double)LDP_MAX_RETRY_AFTER_SECONDS);
        EXPECT_OK(ldp_client_handle_reply(a, request, 503, NULL, 0, 0, "12", &action, &wait));
        CHECK(action == LDP_REPLY_RETRY_AFTER && wait == 12.0);
        EXPECT_OK(ldp_client_handle_reply(a, request, 200, (const uint8_t *)reply, strlen(reply), 0, NULL, &action,
                                          &wait));
        CHECK(action == LDP_REPLY_DONE);
        EXPECT_OK(ldp_client_pending(a, &count));
        CHECK(count == 0);
        /* Two reports deleted by the opt-out, one uploaded since. */
        EXPECT_OK(ldp_client_counts_json(a, &counts));
        CHECK(counts != NULL &&
              strcmp(counts, "{\"m\":{\"reports\":3,\"pending\":0,\"uploaded\":1,\"discarded\":2}}") == 0);
        ldp_string_free(counts);
        counts = NULL;
    }
    ldp_request_free(request);
    ldp_client_free(a);
    ldp_client_free(b);

    /* Fail closed: the folder of selftest_client, its state.json deleted beside its outbox, is refused, and the
       failed open deletes nothing. */
    if (state_dir != NULL) {
        snprintf(path, sizeof path, "%s/state.json", state_dir);
        CHECK(remove(path) == 0);
        EXPECT(ldp_client_open(spec, state_dir, NULL, &file), LDP_LEDGER_ERROR, "LedgerError", "");
        CHECK(strstr(ldp_last_error_message(), "state.json is missing") != NULL);
        CHECK(strstr(ldp_last_error_message(), "delete the folder") != NULL);
        CHECK(file == NULL);
        snprintf(path, sizeof path, "%s/outbox.0.log", state_dir);
        f = fopen(path, "rb");
        CHECK(f != NULL);
        if (f != NULL) fclose(f);
    }
}

/* A JSON text as the byte range a call takes. */
#define TEXT(s) (const uint8_t *)(s), strlen(s)

/* ldp_client_record_many_json: all or nothing, ids in order, a short ids buffer refused before anything is
   recorded, malformed items refused, the outbox cap and opting out; ldp_client_counts_json. */
static void selftest_many_and_counts(LdpSpec *spec) {
    LdpClient *c = NULL, *small = NULL;
    LdpClientOptions options;
    const char *three = "[[\"m\", 0], [\"m\", 2], [\"m\", 1]]";
    char *counts = NULL;
    uint64_t ids[4] = {0, 0, 0, 0}, count = 99, one = 0;
    double eps = -1.0, delta = -1.0;

    EXPECT_OK(ldp_client_open_memory(spec, NULL, &c));
    EXPECT_OK(ldp_client_counts_json(c, &counts));
    CHECK(counts != NULL && strcmp(counts, "{}") == 0);
    ldp_string_free(counts);
    counts = NULL;

    /* A short ids buffer: refused before anything is recorded. */
    EXPECT_INVALID(ldp_client_record_many_json(c, TEXT(three), ids, 2),
                   "ids has room for 2 id(s) and items_json holds 3 items: nothing was recorded");
    EXPECT_OK(ldp_client_pending(c, &count));
    CHECK(count == 0 && ids[0] == 0);
    EXPECT_OK(ldp_client_record_many_json(c, TEXT(three), ids, 4));
    CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 3 && ids[3] == 0);
    EXPECT_OK(ldp_client_record_many_json(c, TEXT("[[\"m\", 2]]"), NULL, 0)); /* ids not wanted */
    EXPECT_OK(ldp_client_record_many_json(c, TEXT("[]"), ids, 0));            /* nothing to record */
    EXPECT_OK(ldp_client_pending(c, &count));
    CHECK(count == 4);
    EXPECT_OK(ldp_client_spent(c, NULL, 1, &eps, &delta));
    CHECK(eps == 4.0);

    /* Refusals keep nothing: a bad value names its item; malformed items are invalid arguments. */
    EXPECT(ldp_client_record_many_json(c, TEXT("[[\"m\", 0], [\"m\", 3]]"), ids, 4), LDP_VALUE_ERROR, "ValueError",
           "record_many item 1 (\"m\"): ");
    CHECK(strcmp(ldp_last_error_code(), "value_range") == 0); /* the item's refusal, by code */
    EXPECT(ldp_client_record_many_json(c, TEXT("[[\"m\", 0], [\"nope\", 1]]"), ids, 4), LDP_VALUE_ERROR,
           "ValueError", "record_many item 1 (\"nope\"): ");
    EXPECT_INVALID(ldp_client_record_many_json(NULL, TEXT(three), ids, 4), "client is a null handle");
    EXPECT_INVALID(ldp_client_record_many_json((const LdpClient *)(const void *)spec, TEXT(three), ids, 4),
                   "client is not a client handle");
    EXPECT_INVALID(ldp_client_record_many_json(c, NULL, 3, ids, 4), "items_json is a null pointer");
    EXPECT_INVALID(ldp_client_record_many_json(c, BAD_UTF8, sizeof BAD_UTF8, ids, 4), "items_json is not valid UTF-8");
    EXPECT_INVALID(ldp_client_record_many_json(c, (const uint8_t *)"[]", (size_t)LDP_MAX_INPUT + 1, ids, 4),
                   "items_json is over");
    EXPECT_INVALID(ldp_client_record_many_json(c, TEXT("[[\"m\", 0]"), ids, 4), "items_json is not one JSON document");
    EXPECT_INVALID(ldp_client_record_many_json(c, TEXT("{\"m\": 0}"), ids, 4),
                   "items_json must be a JSON array of [metric, value] pairs");
    EXPECT_INVALID(ldp_client_record_many_json(c, TEXT("[[\"m\", 0], [\"m\"]]"), ids, 4),
                   "item 1 of items_json is not a [metric, value] pair");
    EXPECT_INVALID(ldp_client_record_many_json(c, TEXT("[[\"m\", 0], [\"m\", 1, 2]]"), ids, 4),
                   "item 1 of items_json is not a [metric, value] pair");
    EXPECT_INVALID(ldp_client_record_many_json(c, TEXT("[[0, \"m\"]]"), ids, 4),
                   "item 0 of items_json does not start with a metric name");
    EXPECT_OK(ldp_client_pending(c, &count));
    CHECK(count == 4 && ids[0] == 1 && ids[3] == 0);

    /* Counts: every report pending, then deleted by an opt-out, which record_many then meets. */
    counts = (char *)&checks; /* overwritten with NULL on failure */
    EXPECT_INVALID(ldp_client_counts_json(NULL, &counts), "client is a null handle");
    CHECK(counts == NULL);
    EXPECT_INVALID(ldp_client_counts_json((const LdpClient *)(const void *)spec, &counts),
                   "client is not a client handle");
    EXPECT_INVALID(ldp_client_counts_json(c, NULL), "json (an out pointer) is null");
    EXPECT_OK(ldp_client_counts_json(c, &counts));
    CHECK(counts != NULL &&
          strcmp(counts, "{\"m\":{\"reports\":4,\"pending\":4,\"uploaded\":0,\"discarded\":0}}") == 0);
    ldp_string_free(counts);
    counts = NULL;
    EXPECT_OK(ldp_client_opt_out(c));
    EXPECT(ldp_client_record_many_json(c, TEXT(three), ids, 4), LDP_OPTED_OUT, "OptedOutError",
           "this device opted out");
    EXPECT_OK(ldp_client_counts_json(c, &counts));
    CHECK(counts != NULL &&
          strcmp(counts, "{\"m\":{\"reports\":4,\"pending\":0,\"uploaded\":0,\"discarded\":4}}") == 0);
    ldp_string_free(counts);
    ldp_client_free(c);

    /* The outbox's cap: room for two reports and a half; a batch of three keeps none and names item 2. */
    EXPECT_OK(ldp_client_open_memory(spec, NULL, &small));
    EXPECT_OK(ldp_client_record_int(small, "m", 0, NULL));
    EXPECT_OK(ldp_client_pending_bytes(small, &one));
    ldp_client_free(small);
    small = NULL;
    memset(&options, 0, sizeof options);
    options.max_outbox_bytes = 2 * one + one / 2;
    EXPECT_OK(ldp_client_open_with_options(spec, NULL, &options, &small));
    EXPECT(ldp_client_record_many_json(small, TEXT(three), ids, 4), LDP_OUTBOX_FULL, "OutboxFull",
           "record_many item 2 does not fit: the outbox is full: ");
    EXPECT_OK(ldp_client_pending(small, &count));
    CHECK(count == 0);
    EXPECT_OK(ldp_client_record_many_json(small, TEXT("[[\"m\", 0], [\"m\", 1]]"), ids, 2));
    CHECK(ids[0] == 1 && ids[1] == 2);
    ldp_client_free(small);
}

static int selftest(const char *state_dir) {
    LdpSpec *spec = parse_spec(GRR_SPEC), *two = parse_spec(TWO_REPORTS_SPEC);
    if (spec != NULL && two != NULL) {
        selftest_errors(spec);
        selftest_client(spec, two, state_dir);
        selftest_device(spec, state_dir);
        selftest_many_and_counts(spec);
    }
    ldp_spec_free(spec);
    ldp_spec_free(two);
    printf("selftest: %d checks, %d failed\n", checks, failed);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    int i, status = 0;
    if (argc >= 2 && strcmp(argv[1], "--selftest") == 0) return selftest(argc >= 3 ? argv[2] : NULL);
    for (i = 1; i < argc; i++) status |= replay_file(argv[i]);
    fflush(stdout);
    return status;
}
