/* SPDX-License-Identifier: MIT */
/* loop.h - event loops' API: epoll registrations with typed references, run queues, workers. */
#ifndef VNETD_LOOP_H
#define VNETD_LOOP_H

/* The folder's one public header: the event loop and the worker threads that run it. */
#include "loop/event_loop.h"
#include "loop/worker.h"

#endif
