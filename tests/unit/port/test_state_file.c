/* SPDX-License-Identifier: MIT */
/* test_state_file.c - the state file on disk: planted links and FIFOs, dir check, interval. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/port.h"
#include "port/port_state.h"

#define SOCK "/run/vm-state-test.sock"

static char dir[64], name[64], path[192];
static int dirfd_ = -1;

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("port_state_load() blocked");
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/vnetd-state-unit-XXXXXX");
	assert_non_null(mkdtemp(dir));
	dirfd_ = open(dir, PORT_STATE_DIR_FLAGS);
	assert_true(dirfd_ >= 0);
	port_state_file_name(SOCK, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	signal(SIGALRM, on_alarm);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	close(dirfd_);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Before each test: nothing at the file's names (a failed test may have left a FIFO there). */
static int clean(void **state)
{
	char tmp[224];

	(void)state;
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	unlink(path);
	unlink(tmp);
	return 0;
}

static void sample(struct port_state *st)
{
	memset(st, 0, sizeof(*st));
	st->nqueues = 1;
	st->q[0].params.max_packets = 12;
	st->q[0].params.max_usecs = 345;
	st->q[0].setter = COAL_SET_GUEST;
}

static void write_text(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void read_text(const char *p, char *buf, size_t len)
{
	FILE *f = fopen(p, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* A symlink at <name>.new: removed, not written through; the state file is a regular file. */
static void test_save_ignores_planted_tmp_symlink(void **state)
{
	char victim[224], tmp[224], buf[64];
	struct port_state st, back;
	struct stat sb;
	char err[256];

	(void)state;
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	write_text(victim, "precious\n");
	assert_int_equal(symlink(victim, tmp), 0);
	sample(&st);
	assert_int_equal(port_state_save(dirfd_, SOCK, &st), 0);
	read_text(victim, buf, sizeof(buf));
	assert_string_equal(buf, "precious\n");
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(lstat(tmp, &sb), -1); /* nothing left behind */
	assert_int_equal(port_state_load(dirfd_, SOCK, 3, &back, err, sizeof(err)), 0);
	assert_memory_equal(&back, &st, sizeof(st));
	unlink(victim);
	unlink(path);
}

/* A crash's leftover .new (a regular file, perhaps partial): replaced. */
static void test_save_replaces_stale_tmp(void **state)
{
	char tmp[224], err[256];
	struct port_state st, back;

	(void)state;
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	write_text(tmp, "{\"version\":");
	sample(&st);
	assert_int_equal(port_state_save(dirfd_, SOCK, &st), 0);
	assert_int_equal(port_state_load(dirfd_, SOCK, 3, &back, err, sizeof(err)), 0);
	assert_memory_equal(&back, &st, sizeof(st));
	unlink(path);
}

/* A FIFO at the state file's name: refused at once (no writer would ever come). */
static void test_load_refuses_fifo_without_blocking(void **state)
{
	struct port_state back;
	char err[256];

	(void)state;
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5);
	assert_int_equal(port_state_load(dirfd_, SOCK, 3, &back, err, sizeof(err)), -1);
	alarm(0);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(path);
}

/* A symlink at the state file's name, to a file that would parse: not followed. */
static void test_load_refuses_symlink(void **state)
{
	char target[224], err[256], *text;
	struct port_state st, back;

	(void)state;
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	sample(&st);
	text = port_state_format(&st, SOCK);
	write_text(target, text);
	free(text);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(port_state_load(dirfd_, SOCK, 3, &back, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "symlink"));
	unlink(path);
	unlink(target);
}

/* A file larger than PORT_STATE_MAX is refused before it is read. */
static void test_load_refuses_big_file(void **state)
{
	struct port_state back;
	char err[256];
	int fd;

	(void)state;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, PORT_STATE_MAX + 1), 0);
	close(fd);
	assert_int_equal(port_state_load(dirfd_, SOCK, 3, &back, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too large"));
	unlink(path);
}

static int check_mode(mode_t mode, unsigned uid, char *err)
{
	assert_int_equal(chmod(dir, mode), 0);
	return port_state_dir_check(dirfd_, uid, err, 256);
}

/* Group- or other-writable (sticky or not), or owned by someone else: refused. */
static void test_dir_check(void **state)
{
	unsigned me = (unsigned)geteuid();
	char err[256];

	(void)state;
	assert_int_equal(check_mode(0700, me, err), 0);
	assert_int_equal(check_mode(0755, me, err), 0);
	assert_int_equal(check_mode(0777, me, err), -1);
	assert_non_null(strstr(err, "group or others can write"));
	assert_int_equal(check_mode(01777, me, err), -1);
	assert_int_equal(check_mode(0720, me, err), -1);
	assert_int_equal(check_mode(0702, me, err), -1);
	if (me == 0) {
		/* Root's directory is fine for any user; another user's is not. */
		assert_int_equal(check_mode(0700, 1234, err), 0);
		assert_int_equal(chown(dir, 65534, (gid_t)-1), 0);
		assert_int_equal(check_mode(0700, 1234, err), -1);
		assert_non_null(strstr(err, "owned by uid 65534"));
		assert_int_equal(check_mode(0700, 65534, err), 0);
		assert_int_equal(chown(dir, 0, (gid_t)-1), 0);
	} else {
		assert_int_equal(check_mode(0700, me + 1, err), -1);
		assert_non_null(strstr(err, "owned by uid"));
	}
	assert_int_equal(chmod(dir, 0700), 0);
}

/* At most one write per interval; the first of a burst after the batch delay. */
static void test_write_interval(void **state)
{
	const uint64_t s = 1000000000ull, batch = PORT_STATE_WRITE_BATCH_NS;

	(void)state;
	assert_true(PORT_STATE_WRITE_INTERVAL_NS <= s); /* a SIGKILL loses at most a second */
	assert_true(batch < PORT_STATE_WRITE_INTERVAL_NS);
	assert_int_equal(port_state_write_at(100 * s, 0), 100 * s + batch);
	assert_int_equal(port_state_write_at(100 * s, 90 * s), 100 * s + batch);
	assert_int_equal(port_state_write_at(100 * s, 100 * s - s / 2),
			 100 * s - s / 2 + PORT_STATE_WRITE_INTERVAL_NS);
	assert_int_equal(port_state_write_at(100 * s, 100 * s),
			 100 * s + PORT_STATE_WRITE_INTERVAL_NS);
	/* Whatever the pattern of changes, two writes are an interval apart. */
	for (uint64_t now = 100 * s, last = 0, i = 0; i < 1000; i++, now += s / 37) {
		uint64_t at = port_state_write_at(now, last);

		if (last)
			assert_true(at >= last + PORT_STATE_WRITE_INTERVAL_NS);
		/* never more than an interval late */
		assert_true(at <= now + PORT_STATE_WRITE_INTERVAL_NS);
		if (at <= now + s / 37)
			last = at;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_save_ignores_planted_tmp_symlink, clean),
	    cmocka_unit_test_setup(test_save_replaces_stale_tmp, clean),
	    cmocka_unit_test_setup(test_load_refuses_fifo_without_blocking, clean),
	    cmocka_unit_test_setup(test_load_refuses_symlink, clean),
	    cmocka_unit_test_setup(test_load_refuses_big_file, clean),
	    cmocka_unit_test_setup(test_dir_check, clean),
	    cmocka_unit_test_setup(test_write_interval, clean),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
