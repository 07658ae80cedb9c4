/* The tests' backend (exec_test.c): jobs as plain children of the daemon, on this host's GPUs. */
#pragma once

struct gw_daemon;

/* Sets d->exec; 0. */
int gw_exec_test_open(struct gw_daemon *d);
