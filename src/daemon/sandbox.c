/* SPDX-License-Identifier: MIT */
/* sandbox.c - confinement after setup: privilege drop, no_new_privs, seccomp allow-list. */
#include "daemon/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/if_tun.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/log.h"
#include "lib/peer_io.h"

/*
 * meson passes VNETD_HAVE_SECCOMP=1/0 when it knows; without it, the header decides (meson links
 * libseccomp whenever it finds it, and the header comes with the same package).
 */
#if defined(VNETD_HAVE_SECCOMP) ? VNETD_HAVE_SECCOMP : __has_include(<seccomp.h>)
#define SANDBOX_SECCOMP 1
#include <seccomp.h>
#else
#define SANDBOX_SECCOMP 0
#endif

/*
 * drop_user() - become `name` for good: no supplementary group (but socket_gid, --socket-group,
 * when set), real/effective/saved gid and uid all the user's, and a check that root cannot be
 * regained. 0, or -1 (one line logged).
 */
static int drop_user(const char *name, long socket_gid)
{
	const gid_t sgid_keep = (gid_t)socket_gid;
	const struct passwd *pw;
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	uid_t uid;
	gid_t gid;

	errno = 0;
	pw = getpwnam(name);
	if (!pw) {
		log_err("sandbox: --user %s: %s", name, errno ? strerror(errno) : "no such user");
		return -1;
	}
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	if (uid != 0 && getuid() == uid && geteuid() == uid) {
		log_info("sandbox: already running as %s", name);
		return 0; /* and, not being root, unable to change groups anyway */
	}
	/* No supplementary group but --socket-group's: run-time sockets get it too (port_sock.c). */
	if (socket_gid >= 0 ? setgroups(1, &sgid_keep) < 0 : setgroups(0, NULL) < 0) {
		log_err("sandbox: --user %s: setgroups: %s", name, strerror(errno));
		return -1;
	}
	if (setresgid(gid, gid, gid) < 0) {
		log_err("sandbox: --user %s: setresgid(%u): %s", name, (unsigned)gid,
			strerror(errno));
		return -1;
	}
	if (setresuid(uid, uid, uid) < 0) {
		log_err("sandbox: --user %s: setresuid(%u): %s", name, (unsigned)uid,
			strerror(errno));
		return -1;
	}
	if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0 ||
	    ruid != uid || euid != uid || suid != uid || rgid != gid || egid != gid ||
	    sgid != gid) {
		log_err("sandbox: --user %s: ids did not change as asked", name);
		return -1;
	}
	/* Any of these succeeding means a saved or real id still held root. */
	if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0 || setgid(0) == 0)) {
		log_err("sandbox: --user %s: root could be regained after the drop", name);
		return -1;
	}
	return 0;
}

#if SANDBOX_SECCOMP

/* One allow rule: a system call, optionally restricted by up to two argument comparisons. */
struct sandbox_rule {
	int nr;
	unsigned nargs;
	struct scmp_arg_cmp args[2];
};

/* One rule a line reads better than what the formatter would make of these. */
/* clang-format off */
#define ALLOW(name) {.nr = SCMP_SYS(name)}
#define ALLOW_IF(name, a) {.nr = SCMP_SYS(name), .nargs = 1, .args = {a}}
#define ARG_EQ(n, v) {.arg = (n), .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)(v)}
#define ARG_CLEAR(n, bits) {.arg = (n), .op = SCMP_CMP_MASKED_EQ, .datum_a = (bits), .datum_b = 0}

/*
 * The allow-list: every system call vnetd makes after setup, and nothing else. Found by reading
 * src/ and by strace -f of the end-to-end workloads (UML on a tap and on the switch, a
 * frontend killed mid-transfer, QEMU with memfd memory, vnetctl requests, SIGTERM shutdown).
 * Grouped by the code that needs them. Opening files, creating sockets, connecting, binding,
 * changing memory protection and everything else get EPERM; see sandbox_kill below. Names a
 * system call lacks on some architecture (epoll_wait, unlink, fstat on arm64) are
 * skipped there by libseccomp.
 */
