/* SPDX-License-Identifier: MIT */
/* vnetctl_cmd.c - what every vnetctl command uses: a request to vnetd, its reply, usage errors. */
#include "vnetctl/vnetctl_cmd.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define REPLY_TIMEOUT_MS 5000
#define MAX_REPLY (64u * 1024 * 1024)

/**
 * usage_error() - print a usage error line (with the --help hint) on stderr.
 * @fmt: printf format of what was wrong
 * @...: its arguments
 *
 * Return: EXIT_USAGE, for the caller to return.
 */
int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vnetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see vnetctl --help)\n", stderr);
	return EXIT_USAGE;
}


/* ---- Talking to the daemon ----------------------------------------------------------------- */

static int ctl_connect(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = REPLY_TIMEOUT_MS / 1000};
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "vnetctl: control socket path too long: %s\n", path);
		return -1;
	}
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "vnetctl: socket: %s\n", strerror(errno));
		return -1;
	}
	/* On unix sockets the send timeout also bounds connect() when the backlog is full. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "vnetctl: cannot connect to %s: %s (is vnetd running? see "
			"--control)\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* read_reply_line() - one newline-terminated reply within the timeout; malloc'd, NUL-terminated. */
static char *read_reply_line(int fd)
{
	long long deadline = now_ms() + REPLY_TIMEOUT_MS, left;
	size_t len = 0, cap = 0;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char *buf = NULL, *grown, *nl;
	ssize_t n;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (cap > MAX_REPLY || !(grown = realloc(buf, cap))) {
				fprintf(stderr, "vnetctl: reply too large\n");
				break;
			}
			buf = grown;
		}
		left = deadline - now_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			fprintf(stderr, "vnetctl: no reply from vnetd within %d s\n",
				REPLY_TIMEOUT_MS / 1000);
			break;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "vnetctl: connection closed before a reply%s%s\n",
				n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			break;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			return buf;
		}
	}
	free(buf);
	return NULL;
}

/**
 * transact() - send one request line, return the reply text (*text, malloc'd) and its parsed
 * form (*reply).
 * @path: the control socket
 * @request: the request line, without its newline
 * @text: the reply line on success (malloc'd: the caller frees it)
 * @reply: its parsed form on success (a JSON object: the caller drops it)
 *
 * Return: 0, or EXIT_USAGE after printing why.
 */
int transact(const char *path, const char *request, char **text, json_t **reply)
{
	size_t len = strlen(request);
	char *line = malloc(len + 1);
	json_error_t jerr;
	int fd, ret;

	if (!line) {
		fprintf(stderr, "vnetctl: out of memory\n");
		return EXIT_USAGE;
	}
	memcpy(line, request, len);
	line[len] = '\n'; /* one write: the daemon may answer before a separate newline */
	fd = ctl_connect(path);
	ret = fd < 0 ? -1 : send_all(fd, line, len + 1);
	free(line);
	if (fd < 0)
		return EXIT_USAGE;
	if (ret < 0) {
		fprintf(stderr, "vnetctl: sending to %s: %s\n", path, strerror(errno));
		close(fd);
		return EXIT_USAGE;
	}
	*text = read_reply_line(fd);
	close(fd);
	if (!*text)
		return EXIT_USAGE;
	*reply = json_loads(*text, 0, &jerr);
	if (!json_is_object(*reply)) {
		fprintf(stderr, "vnetctl: malformed reply from vnetd: %s\n",
			*reply ? "not an object" : jerr.text);
		json_decref(*reply);
		free(*text);
		*text = NULL;
		return EXIT_USAGE;
	}
	return 0;
}

/**
 * reply_ok() - whether the daemon's reply is {"ok":true}; otherwise prints the daemon's error.
 * @reply: the reply object
 * @quiet: print nothing
 *
 * Return: true for {"ok":true}.
 */
bool reply_ok(json_t *reply, bool quiet)
{
	const char *err;

	if (json_is_true(json_object_get(reply, "ok")))
		return true;
	err = json_string_value(json_object_get(reply, "error"));
	if (!quiet)
		fprintf(stderr, "vnetctl: %s\n", err ? err : "request failed");
	return false;
}

/**
 * request() - send the request object and check its reply.
 * @path: the control socket
 * @req: the request (reference stolen), NULL when building it ran out of memory
 * @reply: the reply on success (the caller drops it)
 *
 * Return: EXIT_OK, EXIT_REPLY_ERROR (the daemon's error printed) or EXIT_USAGE.
 */
int request(const char *path, json_t *req, json_t **reply)
{
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	char *text = NULL;
	int ret;

	json_decref(req);
	if (!line) {
		fprintf(stderr, "vnetctl: out of memory\n");
		return EXIT_USAGE;
	}
	ret = transact(path, line, &text, reply);
	free(line);
	free(text);
	if (ret)
		return ret;
	if (!reply_ok(*reply, false)) {
		json_decref(*reply);
		return EXIT_REPLY_ERROR;
	}
	return EXIT_OK;
}

/**
 * port_value() - a PORT argument as the daemon takes it: "p0" stays a name, "3" becomes the
 * index 3.
 * @arg: the argument
 *
 * Return: a new JSON string or integer (JSON null for a string that is not UTF-8).
 */
json_t *port_value(const char *arg)
{
	json_t *s;

	if (arg[0] != '\0' && strspn(arg, "0123456789") == strlen(arg) && strlen(arg) < 10)
		return json_integer(atoll(arg));
	s = json_string(arg);
	return s ? s : json_null(); /* not UTF-8: let the daemon say it is no port */
}
