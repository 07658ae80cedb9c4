/* #GPUWARD directives at the top of a batch script, as sbatch reads #SBATCH. */
#pragma once
#include <stddef.h>

/* Reads directives from the script text (NUL-terminated): lines "#GPUWARD --opt value ..."
 * in the leading block of comment and blank lines (a #! line first is fine); stops at the
 * first line that is neither.  Each directive line is split on whitespace, with single and
 * double quotes grouping words, and the words are appended to *argv (a NULL-terminated,
 * malloc'ed array the caller frees with gw_strv_free; *argc updated).
 * Returns the number of directive lines read, or -EINVAL with *ret_line set to the
 * offending line number (1-based) for an unterminated quote, or -E2BIG past 256 words. */
int gw_directives_parse(const char *text, char ***argv, int *argc, int *ret_line);

/* The same for another prefix ("#SBATCH"): a word starting with '#'. */
int gw_directives_parse_prefix(const char *text, const char *prefix, char ***argv, int *argc, int *ret_line);

void gw_strv_free(char **v);
static inline void gw_strv_freep(char ***v) { gw_strv_free(*v); }
