/*
 * test_diff_values — values moved and computed against Debian's
 * redis-server, reply for reply: HyperLogLog, LCS, GEO, DUMP and RESTORE
 * both ways (older encodings included, tests/t_rdb.h), MIGRATE, and
 * collections churned by many writes and deletes.
 */
#include "diff_fixture.h"
#include "t_rdb.h"

/* LCS against redis-server: seeded pairs of strings over two- to
 * four-letter alphabets (many equal-length subsequences, so the tie rule
 * decides which one and which runs), empty and absent keys, each asked
 * plain, LEN, and IDX with or without MINMATCHLEN and WITHMATCHLEN. */
static void test_diff_lcs(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    uint64_t r = 0x4c4353; /* "LCS" */
    size_t compared = 0;
    for (int pair = 0; pair < 150; pair++) {
        char s[2][64];
        unsigned letters = 2 + (unsigned)(t_rnd(&r) % 3);
        for (int k = 0; k < 2; k++) {
            size_t n = t_rnd(&r) % 40;
            for (size_t i = 0; i < n; i++)
                s[k][i] = (char)('a' + t_rnd(&r) % letters);
            s[k][n] = 0;
            redisContext *both[2] = {dr, dk};
            for (int sv = 0; sv < 2; sv++)
                freeReplyObject(pair % 25 == 7 && k == 1
                                    ? redisCommand(both[sv], "DEL lcs%d", k)
                                    : redisCommand(both[sv], "SET lcs%d %s", k, s[k]));
        }
        static const char *const forms[] = {
            "LCS lcs0 lcs1",
            "LCS lcs0 lcs1 LEN",
            "LCS lcs0 lcs1 IDX",
            "LCS lcs0 lcs1 IDX WITHMATCHLEN",
            "LCS lcs0 lcs1 IDX MINMATCHLEN 2",
            "LCS lcs0 lcs1 IDX MINMATCHLEN 3 WITHMATCHLEN",
            "LCS lcs1 lcs0 IDX WITHMATCHLEN",
        };
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            redisReply *a = redisCommand(dr, forms[f]), *b = redisCommand(dk, forms[f]);
            if (!same(a, b)) {
                char ra[2048], rb[2048];
                fail_msg("%s with \"%s\", \"%s\": redis-server %s, shmkvd %s", forms[f], s[0], s[1],
                         show(a, ra, sizeof ra), show(b, rb, sizeof rb));
            }
            freeReplyObject(a);
            freeReplyObject(b);
            compared++;
        }
    }
    freeReplyObject(redisCommand(dr, "DEL lcs0 lcs1"));
    freeReplyObject(redisCommand(dk, "DEL lcs0 lcs1"));
    printf("test_diff: %zu LCS replies identical to redis-server's\n", compared);
    redisFree(dr);
    redisFree(dk);
}

/* HyperLogLog against redis-server: seeded PFADD (up to 3,000 elements, so
 * sketches turn dense), PFCOUNT over one to three keys, PFMERGE, and GET
 * of the sketches' bytes, which must be identical, sparse and dense; then
 * the errors: another type, a string that is not a sketch, a corrupt
 * sparse one. Its keys are its own: the random test's string commands
 * would corrupt sketches, where Redis's sparse reader is lenient in ways
 * shmkvd does not copy (it reports the corruption). */
static void test_diff_hyperloglog(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    static const size_t sizes[] = {0, 1, 3, 50, 400, 3000};
    enum { STEPS = 600, MAXARGS = 3002 };
    const char **av = malloc(MAXARGS * sizeof *av);
    size_t *al = malloc(MAXARGS * sizeof *al);
    char(*words)[16] = malloc(MAXARGS * sizeof *words);
    uint64_t r = 0x4c4c5948; /* "HYLL" */
    size_t compared = 0, dense = 0;
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    for (int step = 0; step < STEPS; step++) {
        int ac = 0, op = (int)(t_rnd(&r) % 20);
        const char *name = op < 11 ? "PFADD" : op < 16 ? "PFCOUNT" : op < 18 ? "PFMERGE" : "GET";
        av[ac++] = name;
        size_t n = op < 11   ? sizes[t_rnd(&r) % 6]
                   : op < 16 ? 1 + t_rnd(&r) % 3
                   : op < 18 ? 1 + t_rnd(&r) % 3
                             : 1;
        for (size_t i = 0; i < n; i++) {
            if (op < 11 && i > 0)
                snprintf(words[ac], sizeof words[ac], "e%llu",
                         (unsigned long long)(t_rnd(&r) % 200000));
            else
                snprintf(words[ac], sizeof words[ac], "hll%llu",
                         (unsigned long long)(t_rnd(&r) % 5));
            av[ac] = words[ac];
            ac++;
        }
        if (op < 11 && n == 0) { /* PFADD with a key and no elements */
            snprintf(words[ac], sizeof words[ac], "hll%llu", (unsigned long long)(t_rnd(&r) % 5));
            av[ac] = words[ac];
            ac++;
        }
        for (int i = 0; i < ac; i++)
            al[i] = strlen(av[i]);
        redisReply *a = redisCommandArgv(dr, ac, av, al), *b = redisCommandArgv(dk, ac, av, al);
        assert_true(a && b);
        if (!same(a, b)) {
            char ra[256], rb[256];
            fail_msg("HLL step %d: %s %s (%d args): redis-server %s, shmkvd %s", step, av[0], av[1],
                     ac, show(a, ra, sizeof ra), show(b, rb, sizeof rb));
        }
        if (op >= 18 && a->type == REDIS_REPLY_STRING && a->len > 4 && a->str[4] == 0)
            dense++;
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
        ev_step(&ev, "HyperLogLog", ac, av);
    }
    ev_stop(&ev, "HyperLogLog");
    /* The errors, and a sketch written as a plain string. */
    static const char *script[][4] = {
        {"SET", "hs", "not a sketch"},
        {"PFADD", "hs", "x"},
        {"PFCOUNT", "hs"},
        {"PFMERGE", "hll0", "hs"},
        {"RPUSH", "hl", "x"},
        {"PFADD", "hl", "x"},
        {"PFCOUNT", "hll1", "hl"},
        {"PFMERGE", "hl"},
        {"PFMERGE", "hnew"},
        {"GET", "hnew"},
        {"PFADD", "hnew2"},
        {"GET", "hnew2"},
        {"PFCOUNT", "nokey"},
        {"PFCOUNT", "nokey", "hll2"},
        {"PFADD"},
        {"PFCOUNT"},
        {"PFMERGE"},
    };
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        int ac = 0;
        while (ac < 4 && script[i][ac])
            ac++;
        redisReply *a = redisCommandArgv(dr, ac, script[i], NULL);
        redisReply *b = redisCommandArgv(dk, ac, script[i], NULL);
        if (!same(a, b)) {
            char ra[256], rb[256];
            fail_msg("HLL: %s %s: redis-server %s, shmkvd %s", script[i][0],
                     script[i][1] ? script[i][1] : "", show(a, ra, sizeof ra),
                     show(b, rb, sizeof rb));
        }
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
    }
    /* Sparse opcodes that cover too few registers, and a dense sketch of
     * the wrong length: PFCOUNT's errors agree. */
    static const char bad_sparse[] = "HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff";
    static const char bad_dense[] = "HYLL\0\0\0\0\0\0\0\0\0\0\0\x80";
    const char *bad[] = {bad_sparse, bad_dense};
    size_t badn[] = {sizeof bad_sparse - 1, sizeof bad_dense - 1};
    for (int i = 0; i < 2; i++) {
        freeReplyObject(redisCommand(dr, "SET hbad %b", bad[i], badn[i]));
        freeReplyObject(redisCommand(dk, "SET hbad %b", bad[i], badn[i]));
        redisReply *a = redisCommand(dr, "PFCOUNT hbad"), *b = redisCommand(dk, "PFCOUNT hbad");
        if (!same(a, b)) {
            char ra[256], rb[256];
            fail_msg("HLL: PFCOUNT of a bad sketch: redis-server %s, shmkvd %s",
                     show(a, ra, sizeof ra), show(b, rb, sizeof rb));
        }
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
    }
    assert_true(dense > 0); /* the dense layout was compared too */
    printf("test_diff: %zu HyperLogLog commands (%zu GETs of dense sketches) identical to "
           "redis-server's, sketch bytes included; %ld keyspace events identical\n",
           compared, dense, ev.events);
    assert_true(ev.events > 100);
    free(av);
    free(al);
    free(words);
    redisFree(dr);
    redisFree(dk);
}

