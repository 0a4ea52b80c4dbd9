/* SPDX-License-Identifier: MIT */
/* probe.c - reading /proc for a watched process and the machine; timing system calls. */
#include "probe.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC in ns (the vDSO: no system call with the TSC clocksource). */
uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Clock ticks per second of /proc's times. */
long clk_tck(void)
{
	return sysconf(_SC_CLK_TCK);
}

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return 0;
}

/* One thread's schedstat run time and context switches, into the next task slot of s. */
static void task_add(pid_t pid, const char *tid, struct proc_snap *s)
{
	char path[320], buf[2048], *p;
	struct proc_task *t;

	if (s->ntasks == PROC_TASKS)
		return;
	t = &s->task[s->ntasks];
	memset(t, 0, sizeof(*t));
	t->tid = (pid_t)atoi(tid);
	snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, tid);
	if (read_text(path, buf, sizeof(buf)) == 0)
		t->run_ns = strtoull(buf, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, tid);
	if (read_text(path, buf, sizeof(buf)) != 0)
		return;
	p = strstr(buf, "\nvoluntary_ctxt_switches:");
	if (p)
		t->vcsw = strtoull(p + 25, NULL, 10);
	p = strstr(buf, "\nnonvoluntary_ctxt_switches:");
	if (p)
		t->ivcsw = strtoull(p + 28, NULL, 10);
	s->ntasks++;
}

/**
 * proc_snap() - a process's CPU time and its threads' context switches now.
 * @pid:	the process
 * @s:		filled in; s->ok = 0 when it is gone
 */
void proc_snap(pid_t pid, struct proc_snap *s)
{
	char path[64], buf[1024], *p;
	DIR *d;
	struct dirent *e;

	s->ticks = 0;
	s->ok = s->ntasks = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_text(path, buf, sizeof(buf)) != 0 || !(p = strrchr(buf, ')')))
		return;
	/* after "comm)": state is field 3; utime and stime are fields 14 and 15 */
	p += 2;
	for (int field = 3; field < 14 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return;
	s->ticks = strtoull(p, &p, 10);
	s->ticks += strtoull(p, NULL, 10);
	s->ok = 1;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			task_add(pid, e->d_name, s);
	closedir(d);
}

/**
 * proc_diff() - b minus a, thread by thread (struct proc_delta).
 * @a:	the earlier snapshot
 * @b:	the later one
 * @d:	filled in
 */
void proc_diff(const struct proc_snap *a, const struct proc_snap *b, struct proc_delta *d)
{
	memset(d, 0, sizeof(*d));
	d->ticks = b->ticks >= a->ticks ? b->ticks - a->ticks : 0;
	for (int i = 0; i < b->ntasks; i++) {
		uint64_t run = b->task[i].run_ns, v = b->task[i].vcsw, iv = b->task[i].ivcsw;

		for (int j = 0; j < a->ntasks; j++) {
			if (a->task[j].tid != b->task[i].tid)
				continue;
			run -= run >= a->task[j].run_ns ? a->task[j].run_ns : run;
			v -= v >= a->task[j].vcsw ? a->task[j].vcsw : v;
			iv -= iv >= a->task[j].ivcsw ? a->task[j].ivcsw : iv;
			break;
		}
		d->run_ns += run;
		d->vcsw += v;
		d->ivcsw += iv;
	}
}

/**
 * mach_snap() - the machine's busy and total ticks (idle and iowait are not busy).
 * @m: filled in (zeros if /proc/stat cannot be read)
 */
void mach_snap(struct mach_snap *m)
{
	char buf[512], *p;
	uint64_t v[10] = {0};

	memset(m, 0, sizeof(*m));
	if (read_text("/proc/stat", buf, sizeof(buf)) != 0 || strncmp(buf, "cpu ", 4))
		return;
	p = buf + 4;
	for (int i = 0; i < 10; i++) {
		v[i] = strtoull(p, &p, 10);
		m->total += v[i];
	}
	m->busy = m->total - v[3] - v[4];
}

/* ns per call of fn over iters calls, best of 5 tries (the machine is shared). */
static double time_loop(void (*fn)(void *), void *arg, unsigned iters)
{
	double best = 1e18;

	for (int t = 0; t < 5; t++) {
		uint64_t t0 = now_ns();

		for (unsigned i = 0; i < iters; i++)
			fn(arg);
		double per = (double)(now_ns() - t0) / iters;

		if (per < best)
			best = per;
	}
	return best;
}

static void do_getppid(void *arg)
{
	(void)arg;
	syscall(SYS_getppid);	/* not the libc wrapper: never cached */
}

static void do_eventfd_write(void *arg)
{
	eventfd_write(*(int *)arg, 1);
}

static void do_clock(void *arg)
{
	(void)arg;
	volatile uint64_t t = now_ns();

	(void)t;
}

/**
 * syscall_cost_json() - print {"getppid_ns", "eventfd_write_ns", "clock_gettime_ns"}: the
 * host's price of entering the kernel (a kick or a call is an eventfd write), best of 5 loops.
 * @f:		where
 * @iters:	calls per loop
 */
void syscall_cost_json(FILE *f, unsigned iters)
{
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	double gp = time_loop(do_getppid, NULL, iters);
	double ew = efd >= 0 ? time_loop(do_eventfd_write, &efd, iters) : -1;
	double cg = time_loop(do_clock, NULL, iters);

	if (efd >= 0)
		close(efd);
	fprintf(f, "{\"getppid_ns\": %.1f, \"eventfd_write_ns\": %.1f, \"clock_gettime_ns\": %.1f, "
		"\"iterations\": %u}\n", gp, ew, cg, iters);
}
