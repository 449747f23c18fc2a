/*
 * cmd_geo — GEOADD, GEOPOS, GEODIST, GEOHASH and the searches (GEOSEARCH,
 * GEOSEARCHSTORE, GEORADIUS[BYMEMBER][_RO]) over sorted sets whose scores
 * are geohashes (geo.h). One search routine serves every search command:
 * they differ only in where the centre and the shape come from and in
 * which options they take, as Redis parses them all in one loop.
 */
#include "cmd.h"
#include "geo.h"
#include "kv_mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A unit's size in metres, or -1 after replying the error. */
static double unit_arg(struct conn *c, size_t i)
{
    static const struct {
        const char *name;
        double metres;
    } units[] = {{"m", 1}, {"km", 1000}, {"ft", 0.3048}, {"mi", 1609.34}};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (cmd_arg_is(c, i, units[u].name))
            return units[u].metres;
    resp_error(OUT(c), "ERR unsupported unit provided. please use M, KM, FT, MI");
    return -1;
}

/* Arguments i, i+1 as a longitude and latitude in the supported range. */
static bool lonlat_arg(struct conn *c, size_t i, double *lon, double *lat)
{
    if (!cmd_arg_double(c, i, lon) || !cmd_arg_double(c, i + 1, lat))
        return false;
    if (!geo_valid(*lon, *lat)) {
        resp_errorf(OUT(c), "ERR invalid longitude,latitude pair %f,%f", *lon, *lat);
        return false;
    }
    return true;
}

/* Arguments i, i+1: a radius and its unit. */
static bool radius_arg(struct conn *c, size_t i, struct geo_shape *s)
{
    if (!cmd_arg_double_or(c, i, &s->radius, "ERR need numeric radius"))
        return false;
    if (s->radius < 0) {
        resp_error(OUT(c), "ERR radius cannot be negative");
        return false;
    }
    s->box = false;
    return (s->conv = unit_arg(c, i + 1)) >= 0;
}

/* Arguments i, i+1, i+2: a box's width, height and unit. */
static bool box_arg(struct conn *c, size_t i, struct geo_shape *s)
{
    if (!cmd_arg_double_or(c, i, &s->width, "ERR need numeric width") ||
        !cmd_arg_double_or(c, i + 1, &s->height, "ERR need numeric height"))
        return false;
    if (s->width < 0 || s->height < 0) {
        resp_error(OUT(c), "ERR height or width cannot be negative");
        return false;
    }
    s->box = true;
    return (s->conv = unit_arg(c, i + 2)) >= 0;
}

/* A coordinate as Redis replies it: a human long double, a RESP3 double. */
static void reply_coord(struct conn *c, double v)
{
    char buf[KV_LDSTR_MAX];
    size_t n = kv_ld2str(buf, sizeof buf, v);
    if (c->proto < 3) {
        resp_bulk(OUT(c), buf, n);
        return;
    }
    resp_buf_append(OUT(c), ",", 1);
    resp_buf_append(OUT(c), buf, n);
    resp_buf_append(OUT(c), "\r\n", 2);
}

/* A distance: four decimals, a bulk string in both protocols. */
static void reply_distance(struct conn *c, double d)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%.4f", d);
    resp_bulk(OUT(c), buf, (size_t)n);
}

/* The type check every command makes first: the key's point of view. */
static bool zset_or_none(struct conn *c, size_t i, bool *exists)
{
    int rc = cmd_key_type(c, i, ENC_TYPE_ZSET, exists);
    if (rc)
        cmd_reply_err(c, rc);
    return rc == 0;
}

