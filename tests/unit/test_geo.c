/*
 * test_geo — the geohash arithmetic: the figures Redis's documentation
 * gives for its Sicilian example (score, coordinates to 17 decimals,
 * geohash strings, distance), the edges of the grid, scores no GEOADD
 * makes (as redis-server 7.0 decodes them), and the search's cells: every
 * point inside a shape lies in one of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "geo.h"
#include "t_rnd.h"

#define PALERMO 13.361389, 38.115556
#define CATANIA 15.087269, 37.502669

/* A double printed to 17 decimals, as GEOPOS replies, read back. */
static double d(const char *s)
{
    return strtod(s, NULL);
}

static void test_geo_documented_example(void **state)
{
    (void)state;
    assert_true(geo_score(PALERMO) == 3479099956230698.0);
    double lon, lat;
    geo_decode_score(geo_score(PALERMO), &lon, &lat);
    assert_true(lon == d("13.36138933897018433"));
    assert_true(lat == d("38.11555639549629859"));
    char h[12] = {0};
    geo_hash_string(geo_score(PALERMO), h);
    assert_string_equal(h, "sqc8b49rny0");
    geo_hash_string(geo_score(CATANIA), h);
    assert_string_equal(h, "sqdtr74hyu0");
    double lon2, lat2;
    geo_decode_score(geo_score(CATANIA), &lon2, &lat2);
    char buf[64];
    snprintf(buf, sizeof buf, "%.4f", geo_distance(lon, lat, lon2, lat2));
    assert_string_equal(buf, "166274.1516");
    snprintf(buf, sizeof buf, "%.4f", geo_distance(lon, lat, lon2, lat2) / 1000);
    assert_string_equal(buf, "166.2742");
}

static void test_geo_edges_and_odd_scores(void **state)
{
    (void)state;
    assert_true(geo_valid(180, GEO_LAT_MAX));
    assert_true(geo_valid(-180, GEO_LAT_MIN));
    assert_false(geo_valid(180.000001, 0));
    assert_false(geo_valid(0, 85.06));
    assert_false(geo_valid(0, -85.06));
    /* Scores no GEOADD makes decode as redis-server's do: -1 reads as all
     * bits set (clamped to the grid's corner), 1e300 and 0 as zero. */
    double lon, lat;
    geo_decode_score(-1, &lon, &lat);
    assert_true(lon == 180 && lat == GEO_LAT_MAX);
    char h[12] = {0};
    geo_hash_string(-1, h);
    assert_string_equal(h, "bp05b5048p0");
    double lon0, lat0;
    geo_decode_score(0, &lon0, &lat0);
    assert_true(lon0 == d("-179.99999731779098511"));
    assert_true(lat0 == d("-85.05112751263942528"));
    geo_decode_score(1e300, &lon, &lat);
    assert_true(lon == lon0 && lat == lat0);
    /* The top corner keeps its carry bits, beyond 52. */
    assert_true(geo_score(180, GEO_LAT_MAX) >= 9007199254740992.0); /* 2^53 */
}

static void test_geo_cell_ranges(void **state)
{
    (void)state;
    struct geo_hash h = {0x5, 2};
    double min, max;
    geo_cell_range(h, &min, &max);
    assert_true(min == (double)(5ull << 48) && max == (double)(6ull << 48));
    /* A zero radius searches the point's own 26-step cell. */
    struct geo_shape s = {.lon = 13.361389, .lat = 38.115556, .conv = 1, .radius = 0};
    struct geo_hash cells[9];
    geo_cells(&s, cells);
    assert_int_equal(cells[0].step, GEO_STEP_MAX);
    assert_true((double)cells[0].bits == geo_score(PALERMO));
    /* At the west edge the west neighbour wraps to the east edge. */
    struct geo_shape w = {.lon = -179.9999, .lat = 0, .conv = 1000, .radius = 10};
    geo_cells(&w, cells);
    struct geo_area a;
    assert_true(cells[4].step > 0);
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, cells[4], &a);
    assert_true(a.lon_max == 180);
}

/* Every point geo_within accepts lies in one of the shape's cells: the
 * search misses nothing (away from the poles, where Redis's bounding box
 * is an approximation). */
static void test_geo_cells_cover_the_shape(void **state)
{
    (void)state;
    uint64_t r = 0x67656f;
    size_t inside = 0;
    for (int round = 0; round < 3000; round++) {
        struct geo_shape s = {.conv = 1};
        s.lon = -180 + 360.0 * (double)(t_rnd(&r) % 100000) / 1e5;
        s.lat = -60 + 120.0 * (double)(t_rnd(&r) % 100000) / 1e5;
        double metres = (double)(1 + t_rnd(&r) % 2000000);
        s.box = t_rnd(&r) % 2;
        s.radius = metres;
        s.width = metres;
        s.height = metres * (double)(1 + t_rnd(&r) % 4) / 2;
        struct geo_hash cells[9];
        geo_cells(&s, cells);
        geo_prepare(&s);
        for (int p = 0; p < 40; p++) {
            /* Points within about two sizes of the centre. */
            double span = 2.5 * metres / 111000.0;
            double lon = s.lon + span * ((double)(t_rnd(&r) % 2001) / 1000 - 1);
            double lat = s.lat + span * ((double)(t_rnd(&r) % 2001) / 1000 - 1);
            if (lon > 180)
                lon -= 360;
            if (lon < -180)
                lon += 360;
            if (!geo_valid(lon, lat))
                continue;
            double score = geo_score(lon, lat), plon, plat, dist;
            geo_decode_score(score, &plon, &plat);
            if (!geo_within(&s, plon, plat, &dist))
                continue;
            inside++;
            bool found = false;
            for (int i = 0; i < 9 && !found; i++) {
                double min, max;
                if (!cells[i].bits && !cells[i].step)
                    continue;
                geo_cell_range(cells[i], &min, &max);
                found = score >= min && score < max;
            }
            if (!found)
                fail_msg("(%f, %f) within %s %f m of (%f, %f), in no cell", plon, plat,
                         s.box ? "box" : "radius", metres, s.lon, s.lat);
        }
    }
    assert_true(inside > 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geo_documented_example),
        cmocka_unit_test(test_geo_edges_and_odd_scores),
        cmocka_unit_test(test_geo_cell_ranges),
        cmocka_unit_test(test_geo_cells_cover_the_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
