/* The units and the clock both scheduler tests write their cases in (test_sched.c: hand-made
 * cases, test_sched_random.c: randomized properties). */
#pragma once
#include <stdint.h>

#include "base/time.h"

#define MIN (60 * GW_USEC_PER_SEC)
#define GIB (UINT64_C(1) << 30)
#define NOW ((gw_usec_t) 1000000 * MIN)
#define INF GW_USEC_INFINITY
#define M(i) (UINT64_C(1) << (i))
