/* SPDX-License-Identifier: MIT */
/* cpu_distance.h - how far apart two CPUs are now: a cache line's round trip between them. */
#ifndef PACED_CPU_DISTANCE_H
#define PACED_CPU_DISTANCE_H

#include <stdio.h>

int cpu_distance_json(FILE *f, const int cpu[2], double duration_s, double interval_s,
		      unsigned rounds);

#endif
