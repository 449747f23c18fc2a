/*
 * srv_tls — TLS for clients (srv_tls.h). The directives mean what Redis
 * 7.0's do: tls-protocols lists the versions allowed (TLSv1.2 and TLSv1.3
 * when empty), tls-auth-clients asks for a client certificate (yes: one is
 * required; optional: one is verified if sent), tls-session-caching keeps
 * sessions for resumption.
 */
#include "srv_tls.h"

#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

static SSL_CTX *ctx, *client_ctx; /* tls-port's; a replica's link */

static void last_error(char *err, size_t cap, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    snprintf(err, cap, "%s%s%s", what, *buf ? ": " : "", buf);
    ERR_clear_error();
}

static int key_pass_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    const char *pass = u;
    size_t n = strlen(pass);
    if (n > (size_t)size)
        return 0;
    memcpy(buf, pass, n);
    return (int)n;
}

/* tls-protocols as the options that exclude the others; -1 for a name
 * OpenSSL has no version for. */
static long protocol_options(const char *list)
{
    if (!list || !*list)
        return SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
    static const struct {
        const char *name;
        long op;
    } v[] = {{"tlsv1", SSL_OP_NO_TLSv1},
             {"tlsv1.1", SSL_OP_NO_TLSv1_1},
             {"tlsv1.2", SSL_OP_NO_TLSv1_2},
             {"tlsv1.3", SSL_OP_NO_TLSv1_3}};
    long all = SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3, allowed = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        all |= v[i].op;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list);
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        size_t i = 0;
        while (i < sizeof v / sizeof v[0] && strcasecmp(t, v[i].name))
            i++;
        if (i == sizeof v / sizeof v[0])
            return -1;
        allowed |= v[i].op;
    }
    return all & ~allowed;
}

/* A context with what both sides share: the protocols, ciphers, CA
 * certificates, and the certificate and key this end presents. NULL with
 * the reason in err. */
