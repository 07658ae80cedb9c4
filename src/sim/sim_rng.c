/* Random numbers for the simulator: xoshiro256** seeded by splitmix64, so that a seed gives
 * the same workload on every machine (no rand(), no libc state). */
#include <math.h>
#include <stdlib.h>

#include "sim/sim.h"

static uint64_t splitmix(uint64_t *x) {
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

void gw_sim_rng_seed(struct gw_sim_rng *r, uint64_t seed) {
        uint64_t x = seed;
        for (int i = 0; i < 4; i++)
                r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gw_sim_rng_next(struct gw_sim_rng *r) {
        uint64_t *s = r->s;
        uint64_t out = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return out;
}

double gw_sim_rng_unit(struct gw_sim_rng *r) { return (double) (gw_sim_rng_next(r) >> 11) * 0x1.0p-53; }

double gw_sim_rng_uniform(struct gw_sim_rng *r, double lo, double hi) { return lo + (hi - lo) * gw_sim_rng_unit(r); }

/* Box-Muller; one of the pair is thrown away to keep the generator stateless beyond s[]. */
double gw_sim_rng_normal(struct gw_sim_rng *r) {
        double u = gw_sim_rng_unit(r), v = gw_sim_rng_unit(r);
        if (u < 1e-300)
                u = 1e-300;
        return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

double gw_sim_rng_exp(struct gw_sim_rng *r, double mean) {
        double u = gw_sim_rng_unit(r);
        return -mean * log1p(-u);
}

uint64_t gw_sim_hash(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
        uint64_t x = a;
        uint64_t h = splitmix(&x);
        x = h ^ b;
        h = splitmix(&x);
        x = h ^ c;
        h = splitmix(&x);
        x = h ^ d;
        return splitmix(&x);
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

double gw_sim_percentile(double *v, size_t n, double pct) {
        if (n == 0)
                return 0;
        qsort(v, n, sizeof(*v), cmp_double);
        size_t rank = (size_t) ceil(pct / 100.0 * (double) n);
        if (rank < 1)
                rank = 1;
        if (rank > n)
                rank = n;
        return v[rank - 1];
}
