/* sandbox.c - confinement after setup (placeholder until the seccomp allow-list lands). */
#include "sandbox.h"

int sandbox_enter(const struct vnetd_options *opts)
{
	(void)opts;
	return 0;
}
