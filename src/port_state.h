/* port_state.h - what a port keeps across vnetd restarts (--state-dir): coalescing per queue. */
#ifndef VNETD_PORT_STATE_H
#define VNETD_PORT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coalesce.h"
#include "vnet_dev.h"

#define PORT_STATE_MAX (64 * 1024) /* larger state files are refused */
#define PORT_STATE_READ_FLAGS (O_RDONLY | O_CLOEXEC)
#define PORT_STATE_WRITE_FLAGS (O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC)

/*
 * Settings a frontend cannot resend after a restart: the coalescing parameters each queue used
 * and who set them (the host with vnetctl coalesce, or the guest's driver, which believes its
 * ethtool -C values still hold). Zero-initialise before filling: structs are compared whole.
 */
struct port_state {
	unsigned nqueues;
	struct {
		struct coal_params params;
		uint8_t setter; /* enum coal_setter */
	} q[VNET_MAX_QUEUES];
};

/*
 * port_state_parse() - text[0..len) (hostile: any bytes) into *out, for a port on `socket`
 * (the file must name the same socket) with nqueues queues (more in the file: refused).
 * 0, or -1 with one line in err.
 */
int port_state_parse(const char *text, size_t len, const char *socket, unsigned nqueues,
		     struct port_state *out, char *err, size_t err_len);

/* port_state_format() - *st as the JSON port_state_parse() reads; malloc'd, NULL if no memory. */
char *port_state_format(const struct port_state *st, const char *socket);

/* port_state_file_name() - the file's name in the state directory: from a hash of socket. */
void port_state_file_name(const char *socket, char *name, size_t len);

/* port_state_load() - read and parse the port's file in dirfd; 0, 1 none there, -1 (err). */
int port_state_load(int dirfd, const char *socket, unsigned nqueues, struct port_state *out,
		    char *err, size_t err_len);

/* port_state_save() - write the file (a new one renamed over the old); 0 or -1 (logged). */
int port_state_save(int dirfd, const char *socket, const struct port_state *st);

#endif
