/*
 * test_tls — TLS on tls-port against Debian's redis-server with the same
 * certificates (tests/integration/tls_certs.sh makes them with the openssl
 * command): redis-cli --tls with a client certificate, a plain-text client
 * on the TLS port, a certificate from another CA, none at all under each
 * tls-auth-clients, a certificate and key reloaded by CONFIG SET (and a
 * bad one refused, the old kept), a key under a passphrase,
 * redis-benchmark --tls, and a redis-server replica over TLS. The same steps must give the same
 * outcome from both servers, and the daemon keeps serving throughout.
 */
#include "harness.h"

#include <sys/wait.h>

#ifndef TLS_CERTS_SH
#error "TLS_CERTS_SH: the script that makes the certificates"
#endif

static char certs[256];
static struct server R, K; /* redis-server, shmkvd */
static int tls_r, tls_k;   /* their TLS ports */

/* Runs a shell line; its output (stdout and stderr, at most cap - 1
 * bytes) in out; returns its exit status. */
static int run(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[2100];
    snprintf(full, sizeof full, "timeout 20 %s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* redis-cli over TLS to port with the client files given ("" for none). */
static int cli(int port, const char *cert, const char *args, char *out, size_t cap)
{
    char certopt[600] = "";
    if (*cert)
        snprintf(certopt, sizeof certopt, "--cert %s/%s.crt --key %s/%s.key", certs, cert, certs,
                 cert);
    return run(out, cap, "redis-cli -p %d --tls --cacert %s/ca.crt %s %s", port, certs, certopt,
               args);
}

/* The same TLS command through both: the same outcome (exit status, and
 * output when want_same_text). Returns shmkvd's output. */
static void both(const char *cert, const char *args, bool ok, bool same_text)
{
    char a[4096], b[4096];
    int ra = cli(tls_r, cert, args, a, sizeof a), rb = cli(tls_k, cert, args, b, sizeof b);
    bool ga = ra == 0 && !strstr(a, "Error") && !strstr(a, "ERR"),
         gb = rb == 0 && !strstr(b, "Error") && !strstr(b, "ERR");
    if (ga != ok || gb != ok || (same_text && strcmp(a, b)))
        fail_msg("%s (cert '%s'):\n  redis-server (%d): %s\n  shmkvd (%d): %s", args, cert, ra, a,
                 rb, b);
}

/* A plain connection to both servers' plain ports still answers. */
static void still_serving(void)
{
    char out[256];
    assert_int_equal(run(out, sizeof out, "redis-cli -p %d ping", K.port), 0);
    assert_string_equal(out, "PONG");
}

static int setup(void **state)
{
    (void)state;
    if (access(REDIS_SERVER_PATH, X_OK) || system("command -v openssl >/dev/null 2>&1")) {
        fprintf(stderr, "test_tls: needs redis-server and the openssl command\n");
        return -1;
    }
    if (t_tmp_make(certs, sizeof certs, "tls-certs") != 0)
        return -1;
    char out[1024];
    if (run(out, sizeof out, "%s %s", TLS_CERTS_SH, certs) != 0) {
        fprintf(stderr, "test_tls: %s\n", out);
        return -1;
    }
    tls_r = h_free_port();
    tls_k = h_free_port();
    char pr[16], pk[16], cert[300], key[300], ca[300];
    snprintf(pr, sizeof pr, "%d", tls_r);
    snprintf(pk, sizeof pk, "%d", tls_k);
    snprintf(cert, sizeof cert, "%s/server.crt", certs);
    snprintf(key, sizeof key, "%s/server.key", certs);
    snprintf(ca, sizeof ca, "%s/ca.crt", certs);
    const char *ro[] = {
        "--tls-port", pr,  "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file",
        ca,           NULL};
    h_start_redis_opts(&R, "redis-tls", ro);
    const char *ko[] = {
        "--tls-port", pk,  "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file",
        ca,           NULL};
    h_prepare(&K, "tls");
    h_start_shmkvd_opts(&K, ko);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int rc = h_stop(&K);
    h_destroy(&K);
    h_destroy(&R);
    t_tmp_rmrf(certs);
    return rc == 0 ? 0 : -1;
}

static void test_tls_clients(void **state)
{
    (void)state;
    both("client", "ping", true, true);
    both("client", "set k v", true, true);
    both("client", "get k", true, true);
    both("client", "hello 3", true, false); /* ids differ */
    /* A plain-text client on the TLS port, a certificate from another CA,
     * and none at all (tls-auth-clients yes) are refused. */
    char a[1024], b[1024];
    int ra = run(a, sizeof a, "redis-cli -p %d ping", tls_r);
    int rb = run(b, sizeof b, "redis-cli -p %d ping", tls_k);
    assert_true(strstr(a, "PONG") == NULL && strstr(b, "PONG") == NULL);
    (void)ra;
    (void)rb;
    both("bad", "ping", false, false);
    both("", "ping", false, false);
    still_serving();
    /* Certificates optional: none is fine, a bad one is still refused. */
    assert_int_equal(
        run(a, sizeof a, "redis-cli -p %d config set tls-auth-clients optional", R.port), 0);
    assert_int_equal(
        run(b, sizeof b, "redis-cli -p %d config set tls-auth-clients optional", K.port), 0);
    assert_string_equal(b, "OK");
    both("", "ping", true, true);
    both("bad", "ping", false, false);
    /* Not asked for at all. */
    run(a, sizeof a, "redis-cli -p %d config set tls-auth-clients no", R.port);
    run(b, sizeof b, "redis-cli -p %d config set tls-auth-clients no", K.port);
    both("", "ping", true, true);
    both("bad", "ping", true, true);
    run(a, sizeof a, "redis-cli -p %d config set tls-auth-clients yes", R.port);
    run(b, sizeof b, "redis-cli -p %d config set tls-auth-clients yes", K.port);
    both("", "ping", false, false);
    printf("test_tls: clients with, without and with a foreign certificate, and plain text, "
           "under each tls-auth-clients, as redis-server\n");
}

static void test_tls_reload(void **state)
{
    (void)state;
    char a[2048], b[2048];
    /* A new certificate and key, then a certificate that does not exist:
     * refused, with the old context kept. */
    for (int i = 0; i < 2; i++) {
        int p = i ? K.port : R.port;
        assert_int_equal(run(i ? b : a, sizeof a,
                             "redis-cli -p %d config set tls-cert-file %s/server2.crt "
                             "tls-key-file %s/server2.key",
                             p, certs, certs),
                         0);
    }
    assert_string_equal(b, a);
    both("client", "ping", true, true);
    for (int i = 0; i < 2; i++) {
        int p = i ? K.port : R.port;
        run(i ? b : a, sizeof a, "redis-cli -p %d config set tls-cert-file %s/none.crt", p, certs);
    }
    assert_string_equal(b, a);
    assert_non_null(strstr(b, "Unable to update TLS configuration"));
    for (int i = 0; i < 2; i++) {
        int p = i ? K.port : R.port;
        run(i ? b : a, sizeof a, "redis-cli -p %d config get tls-cert-file", p);
    }
    assert_non_null(strstr(b, "server2.crt"));
    both("client", "ping", true, true);
    /* A key under a passphrase. */
    for (int i = 0; i < 2; i++) {
        int p = i ? K.port : R.port;
        run(i ? b : a, sizeof a,
            "redis-cli -p %d config set tls-key-file-pass pw tls-cert-file %s/server.crt "
            "tls-key-file %s/server-pass.key",
            p, certs, certs);
    }
    assert_string_equal(b, a);
    assert_string_equal(b, "OK");
    both("client", "ping", true, true);
    still_serving();
    printf("test_tls: certificate reloads, a refused one and a key under a passphrase, as "
           "redis-server\n");
}

static void test_tls_benchmark(void **state)
{
    (void)state;
    char out[8192];
    int rc = run(out, sizeof out,
                 "redis-benchmark -p %d --tls --cacert %s/ca.crt --cert %s/client.crt "
                 "--key %s/client.key -t set,get -n 20000 -c 20 -P 16 -q",
                 tls_k, certs, certs, certs);
    if (rc != 0 || !strstr(out, "GET:") || !strstr(out, "SET:"))
        fail_msg("redis-benchmark --tls: %d\n%s", rc, out);
    still_serving();
}

/* A redis-server replica with tls-replication yes replicates from
 * shmkvd's TLS port: the full sync, then the stream. */
static void test_tls_replica(void **state)
{
    (void)state;
    char out[1024];
    run(out, sizeof out, "redis-cli -p %d config set repl-diskless-sync-delay 0", K.port);
    struct server rep;
    char primary[16], cert[300], key[300], ca[300];
    snprintf(primary, sizeof primary, "%d", tls_k);
    snprintf(cert, sizeof cert, "%s/client.crt", certs);
    snprintf(key, sizeof key, "%s/client.key", certs);
    snprintf(ca, sizeof ca, "%s/ca.crt", certs);
    const char *opts[] = {
        "--tls-replication",  "yes", "--tls-cert-file", cert,        "--tls-key-file", key,
        "--tls-ca-cert-file", ca,    "--replicaof",     "127.0.0.1", primary,          NULL};
    run(out, sizeof out, "redis-cli -p %d set before-sync 1", K.port);
    h_start_redis_opts(&rep, "redis-tls-replica", opts);
    bool up = false;
    for (int i = 0; i < 200 && !up; i++) {
        run(out, sizeof out, "redis-cli -p %d info replication", rep.port);
        up = strstr(out, "master_link_status:up") != NULL;
        if (!up)
            usleep(50 * 1000);
    }
    if (!up)
        fail_msg("the replica's link over TLS did not come up:\n%s", out);
    run(out, sizeof out, "redis-cli -p %d set after-sync 2", K.port);
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) {
        run(out, sizeof out, "redis-cli -p %d mget before-sync after-sync", rep.port);
        seen = !strcmp(out, "1\n2");
        if (!seen)
            usleep(50 * 1000);
    }
    if (!seen)
        fail_msg("the replica has: %s", out);
    h_destroy(&rep);
    still_serving();
    printf("test_tls: a redis-server replica with tls-replication syncs and streams from "
           "shmkvd's TLS port\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_clients),
        cmocka_unit_test(test_tls_reload),
        cmocka_unit_test(test_tls_benchmark),
        cmocka_unit_test(test_tls_replica),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
