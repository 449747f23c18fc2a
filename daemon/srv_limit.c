/*
 * srv_limit — the limits on a client's buffers, as Redis 7.0 has them
 * (docs/daemon.md, "Limits"):
 *
 *   client-output-buffer-limit <class> <hard> <soft> <soft seconds>: a
 *     client whose unsent replies pass hard, or stay past soft for longer
 *     than soft seconds, is closed. The class is replica for a replica of
 *     ours, pubsub for a client subscribed to anything, normal otherwise;
 *     0 turns a limit off. The link to our primary and the fake clients of
 *     scripts have none.
 *   client-query-buffer-limit: a client whose unparsed input passes it is
 *     closed (the link to our primary is exempt).
 *
 * As in Redis, the first 16 KiB of a normal or pubsub client's output
 * (Redis's fixed reply buffer) do not count: a limit below that never
 * closes a client for a small reply.
 *
 * Both count in INFO stats (client_output_buffer_limit_disconnections,
 * client_query_buffer_limit_disconnections) and are logged.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "srv.h"
#include "srv_conf.h"

/* The output of a normal or pubsub client that no limit sees. */
#define OUT_FREE (16u * 1024)

void srv_limit_conf(void)
{
    long long v[3][3] = {{0}};
    const char *cur = srv_conf_kept(&srv.conf, "client-output-buffer-limit");
    if (!cur ||
        sscanf(cur, "normal %lld %lld %lld slave %lld %lld %lld pubsub %lld %lld %lld", &v[0][0],
               &v[0][1], &v[0][2], &v[1][0], &v[1][1], &v[1][2], &v[2][0], &v[2][1], &v[2][2]) != 9)
        memset(v, 0, sizeof v); /* cannot be: the parser keeps it in this form */
    size_t watch = SIZE_MAX;
    for (int k = 0; k < 3; k++) {
        srv.out_limit[k] =
            (struct srv_out_limit){(uint64_t)v[k][0], (uint64_t)v[k][1], (uint64_t)v[k][2]};
        for (int i = 0; i < 2; i++)
            if (v[k][i] > 0 && (uint64_t)v[k][i] < watch)
                watch = (size_t)v[k][i];
    }
    srv.out_watch = watch == SIZE_MAX ? watch : watch + OUT_FREE;
    srv.query_limit = (uint64_t)srv_conf_kept_num(&srv.conf, "client-query-buffer-limit");
}

static int out_class(const struct conn *c)
{
    if (c->flags & CONN_REPLICA)
        return SRV_OUT_REPLICA;
    return cmd_pubsub_subscribed(c) ? SRV_OUT_PUBSUB : SRV_OUT_NORMAL;
}

static const char *class_name(int k)
{
    return k == SRV_OUT_REPLICA ? "replica" : k == SRV_OUT_PUBSUB ? "pubsub" : "normal";
}

bool srv_out_check(struct conn *c, size_t extra)
{
    if (c->flags & CONN_CLOSE_ASAP)
        return true;
    if (c->fd < 0 || (c->flags & CONN_MASTER))
        return false; /* a script's fake client; the link to our primary */
    int k = out_class(c);
    const struct srv_out_limit *l = &srv.out_limit[k];
    uint64_t used = resp_buf_used(&c->out) + extra;
    if (k != SRV_OUT_REPLICA)
        used = used > OUT_FREE ? used - OUT_FREE : 0;
    bool over = l->hard && used > l->hard;
    if (!over && l->soft && used > l->soft) {
        uint64_t now = srv_mstime();
        if (!c->out_soft_ms)
            c->out_soft_ms = now;
        over = (now - c->out_soft_ms) / 1000 > l->soft_s; /* seconds may be huge */
    } else if (!over) {
        c->out_soft_ms = 0;
    }
    if (!over)
        return false;
    srv_log(LOG_WARNING,
            "Client id=%llu addr=%s name=%s scheduled to be closed ASAP for overcoming of "
            "output buffer limits (%s class, %llu bytes).",
            (unsigned long long)c->id, c->addr, c->name, class_name(k), (unsigned long long)used);
    srv.stats.output_limit_closes++;
    srv_close_async(c);
    return true;
}

/* Where replies to a closing client go: written, then forgotten at the
 * next write, so it never holds more than one. */
static struct resp_buf sink;

struct resp_buf *srv_out_over(struct conn *c)
{
    if (!srv_out_check(c, 0))
        return &c->out;
    if (sink.cap > (64u << 10)) /* what one large write left: not kept */
        resp_buf_free(&sink);
    sink.off = sink.len = 0;
    return &sink;
}

bool srv_in_check(struct conn *c)
{
    if (!srv.query_limit || (c->flags & CONN_MASTER) || resp_buf_used(&c->in) <= srv.query_limit)
        return false;
    srv_log(LOG_WARNING,
            "Closing client id=%llu addr=%s name=%s that reached max query buffer length "
            "(%zu bytes).",
            (unsigned long long)c->id, c->addr, c->name, resp_buf_used(&c->in));
    srv.stats.query_limit_closes++;
    srv_close_async(c);
    return true;
}
