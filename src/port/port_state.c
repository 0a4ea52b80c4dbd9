/* SPDX-License-Identifier: MIT */
/* port_state.c - the --state-dir file of a port: JSON (jansson), parsed as hostile input. */
/*
 * Version 3 (version 1 lacks "rx" and "rss", version 2 "rss"; all three are read):
 *   {"version":3,"socket":"/run/vm1.sock","queues":[[32,64,"host"],[0,0,"none"],[0,0,"none"]],
 *    "rx":{"mode":["promisc"],"mac":null,"unicast":["52:54:00:12:34:56"],"multicast":[],
 *          "unicast_overflow":false,"multicast_overflow":false},
 *    "rss":null}
 * "rss" (port_state_rss.c): null, or the driver's RSS settings.
 * Version 4 adds "packed": where packed queues stopped (port_state_ring.c); written only when
 * one did, so a port without packed rings still writes version 3 or less.
 */
#include "port/port_state.h"
#include "port/port.h" /* the folder's API this file defines part of */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/err_msg.h"
#include "lib/hex_text.h"
#include "lib/log.h"
#include "port/port_state_ring.h"

static bool get_u32(json_t *v, uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)UINT32_MAX)
		return false;
	*out = (uint32_t)json_integer_value(v);
	return true;
}

static const char *const rx_mode_names[] = {"promisc", "allmulti", "alluni",
					     "nomulti", "nouni",    "nobcast"};

/* "52:54:00:12:34:56" (either case, nothing else) into mac; false if it is not one. */
static bool get_mac(json_t *v, uint8_t mac[6])
{
	const char *s = json_string_value(v);

	/* The length too: a string with a NUL inside ends early for hex_parse_mac(). */
	return s && json_string_length(v) == 17 && hex_parse_mac(s, mac);
}

/* One MAC table: an array of at most VNET_MAC_TABLE_SIZE MACs; none if it overflowed. */
static bool get_table(json_t *v, bool overflow, uint8_t (*table)[6], uint8_t *n)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) > VNET_MAC_TABLE_SIZE ||
	    (overflow && json_array_size(v) != 0))
		return false;
	json_array_foreach(v, i, e)
		if (!get_mac(e, table[i]))
			return false;
	*n = (uint8_t)json_array_size(v);
	return true;
}

/* The "rx" object: exactly its six keys, each of its one type. */
static int parse_rx(json_t *rx, struct port_state_rx *out, char *err, size_t err_len)
{
	json_t *mode = json_object_get(rx, "mode"), *mac = json_object_get(rx, "mac"), *v;
	json_t *uo = json_object_get(rx, "unicast_overflow");
	json_t *mo = json_object_get(rx, "multicast_overflow");
	size_t i;

	if (!json_is_object(rx) || json_object_size(rx) != 6 || !json_is_array(mode) ||
	    !json_is_boolean(uo) || !json_is_boolean(mo) || (!json_is_null(mac) && !json_is_string(mac)))
		return err_msg(err, err_len, "\"rx\" must be {mode, mac, unicast, multicast, "
			       "unicast_overflow, multicast_overflow}");
	json_array_foreach(mode, i, v) {
		unsigned bit = 0;

		while (bit < 6 && !(json_is_string(v) &&
				    strcmp(json_string_value(v), rx_mode_names[bit]) == 0))
			bit++;
		if (bit == 6 || (out->mode & (1u << bit)))
			return err_msg(err, err_len, "rx mode %zu: not one of promisc, allmulti, "
				       "alluni, nomulti, nouni, nobcast (each once)", i);
		out->mode |= (uint8_t)(1u << bit);
	}
	out->mac_set = json_is_string(mac);
	if (out->mac_set && !get_mac(mac, out->mac))
		return err_msg(err, err_len, "rx mac: not a MAC address");
	out->uc_overflow = json_is_true(uo);
	out->mc_overflow = json_is_true(mo);
	if (!get_table(json_object_get(rx, "unicast"), out->uc_overflow, out->uc, &out->n_uc) ||
	    !get_table(json_object_get(rx, "multicast"), out->mc_overflow, out->mc, &out->n_mc))
		return err_msg(err, err_len, "rx tables: arrays of at most %d MAC addresses (none "
			       "when overflowed)", VNET_MAC_TABLE_SIZE);
	out->present = true;
	return 0;
}