/* GEOADD key [NX|XX] [CH] longitude latitude member [...] */
void cmd_geoadd(struct conn *c)
{
    int flags = 0;
    size_t at = 2;
    for (; at < c->argc; at++) {
        if (cmd_arg_is(c, at, "nx"))
            flags |= DB_ZADD_NX;
        else if (cmd_arg_is(c, at, "xx"))
            flags |= DB_ZADD_XX;
        else if (cmd_arg_is(c, at, "ch"))
            flags |= DB_ZADD_CH;
        else
            break;
    }
    size_t n = (c->argc - at) / 3;
    if ((c->argc - at) % 3 || n == 0 || (flags & DB_ZADD_NX && flags & DB_ZADD_XX)) {
        cmd_reply_syntax(c);
        return;
    }
    double *scores = kv_xmalloc(n * sizeof *scores);
    struct db_str *m = kv_xmalloc(n * sizeof *m);
    size_t i = 0;
    for (; i < n; i++) {
        double lon, lat;
        if (!lonlat_arg(c, at + 3 * i, &lon, &lat))
            break;
        scores[i] = geo_score(lon, lat);
        m[i] = c->argv[at + 3 * i + 2];
    }
    if (i == n) {
        uint64_t count;
        int rc = db_zadd(srv.db, c->db, CMD_ARG(1), scores, m, n, flags, &count, NULL);
        if (rc >= 0 && db_last_commit_ops(srv.db)) /* as ZADD: something added or moved */
            cmd_notify_arg(c, SRV_NOTIFY_ZSET, "zadd", 1);
        cmd_reply_int(c, rc, (int64_t)count);
    }
    free(scores);
    free(m);
}

/* The scores of members argv[2..], NaN where absent (db_zmscore): a
 * malloc'd array, or NULL once an error was replied. */
static double *member_scores(struct conn *c)
{
    size_t n = c->argc - 2;
    double *s = kv_xmalloc(n * sizeof *s);
    int rc = db_zmscore(srv.db, c->db, CMD_ARG(1), c->argv + 2, n, s);
    if (rc) {
        cmd_reply_err(c, rc);
        free(s);
        return NULL;
    }
    return s;
}

/* GEOPOS key [member ...] */
void cmd_geopos(struct conn *c)
{
    double *s = member_scores(c);
    if (!s)
        return;
    resp_array(OUT(c), c->argc - 2);
    for (size_t i = 0; i < c->argc - 2; i++) {
        double lon, lat;
        if (isnan(s[i])) {
            resp_null_array(OUT(c), c->proto);
            continue;
        }
        geo_decode_score(s[i], &lon, &lat);
        resp_array(OUT(c), 2);
        reply_coord(c, lon);
        reply_coord(c, lat);
    }
    free(s);
}

/* GEOHASH key [member ...] */
void cmd_geohash(struct conn *c)
{
    double *s = member_scores(c);
    if (!s)
        return;
    resp_array(OUT(c), c->argc - 2);
    for (size_t i = 0; i < c->argc - 2; i++) {
        char h[11];
        if (isnan(s[i])) {
            resp_null(OUT(c), c->proto);
            continue;
        }
        geo_hash_string(s[i], h);
        resp_bulk(OUT(c), h, sizeof h);
    }
    free(s);
}

/* GEODIST key member1 member2 [M|KM|FT|MI] */
void cmd_geodist(struct conn *c)
{
    double conv = 1;
    if (c->argc == 5 && (conv = unit_arg(c, 4)) < 0)
        return;
    if (c->argc > 5) {
        cmd_reply_syntax(c);
        return;
    }
    bool exists;
    if (!zset_or_none(c, 1, &exists))
        return;
    double s1, s2, lon1, lat1, lon2, lat2;
    uint64_t f, m; /* the key was looked up once, by zset_or_none */
    db_lookups(srv.db, &f, &m);
    bool both = exists && db_zscore(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &s1) == 0 &&
                db_zscore(srv.db, c->db, CMD_ARG(1), CMD_ARG(3), &s2) == 0;
    db_lookups_rewind(srv.db, f, m);
    if (!both) {
        resp_null(OUT(c), c->proto);
        return;
    }
    geo_decode_score(s1, &lon1, &lat1);
    geo_decode_score(s2, &lon2, &lat2);
    reply_distance(c, geo_distance(lon1, lat1, lon2, lat2) / conv);
}

/* ---- searches ---- */

enum {
    GEO_BYCOORD = 1,  /* GEORADIUS: centre and radius are arguments 2-5 */
    GEO_BYMEMBER = 2, /* GEORADIUSBYMEMBER: a member and radius, 2-4 */
    GEO_SEARCH = 4,   /* GEOSEARCH: FROM... and BY... options */
    GEO_STORE = 8,    /* GEOSEARCHSTORE: its first key is the destination */
    GEO_NOSTORE = 16, /* the _RO forms: no STORE option */
};

struct hit {
    double lon, lat, dist, score;
};

