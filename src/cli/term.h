/* The terminal as a full screen for `gpuward top`, with plain ANSI/VT100 sequences and
 * termios (no curses): the alternate screen, a hidden cursor, keys read one at a time
 * without echo, and a restore that happens however the program leaves.
 *
 * The terminal is process-wide state, so this module keeps one global session; signal
 * handlers and atexit() need to reach it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Takes over the terminal: out_fd (a terminal) switches to the alternate screen with the
 * cursor hidden; in_fd, when >= 0 and a terminal, goes non-canonical without echo so that
 * single keys arrive at once.  Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * (recorded, see cli_term_take_signals; a second one before that restores the terminal
 * and dies of the signal), SIGWINCH and SIGCONT (recorded as a resize), and SIGTSTP
 * (restores the terminal, stops, takes it over again on resume).  Registers
 * cli_term_close with atexit.  *ret_wake_fd becomes readable whenever a signal was
 * recorded: poll it beside in_fd.  Returns 0, or -errno with nothing changed. */
int cli_term_open(int in_fd, int out_fd, int *ret_wake_fd);

/* Gives the terminal back as it was and restores the signal dispositions.  Safe to call
 * twice and when cli_term_open failed or never ran. */
void cli_term_close(void);

/* Consumes what signals were recorded since the last call: returns the quit signal (0 if
 * none) and sets *ret_resized when the window changed size or the program resumed
 * (redraw). */
int cli_term_take_signals(bool *ret_resized);

/* The window's size from TIOCGWINSZ; 24 x 80 when the terminal does not say. */
void cli_term_size(unsigned *ret_rows, unsigned *ret_cols);

/* The escape sequences that paint text (lines separated by '\n') over the whole screen:
 * every line cut to cols display columns, at most rows lines (the last one then says how
 * many more there were), the rest of the screen cleared.  Pure; malloc'ed, NULL when out
 * of memory. */
char *cli_term_compose(const char *text, unsigned rows, unsigned cols);

/* cli_term_compose, written to the terminal in one write.  0 or -errno. */
int cli_term_draw(const char *text, unsigned rows, unsigned cols);
