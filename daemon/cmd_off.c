/*
 * cmd_off — the commands of Redis features shmkvd does not have, answered
 * as redis-server answers them with the feature off: modules (none is ever
 * loaded), cluster mode (disabled), and LOLWUT's version line. Tools that
 * probe for a feature (MODULE LIST, CLUSTER INFO) get the answer that
 * tells them it is absent.
 */
#include "cmd.h"

#include <stdio.h>
#include <string.h>

#include "srv_conf.h"

/* MODULE LIST | LOAD path [arg ...] | LOADEX path ... | UNLOAD name | HELP */
void cmd_module(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {{"list", 2},   {"load", -3}, {"loadex", -3},
                                                 {"unload", 3}, {"help", 2},  {NULL, 0}};
    int i = cmd_subcommand(c, subs, "module");
    if (i < 0)
        return;
    if (i == 0) {
        resp_array(OUT(c), 0); /* shmkvd loads no modules */
        return;
    }
    if (i == 4) {
        static const char *const lines[] = {
            "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LIST",
            "    Return a list of loaded modules (shmkvd loads none).",
            "LOAD <path> [<arg> ...]",
            "    Refused: shmkvd cannot load Redis modules.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Refused: shmkvd cannot load Redis modules.",
            "UNLOAD <name>",
            "    Unload a module (there is none).",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
        return;
    }
    /* LOAD, LOADEX and UNLOAD are protected, as in Redis 7.0. */
    const char *allow = srv_conf_kept(&srv.conf, "enable-module-command");
    int setting = !allow                    ? SRV_PROTECTED_NO
                  : !strcmp(allow, "yes")   ? SRV_PROTECTED_YES
                  : !strcmp(allow, "local") ? SRV_PROTECTED_LOCAL
                                            : SRV_PROTECTED_NO;
    if (!cmd_protected_allowed(c, setting)) {
        resp_error(OUT(c),
                   "ERR MODULE command not allowed. If the enable-module-command option is set to "
                   "\"local\", you can run it from a local connection, otherwise you need to set "
                   "this option in the configuration file, and then restart the server.");
        return;
    }
    if (i == 3) {
        resp_error(OUT(c), "ERR Error unloading module: no such module with that name");
        return;
    }
    srv_log(LOG_WARNING, "Module %.*s not loaded: shmkvd cannot load Redis modules",
            (int)(c->argv[2].n < 256 ? c->argv[2].n : 256), c->argv[2].p);
    resp_error(OUT(c), "ERR Error loading the extension. Please check the server logs.");
}

static void cluster_disabled(struct conn *c)
{
    resp_error(OUT(c), "ERR This instance has cluster support disabled");
}

/* CLUSTER <subcommand> ...: every one of Redis 7.0's, refused as a server
 * with cluster-enabled no refuses it (HELP included). */
void cmd_cluster(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {{"addslots", -3},
                                                 {"addslotsrange", -4},
                                                 {"bumpepoch", 2},
                                                 {"count-failure-reports", 3},
                                                 {"countkeysinslot", 3},
                                                 {"delslots", -3},
                                                 {"delslotsrange", -4},
                                                 {"failover", -2},
                                                 {"flushslots", 2},
                                                 {"forget", 3},
                                                 {"getkeysinslot", 4},
                                                 {"help", 2},
                                                 {"info", 2},
                                                 {"keyslot", 3},
                                                 {"links", 2},
                                                 {"meet", -4},
                                                 {"myid", 2},
                                                 {"nodes", 2},
                                                 {"replicas", 3},
                                                 {"replicate", 3},
                                                 {"reset", -2},
                                                 {"saveconfig", 2},
                                                 {"set-config-epoch", 3},
                                                 {"setslot", -4},
                                                 {"shards", 2},
                                                 {"slaves", 3},
                                                 {"slots", 2},
                                                 {NULL, 0}};
    if (cmd_subcommand(c, subs, "cluster") >= 0)
        cluster_disabled(c);
}

/* READONLY, READWRITE, ASKING: cluster mode's, refused without it. */
void cmd_readonly(struct conn *c)
{
    cluster_disabled(c);
}

void cmd_readwrite(struct conn *c)
{
    cluster_disabled(c);
}

void cmd_asking(struct conn *c)
{
    cluster_disabled(c);
}

/* LOLWUT [VERSION version]: the version line. Redis draws art for its
 * versions 5 and 6 above it; shmkvd has none. */
void cmd_lolwut(struct conn *c)
{
    if (c->argc >= 3 && cmd_arg_is(c, 1, "version")) {
        int64_t v;
        if (!cmd_arg_ll(c, 2, &v))
            return;
    }
    resp_verbatim(OUT(c), "Redis ver. " SRV_VERSION "\n", strlen("Redis ver. " SRV_VERSION "\n"),
                  c->proto);
}