static SSL_CTX *ctx_new(const struct srv_tls_conf *c, bool server, char *err, size_t cap)
{
    const char *cert = c->cert_file, *key = c->key_file, *pass = c->key_pass;
    if (!server && *c->client_cert_file) {
        cert = c->client_cert_file;
        key = c->client_key_file;
        pass = c->client_key_pass;
    }
    SSL_CTX *n = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!n) {
        last_error(err, cap, "Failed to allocate an SSL context");
        return NULL;
    }
    SSL_CTX_set_options(n, (uint64_t)protocol_options(c->protocols) | SSL_OP_NO_COMPRESSION |
                               SSL_OP_NO_RENEGOTIATION | SSL_OP_SINGLE_DH_USE |
                               SSL_OP_SINGLE_ECDH_USE);
    SSL_CTX_set_mode(n, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (*pass) {
        SSL_CTX_set_default_passwd_cb(n, key_pass_cb);
        SSL_CTX_set_default_passwd_cb_userdata(n, (void *)pass);
    }
    char what[600];
    if (SSL_CTX_use_certificate_chain_file(n, cert) <= 0) {
        snprintf(what, sizeof what, "Failed to load certificate: %s", cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(n, key, SSL_FILETYPE_PEM) <= 0) {
        snprintf(what, sizeof what, "Failed to load private key: %s", key);
        goto fail;
    }
    /* The callback's data lives in the configuration, which may change. */
    SSL_CTX_set_default_passwd_cb_userdata(n, NULL);
    if (!SSL_CTX_check_private_key(n)) {
        snprintf(what, sizeof what, "The private key does not match the certificate");
        goto fail;
    }
    if ((*c->ca_file || *c->ca_dir) &&
        SSL_CTX_load_verify_locations(n, *c->ca_file ? c->ca_file : NULL,
                                      *c->ca_dir ? c->ca_dir : NULL) <= 0) {
        snprintf(what, sizeof what, "Failed to configure CA certificate(s) file/directory");
        goto fail;
    }
    if (*c->ciphers && !SSL_CTX_set_cipher_list(n, c->ciphers)) {
        snprintf(what, sizeof what, "Failed to configure ciphers: %s", c->ciphers);
        goto fail;
    }
    if (*c->ciphersuites && !SSL_CTX_set_ciphersuites(n, c->ciphersuites)) {
        snprintf(what, sizeof what, "Failed to configure ciphersuites: %s", c->ciphersuites);
        goto fail;
    }
    return n;
fail:
    last_error(err, cap, what);
    SSL_CTX_free(n);
    return NULL;
}

int srv_tls_configure(const struct srv_tls_conf *c, char *err, size_t cap)
{
    if (!*c->cert_file || !*c->key_file) {
        snprintf(err, cap, "tls-cert-file and tls-key-file are needed for TLS");
        return -1;
    }
    if (*c->client_cert_file && !*c->client_key_file) {
        snprintf(err, cap, "tls-client-key-file is needed with tls-client-cert-file");
        return -1;
    }
    bool verify = strcmp(c->auth_clients, "no") != 0;
    if (verify && !*c->ca_file && !*c->ca_dir) {
        snprintf(err, cap,
                 "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when "
                 "tls-auth-clients is enabled!");
        return -1;
    }
    if (protocol_options(c->protocols) < 0) {
        snprintf(err, cap,
                 "Invalid tls-protocols specified. Use a combination of 'TLSv1', "
                 "'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.");
        return -1;
    }
    SSL_CTX *s = ctx_new(c, true, err, cap);
    SSL_CTX *cl = s ? ctx_new(c, false, err, cap) : NULL;
    if (!cl) {
        SSL_CTX_free(s);
        return -1;
    }
    if (c->prefer_server_ciphers)
        SSL_CTX_set_options(s, SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (c->session_caching) {
        SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(s, c->session_cache_size);
        SSL_CTX_set_timeout(s, c->session_cache_timeout);
        SSL_CTX_set_session_id_context(s, (const unsigned char *)"shmkvd", 6);
    } else {
        SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    }
    if (!strcmp(c->auth_clients, "yes"))
        SSL_CTX_set_verify(s, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    else if (!strcmp(c->auth_clients, "optional"))
        SSL_CTX_set_verify(s, SSL_VERIFY_PEER, NULL);
    else
        SSL_CTX_set_verify(s, SSL_VERIFY_NONE, NULL);
    /* A replica always verifies its primary against the CA. */
    SSL_CTX_set_verify(cl, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(cl, SSL_SESS_CACHE_OFF);
    /* Sessions made with the old contexts keep a reference. */
    SSL_CTX_free(ctx);
    SSL_CTX_free(client_ctx);
    ctx = s;
    client_ctx = cl;
    return 0;
}

bool srv_tls_ready(void)
{
    return ctx != NULL;
}

void srv_tls_free(void)
{
    SSL_CTX_free(ctx);
    SSL_CTX_free(client_ctx);
    ctx = client_ctx = NULL;
}

/* A session over fd from context c, on the server's side or the client's;
 * NULL without a context. */
static SSL *session(SSL_CTX *c, int fd, bool server)
{
    SSL *s = c ? SSL_new(c) : NULL;
    if (s && SSL_set_fd(s, fd) == 1) {
        (server ? SSL_set_accept_state : SSL_set_connect_state)(s);
        return s;
    }
    SSL_free(s);
    ERR_clear_error();
    return NULL;
}

SSL *srv_tls_accept(int fd)
{
    return session(ctx, fd, true);
}

SSL *srv_tls_connect(int fd)
{
    return session(client_ctx, fd, false);
}

void srv_tls_close(SSL *s)
{
    if (!s)
        return;
    /* A close_notify if the socket takes it; the peer may be gone. */
    if (SSL_is_init_finished(s))
        SSL_shutdown(s);
    SSL_free(s);
    ERR_clear_error();
}

/* What a failed call means, as read(2) would say it. */
static ssize_t io_result(SSL *s, int r, bool *want_write)
{
    int e = SSL_get_error(s, r);
    *want_write = false;
    switch (e) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want_write = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == 0)
            errno = ECONNRESET;
        ERR_clear_error();
        return -1;
    default:
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
}

int srv_tls_handshake(SSL *s, bool *want_write, char *err, size_t cap)
{
    ERR_clear_error();
    int r = SSL_do_handshake(s);
    if (r == 1)
        return 1;
    int e = SSL_get_error(s, r);
    *want_write = e == SSL_ERROR_WANT_WRITE;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    if (e == SSL_ERROR_SYSCALL && !ERR_peek_error())
        snprintf(err, cap, "%s", errno ? strerror(errno) : "the peer closed the connection");
    else
        last_error(err, cap, "TLS handshake failed");
    ERR_clear_error();
    return -1;
}

ssize_t srv_tls_read(SSL *s, void *buf, size_t n, bool *want_write)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(s, buf, n > INT_MAX ? INT_MAX : (int)n);
    if (r > 0) {
        *want_write = false;
        return r;
    }
    return io_result(s, r, want_write);
}

ssize_t srv_tls_write(SSL *s, const void *buf, size_t n, bool *want_write)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(s, buf, n > INT_MAX ? INT_MAX : (int)n);
    if (r > 0) {
        *want_write = false;
        return r;
    }
    ssize_t rc = io_result(s, r, want_write);
    return rc == 0 ? (errno = EPIPE, -1) : rc;
}

bool srv_tls_pending(SSL *s)
{
    return SSL_pending(s) > 0;
}
