/* sbatch's options, as a Slurm user writes them on #SBATCH lines, in gpuward's words. */
#pragma once
#include <stddef.h>

#define GW_SBATCH_NOTE_SIZE 400

struct gw_sbatch_words {
        char **argv; /* gpuward submit options, NULL-terminated, malloc'ed */
        int argc;
        char **notes; /* one line per directive not taken, NULL-terminated, malloc'ed */
        int nnotes;
};

/* Reads sbatch's words (the words of a script's #SBATCH lines, in order) and appends to
 * *out gpuward's options for those it has ("--gres=gpu:2" -> "--gpus" "2", "-t 30" ->
 * "--time" "30", "-d afterok:17" -> "--after" "17:ok") and, for each it does not take, a
 * note naming the directive and why.  Values are copied.  Returns 0, or -EINVAL with a
 * message in why for a directive that cannot be ignored safely (a dependency gpuward cannot
 * express: running early would be wrong).  *out is the caller's to clear with
 * gw_sbatch_words_done, on error too. */
int gw_sbatch_translate(char *const *words, int n, struct gw_sbatch_words *out, char *why, size_t why_len);

void gw_sbatch_words_done(struct gw_sbatch_words *w);

/* sbatch's "afterok:ID" / "afterany:ID" as --after reads it ("ID:ok"), into buf.  0, or
 * -EINVAL for any other dependency (gpuward waits on one job). */
int gw_sbatch_dependency(const char *v, char *buf, size_t size);

/* gpuward's word for a Slurm command ("squeue" -> "queue"), or NULL. */
const char *gw_slurm_verb(const char *slurm_command);

/* The hint for a Slurm-only long option of sbatch typed on `gpuward submit` ("--gres" ->
 * "--gpus N"), or NULL.  name is without its dashes and any "=value". */
const char *gw_sbatch_option_hint(const char *name);

/* Levenshtein distance between a and b, capped at cap (returns cap when larger). */
int gw_edit_distance(const char *a, const char *b, int cap);
