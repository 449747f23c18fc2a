/*
 * cmd_subs — the table of the subcommands shmkvd has (CLIENT LIST, CONFIG
 * GET, ...), as Redis 7.0 describes them, and its look-ups (cmd.h,
 * cmd_sub_*): dispatch checks a subcommand's arity by it, COMMAND INFO and
 * COMMAND LIST report it, INFO commandstats counts by its names.
 */
#include "cmd.h"

#include <stdio.h>
#include <strings.h>

/* The subcommands shmkvd has, as Redis 7.0 describes them (COMMAND INFO,
 * COMMAND LIST): arity with the container's name counted, flags, key
 * positions and ACL categories. The arity is checked before the command
 * runs, as Redis checks it: a wrong count is a rejected call and, inside
 * MULTI, discards the transaction. */
#define A_ CMD_ADMIN
#define R_ CMD_READONLY
#define CONN_ "@slow @connection"
#define ADM_CONN "@admin @slow @dangerous @connection"
#define ADM "@admin @slow @dangerous"
#define W_ CMD_WRITE
#define SCR "@slow @scripting"
#define W_SCR "@write @slow @scripting"
static const struct cmd_sub subs[] = {
    {"acl|cat", -2, 0, 0, 0, 0, "@slow"},
    {"acl|deluser", -3, A_, 0, 0, 0, ADM},
    {"acl|dryrun", -4, A_, 0, 0, 0, ADM},
    {"acl|genpass", -2, 0, 0, 0, 0, "@slow"},
    {"acl|getuser", 3, A_, 0, 0, 0, ADM},
    {"acl|help", 2, 0, 0, 0, 0, "@slow"},
    {"acl|list", 2, A_, 0, 0, 0, ADM},
    {"acl|load", 2, A_, 0, 0, 0, ADM},
    {"acl|log", -2, A_, 0, 0, 0, ADM},
    {"acl|save", 2, A_, 0, 0, 0, ADM},
    {"acl|setuser", -3, A_, 0, 0, 0, ADM},
    {"acl|users", 2, A_, 0, 0, 0, ADM},
    {"acl|whoami", 2, 0, 0, 0, 0, "@slow"},
    {"client|caching", 3, 0, 0, 0, 0, CONN_},
    {"client|getname", 2, 0, 0, 0, 0, CONN_},
    {"client|getredir", 2, 0, 0, 0, 0, CONN_},
    {"client|help", 2, 0, 0, 0, 0, CONN_},
    {"client|id", 2, 0, 0, 0, 0, CONN_},
    {"client|info", 2, 0, 0, 0, 0, CONN_},
    {"client|kill", -3, A_, 0, 0, 0, ADM_CONN},
    {"client|list", -2, A_, 0, 0, 0, ADM_CONN},
    {"client|no-evict", 3, A_, 0, 0, 0, ADM_CONN},
    {"client|pause", -3, A_, 0, 0, 0, ADM_CONN},
    {"client|reply", 3, 0, 0, 0, 0, CONN_},
    {"client|setname", 3, 0, 0, 0, 0, CONN_},
    {"client|tracking", -3, 0, 0, 0, 0, CONN_},
    {"client|trackinginfo", 2, 0, 0, 0, 0, CONN_},
    {"client|unblock", -3, A_, 0, 0, 0, ADM_CONN},
    {"client|unpause", 2, A_, 0, 0, 0, ADM_CONN},
    {"cluster|addslots", -3, A_, 0, 0, 0, ADM},
    {"cluster|addslotsrange", -4, A_, 0, 0, 0, ADM},
    {"cluster|bumpepoch", 2, A_, 0, 0, 0, ADM},
    {"cluster|count-failure-reports", 3, A_, 0, 0, 0, ADM},
    {"cluster|countkeysinslot", 3, 0, 0, 0, 0, "@slow"},
    {"cluster|delslots", -3, A_, 0, 0, 0, ADM},
    {"cluster|delslotsrange", -4, A_, 0, 0, 0, ADM},
    {"cluster|failover", -2, A_, 0, 0, 0, ADM},
    {"cluster|flushslots", 2, A_, 0, 0, 0, ADM},
    {"cluster|forget", 3, A_, 0, 0, 0, ADM},
    {"cluster|getkeysinslot", 4, 0, 0, 0, 0, "@slow"},
    {"cluster|help", 2, 0, 0, 0, 0, "@slow"},
    {"cluster|info", 2, 0, 0, 0, 0, "@slow"},
    {"cluster|keyslot", 3, 0, 0, 0, 0, "@slow"},
    {"cluster|links", 2, 0, 0, 0, 0, "@slow"},
    {"cluster|meet", -4, A_, 0, 0, 0, ADM},
    {"cluster|myid", 2, 0, 0, 0, 0, "@slow"},
    {"cluster|nodes", 2, 0, 0, 0, 0, "@slow"},
    {"cluster|replicas", 3, A_, 0, 0, 0, ADM},
    {"cluster|replicate", 3, A_, 0, 0, 0, ADM},
    {"cluster|reset", -2, A_, 0, 0, 0, ADM},
    {"cluster|saveconfig", 2, A_, 0, 0, 0, ADM},
    {"cluster|set-config-epoch", 3, A_, 0, 0, 0, ADM},
    {"cluster|setslot", -4, A_, 0, 0, 0, ADM},
    {"cluster|shards", 2, 0, 0, 0, 0, "@slow"},
    {"cluster|slaves", 3, A_, 0, 0, 0, ADM},
    {"cluster|slots", 2, 0, 0, 0, 0, "@slow"},
    {"command|count", 2, 0, 0, 0, 0, CONN_},
    {"command|docs", -2, 0, 0, 0, 0, CONN_},
    {"command|getkeys", -4, 0, 0, 0, 0, CONN_},
    {"command|getkeysandflags", -4, 0, 0, 0, 0, CONN_},
    {"command|help", 2, 0, 0, 0, 0, CONN_},
    {"command|info", -2, 0, 0, 0, 0, CONN_},
    {"command|list", -2, 0, 0, 0, 0, CONN_},
    {"config|get", -3, A_, 0, 0, 0, ADM},
    {"config|help", 2, 0, 0, 0, 0, "@slow"},
    {"config|resetstat", 2, A_, 0, 0, 0, ADM},
    {"config|rewrite", 2, A_, 0, 0, 0, ADM},
    {"config|set", -4, A_, 0, 0, 0, ADM},
    {"function|delete", 3, W_, 0, 0, 0, W_SCR},
    {"function|dump", 2, 0, 0, 0, 0, SCR},
    {"function|flush", -2, W_, 0, 0, 0, W_SCR},
    {"function|help", 2, 0, 0, 0, 0, SCR},
    {"function|kill", 2, 0, 0, 0, 0, SCR},
    {"function|list", -2, 0, 0, 0, 0, SCR},
    {"function|load", -3, W_, 0, 0, 0, W_SCR},
    {"function|restore", -3, W_, 0, 0, 0, W_SCR},
    {"function|stats", 2, 0, 0, 0, 0, SCR},
    {"latency|doctor", 2, A_, 0, 0, 0, ADM},
    {"latency|graph", 3, A_, 0, 0, 0, ADM},
    {"latency|help", 2, 0, 0, 0, 0, "@slow"},
    {"latency|histogram", -2, A_, 0, 0, 0, ADM},
    {"latency|history", 3, A_, 0, 0, 0, ADM},
    {"latency|latest", 2, A_, 0, 0, 0, ADM},
    {"latency|reset", -2, A_, 0, 0, 0, ADM},
    {"memory|doctor", 2, 0, 0, 0, 0, "@slow"},
    {"memory|help", 2, 0, 0, 0, 0, "@slow"},
    {"memory|malloc-stats", 2, 0, 0, 0, 0, "@slow"},
    {"memory|purge", 2, 0, 0, 0, 0, "@slow"},
    {"memory|stats", 2, 0, 0, 0, 0, "@slow"},
    {"memory|usage", -3, R_, 2, 2, 1, "@read @slow"},
    {"module|help", 2, 0, 0, 0, 0, "@slow"},
    {"module|list", 2, A_, 0, 0, 0, ADM},
    {"module|load", -3, A_, 0, 0, 0, ADM},
    {"module|loadex", -3, A_, 0, 0, 0, ADM},
    {"module|unload", 3, A_, 0, 0, 0, ADM},
    {"object|encoding", 3, R_, 2, 2, 1, "@keyspace @read @slow"},
    {"object|freq", 3, R_, 2, 2, 1, "@keyspace @read @slow"},
    {"object|help", 2, 0, 0, 0, 0, "@keyspace @slow"},
    {"object|idletime", 3, R_, 2, 2, 1, "@keyspace @read @slow"},
    {"object|refcount", 3, R_, 2, 2, 1, "@keyspace @read @slow"},
    {"pubsub|channels", -2, 0, 0, 0, 0, "@pubsub @slow"},
    {"pubsub|help", 2, 0, 0, 0, 0, "@slow"},
    {"pubsub|numpat", 2, 0, 0, 0, 0, "@pubsub @slow"},
    {"pubsub|numsub", -2, 0, 0, 0, 0, "@pubsub @slow"},
    {"pubsub|shardchannels", -2, 0, 0, 0, 0, "@pubsub @slow"},
    {"pubsub|shardnumsub", -2, 0, 0, 0, 0, "@pubsub @slow"},
    {"script|exists", -3, 0, 0, 0, 0, "@slow @scripting"},
    {"script|flush", -2, 0, 0, 0, 0, "@slow @scripting"},
    {"script|help", 2, 0, 0, 0, 0, "@slow @scripting"},
    {"script|kill", 2, 0, 0, 0, 0, "@slow @scripting"},
    {"script|load", 3, 0, 0, 0, 0, "@slow @scripting"},
    {"slowlog|get", -2, A_, 0, 0, 0, ADM},
    {"slowlog|help", 2, 0, 0, 0, 0, "@slow"},
    {"slowlog|len", 2, A_, 0, 0, 0, ADM},
    {"slowlog|reset", 2, A_, 0, 0, 0, ADM},
};
#undef A_
#undef R_
#undef CONN_
#undef ADM_CONN
#undef ADM
#undef W_
#undef SCR
#undef W_SCR

size_t cmd_sub_count(void)
{
    return sizeof subs / sizeof subs[0];
}

const struct cmd_sub *cmd_sub_at(size_t i)
{
    return &subs[i];
}

const struct cmd_sub *cmd_sub_lookup(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strlen(subs[i].name) == n && !strncasecmp(subs[i].name, name, n))
            return &subs[i];
    return NULL;
}

const struct cmd_sub *cmd_sub_of(const struct cmd *k, const struct db_str *argv, size_t argc)
{
    if (!(k->flags & CMD_CONTAINER) || argc < 2)
        return NULL;
    char name[96];
    int n = snprintf(name, sizeof name, "%s|%.*s", k->name, (int)argv[1].n, argv[1].p);
    return n > 0 && (size_t)n < sizeof name ? cmd_sub_lookup(name, (size_t)n) : NULL;
}