/**
 * port_state_parse() - a state file's text into what it keeps.
 * @text: the text, text[0..len) (hostile: any bytes, need not be NUL-terminated)
 * @len: its length
 * @socket: the port's socket: the file must name the same one
 * @nqueues: the port's queues (a file with more is refused)
 * @out: what the file says
 * @err: one line on failure
 * @err_len: its size
 *
 * Any thread; no state.
 *
 * Return: 0, or -1 (err set).
 */
int port_state_parse(const char *text, size_t len, const char *socket, unsigned nqueues,
		     struct port_state *out, char *err, size_t err_len)
{
	json_error_t jerr;
	json_t *root, *queues, *v, *sock;
	size_t i;
	int r = -1;

	memset(out, 0, sizeof(*out));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return err_msg(err, err_len, "line %d column %d: %s", jerr.line, jerr.column,
			       jerr.text);
	v = json_object_get(root, "version");
	/* Version 1: version, socket, queues; version 2 adds rx, 3 rss, 4 packed. */
	if (!json_is_object(root) || !json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > PORT_STATE_VERSION ||
	    json_object_size(root) != (size_t)(2 + json_integer_value(v))) {
		err_msg(err, err_len, "not a version 1, 2, 3 or 4 state object");
		goto out;
	}
	if (json_integer_value(v) >= 2 &&
	    parse_rx(json_object_get(root, "rx"), &out->rx, err, err_len) < 0)
		goto out;
	if (json_integer_value(v) >= 3 &&
	    port_state_rss_parse(json_object_get(root, "rss"), nqueues / 2, &out->rss, err,
				 err_len) < 0)
		goto out;
	if (json_integer_value(v) >= 4 &&
	    port_state_ring_parse(json_object_get(root, "packed"), nqueues, out->ring, err,
				  err_len) < 0)
		goto out;
	sock = json_object_get(root, "socket");
	if (!json_is_string(sock) || strcmp(json_string_value(sock), socket) != 0) {
		err_msg(err, err_len, "the file is for another socket");
		goto out;
	}
	queues = json_object_get(root, "queues");
	if (!json_is_array(queues) || json_array_size(queues) > nqueues) {
		err_msg(err, err_len, "\"queues\" must be an array of at most %u", nqueues);
		goto out;
	}
	json_array_foreach(queues, i, v) {
		const char *who;

		if (!json_is_array(v) || json_array_size(v) != 3 ||
		    !get_u32(json_array_get(v, 0), &out->q[i].params.max_packets) ||
		    !get_u32(json_array_get(v, 1), &out->q[i].params.max_usecs) ||
		    !json_is_string(json_array_get(v, 2))) {
			err_msg(err, err_len, "queue %zu: expected [frames, usecs, setter]", i);
			goto out;
		}
		who = json_string_value(json_array_get(v, 2));
		if (strcmp(who, "guest") == 0)
			out->q[i].setter = COAL_SET_GUEST;
		else if (strcmp(who, "host") == 0)
			out->q[i].setter = COAL_SET_HOST;
		else if (strcmp(who, "none") == 0)
			out->q[i].setter = COAL_SET_NONE;
		else {
			err_msg(err, err_len, "queue %zu: setter must be guest, host or none", i);
			goto out;
		}
	}
	out->nqueues = (unsigned)json_array_size(queues);
	r = 0;
out:
	if (r < 0)
		memset(out, 0, sizeof(*out));
	json_decref(root);
	return r;
}

static json_t *mac_string(const uint8_t m[6])
{
	char s[18];

	snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return json_string(s);
}

static json_t *format_table(const uint8_t (*table)[6], unsigned n)
{
	json_t *a = json_array();

	for (unsigned i = 0; i < n && a; i++)
		json_array_append_new(a, mac_string(table[i]));
	return a;
}