struct search {
    const struct geo_shape *shape;
    struct db_vec names;
    struct hit *hits;
    size_t n, cap, limit;
};

static int collect(const char *m, size_t mn, double score, void *arg)
{
    struct search *se = arg;
    struct hit h = {.score = score};
    geo_decode_score(score, &h.lon, &h.lat);
    if (geo_within(se->shape, h.lon, h.lat, &h.dist)) {
        if (se->n == se->cap) {
            se->cap = se->cap ? 2 * se->cap : 64;
            se->hits = kv_xrealloc(se->hits, se->cap * sizeof *se->hits);
        }
        se->hits[se->n++] = h;
        db_vec_push(&se->names, m, mn, score);
    }
    return se->limit && se->n >= se->limit;
}

/* Every member inside the shape, cell by cell in Redis's order (and by
 * score within a cell), stopping at limit (0: none) as ANY does. */
static int search_cells(struct conn *c, size_t key, struct search *se)
{
    struct geo_hash cells[9];
    double ranges[18];
    size_t n = 0, last = 0;
    geo_cells(se->shape, cells);
    for (size_t i = 0; i < 9; i++) {
        if (!cells[i].bits && !cells[i].step)
            continue;
        /* Huge radii can make a neighbour repeat the cell searched before
         * it; Redis compares with that one only (and never with the first
         * cell). */
        if (last && cells[i].bits == cells[last].bits && cells[i].step == cells[last].step)
            continue;
        geo_cell_range(cells[i], &ranges[2 * n], &ranges[2 * n + 1]);
        n++;
        last = i;
    }
    return db_zeach_score(srv.db, c->db, CMD_ARG(key), ranges, n, collect, se);
}

static int by_dist(const void *a, const void *b, void *arg)
{
    const struct hit *h = arg;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (h[i].dist != h[j].dist)
        return h[i].dist < h[j].dist ? -1 : 1;
    return i < j ? -1 : i > j; /* ties keep the search's order */
}

static int by_dist_desc(const void *a, const void *b, void *arg)
{
    const struct hit *h = arg;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (h[i].dist != h[j].dist)
        return h[i].dist > h[j].dist ? -1 : 1;
    return i < j ? -1 : i > j;
}

struct search_opts {
    bool withdist, withhash, withcoord, any, storedist;
    int sort; /* 0 none, 1 ascending, -1 descending */
    int64_t count;
    size_t store; /* the destination key's argument, 0 for none */
};

/* Parses the options after argument `at`, as Redis's one loop does; the
 * centre and shape of GEOSEARCH come from them. */
