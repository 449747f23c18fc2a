/*
 * srv_net — listeners and new connections (srv_net.h): the TCP, TLS and
 * Unix listeners, accepting (maxclients, protected mode, the TLS session),
 * and the TLS context built from the tls-* directives.
 */
#include "srv_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "acl.h"
#include "srv_conf.h"
#include "srv_os.h"
#include "srv_tls.h"

void srv_sockaddr_str(const struct sockaddr_storage *sa, char *out, size_t cap, bool unix_sock)
{
    if (unix_sock) {
        snprintf(out, cap, "%s:0", srv.conf.unixsocket ? srv.conf.unixsocket : "");
        return;
    }
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        port = ntohs(s->sin6_port);
    }
    snprintf(out, cap, "%s:%d", host, port);
}

bool srv_tls_wanted(void)
{
    return srv_conf_kept_num(&srv.conf, "tls-port") > 0 ||
           srv_conf_kept_num(&srv.conf, "tls-replication");
}

int srv_tls_reconfigure(char *err, size_t cap)
{
    const struct srv_conf *k = &srv.conf;
#define KEPT(name) (srv_conf_kept(k, name) ? srv_conf_kept(k, name) : "")
    struct srv_tls_conf t = {
        .cert_file = KEPT("tls-cert-file"),
        .key_file = KEPT("tls-key-file"),
        .key_pass = KEPT("tls-key-file-pass"),
        .client_cert_file = KEPT("tls-client-cert-file"),
        .client_key_file = KEPT("tls-client-key-file"),
        .client_key_pass = KEPT("tls-client-key-file-pass"),
        .ca_file = KEPT("tls-ca-cert-file"),
        .ca_dir = KEPT("tls-ca-cert-dir"),
        .auth_clients = KEPT("tls-auth-clients"),
        .protocols = KEPT("tls-protocols"),
        .ciphers = KEPT("tls-ciphers"),
        .ciphersuites = KEPT("tls-ciphersuites"),
        .prefer_server_ciphers = srv_conf_kept_num(k, "tls-prefer-server-ciphers") != 0,
        .session_caching = srv_conf_kept_num(k, "tls-session-caching") != 0,
        .session_cache_size = (long)srv_conf_kept_num(k, "tls-session-cache-size"),
        .session_cache_timeout = (long)srv_conf_kept_num(k, "tls-session-cache-timeout"),
    };
#undef KEPT
    return srv_tls_configure(&t, err, cap);
}

/* Protected mode, as Redis 7.0 has it: while protected-mode is on and the
 * default user takes no password, a TCP client from anywhere but a
 * loopback address (127.0.0.0/8, ::1) is told why and closed (a TLS one
 * once its handshake is done). Whether fd's peer is such a client. */
bool srv_protected_denied(int fd)
{
    if (!srv_conf_kept_num(&srv.conf, "protected-mode") || !acl_default_nopass())
        return false;
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) != 0)
        return false;
    char addr[INET6_ADDRSTRLEN + 8];
    srv_sockaddr_str(&sa, addr, sizeof addr, false);
    *strrchr(addr, ':') = '\0'; /* the host alone */
    return strncmp(addr, "127.", 4) && strcmp(addr, "::1");
}

const char srv_protected_msg[] =
    "-DENIED Redis is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface. If you want to connect from external computers to Redis you "
    "may adopt one of the following solutions: 1) Just disable protected mode sending the "
    "command 'CONFIG SET protected-mode no' from the loopback interface by connecting to "
    "Redis from the same host the server is running, however MAKE SURE Redis is not "
    "publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change "
    "permanent. 2) Alternatively you can just disable the protected mode by editing the "
    "Redis configuration file, and setting the protected mode option to 'no', and then "
    "restarting the server. 3) If you started the server manually just for testing, restart "
    "it with the '--protected-mode no' option. 4) Setup a an authentication password for the "
    "default user. NOTE: You only need to do one of the above things in order for the server "
    "to start accepting connections from the outside.\r\n";

/* A plain TCP client protected mode refuses: told and closed (true). */
static bool protected_refused(int fd)
{
    if (!srv_protected_denied(fd))
        return false;
    ssize_t w = write(fd, srv_protected_msg, sizeof srv_protected_msg - 1);
    (void)w;
    close(fd);
    return true;
}

void srv_conn_accept(int lfd, bool unix_sock, bool tls)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            /* Out of descriptors: the waiting client is told and closed
             * with the one held back, or the listener would wake the loop
             * again at once, for ever. */
            static uint64_t told_ms;
            if (srv_mstime() - told_ms >= 1000) {
                told_ms = srv_mstime();
                srv_log(LOG_WARNING, "accept: %s: clients are refused (maxclients %d)",
                        strerror(errno), srv.conf.maxclients);
            }
            if (srv_os_refuse_waiting(lfd)) {
                srv.stats.rejected++;
                continue;
            }
            return;
        }
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                srv_log(LOG_WARNING, "accept: %s", strerror(errno));
            return;
        }
        if (srv.nclients >= (size_t)srv.conf.maxclients) {
            static const char msg[] = "-ERR max number of clients reached\r\n";
            ssize_t w = write(fd, msg, sizeof msg - 1);
            (void)w;
            close(fd);
            srv.stats.rejected++;
            continue;
        }
        if (!unix_sock && !tls && protected_refused(fd)) {
            srv.stats.rejected++;
            continue;
        }
        if (!unix_sock) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        struct ssl_st *ssl = NULL;
        if (tls && !(ssl = srv_tls_accept(fd))) {
            srv_log(LOG_WARNING, "TLS: cannot start a session for a new client");
            close(fd);
            continue;
        }
        struct conn *c = srv_conn_adopt(fd, (unix_sock ? CONN_UNIX : 0) |
                                                (acl_auth_required() ? 0 : CONN_AUTHED));
        c->ssl = ssl;
    }
}

/* ---- listeners ---- */

int srv_listen_tcp(const char *addr, int port)
{
    bool optional = addr[0] == '-';
    if (optional)
        addr++;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST},
                    *res;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (strcmp(addr, "*") == 0)
        addr = "0.0.0.0";
    int rc = getaddrinfo(addr, ps, &hints, &res);
    if (rc) {
        srv_log(LOG_WARNING, "bind %s: %s", addr, gai_strerror(rc));
        return optional ? -2 : -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (res->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 511) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        if (optional && (e == EADDRNOTAVAIL || e == EAFNOSUPPORT || e == EPROTONOSUPPORT))
            return -2;
        srv_log(LOG_WARNING, "Could not create server TCP listening socket %s:%d: %s", addr, port,
                strerror(e));
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

int srv_listen_unix(const char *path, int perm)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        srv_log(LOG_WARNING, "unixsocket path too long: %s", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 511) < 0) {
        srv_log(LOG_WARNING, "Could not create server unix socket %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    chmod(path, (mode_t)perm);
    return fd;
}

void srv_add_listener(int fd, bool tls)
{
    struct epoll_event ev = {.events = EPOLLIN,
                             .data.u64 = LISTENER_TAG | (tls ? TLS_TAG : 0) | (uint64_t)fd};
    epoll_ctl(srv.epfd, EPOLL_CTL_ADD, fd, &ev);
}
