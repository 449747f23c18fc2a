/*
 * cmd_script — EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: the
 * commands of Lua scripting, over the engine in scr.c.
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

/* SCRIPT LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC] | HELP */
void cmd_script(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {
        {"load", 3}, {"exists", -3}, {"flush", -2}, {"help", 2}, {NULL, 0}};
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
        scr_free();
        scr_init();
        resp_simple(OUT(c), "OK");
    } else {
        static const char *const lines[] = {
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "EXISTS <sha1> [<sha1> ...]",
            "    For each SHA-1, 1 if a script with it is loaded, else 0.",
            "FLUSH [ASYNC|SYNC]",
            "    Forget every loaded script (either way at once).",
            "LOAD <script>",
            "    Compile a script and keep it for EVALSHA, without running it.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    }
}