static const struct sandbox_rule sandbox_allow[] = {
	/* event loop (daemon.c, event_loop.c); nothing else waits */
	ALLOW(epoll_wait),
	ALLOW(epoll_pwait),
	ALLOW(epoll_ctl),
	/* data path and sockets: tap, kick/call/timer/signal fds, vhost-user, control clients */
	ALLOW(read),
	ALLOW(readv), /* tap RX straight into guest buffers */
	ALLOW(write),
	ALLOW(writev),
	ALLOW(io_uring_enter), /* taps' bursts; on rings made before, restricted to writes */
	ALLOW(recvmsg),	 /* vhost-user messages with SCM_RIGHTS fds */
	ALLOW(sendto),	 /* send(): vhost-user replies, UML call fds, control replies */
	ALLOW(accept4),	 /* vhost-user and control listeners */
	ALLOW(close),
	/* fds handed to us: O_NONBLOCK on kick fds, vhost-user and control sockets */
	ALLOW_IF(fcntl, ARG_EQ(1, F_GETFL)),
	ALLOW_IF(fcntl, ARG_EQ(1, F_SETFL)),
	/* tap offloads follow the guest's features (tap.c); nothing else goes to a driver */
	ALLOW_IF(ioctl, ARG_EQ(1, TUNSETOFFLOAD)),
	/* a multi-queue tap's queues follow the pairs the guest uses (IFF_DETACH/ATTACH_QUEUE) */
	ALLOW_IF(ioctl, ARG_EQ(1, TUNSETQUEUE)),
	/* coalescing deadlines (port.c), clocks (vDSO fallback) */
	ALLOW(timerfd_settime),
	ALLOW(clock_gettime),
	ALLOW(sysinfo), /* glibc's qsort() sizes its buffer by RAM (control.c latency percentiles) */
	/* guest memory (SET_MEM_TABLE: fstat, MAP_SHARED of the frontend's fds; guest_fault.c
	 * maps a zero page over a truncated one), malloc; never executable */
	ALLOW_IF(mmap, ARG_CLEAR(2, PROT_EXEC)),
	ALLOW(munmap),
	ALLOW_IF(mremap, ARG_EQ(3, MREMAP_MAYMOVE)),
	ALLOW(brk),
	ALLOW(fstat),
	ALLOW_IF(newfstatat, ARG_EQ(3, AT_EMPTY_PATH)), /* glibc's fstat() */
	/* shutdown: remove the sockets (daemon.c, port.c), exit */
	ALLOW(unlink),
	ALLOW(unlinkat),
	ALLOW(exit_group),
	ALLOW(exit),
	ALLOW(rt_sigreturn),
	ALLOW(restart_syscall),
	/* guest_fault.c's SIGBUS handler falls back to the default action for a real bug;
	 * abort() (assert, FORTIFY) blocks signals and raises SIGABRT at ourselves */
	ALLOW_IF(rt_sigaction, ARG_EQ(0, SIGBUS)),
	ALLOW_IF(rt_sigaction, ARG_EQ(0, SIGABRT)),
	ALLOW(rt_sigprocmask),
	ALLOW(getpid),
	ALLOW(gettid),
	/* fds the frontend shares (kick, call, error, device state): peer_io.c does not wait on
	 * them, whatever their O_NONBLOCK (RWF_NOWAIT, a poll() of no time, its write watchdog) */
	ALLOW(preadv2),
	ALLOW(pwritev2),
	ALLOW(poll),
	ALLOW(ppoll),
	/* ... and its write watchdog: sleeps (a tgkill of its signal to this process: below) */
	ALLOW(clock_nanosleep),
	/* AF_XDP ports (xdp.c, set up before the filter): TX kicks are sendto() and zero-copy
	 * RX kicks recvmsg() (above); closing one, libxdp reads its ring offsets to unmap them */
	ALLOW_IF(getsockopt, ARG_EQ(1, SOL_XDP)),
};

/*
 * Calls that no vnetd code path makes and that only injected code would: running another
 * program, forking, reaching into other processes, changing credentials or namespaces, loading
 * kernel code. These kill the process (logged by the kernel) instead of failing with EPERM.
 */
static const int sandbox_kill[] = {
	SCMP_SYS(execve),	  SCMP_SYS(execveat),	     SCMP_SYS(fork),
	SCMP_SYS(vfork),	  SCMP_SYS(clone),	     SCMP_SYS(clone3),
	SCMP_SYS(ptrace),	  SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
	SCMP_SYS(setuid),	  SCMP_SYS(setgid),	     SCMP_SYS(setreuid),
	SCMP_SYS(setregid),	  SCMP_SYS(setresuid),	     SCMP_SYS(setresgid),
	SCMP_SYS(setgroups),	  SCMP_SYS(setfsuid),	     SCMP_SYS(setfsgid),
	SCMP_SYS(capset),	  SCMP_SYS(unshare),	     SCMP_SYS(setns),
	SCMP_SYS(mount),	  SCMP_SYS(init_module),     SCMP_SYS(finit_module),
	SCMP_SYS(kexec_load),	  SCMP_SYS(bpf),
};

