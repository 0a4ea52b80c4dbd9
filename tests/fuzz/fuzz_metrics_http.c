/* SPDX-License-Identifier: MIT */
/* fuzz_metrics_http.c - libFuzzer target: metrics.c's HTTP request rules and --metrics addresses.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "control/metrics.h"
#include "lib/listen_addr.h"

/*
 * Byte 0 selects: even: the rest is request bytes as received so far, for metrics_http_status();
 * odd: the rest is a --metrics value for listen_addr_parse(). Invariants are checked with
 * abort(), so a violation is a crash libFuzzer reports.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void http(const char *buf, size_t len)
{
	bool head = true;
	int st = metrics_http_status(buf, len, &head);

	if (st != 0 && st != 200 && st != 400 && st != 404 && st != 405 && st != 431)
		abort();
	if (head && st != 200 && st != 404)
		abort(); /* HEAD is only reported for a method that was understood */
	if (st == 0 && len >= METRICS_MAX_REQUEST)
		abort(); /* a client can never make vnetd buffer more than the limit */
	/* A complete request stays complete with more bytes after it (the answer is fixed). */
	if (st != 0 && st != 431 && len < 8192) {
		char *more = malloc(len + 1);
		bool head2;

		if (!more)
			return;
		memcpy(more, buf, len);
		more[len] = 'x';
		if (metrics_http_status(more, len + 1, &head2) != st || head2 != head)
			abort();
		free(more);
	}
}

static void addr(const char *buf, size_t len)
{
	char *s = malloc(len + 1);
	struct sockaddr_storage ss;
	socklen_t sl = 0;

	if (!s)
		return;
	memcpy(s, buf, len);
	s[len] = '\0';
	if (listen_addr_parse(s, &ss, &sl) == 0 &&
	    !((ss.ss_family == AF_INET && sl == sizeof(struct sockaddr_in)) ||
	      (ss.ss_family == AF_INET6 && sl == sizeof(struct sockaddr_in6))))
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		addr((const char *)data + 1, size - 1);
	else
		http((const char *)data + 1, size - 1);
	return 0;
}
