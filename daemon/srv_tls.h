/*
 * srv_tls — TLS through OpenSSL (docs/security.md, "TLS"): for clients on
 * tls-port and for a replica's link to its primary (tls-replication). The
 * contexts built from the tls-* directives, and non-blocking handshakes,
 * reads and writes for the event loop.
 *
 * Layer: daemon, no dependency but OpenSSL. One thread (the event loop).
 */
#ifndef SHMKV_SRV_TLS_H
#define SHMKV_SRV_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct ssl_st SSL;

/* The tls-* directives, as CONFIG GET shows them ("" for none). */
struct srv_tls_conf {
    const char *cert_file, *key_file, *key_pass;
    /* What a replica presents to its primary; "": cert_file's */
    const char *client_cert_file, *client_key_file, *client_key_pass;
    const char *ca_file, *ca_dir;
    const char *auth_clients; /* "no", "yes" or "optional" */
    const char *protocols;    /* "TLSv1.2 TLSv1.3"; "": those two */
    const char *ciphers, *ciphersuites;
    bool prefer_server_ciphers, session_caching;
    long session_cache_size, session_cache_timeout;
};

/* Builds the server and client contexts from c and, on success, uses them
 * for every new connection (existing ones keep theirs). 0, or -1 with the
 * reason in err and the contexts in use unchanged. */
int srv_tls_configure(const struct srv_tls_conf *c, char *err, size_t cap);
/* Whether a context is in use. */
bool srv_tls_ready(void);
/* Frees the context (at exit). */
void srv_tls_free(void);

/* A server-side TLS session over fd, or NULL (logged). */
SSL *srv_tls_accept(int fd);
/* A client-side TLS session over fd (a connected socket), which verifies
 * the peer's certificate against the CA; NULL without a context. */
SSL *srv_tls_connect(int fd);
/* Frees s (NULL: nothing), after a close_notify if the socket takes it. */
void srv_tls_close(SSL *s);

/* One step of the handshake: 1 done, 0 not yet (*want_write: it waits to
 * write, else to read), -1 failed (reason in err). */
int srv_tls_handshake(SSL *s, bool *want_write, char *err, size_t cap);
/* As read(2) and write(2) on a non-blocking socket: bytes, 0 at the end
 * (read), or -1 with errno EAGAIN (*want_write: the session waits to write,
 * else to read) or another errno (the session failed). */
ssize_t srv_tls_read(SSL *s, void *buf, size_t n, bool *want_write);
ssize_t srv_tls_write(SSL *s, const void *buf, size_t n, bool *want_write);
/* Whether decrypted input waits in the session, which no socket event will
 * announce. */
bool srv_tls_pending(SSL *s);

#endif