/*
 * Run-time ports (vnetctl port-add, a --config reload, a client port reconnecting): a unix
 * socket to listen on or to connect to, its timers, and a tap opened relative to /dev/net.
 * No other address family; files only through the directories sandbox_allow_openat() names.
 */
static const struct sandbox_rule sandbox_allow_runtime[] = {
	ALLOW_IF(socket, ARG_EQ(0, AF_UNIX)),
	ALLOW(bind),
	ALLOW(listen),
	ALLOW(connect),
	/* port_sock.c: the socket's mode before bind (fchmod, umask; never chmod by path), its
	 * group on the node opened O_PATH|O_NOFOLLOW (nothing read or written through it) and
	 * owned by us (geteuid), socket= removed only if it is a socket (lstat), a connect in
	 * progress (SO_ERROR) */
	ALLOW(fchmod),
	ALLOW_IF(openat, ARG_EQ(2, O_PATH | O_NOFOLLOW | O_CLOEXEC)),
	ALLOW_IF(fchownat, ARG_EQ(4, AT_EMPTY_PATH)),
	ALLOW(geteuid),
	ALLOW(umask),
	ALLOW(lstat),
	ALLOW_IF(newfstatat, ARG_EQ(3, AT_SYMLINK_NOFOLLOW)),
	ALLOW_IF(getsockopt, ARG_EQ(2, SO_ERROR)),
	ALLOW(timerfd_create),
	ALLOW(getrandom), /* the switch's hash key, when the first switch port comes at run time */
	ALLOW_IF(ioctl, ARG_EQ(1, TUNSETIFF)),
	ALLOW_IF(ioctl, ARG_EQ(1, TUNSETVNETHDRSZ)),
	ALLOW_IF(ioctl, ARG_EQ(1, TUNSETVNETLE)),
	ALLOW(renameat),  /* the state directory: a new file replaces the old one */
	ALLOW(fsync),     /* ... once it and then the directory are on disk (port_state.c) */
	/* --workers: the main thread parks the others for control requests (pthread mutex and
	 * condition variable) */
	ALLOW(futex),
};

/* clang-format on */

/* openat() relative to these directory fds only, with exactly these flags. */
#define SANDBOX_MAX_DIRS 8
static struct {
	int dirfd;
	int flags;
} open_dirs[SANDBOX_MAX_DIRS];
static unsigned n_open_dirs;

#ifndef SCMP_ACT_KILL_PROCESS /* libseccomp < 2.4: kill the calling thread (we have one) */
#define SCMP_ACT_KILL_PROCESS SCMP_ACT_KILL
#endif

/* add_rule() - one rule into ctx; 0, or -1 (logged). */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned nargs,
		    const struct scmp_arg_cmp *args)
{
	int r = seccomp_rule_add_array(ctx, action, nr, nargs, args);
	char *name;

	if (r == 0)
		return 0;
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	log_err("sandbox: seccomp rule for %s: %s", name ? name : "?", strerror(-r));
	free(name);
	return -1;
}

/*
 * install_filter() - load the allow-list: listed calls pass, the kill list kills, everything
 * else fails with EPERM (a libc fallback path fails softly instead of killing the daemon).
 * Other architectures' ABIs (e.g. i386 or x32 on x86-64) are killed outright (libseccomp's
 * default bad-arch action). Refusals are logged by the kernel where it supports that.
 */