static json_t *format_rx(const struct port_state_rx *rx)
{
	json_t *mode = json_array();

	for (unsigned bit = 0; bit < 6 && mode; bit++)
		if (rx->mode & (1u << bit))
			json_array_append_new(mode, json_string(rx_mode_names[bit]));
	return json_pack("{s:o,s:o,s:o,s:o,s:b,s:b}", "mode", mode, "mac",
			 rx->mac_set ? mac_string(rx->mac) : json_null(), "unicast",
			 format_table(rx->uc, rx->n_uc), "multicast", format_table(rx->mc, rx->n_mc),
			 "unicast_overflow", rx->uc_overflow, "multicast_overflow", rx->mc_overflow);
}

/**
 * port_state_rx_from() - what a state file keeps of a device's receive filter.
 * @out: zeroed, then filled
 * @f: the device's filter (RX mode and MAC tables)
 * @mac: the device's MAC now
 * @cfg_mac: the port's configured MAC: mac_set only when mac differs from it
 */
void port_state_rx_from(struct port_state_rx *out, const struct vnet_rx_filter *f,
			const uint8_t mac[6], const uint8_t cfg_mac[6])
{
	memset(out, 0, sizeof(*out));
	out->present = true;
	out->mode = (uint8_t)(f->promisc * PORT_RX_PROMISC | f->allmulti * PORT_RX_ALLMULTI |
			      f->alluni * PORT_RX_ALLUNI | f->nomulti * PORT_RX_NOMULTI |
			      f->nouni * PORT_RX_NOUNI | f->nobcast * PORT_RX_NOBCAST);
	out->mac_set = memcmp(mac, cfg_mac, 6) != 0;
	if (out->mac_set)
		memcpy(out->mac, mac, 6);
	out->uc_overflow = f->uc_overflow;
	out->mc_overflow = f->mc_overflow;
	out->n_uc = (uint8_t)(f->n_uc <= VNET_MAC_TABLE_SIZE ? f->n_uc : 0);
	out->n_mc = (uint8_t)(f->n_mc <= VNET_MAC_TABLE_SIZE ? f->n_mc : 0);
	memcpy(out->uc, f->uc, out->n_uc * 6u);
	memcpy(out->mc, f->mc, out->n_mc * 6u);
}

/**
 * port_state_rx_filter() - the device filter a state file's RX part describes.
 * @in: what the file keeps
 * @f: the filter (fully written)
 */
void port_state_rx_filter(const struct port_state_rx *in, struct vnet_rx_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->promisc = in->mode & PORT_RX_PROMISC;
	f->allmulti = in->mode & PORT_RX_ALLMULTI;
	f->alluni = in->mode & PORT_RX_ALLUNI;
	f->nomulti = in->mode & PORT_RX_NOMULTI;
	f->nouni = in->mode & PORT_RX_NOUNI;
	f->nobcast = in->mode & PORT_RX_NOBCAST;
	f->uc_overflow = in->uc_overflow;
	f->mc_overflow = in->mc_overflow;
	f->n_uc = in->n_uc <= VNET_MAC_TABLE_SIZE ? in->n_uc : 0;
	f->n_mc = in->n_mc <= VNET_MAC_TABLE_SIZE ? in->n_mc : 0;
	memcpy(f->uc, in->uc, f->n_uc * 6u);
	memcpy(f->mc, in->mc, f->n_mc * 6u);
}

/**
 * port_state_format() - the JSON port_state_parse() reads.
 * @st: the state: version 4 when a packed position is kept (st->ring), 3 with
 *      st->rss.present, 2 with st->rx.present, else 1
 * @socket: the port's socket (named in the file)
 *
 * Return: the text, malloc'd (the caller frees it), or NULL if out of memory.
 */
