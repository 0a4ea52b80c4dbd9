/* SPDX-License-Identifier: MIT */
/* vnetctl_cmd.h - what every vnetctl command uses: a request to vnetd, its reply, usage errors. */
#ifndef VNETD_VNETCTL_CMD_H
#define VNETD_VNETCTL_CMD_H

#include <stdbool.h>

#include <jansson.h>

/* vnetctl's exit statuses. */
enum { EXIT_OK = 0, EXIT_REPLY_ERROR = 1, EXIT_USAGE = 2 };

/* usage_error() - "vnetctl: <what> (see vnetctl --help)" on stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* transact() - one request line to the daemon at path: its reply's text and parsed object. */
int transact(const char *path, const char *request, char **text, json_t **reply);

/* reply_ok() - true for {"ok":true}; otherwise prints the daemon's error (unless quiet). */
bool reply_ok(json_t *reply, bool quiet);

/* request() - send the request object (reference stolen); *reply on success (EXIT_OK). */
int request(const char *path, json_t *req, json_t **reply);

/* port_value() - a PORT argument as JSON: "p0" stays a name, "3" becomes the index 3. */
json_t *port_value(const char *arg);

#endif /* VNETD_VNETCTL_CMD_H */
