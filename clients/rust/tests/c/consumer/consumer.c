/* A tiny program of an app using the installed library (tests/install.rs builds it through pkg-config and through
   CMake's find_package(LdpClient), then runs it without LD_LIBRARY_PATH). Prints "consumer ok <version>". */
#include <stdio.h>
#include <string.h>

#include <ldp_client.h>

static const char *SPEC =
    "{\"spec_version\": 1, \"name\": \"consumer\", \"budget\": {\"per_window\": 10.0, \"lifetime\": 100.0}, "
    "\"metrics\": {\"m\": {\"protocol\": \"grr\", \"params\": {\"epsilon\": 1.0, \"domain_size\": 3}, "
    "\"budget\": {\"per_report\": 1.0}}}}";

int main(void) {
    LdpSpec *spec = NULL;
    LdpClient *client = NULL;
    LdpClientOptions options;
    uint64_t id = 0, pending = 0;
    int opted_out = -1;
    memset(&options, 0, sizeof options);
    options.max_outbox_bytes = 4096;
    if (ldp_spec_parse((const uint8_t *)SPEC, strlen(SPEC), &spec) != LDP_OK ||
        ldp_client_open_with_options(spec, NULL, &options, &client) != LDP_OK ||
        ldp_client_record_int(client, "m", 2, &id) != LDP_OK || ldp_client_pending(client, &pending) != LDP_OK ||
        ldp_client_opt_out(client) != LDP_OK || ldp_client_opted_out(client, &opted_out) != LDP_OK) {
        fprintf(stderr, "%s: %s\n", ldp_last_error_type(), ldp_last_error_message());
        return 1;
    }
    if (pending != 1 || opted_out != 1 || ldp_client_record_int(client, "m", 1, &id) != LDP_OPTED_OUT) {
        fprintf(stderr, "unexpected: pending %llu, opted out %d\n", (unsigned long long)pending, opted_out);
        return 1;
    }
    ldp_client_free(client);
    ldp_spec_free(spec);
    printf("consumer ok %s\n", ldp_version());
    return 0;
}
