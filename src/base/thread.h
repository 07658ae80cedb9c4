/* The daemon's helper threads (checkpoints, sampling, webhooks): every signal stays with the
 * main loop, which reads them through its signalfd. */
#pragma once
#include <pthread.h>

/* Starts fn(arg) with every signal blocked, named name (as `top -H` shows it).  0, or
 * pthread_create's error (positive). */
int gw_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);
/* A condition variable whose timed waits run on CLOCK_MONOTONIC: a wall-clock step does not
 * stretch them. */
void gw_cond_init_monotonic(pthread_cond_t *c);
