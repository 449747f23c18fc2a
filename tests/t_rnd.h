/*
 * t_rnd — the tests' random numbers: xorshift64 from a fixed seed, so
 * every run draws the same sequence and a failure repeats.
 */
#ifndef SHMKV_T_RND_H
#define SHMKV_T_RND_H

#include <stdint.h>

static inline uint64_t t_rnd(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif
