/*
 * cmd_hll — HyperLogLog: PFADD, PFCOUNT, PFMERGE, on sketches stored as
 * strings in Redis's layout (storage/hll.h). PFDEBUG and PFSELFTEST,
 * Redis's internal testing commands, are not implemented.
 */
#include "cmd.h"

/* PFADD key [element ...] */
void cmd_pfadd(struct conn *c)
{
    int changed = 0;
    int rc =
        db_pfadd(srv.db, c->db, c->argv[1].p, c->argv[1].n, c->argv + 2, c->argc - 2, &changed);
    if (rc == 0 && changed)
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "pfadd", 1);
    cmd_reply_int(c, rc, changed);
}

/* PFCOUNT key [key ...] */
void cmd_pfcount(struct conn *c)
{
    uint64_t card = 0;
    int rc = db_pfcount(srv.db, c->db, c->argv + 1, c->argc - 1, &card);
    cmd_reply_int(c, rc, (int64_t)card);
}

/* PFMERGE destkey [sourcekey ...] */
void cmd_pfmerge(struct conn *c)
{
    int rc = db_pfmerge(srv.db, c->db, c->argv[1].p, c->argv[1].n, c->argv + 2, c->argc - 2);
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "pfadd", 1);
    cmd_reply_ok(c, rc);
}
