/* port_state.c - the --state-dir file of a port: JSON (jansson), parsed as hostile input. */
#include "port_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"

static int fail(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -1;
}

static bool get_u32(json_t *v, uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)UINT32_MAX)
		return false;
	*out = (uint32_t)json_integer_value(v);
	return true;
}

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
		return fail(err, err_len, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	v = json_object_get(root, "version");
	if (!json_is_object(root) || json_object_size(root) != 3 || !json_is_integer(v) ||
	    json_integer_value(v) != 1) {
		fail(err, err_len, "not a version 1 state object");
		goto out;
	}
	sock = json_object_get(root, "socket");
	if (!json_is_string(sock) || strcmp(json_string_value(sock), socket) != 0) {
		fail(err, err_len, "the file is for another socket");
		goto out;
	}
	queues = json_object_get(root, "queues");
	if (!json_is_array(queues) || json_array_size(queues) > nqueues) {
		fail(err, err_len, "\"queues\" must be an array of at most %u", nqueues);
		goto out;
	}
	json_array_foreach(queues, i, v) {
		const char *who;

		if (!json_is_array(v) || json_array_size(v) != 3 ||
		    !get_u32(json_array_get(v, 0), &out->q[i].params.max_packets) ||
		    !get_u32(json_array_get(v, 1), &out->q[i].params.max_usecs) ||
		    !json_is_string(json_array_get(v, 2))) {
			fail(err, err_len, "queue %zu: expected [frames, usecs, setter]", i);
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
			fail(err, err_len, "queue %zu: setter must be guest, host or none", i);
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

char *port_state_format(const struct port_state *st, const char *socket)
{
	json_t *queues = json_array(), *root;
	char *text;

	for (unsigned i = 0; i < st->nqueues && queues; i++)
		json_array_append_new(queues, json_pack("[I,I,s]",
							(json_int_t)st->q[i].params.max_packets,
							(json_int_t)st->q[i].params.max_usecs,
							coal_setter_name(st->q[i].setter)));
	root = json_pack("{s:i,s:s,s:o}", "version", 1, "socket", socket, "queues", queues);
	if (!root)
		return NULL;
	text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return text;
}

void port_state_file_name(const char *socket, char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */

	for (const unsigned char *p = (const unsigned char *)socket; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	snprintf(name, len, "port-%016llx.json", (unsigned long long)h);
}

int port_state_load(int dirfd, const char *socket, unsigned nqueues, struct port_state *out,
		    char *err, size_t err_len)
{
	char name[64], *buf;
	size_t len = 0;
	ssize_t n;
	int fd, r;

	memset(out, 0, sizeof(*out));
	port_state_file_name(socket, name, sizeof(name));
	fd = openat(dirfd, name, PORT_STATE_READ_FLAGS);
	if (fd < 0)
		return errno == ENOENT ? 1 : fail(err, err_len, "%s: %s", name, strerror(errno));
	buf = malloc(PORT_STATE_MAX + 1);
	if (!buf) {
		close(fd);
		return fail(err, err_len, "out of memory");
	}
	while (len <= PORT_STATE_MAX && (n = read(fd, buf + len, PORT_STATE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	r = len > PORT_STATE_MAX ? fail(err, err_len, "%s: too large", name)
				 : port_state_parse(buf, len, socket, nqueues, out, err, err_len);
	free(buf);
	return r;
}

int port_state_save(int dirfd, const char *socket, const struct port_state *st)
{
	char name[64], tmp[72], *text = port_state_format(st, socket);
	size_t len, off = 0;
	ssize_t n = 0;
	int fd;

	if (!text)
		return -1;
	port_state_file_name(socket, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.new", name);
	fd = openat(dirfd, tmp, PORT_STATE_WRITE_FLAGS, 0600);
	len = strlen(text);
	while (fd >= 0 && off < len && (n = write(fd, text + off, len - off)) > 0)
		off += (size_t)n;
	free(text);
	if (fd >= 0 && off < len) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 || close(fd) < 0 || renameat(dirfd, tmp, dirfd, name) < 0) {
		log_err("state: cannot write %s: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}
