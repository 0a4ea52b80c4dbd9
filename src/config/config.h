/* SPDX-License-Identifier: MIT */
/* config.h - configuration's API: the command line, the --config file, the port spec grammar. */
#ifndef VNETD_CONFIG_H
#define VNETD_CONFIG_H

/*
 * The folder's one public header. A port as the command line describes it (port_config.h),
 * the daemon's options, the --config file and the port spec parser; the spec's keys, rules
 * and parse state stay private to this folder.
 */
#include "config/config_file.h"
#include "config/options.h"
#include "config/port_config.h"
#include "config/port_spec.h"

#endif
