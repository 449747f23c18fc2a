/*
 * geo — geohash arithmetic (see geo.h). Every expression keeps the order of
 * operations of Redis's own, since its decimal replies (GEOPOS to 17
 * digits) show the last bit; the build turns off fused multiply-adds for
 * this file for the same reason.
 */
#include "geo.h"

#include <math.h>

#define EARTH_RADIUS 6372797.560856 /* metres, as Redis */
#define MERCATOR_MAX 20037726.37
#define DEG_TO_RAD (M_PI / 180.0)

static double deg_rad(double d)
{
    return d * DEG_TO_RAD;
}

static double rad_deg(double r)
{
    return r / DEG_TO_RAD;
}

/* Bit i of v moves to bit 2i. */
static uint64_t spread(uint32_t v)
{
    uint64_t x = v;
    x = (x | (x << 16)) & 0x0000ffff0000ffffull;
    x = (x | (x << 8)) & 0x00ff00ff00ff00ffull;
    x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0full;
    x = (x | (x << 2)) & 0x3333333333333333ull;
    x = (x | (x << 1)) & 0x5555555555555555ull;
    return x;
}

/* Bit 2i of v moves to bit i; odd bits are dropped. */
static uint32_t squash(uint64_t v)
{
    uint64_t x = v & 0x5555555555555555ull;
    x = (x | (x >> 1)) & 0x3333333333333333ull;
    x = (x | (x >> 2)) & 0x0f0f0f0f0f0f0f0full;
    x = (x | (x >> 4)) & 0x00ff00ff00ff00ffull;
    x = (x | (x >> 8)) & 0x0000ffff0000ffffull;
    x = (x | (x >> 16)) & 0x00000000ffffffffull;
    return (uint32_t)x;
}

bool geo_valid(double lon, double lat)
{
    return !(lon > GEO_LON_MAX || lon < GEO_LON_MIN || lat > GEO_LAT_MAX || lat < GEO_LAT_MIN);
}

bool geo_encode(double lat_min, double lat_max, double lon, double lat, unsigned step,
                struct geo_hash *h)
{
    if (!geo_valid(lon, lat) || lat < lat_min || lat > lat_max)
        return false;
    double lat_off = (lat - lat_min) / (lat_max - lat_min);
    double lon_off = (lon - GEO_LON_MIN) / (GEO_LON_MAX - GEO_LON_MIN);
    lat_off *= (double)(1ull << step);
    lon_off *= (double)(1ull << step);
    /* An offset of exactly 2^step (the range's top edge) keeps its carry
     * bit, as Redis's conversion to 32 bits does. */
    h->bits = spread((uint32_t)lat_off) | spread((uint32_t)lon_off) << 1;
    h->step = step;
    return true;
}

double geo_score(double lon, double lat)
{
    struct geo_hash h = {0, 0};
    geo_encode(GEO_LAT_MIN, GEO_LAT_MAX, lon, lat, GEO_STEP_MAX, &h);
    return (double)h.bits;
}

void geo_decode(double lat_min, double lat_max, struct geo_hash h, struct geo_area *a)
{
    uint32_t ilat = squash(h.bits), ilon = squash(h.bits >> 1);
    uint32_t ilat1 = ilat + 1, ilon1 = ilon + 1; /* 32-bit: wraps as Redis's does */
    /* Dividing by 2^step and multiplying by 2^-step give the same bits. */
    double inv = 1.0 / (double)(1ull << h.step);
    double lat_scale = lat_max - lat_min, lon_scale = GEO_LON_MAX - GEO_LON_MIN;
    a->lat_min = lat_min + (ilat * inv) * lat_scale;
    a->lat_max = lat_min + (ilat1 * inv) * lat_scale;
    a->lon_min = GEO_LON_MIN + (ilon * inv) * lon_scale;
    a->lon_max = GEO_LON_MIN + (ilon1 * inv) * lon_scale;
}

/* A score as Redis reads it, with x86-64's conversion of a double to 64
 * bits: negative scores truncate through a signed conversion, and those
 * too large for it give its "indefinite" value, which becomes 0 above
 * 2^64. */
