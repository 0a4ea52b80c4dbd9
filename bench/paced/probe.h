/* SPDX-License-Identifier: MIT */
/* probe.h - what other processes and the machine spent: /proc counters, and the host's system-call cost. */
#ifndef PACED_PROBE_H
#define PACED_PROBE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PROC_TASKS 256

/**
 * struct proc_snap - one process's counters at one moment.
 * @ticks:	utime + stime from /proc/PID/stat (clock ticks; every thread, dead ones included)
 * @ok:		the process was there
 * @ntasks:	its threads read (at most PROC_TASKS), each with:
 * @task:	(struct proc_task) @tid; @run_ns its time on a CPU (schedstat); @vcsw its voluntary context switches
 *		(each a sleep, so a wake-up later); @ivcsw the involuntary ones (preempted)
 */
struct proc_task {
	pid_t tid;
	uint64_t run_ns, vcsw, ivcsw;
};

struct proc_snap {
	uint64_t ticks;
	int ok, ntasks;
	struct proc_task task[PROC_TASKS];
};

/**
 * struct proc_delta - what a process did between two proc_snap()s: threads in both count their
 * difference, threads born in between all they did (threads that died in between are lost to
 * these three, not to @ticks).
 */
struct proc_delta {
	uint64_t ticks, run_ns, vcsw, ivcsw;
};

/* The machine's busy and total clock ticks so far, over every CPU (/proc/stat). */
struct mach_snap {
	uint64_t busy, total;
};

void proc_snap(pid_t pid, struct proc_snap *s);
void proc_diff(const struct proc_snap *a, const struct proc_snap *b, struct proc_delta *d);
void mach_snap(struct mach_snap *m);
long clk_tck(void);
uint64_t now_ns(void);
void syscall_cost_json(FILE *f, unsigned iters);

#endif
