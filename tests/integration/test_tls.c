/*
 * test_tls — TLS on tls-port against Debian's redis-server with the same
 * certificates (tests/integration/tls_certs.sh makes them with the openssl
 * command): redis-cli --tls with a client certificate, a plain-text client
 * on the TLS port, a certificate from another CA, none at all under each
 * tls-auth-clients, a certificate and key reloaded by CONFIG SET (and a
 * bad one refused, the old kept), a key under a passphrase,
 * redis-benchmark --tls, replication over TLS both ways (a redis-server
 * replica of shmkvd, shmkvd replicas of redis-server and of shmkvd) and
 * links either end must refuse. The same steps must give the same outcome
 * from both servers, and the daemon keeps serving throughout.
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

/* Waits for the replica on rport to bring its link up and then to have
 * what the primary on pport had before (before-sync) and gets after
 * (after-sync = tag): the full sync, then the stream. */
static void expect_replicates(int pport, int rport, const char *tag)
{
    char out[1024];
    bool up = false;
    for (int i = 0; i < 200 && !up; i++) {
        run(out, sizeof out, "redis-cli -p %d info replication", rport);
        up = strstr(out, "master_link_status:up") != NULL;
        if (!up)
            usleep(50 * 1000);
    }
    if (!up)
        fail_msg("%s: the replica's link over TLS did not come up:\n%s", tag, out);
    run(out, sizeof out, "redis-cli -p %d set after-sync %s", pport, tag);
    char want[64];
    snprintf(want, sizeof want, "1\n%s", tag);
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) {
        run(out, sizeof out, "redis-cli -p %d mget before-sync after-sync", rport);
        seen = !strcmp(out, want);
        if (!seen)
            usleep(50 * 1000);
    }
    if (!seen)
        fail_msg("%s: the replica has: %s", tag, out);
}

/* The replica options for a link over TLS to 127.0.0.1:port, presenting
 * cert (tls-cert-file; client_cert also as tls-client-cert-file unless
 * "") and trusting ca; into opts, NULL-terminated. */
static char o_cert[300], o_key[300], o_ccert[300], o_ckey[300], o_ca[300], o_of[64], o_port[16];
static void replica_opts(const char **opts, bool shmkvd, int port, const char *cert,
                         const char *client_cert, const char *ca)
{
    snprintf(o_cert, sizeof o_cert, "%s/%s.crt", certs, cert);
    snprintf(o_key, sizeof o_key, "%s/%s.key", certs, cert);
    snprintf(o_ccert, sizeof o_ccert, "%s/%s.crt", certs, client_cert);
    snprintf(o_ckey, sizeof o_ckey, "%s/%s.key", certs, client_cert);
    snprintf(o_ca, sizeof o_ca, "%s/%s.crt", certs, ca);
    snprintf(o_of, sizeof o_of, "127.0.0.1 %d", port);
    snprintf(o_port, sizeof o_port, "%d", port);
    int n = 0;
    const char *base[] = {"--tls-replication", "yes", "--tls-cert-file",    o_cert,
                          "--tls-key-file",    o_key, "--tls-ca-cert-file", o_ca};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        opts[n++] = base[i];
    if (*client_cert) {
        opts[n++] = "--tls-client-cert-file";
        opts[n++] = o_ccert;
        opts[n++] = "--tls-client-key-file";
        opts[n++] = o_ckey;
    }
    opts[n++] = "--replicaof";
    if (shmkvd) {
        opts[n++] = o_of;
    } else {
        opts[n++] = "127.0.0.1";
        opts[n++] = o_port;
    }
    opts[n] = NULL;
}

/* A redis-server replica with tls-replication yes replicates from
 * shmkvd's TLS port. */
static void test_tls_replica(void **state)
{
    (void)state;
    char out[1024];
    run(out, sizeof out, "redis-cli -p %d config set repl-diskless-sync-delay 0", K.port);
    run(out, sizeof out, "redis-cli -p %d set before-sync 1", K.port);
    struct server rep;
    const char *opts[16];
    replica_opts(opts, false, tls_k, "client", "", "ca");
    h_start_redis_opts(&rep, "redis-tls-replica", opts);
    expect_replicates(K.port, rep.port, "redis-of-shmkvd");
    h_destroy(&rep);
    still_serving();
    printf("test_tls: a redis-server replica with tls-replication syncs and streams from "
           "shmkvd's TLS port\n");
}

/* shmkvd as the replica with tls-replication yes: of redis-server's TLS
 * port with tls-client-cert-file, and of shmkvd's with tls-cert-file
 * alone (which a replica presents when no client certificate is set). */
static void test_tls_replica_link(void **state)
{
    (void)state;
    char out[1024];
    run(out, sizeof out, "redis-cli -p %d config set repl-diskless-sync-delay 0", R.port);
    run(out, sizeof out, "redis-cli -p %d set before-sync 1", R.port);
    run(out, sizeof out, "redis-cli -p %d set before-sync 1", K.port);
    const char *opts[16];
    struct server rep;
    replica_opts(opts, true, tls_r, "server", "client", "ca");
    h_prepare(&rep, "tls-link-r");
    h_start_shmkvd_opts(&rep, opts);
    expect_replicates(R.port, rep.port, "shmkvd-of-redis");
    assert_int_equal(h_stop(&rep), 0);
    h_destroy(&rep);

    replica_opts(opts, true, tls_k, "client", "", "ca");
    h_prepare(&rep, "tls-link-k");
    h_start_shmkvd_opts(&rep, opts);
    expect_replicates(K.port, rep.port, "shmkvd-of-shmkvd");
    assert_int_equal(h_stop(&rep), 0);
    h_destroy(&rep);
    still_serving();
    printf("test_tls: shmkvd replicas with tls-replication sync and stream from redis-server's "
           "and shmkvd's TLS ports\n");
}

/* A link the primary must refuse (a certificate from another CA) and one
 * the replica must refuse (a primary its CA did not sign) stay down, and
 * both ends keep serving. */
static void test_tls_replica_refused(void **state)
{
    (void)state;
    static const struct {
        const char *cert, *ca, *tag;
    } cases[] = {{"bad", "ca", "the primary refuses"},
                 {"client", "other-ca", "the replica refuses"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *opts[16];
        struct server rep;
        replica_opts(opts, true, tls_k, cases[i].cert, "", cases[i].ca);
        h_prepare(&rep, "tls-link-bad");
        h_start_shmkvd_opts(&rep, opts);
        char out[4096];
        usleep(2500 * 1000); /* the cron tries once a second */
        run(out, sizeof out, "redis-cli -p %d info replication", rep.port);
        if (!strstr(out, "master_link_status:down"))
            fail_msg("%s: the link is not down:\n%s", cases[i].tag, out);
        run(out, sizeof out, "redis-cli -p %d get before-sync", rep.port);
        assert_string_equal(out, "");
        char log[300];
        snprintf(log, sizeof log, "%s/server.log", rep.dir);
        static char text[1 << 16];
        h_read_file(log, text, sizeof text);
        if (!strstr(text, "Retrying in a second") ||
            (i == 1 && !strstr(text, "certificate verify failed")))
            fail_msg("%s: the replica's log:\n%s", cases[i].tag, text);
        assert_int_equal(h_stop(&rep), 0);
        h_destroy(&rep);
        still_serving();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_clients),      cmocka_unit_test(test_tls_reload),
        cmocka_unit_test(test_tls_benchmark),    cmocka_unit_test(test_tls_replica),
        cmocka_unit_test(test_tls_replica_link), cmocka_unit_test(test_tls_replica_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