char *port_state_format(const struct port_state *st, const char *socket)
{
	json_t *queues = json_array(), *root;
	bool rings = port_state_ring_any(st->ring, VNET_MAX_QUEUES);
	char *text;

	for (unsigned i = 0; i < st->nqueues && queues; i++)
		json_array_append_new(queues, json_pack("[I,I,s]",
							(json_int_t)st->q[i].params.max_packets,
							(json_int_t)st->q[i].params.max_usecs,
							coal_setter_name(st->q[i].setter)));
	root = json_pack("{s:i,s:s,s:o}", "version",
			 rings ? 4 : st->rss.present ? 3 : st->rx.present ? 2 : 1, "socket", socket,
			 "queues", queues);
	if (root && (st->rx.present || st->rss.present || rings) &&
	    json_object_set_new(root, "rx", format_rx(&st->rx)) < 0) {
		json_decref(root);
		root = NULL;
	}
	if (root && (st->rss.present || rings) &&
	    json_object_set_new(root, "rss", port_state_rss_format(&st->rss)) < 0) {
		json_decref(root);
		root = NULL;
	}
	if (root && rings &&
	    json_object_set_new(root, "packed", port_state_ring_format(st->ring, VNET_MAX_QUEUES)) < 0) {
		json_decref(root);
		root = NULL;
	}
	if (!root)
		return NULL;
	text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return text;
}

/**
 * port_state_file_name() - the state file's name in the state directory.
 * @socket: the port's socket (hashed into the name)
 * @name: the name
 * @len: its size
 */
