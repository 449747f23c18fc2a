/*
 * geo — the geohash arithmetic behind Redis's GEO commands, which keep
 * points in a sorted set: a point's score is its 52-bit geohash, longitude
 * and latitude cut into 2^26 steps each and interleaved (latitude on the
 * even bits), over latitudes of ±85.05112878 (Web Mercator's square).
 *
 * A search finds the cell, at a size picked from the radius, that holds its
 * centre, and that cell's eight neighbours; each cell is one range of
 * scores, and the members in those ranges are filtered by their exact
 * distance. Redis's results, their order (cell by cell in a fixed order,
 * by score within a cell) and its decimal replies follow from every step
 * here, so each is done as Redis 7.0 does it, including where the float
 * arithmetic rounds. Pure functions; no allocation.
 */
#ifndef SHMKV_GEO_H
#define SHMKV_GEO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GEO_LON_MIN (-180.0)
#define GEO_LON_MAX 180.0
#define GEO_LAT_MIN (-85.05112878)
#define GEO_LAT_MAX 85.05112878
#define GEO_STEP_MAX 26

/* A cell: its interleaved bits, step bits per coordinate. step 0 with bits
 * 0 is "no cell" (a neighbour a search leaves out). */
struct geo_hash {
    uint64_t bits;
    unsigned step;
};

struct geo_area {
    double lon_min, lon_max, lat_min, lat_max;
};

/* The cell of (lon, lat) at step, over latitudes [lat_min, lat_max]; false
 * when the point lies outside the supported range or that one. */
bool geo_encode(double lat_min, double lat_max, double lon, double lat, unsigned step,
                struct geo_hash *h);
/* The score GEOADD gives a point already checked by geo_valid. */
double geo_score(double lon, double lat);
bool geo_valid(double lon, double lat);

/* The point a score stands for: the centre of its cell, clamped to the
 * supported range. Any score decodes, as in Redis (a score no GEOADD made
 * gives some point). */
void geo_decode_score(double score, double *lon, double *lat);
/* A cell's bounds over latitudes [lat_min, lat_max]. */
void geo_decode(double lat_min, double lat_max, struct geo_hash h, struct geo_area *a);

/* The 11-character standard geohash (latitudes ±90) of a score, as
 * GEOHASH replies. out gets 11 bytes, no terminator. */
void geo_hash_string(double score, char out[11]);

/* Great-circle distance in metres (Redis's haversine and earth radius). */
double geo_distance(double lon1, double lat1, double lon2, double lat2);

/* A search shape: a circle (radius) or a box (width x height), in units
 * of `conv` metres, around (lon, lat). */
struct geo_shape {
    bool box;
    double lon, lat;
    double conv;
    double radius, width, height;
    double lon_r, lat_r, cos_lat; /* the centre's, set by geo_prepare */
};

/* Computes what geo_within needs of the centre once per search. */
void geo_prepare(struct geo_shape *s);
/* Whether the point (lon, lat) is inside the (prepared) shape; *dist its
 * distance from the centre in metres when it is. */
bool geo_within(const struct geo_shape *s, double lon, double lat, double *dist);

/* The cells to search for a shape, in Redis's order: its own, then north,
 * south, east, west, north-east, north-west, south-east, south-west. Left
 * out cells are {0, 0}. */
void geo_cells(const struct geo_shape *s, struct geo_hash cells[9]);
/* A cell's scores: [*min, *max). */
void geo_cell_range(struct geo_hash h, double *min, double *max);

#endif