/* ---- geo against redis-server ----
 *
 * Three indexes (points all over the globe, clusters a few kilometres
 * wide, and points near the poles and the date line, where cells wrap and
 * the search coarsens) take seeded random GEOADDs, then random searches of
 * every form — circles and boxes around coordinates and members, each
 * unit, sorted or in Redis's cell order, COUNT with and without ANY, the
 * WITH options, STORE/STOREDIST read back with their scores — plus
 * GEODIST, GEOPOS and GEOHASH. Every reply is compared exactly: the order
 * of an unsorted search and the 17-digit coordinates included. */

struct gargs {
    int n;
    const char *v[40];
    char w[40][48];
};

static void ga_add(struct gargs *g, const char *s)
{
    g->v[g->n++] = s;
}

static void ga_addf(struct gargs *g, const char *fmt, double x)
{
    snprintf(g->w[g->n], sizeof g->w[g->n], fmt, x);
    g->v[g->n] = g->w[g->n];
    g->n++;
}

/* A point of index k: uniform, clustered, or near the grid's edges. */
static void geo_point(uint64_t *r, int k, double *lon, double *lat)
{
    double u = (double)(t_rnd(r) % 1000001) / 1e6, v = (double)(t_rnd(r) % 1000001) / 1e6;
    static const double centres[3][2] = {{13.36, 38.11}, {-73.98, 40.75}, {151.2, -33.86}};
    if (k == 0) {
        *lon = -180 + 360 * u;
        *lat = -85 + 170 * v;
    } else if (k == 1) {
        const double *c = centres[t_rnd(r) % 3];
        *lon = c[0] + (u - 0.5) * 0.2;
        *lat = c[1] + (v - 0.5) * 0.2;
    } else {
        *lon = t_rnd(r) % 2 ? 179.9 - 2 * u : -179.9 + 2 * u;
        *lat = t_rnd(r) % 2 ? 84.9 - 6 * v : -84.9 + 6 * v;
    }
}

static struct evwatch *geo_ev; /* the GEO run's event comparison */

