/*
 * srv_io — helper threads that write replies beside the event loop.
 *
 * At the end of an iteration the loop has every reply of that iteration in
 * its clients' output buffers, and the journal has what they acknowledge.
 * Writing them to the sockets is then independent work per client, and on
 * loopback each write also runs the receiver's side of TCP: about a tenth
 * of the loop's time under SET at pipeline 16. srv_io_write splits a set of
 * such writes over the helpers and the caller and returns when all are
 * done, so the loop keeps its one-writer rule: while the helpers write, the
 * loop does nothing else with those clients (Redis's io-threads do the
 * same at the same point).
 *
 * Layer: daemon, no dependency but libc and pthreads. One caller thread at
 * a time (the event loop).
 */
#ifndef SHMKV_SRV_IO_H
#define SHMKV_SRV_IO_H

#include <stddef.h>
#include <stdint.h>

#define SRV_IO_MAX 16

/* One socket's output. The caller owns buf, which must not change until
 * srv_io_write returns. */
struct srv_io_job {
    int fd;
    const char *buf;
    size_t len;
    size_t done; /* out: bytes written */
    int err;     /* out: 0 (all written), EAGAIN (the socket is full), or
                    the errno of the write that failed (EPIPE if it wrote 0) */
};

/* Starts nthreads - 1 helpers (nthreads counts the caller; capped at
 * SRV_IO_MAX). Returns the number of threads srv_io_write now uses, 1 if no
 * helper could be started. Call once, before srv_io_write. */
int srv_io_start(int nthreads);

/* Stops and joins the helpers; srv_io_write then writes alone. */
void srv_io_stop(void);

/* The threads srv_io_write uses, the caller included (1: no helpers). */
int srv_io_threads(void);

/* Writes every job, as much as each socket takes without blocking (the
 * sockets are non-blocking), job i on thread i % srv_io_threads(), the
 * caller's share included; returns when every job is done. Fills each
 * job's done and err. */
void srv_io_write(struct srv_io_job *jobs, size_t n);

#endif
