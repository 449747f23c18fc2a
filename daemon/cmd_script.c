/*
 * cmd_script — the commands of Lua scripting: EVAL, EVALSHA, EVAL_RO,
 * EVALSHA_RO, SCRIPT, FCALL, FCALL_RO and FUNCTION, over the engine in
 * scr.c and the libraries of scr_fn.c.
 */
#include "cmd.h"

#include "scr.h"

/* EVAL script numkeys [key ...] [arg ...] */
void cmd_eval(struct conn *c)
{
    scr_eval(c, false, false);
}

/* EVALSHA sha1 numkeys [key ...] [arg ...] */
void cmd_evalsha(struct conn *c)
{
    scr_eval(c, true, false);
}

/* EVAL_RO script numkeys [key ...] [arg ...]: write commands refused. */
void cmd_eval_ro(struct conn *c)
{
    scr_eval(c, false, true);
}

void cmd_evalsha_ro(struct conn *c)
{
    scr_eval(c, true, true);
}

/* FCALL function numkeys [key ...] [arg ...] */
void cmd_fcall(struct conn *c)
{
    scr_fcall(c, false);
}

/* FCALL_RO: only functions flagged no-writes. */
void cmd_fcall_ro(struct conn *c)
{
    scr_fcall(c, true);
}

/* SCRIPT LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC] | KILL | HELP */
void cmd_script(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {{"load", 3}, {"exists", -3}, {"flush", -2},
                                                 {"kill", 2}, {"help", 2},    {NULL, 0}};
    int i = cmd_subcommand(c, subs, "script");
    if (i < 0)
        return;
    if (i == 0) {
        char sha[41], err[1024];
        if (scr_load(c->argv[2].p, c->argv[2].n, sha, err, sizeof err))
            resp_error(OUT(c), err);
        else
            resp_bulk(OUT(c), sha, 40);
    } else if (i == 1) {
        resp_array(OUT(c), c->argc - 2);
        for (size_t j = 2; j < c->argc; j++)
            resp_int(OUT(c), scr_exists(c->argv[j].p, c->argv[j].n));
    } else if (i == 2) {
        if (c->argc > 3 ||
            (c->argc == 3 && !cmd_arg_is(c, 2, "async") && !cmd_arg_is(c, 2, "sync"))) {
            resp_error(OUT(c), "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            return;
        }
        /* A new Lua state: nothing of the old scripts stays (both ways
         * are immediate: the state is small beside the data). */
        scr_flush();
        resp_simple(OUT(c), "OK");
    } else if (i == 3) {
        scr_kill(c, false);
    } else {
        static const char *const lines[] = {
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "EXISTS <sha1> [<sha1> ...]",
            "    For each SHA-1, 1 if a script with it is loaded, else 0.",
            "FLUSH [ASYNC|SYNC]",
            "    Forget every loaded script (either way at once).",
            "KILL",
            "    Stop the script that runs past busy-reply-threshold, if it wrote nothing.",
            "LOAD <script>",
            "    Compile a script and keep it for EVALSHA, without running it.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    }
}

/* FUNCTION LOAD [REPLACE] code | DELETE library | FLUSH [ASYNC|SYNC] |
 * LIST [LIBRARYNAME pattern] [WITHCODE] | DUMP | RESTORE payload
 * [FLUSH|APPEND|REPLACE] | KILL | STATS | HELP */
void cmd_function(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {
        {"load", -3},    {"delete", 3}, {"flush", -2}, {"list", -2}, {"dump", 2},
        {"restore", -3}, {"kill", 2},   {"stats", 2},  {"help", 2},  {NULL, 0}};
    int i = cmd_subcommand(c, subs, "function");
    if (i < 0)
        return;
    if (i == 6) {
        scr_kill(c, true);
    } else if (i == 7) {
        scr_stats(c);
    } else if (i == 8) {
        static const char *const lines[] = {
            "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <code>",
            "    Make the library whose code begins with \"#!lua name=<library>\"; REPLACE",
            "    takes the place of a library of that name.",
            "DELETE <library>",
            "    Remove a library and its functions.",
            "LIST [LIBRARYNAME <pattern>] [WITHCODE]",
            "    Each library (or those whose name matches the pattern): its name, engine,",
            "    functions with their descriptions and flags, and with WITHCODE its code.",
            "STATS",
            "    The function or script that runs, if any, and the counts of libraries and",
            "    functions.",
            "KILL",
            "    Stop the function that runs past busy-reply-threshold, if it wrote nothing.",
            "FLUSH [ASYNC|SYNC]",
            "    Remove every library (either way at once).",
            "DUMP",
            "    Every library as one payload, for FUNCTION RESTORE here or on redis-server.",
            "RESTORE <payload> [FLUSH|APPEND|REPLACE]",
            "    Load the libraries of a payload: FLUSH drops the ones there are first;",
            "    APPEND (the default) fails on a name in both; REPLACE takes the payload's.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else {
        scr_function(c);
    }
}