static void geo_compare(redisContext *dr, redisContext *dk, struct gargs *g, size_t *n)
{
    redisReply *a = redisCommandArgv(dr, g->n, g->v, NULL);
    redisReply *b = redisCommandArgv(dk, g->n, g->v, NULL);
    assert_true(a && b);
    if (!same(a, b)) {
        char cmd[512] = "", ra[4096], rb[4096];
        for (int i = 0; i < g->n; i++)
            put(cmd, sizeof cmd, " %s", g->v[i]);
        fail_msg("GEO%s: redis-server %s, shmkvd %s", cmd, show(a, ra, sizeof ra),
                 show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    (*n)++;
    ev_step(geo_ev, "GEO", g->n, g->v);
}

static void test_diff_geo(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    static const char *const keys3[] = {"geo0", "geo1", "geo2"};
    static const char *const units[] = {"m", "km", "ft", "mi", "KM"};
    static const double scale[] = {1, 1000, 0.3048, 1609.34, 1000};
    uint64_t r = 0x47454f; /* "GEO" */
    size_t compared = 0, hits = 0;
    struct gargs g;
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    geo_ev = &ev;
    for (int k = 0; k < 3; k++) {
        for (int batch = 0; batch < 40; batch++) {
            g.n = 0;
            ga_add(&g, "GEOADD");
            ga_add(&g, keys3[k]);
            if (batch % 7 == 3)
                ga_add(&g, t_rnd(&r) % 2 ? "NX" : "XX");
            if (batch % 5 == 2)
                ga_add(&g, "CH");
            for (int i = 0; i < 10 && g.n + 3 <= 40; i++) {
                double lon, lat;
                geo_point(&r, k, &lon, &lat);
                ga_addf(&g, "%.6f", lon);
                ga_addf(&g, "%.6f", lat);
                ga_addf(&g, "p%.0f", (double)(t_rnd(&r) % 350));
            }
            geo_compare(dr, dk, &g, &compared);
        }
    }
    for (int step = 0; step < 700; step++) {
        int k = (int)(t_rnd(&r) % 3), op = (int)(t_rnd(&r) % 20);
        const char *key = keys3[k];
        char m1[16], m2[16];
        snprintf(m1, sizeof m1, "p%u", (unsigned)(t_rnd(&r) % 360)); /* a few are absent */
        snprintf(m2, sizeof m2, "p%u", (unsigned)(t_rnd(&r) % 360));
        g.n = 0;
        if (op < 2) {
            ga_add(&g, "GEODIST");
            ga_add(&g, key);
            ga_add(&g, m1);
            ga_add(&g, m2);
            if (op)
                ga_add(&g, units[t_rnd(&r) % 5]);
            geo_compare(dr, dk, &g, &compared);
            continue;
        }
        if (op < 4) {
            ga_add(&g, op == 2 ? "GEOPOS" : "GEOHASH");
            ga_add(&g, key);
            ga_add(&g, m1);
            ga_add(&g, m2);
            geo_compare(dr, dk, &g, &compared);
            continue;
        }
        /* A search: its centre, shape and unit. */
        int u = (int)(t_rnd(&r) % 5);
        double lon, lat;
        geo_point(&r, k, &lon, &lat);
        /* Sizes from metres to half the globe, in the unit's terms. */
        double metres = k == 1 ? 200.0 * (double)(1 + t_rnd(&r) % 100)
                               : 1000.0 * (double)(1 + t_rnd(&r) % 3000);
        if (t_rnd(&r) % 10 == 0)
            metres = (double)(t_rnd(&r) % 20000) * 1000.0;
        double size = metres / scale[u];
        bool bymember = t_rnd(&r) % 3 == 0, box = t_rnd(&r) % 2;
        bool store = t_rnd(&r) % 6 == 0;
        int form = op < 12 ? 0 : op < 16 ? 1 : 2; /* GEOSEARCH, GEORADIUS, _RO */
        if (form == 0) {
            ga_add(&g, store ? "GEOSEARCHSTORE" : "GEOSEARCH");
            if (store)
                ga_add(&g, "geodst");
            ga_add(&g, key);
            if (bymember) {
                ga_add(&g, "FROMMEMBER");
                ga_add(&g, m1);
            } else {
                ga_add(&g, "FROMLONLAT");
                ga_addf(&g, "%.6f", lon);
                ga_addf(&g, "%.6f", lat);
            }
            if (box) {
                ga_add(&g, "BYBOX");
                ga_addf(&g, "%.3f", size);
                ga_addf(&g, "%.3f", size * (double)(1 + t_rnd(&r) % 4) / 2);
            } else {
                ga_add(&g, "BYRADIUS");
                ga_addf(&g, "%.3f", size);
            }
            ga_add(&g, units[u]);
        } else {
            bool ro = form == 2;
            ga_add(&g, bymember ? (ro ? "GEORADIUSBYMEMBER_RO" : "GEORADIUSBYMEMBER")
                                : (ro ? "GEORADIUS_RO" : "GEORADIUS"));
            ga_add(&g, key);
            if (bymember) {
                ga_add(&g, m1);
            } else {
                ga_addf(&g, "%.6f", lon);
                ga_addf(&g, "%.6f", lat);
            }
            ga_addf(&g, "%.3f", size);
            ga_add(&g, units[u]);
            store = store && !ro;
        }
        unsigned sort = (unsigned)(t_rnd(&r) % 3);
        if (sort)
            ga_add(&g, sort == 1 ? "ASC" : "DESC");
        if (t_rnd(&r) % 3 == 0) {
            ga_add(&g, "COUNT");
            ga_addf(&g, "%.0f", (double)(1 + t_rnd(&r) % 12));
            if (t_rnd(&r) % 2)
                ga_add(&g, "ANY");
        }
        if (store) {
            if (form == 0) {
                if (t_rnd(&r) % 2)
                    ga_add(&g, "STOREDIST");
            } else {
                ga_add(&g, t_rnd(&r) % 2 ? "STORE" : "STOREDIST");
                ga_add(&g, "geodst");
            }
        } else {
            if (t_rnd(&r) % 2)
                ga_add(&g, "WITHDIST");
            if (t_rnd(&r) % 3 == 0)
                ga_add(&g, "WITHHASH");
            if (t_rnd(&r) % 3 == 0)
                ga_add(&g, "WITHCOORD");
        }
        redisReply *peek = redisCommandArgv(dr, g.n, g.v, NULL);
        hits += peek && peek->type == REDIS_REPLY_ARRAY     ? peek->elements
                : peek && peek->type == REDIS_REPLY_INTEGER ? (size_t)peek->integer
                                                            : 0;
        freeReplyObject(peek);
        /* The same to shmkvd, so the keyspace events stay in step. */
        freeReplyObject(redisCommandArgv(dk, g.n, g.v, NULL));
        geo_compare(dr, dk, &g, &compared);
        if (store) {
            struct gargs z = {.n = 0};
            ga_add(&z, "ZRANGE");
            ga_add(&z, "geodst");
            ga_add(&z, "0");
            ga_add(&z, "-1");
            ga_add(&z, "WITHSCORES");
            geo_compare(dr, dk, &z, &compared);
        }
    }
    /* Errors, absent keys and members, other types, odd scores. */
    static const char *const script[][16] = {
        {"GEOADD", "geo0", "200", "10", "x"},
        {"GEOADD", "geo0", "10", "86", "x"},
        {"GEOADD", "geo0", "abc", "10", "x"},
        {"GEOADD", "geo0", "1e999", "10", "x"},
        {"GEOADD", "geo0", "NX", "XX", "1", "1", "x"},
        {"GEOADD", "geo0", "CH", "1", "2", "x", "1"},
        {"GEOADD", "geo0", "NX", "CH", "XX"},
        {"GEOADD", "geo0", "GT", "1", "2", "x"},
        {"GEOADD", "geo0", "180", "85.05112878", "edge1", "-180", "-85.05112878", "edge2"},
        {"GEOPOS", "geo0", "edge1", "edge2"},
        {"GEOHASH", "geo0", "edge1", "edge2"},
        {"ZADD", "geo0", "-1", "neg", "1.5", "frac", "1e300", "big", "-inf", "ninf", "inf", "pinf"},
        {"GEOPOS", "geo0", "neg", "frac", "big", "ninf", "pinf"},
        {"GEOHASH", "geo0", "neg", "frac", "big", "ninf", "pinf"},
        {"GEODIST", "geo0", "neg", "big", "km"},
        {"GEODIST", "geo0", "p1", "p2", "parsec"},
        {"GEODIST", "geo0", "p1", "p2", "km", "x"},
        {"GEODIST", "nokey", "a", "b"},
        {"GEOPOS", "nokey", "a", "b"},
        {"GEOHASH", "nokey", "a"},
        {"GEORADIUS", "geo0", "15", "37", "-1", "km"},
        {"GEORADIUS", "geo0", "15", "37", "abc", "km"},
        {"GEORADIUS", "geo0", "15", "37", "1", "parsecs"},
        {"GEORADIUS", "geo0", "200", "37", "1", "km"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "COUNT", "0"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "COUNT", "x"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "STORE"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "foo"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "STORE", "x", "WITHDIST"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "ANY"},
        {"GEORADIUS_RO", "geo0", "15", "37", "200", "km", "STORE", "x"},
        {"GEORADIUSBYMEMBER", "nokey", "m", "-5", "km"},
        {"GEORADIUSBYMEMBER", "nokey", "m", "5", "km", "STORE", "geodst"},
        {"EXISTS", "geodst"},
        {"GEORADIUSBYMEMBER", "geo0", "nom", "5", "km"},
        {"GEORADIUSBYMEMBER", "geo0", "edge1", "x", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "geo0", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km", "FROMLONLAT", "1",
         "2"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "BYBOX", "-1", "2", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "BYBOX", "1", "x", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "BYBOX", "x", "1", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "nokey", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STORE", "x"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STOREDIST"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "2", "COUNT", "1"},
        {"GEOSEARCH", "geo0", "BYRADIUS", "1", "km", "WITHDIST"},
        {"GEOSEARCHSTORE", "geodst", "geo0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km",
         "WITHHASH"},
        {"GEOSEARCHSTORE", "geodst", "nokey", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"},
        {"SET", "geostr", "x"},
        {"GEOADD", "geostr", "1", "1", "m"},
        {"GEOPOS", "geostr", "m"},
        {"GEOHASH", "geostr", "m"},
        {"GEODIST", "geostr", "a", "b"},
        {"GEORADIUS", "geostr", "1", "1", "1", "xx"},
        {"GEOSEARCH", "geostr", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m"},
        {"GEOSEARCHSTORE", "geodst", "geostr", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m"},
        {"GEOSEARCHSTORE", "geostr", "geo0", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
        {"EXISTS", "geostr"},
        {"GEOPOS"},
        {"GEOADD", "geo0", "1", "1"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "1"},
        {"COMMAND", "GETKEYS", "GEORADIUS", "g", "1", "2", "3", "km", "STORE", "a", "STOREDIST",
         "b", "STORE", "c"},
        {"COMMAND", "GETKEYS", "GEORADIUSBYMEMBER", "g", "m", "3", "km", "STOREDIST", "b"},
        {"COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "1", "2", "BYRADIUS", "1",
         "m"},
    };
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        g.n = 0;
        while (g.n < 16 && script[i][g.n]) {
            g.v[g.n] = script[i][g.n];
            g.n++;
        }
        geo_compare(dr, dk, &g, &compared);
    }
    assert_true(hits > 1000); /* the searches found things */
    freeReplyObject(redisCommand(dr, "DEL geo0 geo1 geo2 geodst geostr"));
    freeReplyObject(redisCommand(dk, "DEL geo0 geo1 geo2 geodst geostr"));
    ev_stop(&ev, "GEO");
    geo_ev = NULL;
    printf("test_diff: %zu GEO commands identical to redis-server's (%zu members found), "
           "%ld keyspace events identical\n",
           compared, hits, ev.events);
    assert_true(ev.events > 100);
    redisFree(dr);
    redisFree(dk);
}

/* ---- DUMP and RESTORE ---- */

/* key's value on c, comparable: a hash's pairs and a set's members sorted;
 * *type gets its TYPE. */
static redisReply *value_of(redisContext *c, const char *key, char *type, size_t cap)
{
    redisReply *t = redisCommand(c, "TYPE %s", key);
    assert_true(t && t->type == REDIS_REPLY_STATUS);
    snprintf(type, cap, "%s", t->str);
    freeReplyObject(t);
    redisReply *v;
    if (!strcmp(type, "string")) {
        v = redisCommand(c, "GET %s", key);
    } else if (!strcmp(type, "hash")) {
        v = redisCommand(c, "HGETALL %s", key);
        sort_groups(v, 2);
    } else if (!strcmp(type, "set")) {
        v = redisCommand(c, "SMEMBERS %s", key);
        sort_groups(v, 1);
    } else if (!strcmp(type, "zset")) {
        v = redisCommand(c, "ZRANGE %s 0 -1 WITHSCORES", key);
    } else if (!strcmp(type, "list")) {
        v = redisCommand(c, "LRANGE %s 0 -1", key);
    } else {
        v = redisCommand(c, "EXISTS %s", key);
    }
    assert_non_null(v);
    return v;
}

/* a's key ka and b's key kb hold the same value. */
static void same_value(redisContext *a, const char *ka, redisContext *b, const char *kb,
                       const char *what)
{
    char ta[16], tb[16];
    redisReply *va = value_of(a, ka, ta, sizeof ta), *vb = value_of(b, kb, tb, sizeof tb);
    if (strcmp(ta, tb) || !same(va, vb)) {
        char ra[512], rb[512];
        fail_msg("%s: %s %s is %s %s, %s %s", what, ka, tb, kb, show(vb, rb, sizeof rb), ta,
                 show(va, ra, sizeof ra));
    }
    freeReplyObject(va);
    freeReplyObject(vb);
}

/* The same command on both servers (av[i] of length al[i]); the replies
 * must be identical. */
static void dr_both(redisContext *dr, redisContext *dk, int ac, const char **av, const size_t *al,
                    const char *what, size_t *compared)
{
    redisReply *a = redisCommandArgv(dr, ac, av, al), *b = redisCommandArgv(dk, ac, av, al);
    assert_true(a && b);
    if (!same(a, b)) {
        char ra[256], rb[256];
        fail_msg("%s: %s %s: redis-server %s, shmkvd %s", what, av[0], ac > 1 ? av[1] : "",
                 show(a, ra, sizeof ra), show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    (*compared)++;
}

/* Element i of a value in one of four styles: integers (an intset, or
 * listpack integers), short strings, strings long enough for Redis's
 * hashtable and skiplist encodings, and binary ones. Distinct per i. */
static size_t dr_elem(char *buf, size_t cap, int style, size_t i)
{
    switch (style) {
    case 0:
        return (size_t)snprintf(buf, cap, "%lld",
                                i % 3 == 2 ? (long long)i + (1LL << 40) : (long long)i * 7 - 500);
    case 1:
        return (size_t)snprintf(buf, cap, "e%zu", i);
    case 2: {
        int n = snprintf(buf, cap, "%zu:", i);
        size_t len = i % 4 ? (size_t)n : 90;
        memset(buf + n, 'w', len - (size_t)n);
        return len;
    }
    default: {
        size_t len = 3 + i % 5;
        buf[0] = 0;
        buf[1] = (char)0xff;
        snprintf(buf + 2, cap - 2, "%05zu", i);
        return len + 3;
    }
    }
}

/* key on both servers: a fresh value of type t (0 string, 1 hash, 2 set,
 * 3 zset, 4 list) with n elements, written by commands of at most 50. */
static void dr_build(redisContext *dr, redisContext *dk, const char *key, int t, size_t n,
                     int style, size_t *compared, struct evwatch *ev)
{
    enum { BATCH = 50 };
    static const char *const cmds[] = {"SET", "HSET", "SADD", "ZADD", "RPUSH"};
    static char store[2 * BATCH][128];
    const char *av[2 + 2 * BATCH];
    size_t al[2 + 2 * BATCH];
    av[0] = "DEL";
    av[1] = key;
    al[0] = 3;
    al[1] = strlen(key);
    dr_both(dr, dk, 2, av, al, "DUMP build", compared);
    if (t == 0) { /* one string: an integer, short, compressible, or binary */
        static char big[600];
        size_t len;
        if (style == 2) {
            for (size_t j = 0; j < sizeof big; j++)
                big[j] = (char)('a' + j / 50);
            len = sizeof big;
        } else {
            len = dr_elem(big, sizeof big, style, n);
        }
        av[0] = "SET";
        av[2] = big;
        al[0] = 3;
        al[2] = len;
        dr_both(dr, dk, 3, av, al, "DUMP build", compared);
        ev_step(ev, "DUMP", 2, av);
        return;
    }
    for (size_t i = 0; i < n;) {
        int ac = 2;
        av[0] = cmds[t];
        al[0] = strlen(cmds[t]);
        for (size_t b = 0; b < BATCH && i < n; b++, i++) {
            if (t == 3) { /* a score first */
                static const char *const sc[] = {"0", "-1.5", "1e300", "-inf", "+inf", "7"};
                int m = i % 7 == 0 ? snprintf(store[2 * b], 128, "%s", sc[i / 7 % 6])
                                   : snprintf(store[2 * b], 128, "%.17g", (double)i * 0.25 - 3);
                av[ac] = store[2 * b];
                al[ac++] = (size_t)m;
            }
            al[ac] = dr_elem(store[2 * b + 1], 128, style, i);
            av[ac] = store[2 * b + 1];
            ac++;
            if (t == 1) { /* a value after each field */
                av[ac] = store[2 * b + 1];
                al[ac] = al[ac - 1] / (1 + i % 3);
                ac++;
            }
        }
        dr_both(dr, dk, ac, av, al, "DUMP build", compared);
        ev_step(ev, "DUMP", 2, av);
    }
}

/* RESTORE key ttl payload REPLACE on both servers, replies compared. */
static void dr_restore(redisContext *dr, redisContext *dk, const char *key, const char *ttl,
                       const void *p, size_t n, size_t *compared, struct evwatch *ev)
{
    const char *av[] = {"RESTORE", key, ttl, p, "REPLACE"};
    size_t al[] = {7, strlen(key), strlen(ttl), n, 7};
    dr_both(dr, dk, 5, av, al, "RESTORE", compared);
    ev_step(ev, "DUMP", 2, av);
}

/* DUMP key on c: a bulk string, or nil. */
static redisReply *dr_dump(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "DUMP %s", key);
    assert_true(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    return r;
}

/* The payloads of the tests' writer (t_rdb.h): each restored into both. */
static size_t dr_crafted(redisContext *dr, redisContext *dk, size_t *compared, struct evwatch *ev)
{
    struct t_buf b[24] = {{0}};
    size_t nb = 0, good;
    static const int64_t ints[] = {
        0,      12,      13,       -1,         127,           -128,      300,
        -32768, 8388607, -8388608, 2147483647, -2147483648LL, 1LL << 40, INT64_MIN};
    const size_t ni = sizeof ints / sizeof ints[0];
    char long_str[300];
    memset(long_str, 'z', sizeof long_str);
    struct t_zl z;
    struct t_lp l;
    /* a ziplist list (10), and two ziplist nodes in a quicklist (14) */
    tz_begin(&z);
    for (size_t i = 0; i < ni; i++)
        tz_int(&z, ints[i]);
    tz_str(&z, long_str, sizeof long_str);
    tz_str(&z, "after the long one", 18);
    tz_end(&z);
    tb_byte(&b[nb], 10);
    tb_str(&b[nb], z.b.p, z.b.n);
    tb_footer(&b[nb++], 9);
    tb_byte(&b[nb], 14);
    tb_len(&b[nb], 2);
    tb_str(&b[nb], z.b.p, z.b.n);
    tb_str(&b[nb], z.b.p, z.b.n);
    tb_footer(&b[nb++], 9);
    free(z.b.p);
    /* a ziplist hash (13) and sorted set (12) */
    for (int kind = 13; kind >= 12; kind--) {
        tz_begin(&z);
        for (size_t i = 0; i < ni; i++) {
            char f[16];
            tz_str(&z, f, (size_t)snprintf(f, sizeof f, "f%zu", i));
            if (kind == 13)
                tz_int(&z, ints[i]);
            else if (i % 2) /* a sorted set's entries come in score order */
                tz_str(&z, f, (size_t)snprintf(f, sizeof f, "%.1f", (double)i * 10 - 49.5));
            else
                tz_int(&z, (int64_t)i * 10 - 50);
        }
        tz_end(&z);
        tb_byte(&b[nb], (unsigned)kind);
        tb_str(&b[nb], z.b.p, z.b.n);
        tb_footer(&b[nb++], 9);
        free(z.b.p);
    }
    /* a listpack hash (16) and sorted set (17), and a quicklist of a plain
     * node and a packed one (18) */
    for (int kind = 16; kind <= 18; kind++) {
        tl_begin(&l);
        for (size_t i = 0; i < ni; i++) {
            char f[16];
            tl_str(&l, f, (size_t)snprintf(f, sizeof f, "m%zu", i));
            if (kind != 17)
                tl_int(&l, ints[i]);
            else if (i % 2)
                tl_str(&l, f, (size_t)snprintf(f, sizeof f, "%.1f", (double)i * 1000 - 4999.5));
            else
                tl_int(&l, (int64_t)i * 1000 - 5000);
        }
        tl_end(&l);
        tb_byte(&b[nb], (unsigned)kind);
        if (kind == 18) {
            tb_len(&b[nb], 2);
            tb_len(&b[nb], 1);
            tb_str(&b[nb], long_str, 100);
            tb_len(&b[nb], 2);
        }
        tb_str(&b[nb], l.b.p, l.b.n);
        tb_footer(&b[nb++], 10);
        free(l.b.p);
    }
    /* intsets (11) of each width */
    static const int64_t sorted[] = {-70000, -3, 0, 5, 40000};
    for (int w = 2; w <= 8; w *= 2) {
        struct t_buf is = {0};
        ti_build(&is, w == 2 ? sorted + 1 : sorted, w == 2 ? 3 : 5, w);
        tb_byte(&b[nb], 11);
        tb_str(&b[nb], is.p, is.n);
        tb_footer(&b[nb++], 8);
        free(is.p);
    }
    /* text scores (3), a linked list (1), integer and LZF strings (0) */
    tb_byte(&b[nb], 3);
    tb_len(&b[nb], 3);
    tb_str(&b[nb], "a", 1);
    tb_str(&b[nb], "1.25", 4);
    tb_str(&b[nb], "b", 1);
    tb_byte(&b[nb], 254);
    tb_str(&b[nb], "c", 1);
    tb_byte(&b[nb], 255);
    tb_footer(&b[nb++], 6);
    tb_byte(&b[nb], 1);
    tb_len(&b[nb], 3);
    tb_intstr(&b[nb], -200);
    tb_str(&b[nb], "", 0);
    tb_intstr(&b[nb], 70000);
    tb_footer(&b[nb++], 7);
    tb_byte(&b[nb], 0);
    tb_put(&b[nb],
           "\xc3\x06\x0c\x01"
           "ab"
           "\xe0\x01\x01",
           9);
    tb_footer(&b[nb++], 10);
    good = nb;
    /* refused by both: a newer version, a wrong CRC, too short, an empty
     * set, members twice, a NaN score, an unknown quicklist node. (A hash
     * field twice is refused too, but Redis takes a small hash's without
     * sanitize-dump-payload, and makes a corrupt value of it.) */
    tb_byte(&b[nb], 2);
    tb_len(&b[nb], 1);
    tb_str(&b[nb], "a", 1);
    tb_footer(&b[nb++], 11);
    tb_byte(&b[nb], 2);
    tb_len(&b[nb], 1);
    tb_str(&b[nb], "a", 1);
    tb_footer(&b[nb], 10);
    b[nb].p[b[nb].n - 1] ^= 1;
    nb++;
    tb_put(&b[nb++], "\x00\x01", 2);
    static const struct {
        const char *body;
        size_t n;
    } bad[] = {
        {"\x02\x00", 2},
        {"\x02\x02\x01"
         "a\x01"
         "a",
         6},
        {"\x05\x02\x01"
         "m"
         "\0\0\0\0\0\0\0\0"
         "\x01"
         "m"
         "\0\0\0\0\0\0\0\0",
         22},
        {"\x05\x01\x01"
         "m"
         "\0\0\0\0\0\0\xf8\x7f",
         12},
        {"\x03\x01\x01"
         "m\xfd",
         5},
        {"\x12\x01\x03\x01"
         "x",
         5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tb_put(&b[nb], bad[i].body, bad[i].n);
        tb_footer(&b[nb++], 10);
    }
    assert_true(nb <= sizeof b / sizeof b[0]);
    for (size_t i = 0; i < nb; i++) {
        char key[32];
        snprintf(key, sizeof key, "dcraft%zu", i);
        dr_restore(dr, dk, key, "0", b[i].p, b[i].n, compared, ev);
        if (i < good)
            same_value(dr, key, dk, key, "a crafted payload");
        free(b[i].p);
    }
    return good;
}
/* DUMP and RESTORE against redis-server: values of every type, size and
 * style (so that Redis writes each of its encodings: listpacks, intsets,
 * quicklists, hashtables, skiplists, integer and LZF strings) go from
 * each server into both; crafted payloads in older encodings are restored
 * into both; then RESTORE's options and errors, replies compared byte for
 * byte and keyspace events in order throughout. */
static void test_diff_dump_restore(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    static const size_t sizes[] = {1, 3, 60, 130, 600};
    uint64_t r = 0x44554d50; /* "DUMP" */
    size_t compared = 0, moved = 0;
    for (int round = 0; round < 150; round++) {
        int t = round % 5, style = (int)(t_rnd(&r) % 4);
        size_t n = sizes[t_rnd(&r) % 5];
        dr_build(dr, dk, "dsrc", t, n, style, &compared, &ev);
        redisReply *fr = dr_dump(dr, "dsrc"), *fk = dr_dump(dk, "dsrc");
        assert_true(fr->type == REDIS_REPLY_STRING && fk->type == REDIS_REPLY_STRING);
        const char *ttl = round % 7 == 3 ? "100000" : "0";
        /* Redis's payload into both, shmkvd's into both */
        dr_restore(dr, dk, "dfromr", ttl, fr->str, fr->len, &compared, &ev);
        same_value(dr, "dfromr", dk, "dfromr", "redis-server's payload");
        same_value(dr, "dsrc", dr, "dfromr", "redis-server's payload");
        dr_restore(dr, dk, "dfromk", ttl, fk->str, fk->len, &compared, &ev);
        same_value(dr, "dfromk", dr, "dsrc", "shmkvd's payload");
        same_value(dk, "dfromk", dk, "dsrc", "shmkvd's payload");
        moved += 4;
        if (*ttl != '0') {
            redisReply *a = redisCommand(dr, "TTL dfromk"), *b = redisCommand(dk, "TTL dfromk");
            assert_true(a->integer >= 99 && a->integer <= 100);
            assert_true(b->integer >= 99 && b->integer <= 100);
            freeReplyObject(a);
            freeReplyObject(b);
        }
        freeReplyObject(fr);
        freeReplyObject(fk);
    }
    size_t crafted = dr_crafted(dr, dk, &compared, &ev);

    /* RESTORE's options and errors, in Redis's order of checks; P stands
     * for a valid payload. */
    redisReply *pl = dr_dump(dr, "dsrc");
    static const char *script[][10] = {
        {"SET", "dex", "1"},
        {"DUMP", "dnosuch"},
        {"RESTORE", "dx", "0", "garbage"},
        {"RESTORE", "dx", "-1", "P"},
        {"RESTORE", "dex", "0", "P"},
        {"RESTORE", "dex", "-1", "garbage"},
        {"RESTORE", "dx", "abc", "P"},
        {"RESTORE", "dx", "0", "P", "IDLETIME", "10", "FREQ", "5"},
        {"RESTORE", "dx", "0", "P", "FREQ", "5", "IDLETIME", "10"},
        {"RESTORE", "dx", "0", "P", "IDLETIME", "-1"},
        {"RESTORE", "dx", "0", "P", "IDLETIME", "x"},
        {"RESTORE", "dx", "0", "P", "FREQ", "256"},
        {"RESTORE", "dx", "0", "P", "FREQ", "-1"},
        {"RESTORE", "dx", "0", "P", "IDLETIME"},
        {"RESTORE", "dx", "0", "P", "BOGUS"},
        {"RESTORE", "dex", "0", "P", "BOGUS"},
        {"RESTORE", "dx", "1", "P", "ABSTTL"},
        {"EXISTS", "dx"},
        {"RESTORE", "dex", "1", "P", "ABSTTL", "REPLACE"},
        {"EXISTS", "dex"},
        {"RESTORE", "dx", "9223372036854775807", "P"},
        {"EXISTS", "dx"},
        {"RESTORE", "dx", "0", "P", "REPLACE", "ABSTTL", "IDLETIME", "0", "REPLACE"},
        {"OBJECT", "IDLETIME", "dx"},
        {"RESTORE", "dx", "0", "P", "REPLACE", "FREQ", "100"},
        {"RESTORE", "dy", "99999999999999", "P", "ABSTTL"},
        {"PEXPIRETIME", "dy"},
        {"RESTORE", "dx", "0", ""},
        {"RESTORE", "dz", "0", ""},
        {"RESTORE", "dz"},
        {"DUMP"},
        {"DUMP", "dx", "dy"},
        {"MULTI"},
        {"RESTORE", "dz", "0", "P"},
        {"DUMP", "dz"},
        {"RESTORE", "dz", "0", "P"},
        {"EXEC"},
        {"DEL", "dz", "dx", "dy", "dex", "dsrc", "dfromr", "dfromk"},
    };
    bool in_multi = false;
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        const char *av[10];
        size_t al[10];
        int ac = 0;
        for (; ac < 10 && script[i][ac]; ac++) {
            bool p = !strcmp(script[i][ac], "P");
            av[ac] = p ? pl->str : script[i][ac];
            al[ac] = p ? pl->len : strlen(script[i][ac]);
        }
        if (!strcmp(av[0], "DUMP") && ac == 2 && !strcmp(av[1], "dz")) {
            /* inside MULTI: QUEUED on both; the payloads differ */
            dr_both(dr, dk, ac, av, al, "RESTORE script", &compared);
            continue;
        }
        if (!strcmp(av[0], "EXEC")) { /* [OK, payload, BUSYKEY]: all but the payload */
            redisReply *a = redisCommand(dr, "EXEC"), *b = redisCommand(dk, "EXEC");
            assert_true(a && b && a->elements == 3 && b->elements == 3);
            assert_true(same(a->element[0], b->element[0]) && same(a->element[2], b->element[2]));
            assert_string_equal(b->element[2]->str, "BUSYKEY Target key name already exists.");
            freeReplyObject(a);
            freeReplyObject(b);
            in_multi = false;
            continue;
        }
        dr_both(dr, dk, ac, av, al, "RESTORE script", &compared);
        in_multi |= !strcmp(av[0], "MULTI");
        if (!in_multi) /* a check's PUBLISH would be queued */
            ev_step(&ev, "DUMP", ac, av);
    }
    freeReplyObject(pl);
    for (int i = 0; i < 2; i++) /* dcraft* */
        freeReplyObject(redisCommand(i ? dk : dr, "FLUSHDB"));
    ev_stop(&ev, "DUMP");
    printf("test_diff: DUMP/RESTORE: %zu values moved between the servers, %zu crafted "
           "payloads, %zu replies identical, %ld keyspace events identical\n",
           moved, crafted, compared, ev.events);
    assert_true(ev.events > 300);
    redisFree(dr);
    redisFree(dk);
}

/* MIGRATE from each server into a third (a redis-server), redis-server's
 * keys into database 1, shmkvd's into 2, each step's replies compared and
 * then the two databases; and from redis-server into shmkvd. */
static void test_diff_migrate(void **state)
{
    (void)state;
    struct server T;
    h_start_redis(&T, "target");
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    redisContext *t1 = h_connect_port(T.port), *t2 = h_connect_port(T.port);
    assert_true(dr && dk && t1 && t2);
    freeReplyObject(redisCommand(t1, "SELECT 1"));
    freeReplyObject(redisCommand(t2, "SELECT 2"));
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    size_t compared = 0;
    static const char *const setup[] = {
        "SET ms v PX 100000", "HSET mh f 1 g 2", "SADD mset a b 1",
        "RPUSH ml x y z",     "SET ex 1",        "SET k1 v1",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        redisReply *a = redisCommand(dr, setup[i]), *b = redisCommand(dk, setup[i]);
        assert_true(a && b && same(a, b));
        freeReplyObject(a);
        freeReplyObject(b);
    }
    for (int i = 0; i < 200; i++) { /* a sorted set too big for one listpack */
        freeReplyObject(redisCommand(dr, "ZADD mz %d m%d", i, i));
        freeReplyObject(redisCommand(dk, "ZADD mz %d m%d", i, i));
    }
    char tport[16], closed[16];
    snprintf(tport, sizeof tport, "%d", T.port);
    snprintf(closed, sizeof closed, "%d", h_free_port());
    /* DB is the target database: 1 for redis-server's, 2 for shmkvd's. */
    static const char *const script[][12] = {
        {"MIGRATE", "127.0.0.1", "PORT", "ms", "DB", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "", "DB", "5000", "KEYS", "mh", "mset", "nosuch"},
        {"MIGRATE", "127.0.0.1", "PORT", "nosuch", "DB", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "", "DB", "5000", "KEYS"},
        {"MIGRATE", "127.0.0.1", "PORT", "mz", "DB", "5000", "COPY"},
        {"MIGRATE", "127.0.0.1", "PORT", "mz", "DB", "5000", "COPY"},
        {"MIGRATE", "127.0.0.1", "PORT", "mz", "DB", "0", "COPY", "REPLACE"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH", "pw"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH2", "user", "pw"},
        {"MIGRATE", "127.0.0.1", "CLOSED", "ml", "DB", "200"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "x", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "x"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "KEYS", "a"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "BOGUS"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH2", "u"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "99", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "", "DB", "5000", "REPLACE", "KEYS", "ml", "ex"},
        {"EXISTS", "ms", "mh", "mset", "mz", "ml", "ex", "k1"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "KEYS", "a"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "COPY"},
        {"MIGRATE"},
    };
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        redisReply *r[2];
        for (int sv = 0; sv < 2; sv++) {
            const char *av[12];
            int ac = 0;
            for (; ac < 12 && script[i][ac]; ac++) {
                const char *w = script[i][ac];
                av[ac] = !strcmp(w, "PORT")     ? tport
                         : !strcmp(w, "CLOSED") ? closed
                         : !strcmp(w, "DB")     ? (sv ? "2" : "1")
                                                : w;
            }
            r[sv] = redisCommandArgv(sv ? dk : dr, ac, av, NULL);
            assert_non_null(r[sv]);
            if (sv)
                ev_step(&ev, "MIGRATE", ac, av);
        }
        if (!same(r[0], r[1])) {
            char ra[512], rb[512];
            fail_msg("MIGRATE step %zu: redis-server %s, shmkvd %s", i, show(r[0], ra, sizeof ra),
                     show(r[1], rb, sizeof rb));
        }
        freeReplyObject(r[0]);
        freeReplyObject(r[1]);
        compared++;
    }
    /* What each moved: the same values, the TTL kept. */
    static const char *const moved[] = {"ms", "mh", "mset", "mz", "ml", "ex"};
    for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
        same_value(t1, moved[i], t2, moved[i], "MIGRATE's target");
    redisReply *a = redisCommand(t1, "PTTL ms"), *b = redisCommand(t2, "PTTL ms");
    assert_true(a->integer > 90000 && b->integer > 90000);
    freeReplyObject(a);
    freeReplyObject(b);
    a = redisCommand(t1, "DBSIZE");
    b = redisCommand(t2, "DBSIZE");
    assert_int_equal(a->integer, 6);
    assert_int_equal(b->integer, 6);
    freeReplyObject(a);
    freeReplyObject(b);
    ev_stop(&ev, "MIGRATE"); /* what follows differs by design */
    /* redis-server's MIGRATE into shmkvd: RESTOREs that shmkvd takes */
    freeReplyObject(redisCommand(dr, "RPUSH back p q"));
    char kport[16];
    snprintf(kport, sizeof kport, "%d", K.port);
    const char *mv[] = {"MIGRATE", "127.0.0.1", kport,  "",     "3",
                        "5000",    "COPY",      "KEYS", "back", "k1"};
    a = redisCommandArgv(dr, 10, mv, NULL);
    assert_true(a && a->type == REDIS_REPLY_STATUS && !strcmp(a->str, "OK"));
    freeReplyObject(a);
    redisContext *k3 = h_connect_port(K.port);
    freeReplyObject(redisCommand(k3, "SELECT 3"));
    same_value(dr, "back", k3, "back", "redis-server's MIGRATE into shmkvd");
    same_value(dr, "k1", k3, "k1", "redis-server's MIGRATE into shmkvd");
    freeReplyObject(redisCommand(k3, "FLUSHDB"));
    redisFree(k3);
    freeReplyObject(redisCommand(dr, "FLUSHDB"));
    freeReplyObject(redisCommand(dk, "FLUSHDB"));
    printf("test_diff: MIGRATE: %zu steps identical to redis-server's, the values moved equal, "
           "%ld keyspace events identical\n",
           compared, ev.events);
    redisFree(dr);
    redisFree(dk);
    redisFree(t1);
    redisFree(t2);
    h_destroy(&T);
}

/* Collections emptied member by member, as queues and caches empty them:
 * each round builds a hash, set or sorted set of 1,200-3,000 members on
 * both servers, gives some an expiry, removes most members (HDEL, SREM,
 * ZREM in commands of 50, ZREMRANGEBYSCORE, ZPOPMIN, SPOP), then reads it
 * back whole, by HSCAN/SSCAN/ZSCAN to the end, by ranges, ranks and
 * lengths. shmkvd rewrites such a collection under a new version after the
 * walk that met the deletes (storage/db_tidy.c), so the reads before and
 * after that rewrite must agree with redis-server's; INFO storage says how
 * many were rewritten. Replies whose order Redis leaves unspecified are
 * sorted first. */
static void churn_cmp(redisContext *dr, redisContext *dk, int ac, const char **av, size_t stride,
                      size_t *compared)
{
    redisReply *a = redisCommandArgv(dr, ac, av, NULL), *b = redisCommandArgv(dk, ac, av, NULL);
    assert_true(a && b);
    if (stride) {
        sort_groups(a, stride);
        sort_groups(b, stride);
    }
    if (!same(a, b)) {
        char ra[512], rb[512];
        fail_msg("churn: %s %s %s: redis-server %s, shmkvd %s", av[0], ac > 1 ? av[1] : "",
                 ac > 2 ? av[2] : "", show(a, ra, sizeof ra), show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    (*compared)++;
}

/* Every item a full SCAN-style iteration of key gives (cmd HSCAN, SSCAN or
 * ZSCAN), as one array reply built by hand, sorted by groups of stride. */
static redisReply *churn_scan_all(redisContext *c, const char *cmd, const char *key, size_t stride)
{
    redisReply *all = calloc(1, sizeof *all);
    all->type = REDIS_REPLY_ARRAY;
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(c, "%s %s %s COUNT 7", cmd, key, cursor);
        assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *items = r->element[1];
        all->element =
            realloc(all->element, (all->elements + items->elements) * sizeof *all->element);
        for (size_t i = 0; i < items->elements; i++) {
            all->element[all->elements++] = items->element[i];
            items->element[i] = NULL;
        }
        items->elements = 0;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    /* A SCAN may give an element twice; a collection that does not change
     * meanwhile gives each once on both servers. */
    sort_groups(all, stride);
    return all;
}

static void test_diff_churn(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    redisReply *info = redisCommand(dk, "INFO storage");
    const char *p = strstr(info->str, "collections_rewritten:");
    assert_non_null(p);
    long long before = atoll(p + strlen("collections_rewritten:"));
    freeReplyObject(info);
    uint64_t r = 0x4348524e; /* "CHRN" */
    size_t compared = 0;
    enum { ROUNDS = 12, BATCH = 50 };
    static char words[2 * BATCH + 2][48];
    const char *av[2 * BATCH + 4];
    for (int round = 0; round < ROUNDS; round++) {
        int t = round % 3; /* 0 hash, 1 set, 2 zset */
        const char *key = t == 0 ? "churn:h" : t == 1 ? "churn:s" : "churn:z";
        size_t n = 1200 + t_rnd(&r) % 1801;
        av[0] = "DEL";
        av[1] = key;
        churn_cmp(dr, dk, 2, av, 0, &compared);
        for (size_t i = 0; i < n;) {
            int ac = 2;
            av[0] = t == 0 ? "HSET" : t == 1 ? "SADD" : "ZADD";
            for (int b = 0; b < BATCH && i < n; b++, i++) {
                if (t == 2) {
                    snprintf(words[ac], sizeof words[ac], "%d", (int)(t_rnd(&r) % 1000));
                    av[ac] = words[ac];
                    ac++;
                }
                snprintf(words[ac], sizeof words[ac], "m%zu", i);
                av[ac] = words[ac];
                ac++;
                if (t == 0) {
                    snprintf(words[ac], sizeof words[ac], "v%zu", i * 7);
                    av[ac] = words[ac];
                    ac++;
                }
            }
            churn_cmp(dr, dk, ac, av, 0, &compared);
        }
        if (round % 2) {
            av[0] = "EXPIRE";
            av[2] = "100000";
            churn_cmp(dr, dk, 3, av, 0, &compared);
        }
        /* Remove all but about 1 in keep, in random order of batches. */
        size_t keep = 20 + t_rnd(&r) % 200;
        for (size_t i = 0; i < n;) {
            int ac = 2;
            av[0] = t == 0 ? "HDEL" : t == 1 ? "SREM" : "ZREM";
            for (int b = 0; b < BATCH && i < n; i++) {
                if (t_rnd(&r) % keep == 0)
                    continue;
                snprintf(words[ac], sizeof words[ac], "m%zu", i);
                av[ac] = words[ac];
                ac++, b++;
            }
            if (ac > 2)
                churn_cmp(dr, dk, ac, av, 0, &compared);
        }
        if (t == 2 && round % 2 == 0) {
            const char *ra[] = {"ZREMRANGEBYSCORE", key, "900", "+inf"};
            churn_cmp(dr, dk, 4, ra, 0, &compared);
            const char *pa[] = {"ZPOPMIN", key, "2"};
            churn_cmp(dr, dk, 3, pa, 0, &compared);
        }
        /* The reads, twice: the first walk meets the deletes. */
        for (int pass = 0; pass < 2; pass++) {
            if (t == 0) {
                const char *a1[] = {"HGETALL", key};
                churn_cmp(dr, dk, 2, a1, 2, &compared);
                const char *a2[] = {"HLEN", key};
                churn_cmp(dr, dk, 2, a2, 0, &compared);
                const char *a3[] = {"HMGET", key, "m0", "m1", "m2", "m999", "m1999"};
                churn_cmp(dr, dk, 7, a3, 0, &compared);
            } else if (t == 1) {
                const char *a1[] = {"SMEMBERS", key};
                churn_cmp(dr, dk, 2, a1, 1, &compared);
                const char *a2[] = {"SCARD", key};
                churn_cmp(dr, dk, 2, a2, 0, &compared);
                const char *a3[] = {"SMISMEMBER", key, "m0", "m1", "m500", "m2999"};
                churn_cmp(dr, dk, 6, a3, 0, &compared);
            } else {
                const char *a1[] = {"ZRANGE", key, "0", "-1", "WITHSCORES"};
                churn_cmp(dr, dk, 5, a1, 0, &compared);
                const char *a2[] = {"ZRANGEBYSCORE", key,     "(100", "800",
                                    "WITHSCORES",    "LIMIT", "1",    "5"};
                churn_cmp(dr, dk, 8, a2, 0, &compared);
                const char *a3[] = {"ZREVRANGE", key, "0", "3"};
                churn_cmp(dr, dk, 4, a3, 0, &compared);
                const char *a4[] = {"ZCOUNT", key, "-inf", "500"};
                churn_cmp(dr, dk, 4, a4, 0, &compared);
                const char *a5[] = {"ZCARD", key};
                churn_cmp(dr, dk, 2, a5, 0, &compared);
            }
            const char *scan = t == 0 ? "HSCAN" : t == 1 ? "SSCAN" : "ZSCAN";
            size_t stride = t == 1 ? 1 : 2;
            redisReply *a = churn_scan_all(dr, scan, key, stride);
            redisReply *b = churn_scan_all(dk, scan, key, stride);
            if (!same(a, b)) {
                char ra[512], rb[512];
                fail_msg("churn: %s %s to the end: redis-server %s, shmkvd %s", scan, key,
                         show(a, ra, sizeof ra), show(b, rb, sizeof rb));
            }
            freeReplyObject(a);
            freeReplyObject(b);
            compared++;
            const char *tl[] = {"TTL", key};
            redisReply *x = redisCommandArgv(dr, 2, tl, NULL),
                       *y = redisCommandArgv(dk, 2, tl, NULL);
            assert_true(x && y && x->type == REDIS_REPLY_INTEGER && y->type == REDIS_REPLY_INTEGER);
            assert_true((x->integer < 0) == (y->integer < 0) &&
                        llabs(x->integer - y->integer) <= 1);
            freeReplyObject(x);
            freeReplyObject(y);
        }
    }
    info = redisCommand(dk, "INFO storage");
    p = strstr(info->str, "collections_rewritten:");
    long long rewritten = atoll(p + strlen("collections_rewritten:")) - before;
    freeReplyObject(info);
    assert_true(rewritten > 0);
    printf("test_diff: %zu replies over %d collections emptied member by member identical to "
           "redis-server's (%lld rewritten by shmkvd)\n",
           compared, ROUNDS, rewritten);
    redisFree(dr);
    redisFree(dk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_hyperloglog), cmocka_unit_test(test_diff_lcs),
        cmocka_unit_test(test_diff_geo),         cmocka_unit_test(test_diff_dump_restore),
        cmocka_unit_test(test_diff_migrate),     cmocka_unit_test(test_diff_churn),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
