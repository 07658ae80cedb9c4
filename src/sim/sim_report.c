/* Output: the comparison table, JSON, and the SVG plot (written by hand: no library). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/parse.h"
#include "base/text.h"
#include "sim/sim.h"

static double pct(double a, double b) { return b > 0 ? 100.0 * a / b : 0; }

static const char *dur(double s, char *buf, size_t n) {
        if (s < 60) {
                snprintf(buf, n, "%.0fs", s);
                return buf;
        }
        return gw_format_duration((gw_usec_t) (s * (double) GW_SIM_SEC) / GW_SIM_MIN * GW_SIM_MIN, buf, n);
}

void gw_sim_print_shape(FILE *f, const struct gw_sim_shape *s) {
        fprintf(f,
                "workload: %zu jobs; runtime p50 %.0f min, p90 %.2f h, p99 %.1f h; %.0f%% 1-GPU, multi-GPU jobs "
                "hold %.0f%% of GPU-time; %.0f%% killed/failed/stalled/forgotten (crash %.0f%% hw + %.0f%% bug, "
                "cancel %.0f%%, stall %.0f%%, forgotten interactive %.0f%%); leaking %.1f%%, booked %.0f%%\n",
                s->n, s->runtime_p50_s / 60, s->runtime_p90_s / 3600, s->runtime_p99_s / 3600, 100 * s->one_gpu_frac,
                100 * s->multi_gpu_time_frac, 100 * s->killed_failed_frac, 100 * s->hw_fail_frac,
                100 * s->bug_fail_frac, 100 * s->cancel_frac, 100 * s->stall_frac, 100 * s->interactive_frac,
                100 * s->leak_frac, 100 * s->booked_frac);
}

void gw_sim_print_table(FILE *f, const struct gw_sim_result *r, size_t n) {
        char a[24], b[24], c[24];

        fprintf(f, "%-16s %6s %6s %10s %9s %8s %8s %8s %6s %6s %6s %9s %8s\n", "config", "util%", "alloc%",
                "idle-GPU-h", "lost-GPU-h", "wait-p50", "wait-p90", "wait-p99", "done", "failed", "reclmd", "wrongful",
                "retries");
        for (size_t i = 0; i < n; i++) {
                const struct gw_sim_result *x = &r[i];
                fprintf(f, "%-16s %6.1f %6.1f %10.1f %9.1f %8s %8s %8s %6zu %6zu %6zu %9zu %8zu\n", x->name,
                        pct(x->busy_gpu_h, x->capacity_gpu_h), pct(x->held_gpu_h, x->capacity_gpu_h), x->stalled_gpu_h,
                        x->lost_gpu_h, dur(x->wait_p50_s, a, sizeof(a)), dur(x->wait_p90_s, b, sizeof(b)),
                        dur(x->wait_p99_s, c, sizeof(c)), x->completed, x->failed, x->reclaimed, x->wrongful,
                        x->retries);
        }
        fprintf(f, "\n%-16s %9s %9s %9s %8s %8s %9s %9s %10s\n", "config", "submitted", "cancelled", "timed-out",
                "warned", "crashlp", "queued@end", "run@end", "passed-0%");
        for (size_t i = 0; i < n; i++) {
                const struct gw_sim_result *x = &r[i];
                fprintf(f, "%-16s %9zu %9zu %9zu %8zu %8zu %9zu %9zu %9.1f%%\n", x->name, x->submitted, x->cancelled,
                        x->timed_out, x->warnings, x->crash_loops, x->queued_at_end, x->running_at_end,
                        100 * x->passed_zero_frac);
        }
        fprintf(f, "\n%-16s %6s %8s %10s %7s %8s %9s %7s %7s %8s %7s\n", "config", "oom", "leak-det", "leak-rstrt",
                "leak-h", "gpu-flt", "on-broken", "drain-h", "booked", "bk-later", "no-show");
        for (size_t i = 0; i < n; i++) {
                const struct gw_sim_result *x = &r[i];
                fprintf(f, "%-16s %6zu %8zu %10zu %7.1f %8zu %9zu %7.1f %7zu %8zu %7zu\n", x->name, x->oom_crashes,
                        x->leaks_detected, x->leak_restarts, x->lost_leak_gpu_h, x->gpu_faults, x->faults_on_broken,
                        x->drained_gpu_h, x->bookings, x->bookings_later, x->booking_no_shows);
        }
}

/* JSON string: the only strings written are config names and a title from the command line. */
static void json_str(FILE *f, const char *s) {
        fputc('"', f);
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if (ch == '"' || ch == '\\')
                        fprintf(f, "\\%c", ch);
                else if (ch < 0x20)
                        fprintf(f, "\\u%04x", ch);
                else
                        fputc(ch, f);
        }
        fputc('"', f);
}