static bool search_opts(struct conn *c, int kind, size_t at, bool exists, struct geo_shape *s,
                        struct search_opts *o)
{
    bool frommember = false, fromlonlat = false, byradius = false, bybox = false;
    bool search = kind & GEO_SEARCH;
    for (size_t i = at; i < c->argc; i++) {
        size_t left = c->argc - i - 1; /* arguments after this one */
        if (cmd_arg_is(c, i, "withdist")) {
            o->withdist = true;
        } else if (cmd_arg_is(c, i, "withhash")) {
            o->withhash = true;
        } else if (cmd_arg_is(c, i, "withcoord")) {
            o->withcoord = true;
        } else if (cmd_arg_is(c, i, "any")) {
            o->any = true;
        } else if (cmd_arg_is(c, i, "asc")) {
            o->sort = 1;
        } else if (cmd_arg_is(c, i, "desc")) {
            o->sort = -1;
        } else if (cmd_arg_is(c, i, "count") && left >= 1) {
            if (!cmd_arg_ll(c, i + 1, &o->count))
                return false;
            if (o->count <= 0) {
                resp_error(OUT(c), "ERR COUNT must be > 0");
                return false;
            }
            i++;
        } else if ((cmd_arg_is(c, i, "store") || cmd_arg_is(c, i, "storedist")) && left >= 1 &&
                   !(kind & (GEO_NOSTORE | GEO_SEARCH))) {
            o->storedist = cmd_arg_is(c, i, "storedist");
            o->store = ++i;
        } else if (cmd_arg_is(c, i, "storedist") && (kind & GEO_STORE)) {
            o->storedist = true;
        } else if (cmd_arg_is(c, i, "frommember") && left >= 1 && search && !fromlonlat) {
            double score;
            i++;
            frommember = true;
            if (!exists)
                continue; /* parsing goes on; the reply is an empty one */
            if (db_zscore(srv.db, c->db, CMD_ARG(1 + !!(kind & GEO_STORE)), CMD_ARG(i), &score) !=
                0) {
                resp_error(OUT(c), "ERR could not decode requested zset member");
                return false;
            }
            geo_decode_score(score, &s->lon, &s->lat);
        } else if (cmd_arg_is(c, i, "fromlonlat") && left >= 2 && search && !frommember) {
            if (!lonlat_arg(c, i + 1, &s->lon, &s->lat))
                return false;
            fromlonlat = true;
            i += 2;
        } else if (cmd_arg_is(c, i, "byradius") && left >= 2 && search && !bybox) {
            if (!radius_arg(c, i + 1, s))
                return false;
            byradius = true;
            i += 2;
        } else if (cmd_arg_is(c, i, "bybox") && left >= 3 && search && !byradius) {
            if (!box_arg(c, i + 1, s))
                return false;
            bybox = true;
            i += 3;
        } else {
            cmd_reply_syntax(c);
            return false;
        }
    }
    if ((o->store || (kind & GEO_STORE)) && (o->withdist || o->withhash || o->withcoord)) {
        resp_errorf(OUT(c),
                    "ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
                    kind & GEO_STORE ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS");
        return false;
    }
    if (search && !frommember && !fromlonlat) {
        resp_errorf(OUT(c), "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %.*s",
                    (int)c->argv[0].n, c->argv[0].p);
        return false;
    }
    if (search && !byradius && !bybox) {
        resp_errorf(OUT(c), "ERR exactly one of BYRADIUS and BYBOX can be specified for %.*s",
                    (int)c->argv[0].n, c->argv[0].p);
        return false;
    }
    if (o->any && !o->count) {
        resp_error(OUT(c), "ERR the ANY argument requires COUNT argument");
        return false;
    }
    return true;
}

static void reply_hits(struct conn *c, const struct search *se, const size_t *order, size_t n,
                       const struct search_opts *o, double conv)
{
    size_t extra = (size_t)o->withdist + o->withhash + o->withcoord;
    resp_array(OUT(c), n);
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        const struct hit *h = &se->hits[i];
        if (extra)
            resp_array(OUT(c), extra + 1);
        resp_bulk(OUT(c), db_vec_ptr(&se->names, i), db_vec_len(&se->names, i));
        if (o->withdist)
            reply_distance(c, h->dist / conv);
        if (o->withhash)
            resp_int(OUT(c), (int64_t)h->score);
        if (o->withcoord) {
            resp_array(OUT(c), 2);
            reply_coord(c, h->lon);
            reply_coord(c, h->lat);
        }
    }
}

/* Stores the hits as a sorted set (scores: geohashes, or distances in the
 * request's unit) and replies their number; none deletes the key. */
static void store_hits(struct conn *c, size_t key, const struct search *se, const size_t *order,
                       size_t n, const struct search_opts *o, double conv, const char *event)
{
    bool had = cmd_notify_had(c, &c->argv[key]);
    struct db_vec v;
    db_vec_init(&v);
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        double score = o->storedist ? se->hits[i].dist / conv : se->hits[i].score;
        db_vec_push(&v, db_vec_ptr(&se->names, i), db_vec_len(&se->names, i), score);
    }
    int rc = db_zstore(srv.db, c->db, CMD_ARG(key), &v);
    db_vec_destroy(&v);
    if (rc == 0)
        cmd_notify_store(c, SRV_NOTIFY_ZSET, event, &c->argv[key], n, had);
    cmd_reply_int(c, rc, (int64_t)n);
}