static uint64_t score_bits(double s)
{
    const double two63 = 9223372036854775808.0;
    if (s < two63)
        return s > -two63 ? (uint64_t)(int64_t)s : 0x8000000000000000ull;
    return s < 2 * two63 ? (uint64_t)s : 0;
}

void geo_decode_score(double score, double *lon, double *lat)
{
    struct geo_hash h = {score_bits(score), GEO_STEP_MAX};
    struct geo_area a;
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, h, &a);
    double x = (a.lon_min + a.lon_max) / 2, y = (a.lat_min + a.lat_max) / 2;
    *lon = x > GEO_LON_MAX ? GEO_LON_MAX : x < GEO_LON_MIN ? GEO_LON_MIN : x;
    *lat = y > GEO_LAT_MAX ? GEO_LAT_MAX : y < GEO_LAT_MIN ? GEO_LAT_MIN : y;
}

void geo_hash_string(double score, char out[11])
{
    static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
    double lon, lat;
    geo_decode_score(score, &lon, &lat);
    struct geo_hash h = {0, 0};
    geo_encode(-90, 90, lon, lat, GEO_STEP_MAX, &h);
    /* 52 bits make ten characters; the eleventh is a zero, as Redis's. */
    for (int i = 0; i < 10; i++)
        out[i] = alphabet[(h.bits >> (52 - (i + 1) * 5)) & 0x1f];
    out[10] = alphabet[0];
}

static double lat_distance(double lat1, double lat2)
{
    return EARTH_RADIUS * fabs(deg_rad(lat2) - deg_rad(lat1));
}

/* The haversine from (lon1r, lat1r) in radians, with cos(lat1r) given, to
 * (lon2, lat2) in degrees: geo_distance's arithmetic, step for step. */
static double distance_from(double lon1r, double lat1r, double cos_lat1, double lat1, double lon2,
                            double lat2)
{
    double lon2r = deg_rad(lon2);
    double v = sin((lon2r - lon1r) / 2);
    if (v == 0.0) /* the same meridian */
        return lat_distance(lat1, lat2);
    double lat2r = deg_rad(lat2);
    double u = sin((lat2r - lat1r) / 2);
    double a = u * u + cos_lat1 * cos(lat2r) * v * v;
    return 2.0 * EARTH_RADIUS * asin(sqrt(a));
}

double geo_distance(double lon1, double lat1, double lon2, double lat2)
{
    double lat1r = deg_rad(lat1);
    return distance_from(deg_rad(lon1), lat1r, cos(lat1r), lat1, lon2, lat2);
}

void geo_prepare(struct geo_shape *s)
{
    s->lon_r = deg_rad(s->lon);
    s->lat_r = deg_rad(s->lat);
    s->cos_lat = cos(s->lat_r);
}

bool geo_within(const struct geo_shape *s, double lon, double lat, double *dist)
{
    if (!s->box) {
        double d = distance_from(s->lon_r, s->lat_r, s->cos_lat, s->lat, lon, lat);
        if (d > s->radius * s->conv)
            return false;
        *dist = d;
        return true;
    }
    /* The latitude test is the cheaper: first. The longitude distance is
     * measured along the point's own parallel. */
    if (lat_distance(lat, s->lat) > s->height * s->conv / 2)
        return false;
    double latr = deg_rad(lat);
    if (distance_from(deg_rad(lon), latr, cos(latr), lat, s->lon, lat) > s->width * s->conv / 2)
        return false;
    *dist = distance_from(s->lon_r, s->lat_r, s->cos_lat, s->lat, lon, lat);
    return true;
}

/* The step whose cells are about the radius wide at that latitude. */
static unsigned estimate_step(double range, double lat)
{
    if (range == 0)
        return GEO_STEP_MAX;
    int step = 1;
    while (range < MERCATOR_MAX) {
        range *= 2;
        step++;
    }
    step -= 2;                   /* cells twice as wide: the radius fits in most cases */
    if (lat > 66 || lat < -66) { /* meridians converge: wider still */
        step--;
        if (lat > 80 || lat < -80)
            step--;
    }
    return step < 1 ? 1 : step > GEO_STEP_MAX ? GEO_STEP_MAX : (unsigned)step;
}

