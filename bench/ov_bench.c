/*
 * ov_bench — how long the write-back overlay takes to order the nodes a
 * burst of writes left waiting (wb_ov_order, before the first walk): the stall of
 * the first walk (SCAN, ZRANGE, KEYS) after the burst, in the event loop.
 *
 *   ov_bench [--nodes N] [--rounds R]
 *
 * Two key shapes, each a fresh overlay per round, written in a random
 * order: meta keys as the daemon makes them for strings (db, slot, and a
 * 16-byte "key:%012u", as redis-benchmark -r writes), and the fields of
 * one hash (sub-keys sharing their first 24 bytes). Prints a Markdown
 * table: the median time (min-max) over the rounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "enc.h"
#include "wb_ov.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Key i of a shape (0: string meta keys, 1: one hash's fields) into k. */
static size_t key_of(int shape, uint32_t i, char *k)
{
    char user[32];
    int un = snprintf(user, sizeof user, "key:%012u", i);
    if (shape == 0) {
        k[0] = 0; /* db 0 */
        uint16_t slot = enc_slot(user, (size_t)un);
        k[1] = (char)(slot >> 8);
        k[2] = (char)slot;
        memcpy(k + 3, user, (size_t)un);
        return 3 + (size_t)un;
    }
    /* db, slot, a hash's name and version: 24 bytes, then the field */
    memcpy(k, "\0\x12\x34myhash-with-version\x01\x02", 24);
    return 24 + (size_t)snprintf(k + 24, 40, "field:%u", i);
}

int main(int argc, char **argv)
{
    size_t nodes = 300000;
    int rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
            nodes = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: ov_bench [--nodes N] [--rounds R]\n");
            return 2;
        }
    }
    if (nodes < 1 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "ov_bench: --nodes and --rounds must be positive (rounds up to 1000)\n");
        return 2;
    }
    static const char *names[] = {"string meta keys", "one hash's fields"};
    printf("## ov_bench — ordering %zu waiting overlay nodes, %d rounds\n\n", nodes, rounds);
    printf("| keys | ms to order (median, min-max) | ns per node |\n|---|---:|---:|\n");
    for (int shape = 0; shape < 2; shape++) {
        double ms[1000];
        for (int r = 0; r < rounds; r++) {
            struct wb_ov o;
            wb_ov_init(&o);
            char k[64];
            for (size_t i = 0; i < nodes; i++) {
                /* distinct ids (an odd multiplier permutes 32-bit
                 * numbers), so keys come in no order */
                size_t kn = key_of(shape, (uint32_t)i * 2654435761u, k);
                wb_ov_set(&o, wb_ov_key_hash(1, k, kn), 1, k, kn, "v", 1, i + 1);
            }
            double t0 = now_ms();
            wb_ov_order(&o, 1, NULL, 0, NULL, 0);
            if (wb_ov_waiting(&o, 1) || !wb_ov_seek(&o, 1, "", 0))
                return 1;
            ms[r] = now_ms() - t0;
            wb_ov_destroy(&o);
        }
        qsort(ms, (size_t)rounds, sizeof *ms, cmp_double);
        double med = rounds % 2 ? ms[rounds / 2] : (ms[rounds / 2 - 1] + ms[rounds / 2]) / 2;
        printf("| %s | %.1f (%.1f-%.1f) | %.0f |\n", names[shape], med, ms[0], ms[rounds - 1],
               med * 1e6 / (double)nodes);
    }
    return 0;
}
