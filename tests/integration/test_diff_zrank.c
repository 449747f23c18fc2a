/*
 * test_diff_zrank — rank queries of large sorted sets, against
 * redis-server: sets past the size from which shmkvd answers ranks
 * through a rank index (storage/db_zrix.c), changed one member at a time
 * and in bulk between ZRANK, ZREVRANK, ZRANGE and ZREVRANGE by index,
 * ZREMRANGEBYRANK, ZCOUNT and ZLEXCOUNT, each reply compared.
 */
#include "diff_fixture.h"

static size_t compared;

static void cmp_argv(int ac, const char **av)
{
    redisReply *a = redisCommandArgv(cr, ac, av, NULL), *b = redisCommandArgv(ck, ac, av, NULL);
    assert_true(a && b);
    if (!same(a, b)) {
        char ra[1024], rb[1024], cmd[256];
        size_t u = 0;
        for (int i = 0; i < ac && u < sizeof cmd - 32; i++)
            u += (size_t)snprintf(cmd + u, sizeof cmd - u, "%s ", av[i]);
        fail_msg("after %zu: %s: redis-server %s, shmkvd %s", compared, cmd, show(a, ra, sizeof ra),
                 show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    compared++;
}

/* A command from a format with %d and %s arguments only. */
static void cmp(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const char *av[16];
    cmp_argv(diff_words(line, av, 16), av);
}

enum { U = 4000 };

/* Adds k random members to key in one ZADD (scores from a narrow range:
 * ties are ordered by member). */
static void zadd_many(const char *key, int k, bool same_score)
{
    static char words[2 * 600][24];
    const char *av[2 + 2 * 600];
    int ac = 0;
    av[ac++] = "ZADD";
    av[ac++] = key;
    for (int i = 0; i < k && i < 600; i++) {
        snprintf(words[2 * i], sizeof words[0], "%d", same_score ? 7 : pick(2000) - 1000);
        snprintf(words[2 * i + 1], sizeof words[0], "m%d", pick(U));
        av[ac++] = words[2 * i];
        av[ac++] = words[2 * i + 1];
    }
    cmp_argv(ac, av);
}

static void test_diff_zrank_ops(void **state)
{
    (void)state;
    rng = 0x5a52414e4bull; /* "ZRANK" */
    cmp("DEL rk");
    for (int i = 0; i < 6; i++)
        zadd_many("rk", 600, false);
    for (int step = 0; step < 6000; step++) {
        int op = pick(1000), a = pick(3200) - 100, c = pick(20);
        const char *rev = pick(2) ? "REV" : "";
        const char *ws = pick(2) ? "WITHSCORES" : "";
        switch (op / 50) {
        case 0:
        case 1:
        case 2:
            zadd_many("rk", 1 + pick(4), false);
            break;
        case 3:
            if (op % 50 == 0)
                zadd_many("rk", 150 + pick(400), false); /* a bulk write */
            else
                cmp("ZINCRBY rk %d m%d", pick(200) - 100, pick(U));
            break;
        case 4:
            cmp("ZREM rk m%d m%d", pick(U), pick(U));
            break;
        case 5:
            cmp("%s rk %d", pick(2) ? "ZPOPMIN" : "ZPOPMAX", 1 + pick(3));
            break;
        case 6:
        case 7:
        case 8:
            cmp("%s rk m%d", pick(2) ? "ZRANK" : "ZREVRANK", pick(U));
            break;
        case 9:
        case 10:
        case 11:
            cmp("ZRANGE rk %d %d %s %s", a, a + c, rev, ws);
            break;
        case 12:
            cmp("ZREVRANGE rk %d %d %s", a, a + c, ws);
            break;
        case 13:
            cmp("ZRANGE rk %d %d", -a, -a + c);
            break;
        case 14:
            cmp("ZCOUNT rk %s%d %s%d", pick(2) ? "(" : "", pick(2000) - 1000, pick(2) ? "(" : "",
                pick(2000) - 1000);
            break;
        case 15:
            cmp("ZCOUNT rk %s %d", pick(2) ? "-inf" : "(-5", pick(2000) - 1000);
            break;
        case 16:
            if (op % 5 == 0)
                cmp("ZREMRANGEBYRANK rk %d %d", a, a + pick(4));
            else
                cmp("ZRANGE rk %d +inf BYSCORE LIMIT %d 5", pick(2000) - 1000, pick(100));
            break;
        case 17:
            if (op % 5 == 0)
                cmp("ZREMRANGEBYSCORE rk %d %d", a - 1000, a - 1000 + pick(3));
            else
                cmp("ZCARD rk");
            break;
        case 18:
            cmp("ZRANGESTORE rk2 rk %d %d", a, a + c);
            cmp("ZRANGE rk2 0 -1 WITHSCORES");
            break;
        default:
            cmp("ZSCORE rk m%d", pick(U));
        }
    }
    /* ZLEXCOUNT over a set of equal scores (where a lex range is defined),
     * as members come and go. */
    cmp("DEL lx");
    for (int i = 0; i < 5; i++)
        zadd_many("lx", 600, true);
    for (int pass = 0; pass < 4; pass++) {
        for (int t = 0; t < 200; t++) {
            int x = pick(U), y = pick(U);
            const char *lo = pick(8) ? (pick(2) ? "[" : "(") : "-";
            const char *hi = pick(8) ? (pick(2) ? "[" : "(") : "+";
            char a[24], b[24];
            if (*lo == '-')
                snprintf(a, sizeof a, "-");
            else
                snprintf(a, sizeof a, "%sm%d", lo, x);
            if (*hi == '+')
                snprintf(b, sizeof b, "+");
            else
                snprintf(b, sizeof b, "%sm%d", hi, y);
            cmp("ZLEXCOUNT lx %s %s", a, b);
            cmp("ZRANGE lx %d %d", pick(3000), pick(3000));
        }
        zadd_many("lx", 3, true);
        cmp("ZREM lx m%d m%d", pick(U), pick(U));
    }
    redisReply *info = redisCommand(ck, "INFO storage");
    assert_non_null(info);
    const char *p = strstr(info->str, "zset_rank_indexes_built:");
    assert_non_null(p);
    long long built = atoll(p + strlen("zset_rank_indexes_built:"));
    freeReplyObject(info);
    assert_true(built >= 2);
    printf("test_diff_zrank: %zu replies compared, %lld rank indexes built\n", compared, built);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_zrank_ops),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