/* The cell dlon cells east and dlat cells north of h, wrapping around at
 * the edges of the grid. */
static struct geo_hash move(struct geo_hash h, int dlon, int dlat)
{
    uint32_t mask = (uint32_t)((1ull << h.step) - 1);
    uint32_t ilat = (squash(h.bits) + (uint32_t)dlat) & mask;
    uint32_t ilon = (squash(h.bits >> 1) + (uint32_t)dlon) & mask;
    return (struct geo_hash){spread(ilat) | spread(ilon) << 1, h.step};
}

/* The shape's bounding box in degrees: {lon_min, lat_min, lon_max,
 * lat_max}. The longitude span is taken at the edge nearer the pole, where
 * it is widest. */
static void bounding_box(const struct geo_shape *s, double b[4])
{
    double height = s->conv * (s->box ? s->height / 2 : s->radius);
    double width = s->conv * (s->box ? s->width / 2 : s->radius);
    double dlat = rad_deg(height / EARTH_RADIUS);
    double dlon_top = rad_deg(width / EARTH_RADIUS / cos(deg_rad(s->lat + dlat)));
    double dlon_bottom = rad_deg(width / EARTH_RADIUS / cos(deg_rad(s->lat - dlat)));
    bool south = s->lat < 0;
    b[0] = south ? s->lon - dlon_bottom : s->lon - dlon_top;
    b[2] = south ? s->lon + dlon_bottom : s->lon + dlon_top;
    b[1] = s->lat - dlat;
    b[3] = s->lat + dlat;
}

/* Order of cells[]: the centre, then north, south, east, west, north-east,
 * north-west, south-east, south-west. */
static void neighbours(struct geo_hash c, struct geo_hash cells[9])
{
    static const int d[9][2] = {{0, 0}, {0, 1},  {0, -1}, {1, 0},  {-1, 0},
                                {1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
    for (int i = 0; i < 9; i++)
        cells[i] = move(c, d[i][0], d[i][1]);
}

void geo_cells(const struct geo_shape *s, struct geo_hash cells[9])
{
    double b[4];
    bounding_box(s, b);
    double min_lon = b[0], min_lat = b[1], max_lon = b[2], max_lat = b[3];
    double range = s->box
                       ? sqrt((s->width / 2) * (s->width / 2) + (s->height / 2) * (s->height / 2))
                       : s->radius;
    range *= s->conv;
    unsigned step = estimate_step(range, s->lat);
    struct geo_hash c = {0, 0};
    struct geo_area area, n, so, e, w;
    geo_encode(GEO_LAT_MIN, GEO_LAT_MAX, s->lon, s->lat, step, &c);
    neighbours(c, cells);
    /* Near a cell's edge the estimated step can leave the shape poking out
     * past a neighbour: then one step coarser. */
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, cells[1], &n);
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, cells[2], &so);
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, cells[3], &e);
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, cells[4], &w);
    bool coarser =
        n.lat_max < max_lat || so.lat_min > min_lat || e.lon_max < max_lon || w.lon_min > min_lon;
    if (step > 1 && coarser) {
        step--;
        geo_encode(GEO_LAT_MIN, GEO_LAT_MAX, s->lon, s->lat, step, &c);
        neighbours(c, cells);
    }
    geo_decode(GEO_LAT_MIN, GEO_LAT_MAX, c, &area);
    if (step < 2)
        return;
    /* Neighbours wholly beyond the shape's box are left out. */
    static const int south[] = {2, 7, 8}, north[] = {1, 5, 6}, west[] = {4, 8, 6},
                     east[] = {3, 7, 5};
    const struct geo_hash none = {0, 0};
    for (int i = 0; i < 3; i++) {
        if (area.lat_min < min_lat)
            cells[south[i]] = none;
        if (area.lat_max > max_lat)
            cells[north[i]] = none;
        if (area.lon_min < min_lon)
            cells[west[i]] = none;
        if (area.lon_max > max_lon)
            cells[east[i]] = none;
    }
}

void geo_cell_range(struct geo_hash h, double *min, double *max)
{
    unsigned shift = 52 - h.step * 2;
    *min = (double)(h.bits << shift);
    *max = (double)((h.bits + 1) << shift);
}
