/* SPDX-License-Identifier: MIT */
/* listen_addr.c - a numeric listen address, "IPV4:PORT" or "[IPV6]:PORT", into a sockaddr (pure). */
#include "lib/listen_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/**
 * listen_addr_parse() - parse a listen address, numeric only (no name lookups).
 * @spec: "IPV4:PORT" or "[IPV6]:PORT", port 0..65535 (0: any free port)
 * @ss: out: the socket address
 * @len: out: its length
 *
 * Pure.
 *
 * Return: 0, or -1 for anything else.
 */
int listen_addr_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port_text, *h = host;
	unsigned long port;
	char *end;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	colon = strrchr(spec, ':');
	if (!colon || colon == spec)
		return -1;
	hlen = (size_t)(colon - spec);
	if (hlen >= sizeof(host))
		return -1;
	memcpy(host, spec, hlen);
	host[hlen] = '\0';
	port_text = colon + 1;
	if (port_text[0] < '0' || port_text[0] > '9')
		return -1;
	errno = 0;
	port = strtoul(port_text, &end, 10);
	if (errno || *end || port > 65535)
		return -1;
	if (host[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		if (hlen < 3 || host[hlen - 1] != ']')
			return -1;
		host[hlen - 1] = '\0';
		h = host + 1;
		if (inet_pton(AF_INET6, h, &a6->sin6_addr) != 1)
			return -1;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		return 0;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	if (inet_pton(AF_INET, h, &a4->sin_addr) != 1)
		return -1;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	*len = sizeof(*a4);
	return 0;
}