static void json_costs(FILE *f, const struct gw_sim_result *x) {
        bool first = true;

        fputs(",\"plan_cost\":[", f);
        for (unsigned b = 0; b < GW_SIM_COST_BUCKETS; b++) {
                const struct gw_sim_cost *c = &x->cost[b];
                if (!c->n)
                        continue;
                fprintf(f, "%s{\"pending_from\":%llu,\"plans\":%llu,\"mean_us\":%.3f,\"max_us\":%.3f}",
                        first ? "" : ",", b ? 1ULL << b : 0ULL, (unsigned long long) c->n,
                        c->ns_sum / (double) c->n / 1000.0, c->ns_max / 1000.0);
                first = false;
        }
        fputc(']', f);
}

void gw_sim_print_json(FILE *f, const char *title, const struct gw_sim_shape *s, const struct gw_sim_result *r,
                       size_t n) {
        fputs("{\"title\":", f);
        json_str(f, title);
        fprintf(f,
                ",\"workload\":{\"jobs\":%zu,\"runtime_p50_s\":%.1f,\"runtime_p90_s\":%.1f,\"runtime_p99_s\":%.1f,"
                "\"one_gpu_frac\":%.4f,\"multi_gpu_time_frac\":%.4f,\"killed_failed_frac\":%.4f,"
                "\"interactive_frac\":%.4f},\"runs\":[",
                s->n, s->runtime_p50_s, s->runtime_p90_s, s->runtime_p99_s, s->one_gpu_frac, s->multi_gpu_time_frac,
                s->killed_failed_frac, s->interactive_frac);
        for (size_t i = 0; i < n; i++) {
                const struct gw_sim_result *x = &r[i];
                fputs(i ? ",{\"config\":" : "{\"config\":", f);
                json_str(f, x->name);
                fprintf(f,
                        ",\"measured_h\":%.3f,\"capacity_gpu_h\":%.3f,\"busy_gpu_h\":%.3f,\"held_gpu_h\":%.3f,"
                        "\"utilisation_pct\":%.3f,\"allocation_pct\":%.3f,\"idle_held_gpu_h\":%.3f,"
                        "\"lost_gpu_h\":%.3f,\"lost_reclaim_gpu_h\":%.3f,\"wait_p50_s\":%.1f,\"wait_p90_s\":%.1f,"
                        "\"wait_p99_s\":%.1f,\"submitted\":%zu,\"started\":%zu,\"completed\":%zu,\"failed\":%zu,"
                        "\"cancelled\":%zu,\"timed_out\":%zu,\"reclaimed\":%zu,\"wrongful_reclaims\":%zu,"
                        "\"warnings\":%zu,\"retries\":%zu,\"crash_loops\":%zu,\"misclassified\":%zu,"
                        "\"queued_at_end\":%zu,\"running_at_end\":%zu,\"passed_zero_frac\":%.4f,"
                        "\"held_util_p50\":%u,\"events\":%llu,\"sched_passes\":%llu,\"sched_plans\":%llu,"
                        "\"reclaim_decisions\":%llu",
                        (double) x->measured / (double) GW_SIM_HOUR, x->capacity_gpu_h, x->busy_gpu_h, x->held_gpu_h,
                        pct(x->busy_gpu_h, x->capacity_gpu_h), pct(x->held_gpu_h, x->capacity_gpu_h), x->stalled_gpu_h,
                        x->lost_gpu_h, x->lost_reclaim_gpu_h, x->wait_p50_s, x->wait_p90_s, x->wait_p99_s, x->submitted,
                        x->started, x->completed, x->failed, x->cancelled, x->timed_out, x->reclaimed, x->wrongful,
                        x->warnings, x->retries, x->crash_loops, x->misclassified, x->queued_at_end, x->running_at_end,
                        x->passed_zero_frac, x->held_util_p50, (unsigned long long) x->events,
                        (unsigned long long) x->sched_passes, (unsigned long long) x->sched_plans,
                        (unsigned long long) x->reclaim_decisions);
                fprintf(f,
                        ",\"oom_crashes\":%zu,\"leaks_detected\":%zu,\"leak_restarts\":%zu,\"lost_leak_gpu_h\":%.3f,"
                        "\"gpu_faults\":%zu,\"faults_on_broken\":%zu,\"drained_gpu_h\":%.3f,\"bookings\":%zu,"
                        "\"bookings_later\":%zu,\"booking_no_shows\":%zu,\"booking_missed\":%zu,\"booked_started\":%zu",
                        x->oom_crashes, x->leaks_detected, x->leak_restarts, x->lost_leak_gpu_h, x->gpu_faults,
                        x->faults_on_broken, x->drained_gpu_h, x->bookings, x->bookings_later, x->booking_no_shows,
                        x->booking_missed, x->booked_started);
                fprintf(f,
                        ",\"high_jobs\":%zu,\"high_wait_p50_s\":%.1f,\"high_wait_p90_s\":%.1f,\"preemptions\":%zu,"
                        "\"lost_preempt_gpu_h\":%.3f",
                        x->high_jobs, x->high_wait_p50_s, x->high_wait_p90_s, x->preemptions, x->lost_preempt_gpu_h);
                json_costs(f, x);
                fputs(",\"users\":[", f); /* index = the workload's user number */
                for (size_t u = 0; u < x->n_users; u++)
                        fprintf(f, "%s{\"gpu_h\":%.3f,\"wait_mean_s\":%.1f}", u ? "," : "", x->user_gpu_h[u],
                                x->user_wait_s[u]);
                fputs("]}", f);
        }
        fputs("]}\n", f);
}

