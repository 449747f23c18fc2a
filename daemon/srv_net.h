/*
 * srv_net — listeners and new connections: the TCP, TLS and Unix
 * listeners, accepting a client (maxclients, protected mode, a TLS
 * session), and the TLS context built from the tls-* directives.
 *
 * Layer: daemon, beside srv.c, whose event loop calls it.
 */
#ifndef SHMKV_SRV_NET_H
#define SHMKV_SRV_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "srv.h"

/* epoll data of a listener: this bit and the descriptor (TLS_TAG too for
 * one on tls-port). */
#define LISTENER_TAG (1ull << 63)
#define TLS_TAG (1ull << 62)

/* "host:port" of a peer (unix_sock: the socket's path and port 0). */
void srv_sockaddr_str(const struct sockaddr_storage *sa, char *out, size_t cap, bool unix_sock);
/* A listening socket on addr ("-addr": optional, "*": any) and port: the
 * descriptor, -2 for an optional address the host lacks, -1 after logging
 * why not. */
int srv_listen_tcp(const char *addr, int port);
/* The Unix socket at path with mode perm: the descriptor, or -1 (logged). */
int srv_listen_unix(const char *path, int perm);
/* Has the event loop watch listener fd. */
void srv_add_listener(int fd, bool tls);
/* Accepts every waiting client of listener lfd. */
void srv_conn_accept(int lfd, bool unix_sock, bool tls);

/* Protected mode (docs/security.md): whether fd's peer is a client it
 * refuses, and the text such a client gets. */
bool srv_protected_denied(int fd);
extern const char srv_protected_msg[];

#endif