void port_state_file_name(const char *socket, char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */

	for (const unsigned char *p = (const unsigned char *)socket; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	snprintf(name, len, "port-%016llx.json", (unsigned long long)h);
}

/**
 * port_state_load() - read and parse the port's state file in the state directory.
 * @dirfd: the state directory
 * @socket: the port's socket (names the file; the file must name it too)
 * @nqueues: the port's queues (a file with more is refused)
 * @out: what the file says (zeroed when it says nothing usable)
 * @err: one line on failure
 * @err_len: its size
 *
 * The name is never followed as a symlink and the open never waits (O_NONBLOCK: a FIFO there
 * would block until someone writes it); anything but a regular file of at most PORT_STATE_MAX
 * bytes is refused.
 *
 * Return: 0, 1 when there is no file, -1 (err set).
 */
int port_state_load(int dirfd, const char *socket, unsigned nqueues, struct port_state *out,
		    char *err, size_t err_len)
{
	char name[64], *buf;
	size_t len = 0;
	ssize_t n = 0;
	struct stat st;
	int fd, r;

	memset(out, 0, sizeof(*out));
	port_state_file_name(socket, name, sizeof(name));
	fd = openat(dirfd, name, PORT_STATE_READ_FLAGS);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		return err_msg(err, err_len, "%s: %s", name,
			       errno == ELOOP ? "a symlink (not followed)" : strerror(errno));
	}
	if (fstat(fd, &st) < 0)
		r = err_msg(err, err_len, "%s: %s", name, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		r = err_msg(err, err_len, "%s: not a regular file", name);
	else if (st.st_size > PORT_STATE_MAX)
		r = err_msg(err, err_len, "%s: too large", name);
	else
		r = 0;
	if (r < 0) {
		close(fd);
		return r;
	}
	buf = malloc(PORT_STATE_MAX + 1);
	if (!buf) {
		close(fd);
		return err_msg(err, err_len, "out of memory");
	}
	while (len <= PORT_STATE_MAX && (n = read(fd, buf + len, PORT_STATE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	if (n < 0)
		r = err_msg(err, err_len, "%s: %s", name, strerror(errno));
	else if (len > PORT_STATE_MAX)
		r = err_msg(err, err_len, "%s: too large", name);
	else
		r = port_state_parse(buf, len, socket, nqueues, out, err, err_len);
	close(fd);
	free(buf);
	return r;
}

/* write_all() - text[0..len) to fd; 0, or -1 (errno set). */
static int write_all(int fd, const char *text, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/*
 * open_new() - create `tmp` in dirfd as a new file. Whatever is at that name (a crash's
 * leftover, or a symlink or FIFO someone planted) is unlinked, never opened: once, then the
 * name is given up on.
 */
static int open_new(int dirfd, const char *tmp)
{
	int fd = openat(dirfd, tmp, PORT_STATE_WRITE_FLAGS, 0600);

	if (fd < 0 && errno == EEXIST && unlinkat(dirfd, tmp, 0) == 0)
		fd = openat(dirfd, tmp, PORT_STATE_WRITE_FLAGS, 0600);
	return fd;
}

/**
 * port_state_save() - write the port's state file in the state directory.
 * @dirfd: the state directory (opened with PORT_STATE_DIR_FLAGS: fsync needs a real fd)
 * @socket: the port's socket
 * @st: what to keep
 *
 * A new file, `<name>.new`, is created (O_EXCL|O_NOFOLLOW: never someone else's file), written,
 * fsync'd and renamed over the old one, and then the directory is fsync'd: after a crash the
 * name holds the old content or the new one, never an empty or partial file.
 *
 * Return: 0, or -1 (logged, rate-limited; the old file is left as it was).
 */
int port_state_save(int dirfd, const char *socket, const struct port_state *st)
{
	char name[64], tmp[72], *text = port_state_format(st, socket);
	const char *step = "create";
	int fd;

	if (!text)
		return -1;
	port_state_file_name(socket, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.new", name);
	fd = open_new(dirfd, tmp);
	if (fd >= 0) {
		step = "write";
		if (write_all(fd, text, strlen(text)) == 0) {
			step = "fsync";
			if (fsync(fd) == 0)
				step = NULL;
		}
		if (close(fd) < 0 && !step)
			step = "close";
		if (!step && renameat(dirfd, tmp, dirfd, name) < 0)
			step = "rename";
		if (step) {
			int e = errno;

			unlinkat(dirfd, tmp, 0);
			errno = e;
		}
	}
	free(text);
	if (step) {
		log_guest("state: cannot write %s (%s of %s): %s", name, step, tmp, strerror(errno));
		return -1;
	}
	/* The rename itself is durable only once the directory is. */
	if (fsync(dirfd) < 0 && errno != EINVAL)
		log_guest("state: %s written, but fsync of the directory: %s", name, strerror(errno));
	return 0;
}

/**
 * port_state_write_at() - when to write a change made now, given the last write attempt.
 * @now_ns: CLOCK_MONOTONIC now
 * @last_ns: the last write attempt (0: none yet)
 *
 * Return: the deadline: the later of now + PORT_STATE_WRITE_BATCH_NS and last + the interval.
 */
uint64_t port_state_write_at(uint64_t now_ns, uint64_t last_ns)
{
	uint64_t soonest = now_ns + PORT_STATE_WRITE_BATCH_NS;

	if (last_ns && last_ns + PORT_STATE_WRITE_INTERVAL_NS > soonest)
		return last_ns + PORT_STATE_WRITE_INTERVAL_NS;
	return soonest;
}

/**
 * port_state_dir_check() - is the state directory safe to read and write files in?
 * @dirfd: the directory
 * @uid: vnetd's user (the --user one, else the current effective uid)
 * @err: one line on refusal
 * @err_len: its size
 *
 * Anyone who can write the directory can plant files there that vnetd reads at start (guest
 * settings it restores) or names it writes: group- or other-writable directories (sticky or
 * not) and directories owned by anyone but root or vnetd's user are refused.
 *
 * Return: 0, or -1 (err set).
 */
int port_state_dir_check(int dirfd, unsigned uid, char *err, size_t err_len)
{
	struct stat st;

	if (fstat(dirfd, &st) < 0)
		return err_msg(err, err_len, "%s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_msg(err, err_len, "not a directory");
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return err_msg(err, err_len, "refused: group or others can write to it (mode "
			       "%04o); make it 0700 (chmod go-w)", (unsigned)(st.st_mode & 07777));
	if (st.st_uid != 0 && st.st_uid != uid)
		return err_msg(err, err_len, "refused: owned by uid %u, neither root nor vnetd's "
			       "user (uid %u)", (unsigned)st.st_uid, uid);
	return 0;
}
