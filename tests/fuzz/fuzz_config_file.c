/* SPDX-License-Identifier: MIT */
/* fuzz_config_file.c - libFuzzer: the --config file parser, then each spec it yields. */
#include <stdint.h>
#include <string.h>

#include "config/config_file.h"
#include "config/port_spec.h"

static struct config_ports cp;
static struct port_config cfg[4];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct port_config *others[4];
	unsigned index[4], n = 0;
	char err[256];

	if (config_file_parse((const char *)data, size, &cp, err, sizeof(err)) < 0) {
		if (memchr(err, '\0', sizeof(err)) == NULL)
			__builtin_trap(); /* the error must be a terminated string */
		return 0;
	}
	/* The specs go through the run-time port parser as a reload would take them. */
	for (unsigned i = 0; i < cp.n && n < 4; i++) {
		if (memchr(cp.spec[i], '\0', CONFIG_SPEC_MAX) == NULL)
			__builtin_trap();
		if (port_spec_runtime(cp.spec[i], i, &cfg[n], others, index, n, err,
				      sizeof(err)) == 0) {
			others[n] = &cfg[n];
			index[n] = i;
			n++;
		}
	}
	return 0;
}