static void search_generic(struct conn *c, int kind)
{
    size_t src = kind & GEO_STORE ? 2 : 1, at;
    bool exists;
    if (!zset_or_none(c, src, &exists))
        return;
    struct geo_shape s = {.conv = 1};
    if (kind & GEO_BYCOORD) {
        at = 6;
        if (!lonlat_arg(c, 2, &s.lon, &s.lat) || !radius_arg(c, 4, &s))
            return;
    } else if (kind & GEO_BYMEMBER) {
        at = 5;
        if (exists) { /* an absent key checks neither: its reply is empty */
            double score;
            uint64_t f, m; /* the key was looked up once, by zset_or_none */
            db_lookups(srv.db, &f, &m);
            int zrc = db_zscore(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &score);
            db_lookups_rewind(srv.db, f, m);
            if (zrc != 0) {
                resp_error(OUT(c), "ERR could not decode requested zset member");
                return;
            }
            geo_decode_score(score, &s.lon, &s.lat);
            if (!radius_arg(c, 3, &s))
                return;
        }
    } else {
        at = src + 1;
    }
    struct search_opts o = {.store = kind & GEO_STORE ? 1 : 0};
    if (!search_opts(c, kind, at, exists, &s, &o))
        return;
    if (!exists) {
        if (o.store) {
            int rc = db_del(srv.db, c->db, CMD_ARG(o.store));
            if (rc == 1)
                cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "del", o.store);
            cmd_reply_int(c, rc < 0 ? rc : 0, 0);
        } else {
            resp_array(OUT(c), 0);
        }
        return;
    }
    /* COUNT picks the nearest, so it sorts unless ANY took the first found. */
    if (o.count && !o.sort && !o.any)
        o.sort = 1;
    geo_prepare(&s);
    struct search se = {.shape = &s, .limit = o.any ? (size_t)o.count : 0};
    db_vec_init(&se.names);
    uint64_t f, m; /* the key was looked up once, by zset_or_none */
    db_lookups(srv.db, &f, &m);
    int rc = search_cells(c, src, &se);
    db_lookups_rewind(srv.db, f, m);
    size_t *order = kv_xmalloc((se.n ? se.n : 1) * sizeof *order);
    for (size_t i = 0; i < se.n; i++)
        order[i] = i;
    if (o.sort)
        qsort_r(order, se.n, sizeof *order, o.sort > 0 ? by_dist : by_dist_desc, se.hits);
    size_t n = o.count && (uint64_t)o.count < se.n ? (size_t)o.count : se.n;
    if (rc)
        cmd_reply_err(c, rc);
    else if (o.store)
        store_hits(c, o.store, &se, order, n, &o, s.conv,
                   kind & GEO_STORE ? "geosearchstore" : "georadiusstore");
    else
        reply_hits(c, &se, order, n, &o, s.conv);
    free(order);
    free(se.hits);
    db_vec_destroy(&se.names);
}

/* GEORADIUS key longitude latitude radius unit [WITHCOORD] [WITHDIST]
 *   [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key|STOREDIST key] */
void cmd_georadius(struct conn *c)
{
    search_generic(c, GEO_BYCOORD);
}

void cmd_georadius_ro(struct conn *c)
{
    search_generic(c, GEO_BYCOORD | GEO_NOSTORE);
}

/* GEORADIUSBYMEMBER key member radius unit [options as GEORADIUS] */
void cmd_georadiusbymember(struct conn *c)
{
    search_generic(c, GEO_BYMEMBER);
}

void cmd_georadiusbymember_ro(struct conn *c)
{
    search_generic(c, GEO_BYMEMBER | GEO_NOSTORE);
}

/* GEOSEARCH key FROMMEMBER member|FROMLONLAT lon lat BYRADIUS r unit|BYBOX
 *   w h unit [ASC|DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH] */
void cmd_geosearch(struct conn *c)
{
    search_generic(c, GEO_SEARCH);
}

/* GEOSEARCHSTORE dst src (as GEOSEARCH) [STOREDIST] */
void cmd_geosearchstore(struct conn *c)
{
    search_generic(c, GEO_SEARCH | GEO_STORE);
}

/* The key GEORADIUS[BYMEMBER] stores into (its last STORE or STOREDIST
 * option), or 0; for the keys a command uses (OBJECT IDLETIME). */
size_t cmd_geo_store_key(const struct db_str *argv, size_t argc)
{
    size_t key = 0;
    for (size_t i = 5; i + 1 < argc; i++) {
        const struct db_str *a = &argv[i];
        if ((a->n == 5 && !strncasecmp(a->p, "store", 5)) ||
            (a->n == 9 && !strncasecmp(a->p, "storedist", 9)))
            key = ++i;
    }
    return key;
}