#define W_PLOT 900
#define H_PANEL 170
#define M_LEFT 60
#define M_TOP 40
#define GAP 50

static void polyline(FILE *f, const double *v, size_t n, double x0, double xs, double y0, double ys,
                     const char *color) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"", color);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%.1f,%.1f ", x0 + xs * ((double) i + 0.5), y0 - ys * (v[i] > 0 ? v[i] : 0));
        fputs("\"/>\n", f);
}

static void panel(FILE *f, const struct gw_sim_result *x, int n_gpus, double top) {
        double base = top + H_PANEL, ys = (double) H_PANEL / n_gpus;
        double days = (double) x->measured / (double) GW_SIM_DAY;
        double xs = x->n_buckets ? (double) W_PLOT / (double) x->n_buckets : 0;

        fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\">", M_LEFT, top - 8);
        gw_text_put_markup(f, x->name);
        fprintf(f, "</text>\n<rect x=\"%d\" y=\"%.0f\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#999\"/>\n",
                M_LEFT, top, W_PLOT, H_PANEL);
        for (int k = 0; k <= 4; k++) {
                double y = base - (double) H_PANEL * k / 4;
                fprintf(f,
                        "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                        "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.0f</text>\n",
                        M_LEFT, M_LEFT + W_PLOT, y, y, M_LEFT - 4, y + 3, (double) n_gpus * k / 4);
        }
        int step = days > 20 ? 7 : 1;
        for (int d = 0; d <= (int) days; d += step) {
                double xx = M_LEFT + (days > 0 ? W_PLOT * d / days : 0);
                fprintf(f,
                        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\"/>"
                        "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"middle\">day %d</text>\n",
                        xx, xx, top, base, xx, base + 12, d);
        }
        if (!x->n_buckets)
                return;
        polyline(f, x->alloc, x->n_buckets, M_LEFT, xs, base, ys, "#3b6fb6");
        polyline(f, x->busy, x->n_buckets, M_LEFT, xs, base, ys, "#2e9e4f");
}

int gw_sim_write_svg(FILE *f, const char *title, int n_gpus, const struct gw_sim_result *r, size_t n) {
        int height = M_TOP + (int) n * (H_PANEL + GAP) + 10, width = M_LEFT + W_PLOT + 20;

        if (n_gpus < 1)
                return -EINVAL;
        fprintf(f,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%d\" y=\"18\" font-size=\"14\">",
                width, height, width, height, M_LEFT);
        gw_text_put_markup(f, title);
        fprintf(f,
                "</text>\n<text x=\"%d\" y=\"32\" font-size=\"11\"><tspan fill=\"#3b6fb6\">&#9632; GPUs "
                "allocated</tspan>  <tspan fill=\"#2e9e4f\">&#9632; GPUs busy</tspan> (mean per bucket)</text>\n",
                M_LEFT);
        for (size_t i = 0; i < n; i++)
                panel(f, &r[i], n_gpus, M_TOP + 20 + (double) i * (H_PANEL + GAP));
        fputs("</svg>\n", f);
        return ferror(f) ? -EIO : 0;
}