static int install_filter(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	if (!ctx) {
		log_err("sandbox: seccomp_init failed");
		return -1;
	}
	/* Best effort: the kernel's audit log then names the refused call (API level >= 3). */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
	/* Every thread (the workers exist already) gets the filter, not only this one. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) < 0) {
		log_err("sandbox: cannot apply the filter to every thread");
		goto fail;
	}
	/* abort() may only signal this process, and only with SIGABRT; peer_io.c's write
	 * watchdog only this process's threads, with its signal. */
	if (add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2,
		     (const struct scmp_arg_cmp[]){ARG_EQ(0, getpid()), ARG_EQ(2, SIGABRT)}) < 0 ||
	    add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2,
		     (const struct scmp_arg_cmp[]){ARG_EQ(0, getpid()),
						   ARG_EQ(2, PEER_IO_WATCHDOG_SIGNAL)}) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(sandbox_allow) / sizeof(sandbox_allow[0]); i++)
		if (add_rule(ctx, SCMP_ACT_ALLOW, sandbox_allow[i].nr, sandbox_allow[i].nargs,
			     sandbox_allow[i].args) < 0)
			goto fail;
	for (size_t i = 0; i < sizeof(sandbox_allow_runtime) / sizeof(sandbox_allow_runtime[0]); i++)
		if (add_rule(ctx, SCMP_ACT_ALLOW, sandbox_allow_runtime[i].nr,
			     sandbox_allow_runtime[i].nargs, sandbox_allow_runtime[i].args) < 0)
			goto fail;
	for (unsigned i = 0; i < n_open_dirs; i++)
		if (add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 2,
			     (const struct scmp_arg_cmp[]){ARG_EQ(0, open_dirs[i].dirfd),
							   ARG_EQ(2, open_dirs[i].flags)}) < 0)
			goto fail;
	for (size_t i = 0; i < sizeof(sandbox_kill) / sizeof(sandbox_kill[0]); i++)
		if (add_rule(ctx, SCMP_ACT_KILL_PROCESS, sandbox_kill[i], 0, NULL) < 0)
			goto fail;
	r = seccomp_load(ctx);
	if (r < 0) {
		log_err("sandbox: loading the seccomp filter: %s (--no-sandbox runs without it)",
			strerror(-r));
		goto fail;
	}
	seccomp_release(ctx);
	return 0;
fail:
	seccomp_release(ctx);
	return -1;
}

#endif /* SANDBOX_SECCOMP */

/**
 * sandbox_allow_openat() - let the seccomp filter pass openat(dirfd, NAME, flags) for exactly
 * this dirfd and these flags (run-time taps, the config file, the state directory).
 * @dirfd: an open directory
 * @flags: the exact openat() flags the callers use
 *
 * Main thread, before sandbox_enter(). Without libseccomp there is no filter and nothing to do.
 *
 * Return: 0, or -1 for a bad @dirfd or too many directories.
 */
int sandbox_allow_openat(int dirfd, int flags)
{
#if SANDBOX_SECCOMP
	if (dirfd < 0 || n_open_dirs == SANDBOX_MAX_DIRS)
		return -1;
	open_dirs[n_open_dirs].dirfd = dirfd;
	open_dirs[n_open_dirs++].flags = flags;
#else
	(void)dirfd;
	(void)flags;
#endif
	return 0;
}

/**
 * sandbox_enter() - confine the process: --user, no_new_privs and the seccomp allow-list, unless
 * --no-sandbox (then only a warning).
 * @opts: the command line (user, no_sandbox)
 *
 * Main thread, once, when every fd exists and right before the event loop; the worker threads
 * must already run (their start-up system calls would be refused). Order matters: the user change
 * needs setgroups/setres*id, which the filter forbids afterwards.
 *
 * Return: 0, or -1 (logged).
 */
int sandbox_enter(const struct vnetd_options *opts)
{
	const char *user = opts->user;
	unsigned uid, gid;

	if (opts->no_sandbox) {
		log_warn("sandbox: disabled by --no-sandbox: no seccomp filter%s",
			 user[0] ? ", and --user is ignored" : ", no privilege drop");
		return 0;
	}
	if (user[0] && drop_user(user, opts->socket_gid) < 0)
		return -1;
	uid = (unsigned)getuid(); /* for the log line: getuid() is refused once the filter is in */
	gid = (unsigned)getgid();
	/* Work that would need a refused call later: jansson seeds its hash from /dev/urandom. */
	json_object_seed(0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		log_err("sandbox: PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		return -1;
	}
#if SANDBOX_SECCOMP
	if (install_filter() < 0)
		return -1;
	log_info("sandbox: uid %u gid %u, no_new_privs, seccomp allow-list of %zu rules "
		 "(others: EPERM, %zu calls kill the process)",
		 uid, gid,
		 sizeof(sandbox_allow) / sizeof(sandbox_allow[0]) + 1 +
			 sizeof(sandbox_allow_runtime) / sizeof(sandbox_allow_runtime[0]) + n_open_dirs,
		 sizeof(sandbox_kill) / sizeof(sandbox_kill[0]));
#else
	log_warn("sandbox: built without libseccomp: no system call filter "
		 "(uid %u gid %u, no_new_privs)",
		 uid, gid);
#endif
	return 0;
}
