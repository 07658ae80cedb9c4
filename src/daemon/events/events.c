/* GET /api/v1/events: server-sent events for the dashboard: job changes ("job"), events that
 * do not change a job ("job_event": warnings, SIGTERM sent...), GPU samples ("gpus") and
 * bookings ("booking"), each with an id.
 *
 * Events are serialized once into one bounded ring that every client shares; a client is only
 * a position in that ring, so it costs constant memory however far behind it is.  A client
 * more than CLIENT_LAG bytes behind, or whose position left the ring, is dropped (its socket
 * shut down); its EventSource reconnects with Last-Event-ID and gets what it missed from the
 * ring, or a "reset" event (reload everything) when that is gone.  A client with nothing to
 * read is suspended, and resumed when an event is published: no polling, no timers.
 *
 * Ids start at the wall clock in microseconds when the daemon starts and grow by one, so an
 * id from an earlier run of the daemon is older than every id of this one.
 *
 * Until the first client of this run attaches, nothing is serialized: every id a client can
 * resume from comes from this run's stream, so no one could ever read those events, and
 * encoding each job change was about a tenth of the daemon's CPU per job on a busy queue. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/codec_share.h"
#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/calendar.h"
#include "daemon/http/web.h"

#define RING_EVENTS 4096
#define RING_BYTES (2u << 20)
#define CLIENT_LAG (1u << 20)
#define CLIENTS_MAX 512
/* Per uid, and for every caller without one (tokenless TCP) together: one local user must not
 * hold every stream (on TCP every local user is 127.0.0.1).  Admins are not counted. */
#define CLIENTS_PER_CALLER 64
#define CLIENT_SNDBUF (64 * 1024)

struct ev_item {
        uint64_t id;
        uint64_t pos; /* bytes published before this event */
        char *text; /* "id: N\nevent: T\ndata: JSON\n\n" */
        size_t len;
};

struct ev_client {
        struct gw_events *ev;
        struct gw_http_conn *conn;
        uint64_t next; /* id of the next event to send */
        size_t off; /* bytes of that event already sent */
        char pre[256]; /* sent first: the hello or the reset */
        size_t pre_len, pre_off;
        bool waiting; /* suspended with nothing to send */
        bool dropped;
        bool counted, known; /* counted against CLIENTS_PER_CALLER, as uid or as anonymous */
        uid_t uid;
        struct ev_client *prev, *after;
};

struct gw_events {
        struct gw_daemon *d;
        struct ev_item *ring;
        size_t start, n; /* ring[start] is the oldest of n */
        size_t bytes; /* held by the ring */
        uint64_t last_id; /* newest id published (the base before the first) */
        uint64_t end_pos; /* bytes published so far */
        struct ev_client *clients;
        size_t n_clients;
        uint64_t dropped; /* slow clients dropped, for the log */
        bool attached; /* a client has attached in this run: events are kept from then on */
};

static struct ev_item *item_at(struct gw_events *ev, size_t k) { return &ev->ring[(ev->start + k) % RING_EVENTS]; }

static uint64_t first_id(const struct gw_events *ev) { return ev->last_id - ev->n + 1; }

/* How many bytes of published events c has not read. */
static uint64_t client_lag(struct gw_events *ev, const struct ev_client *c) {
        if (c->next > ev->last_id)
                return 0;
        if (c->next < first_id(ev))
                return UINT64_MAX;
        const struct ev_item *it = item_at(ev, (size_t) (c->next - first_id(ev)));
        return ev->end_pos - (it->pos + c->off);
}

static void client_drop(struct ev_client *c) {
        if (c->dropped)
                return;
        c->dropped = true;
        c->ev->dropped++;
        log_info("events: dropping a client %llu bytes behind (%llu dropped so far)",
                 (unsigned long long) client_lag(c->ev, c), (unsigned long long) c->ev->dropped);
        gw_http_conn_abort(c->conn);
}

static void publish(struct gw_events *ev, const char *type, json_t *data) {
        char *json = gw_json_compact(data, 0, NULL);
        json_decref(data);
        if (!json)
                return;
        uint64_t id = ev->last_id + 1;
        size_t cap = strlen(json) + strlen(type) + 64;
        char *text = gw_xmalloc(cap);
        int len = snprintf(text, cap, "id: %llu\nevent: %s\ndata: %s\n\n", (unsigned long long) id, type, json);
        free(json);
        if (len < 0 || (size_t) len >= cap) {
                free(text);
                return;
        }
        /* Make room: the oldest events go first; the new one always fits. */
        while (ev->n > 0 && (ev->n == RING_EVENTS || ev->bytes + (size_t) len > RING_BYTES)) {
                struct ev_item *old = item_at(ev, 0);
                ev->bytes -= old->len;
                free(old->text);
                ev->start = (ev->start + 1) % RING_EVENTS;
                ev->n--;
        }
        *item_at(ev, ev->n) = (struct ev_item){ .id = id, .pos = ev->end_pos, .text = text, .len = (size_t) len };
        ev->n++;
        ev->bytes += (size_t) len;
        ev->end_pos += (uint64_t) len;
        ev->last_id = id;
        for (struct ev_client *c = ev->clients; c; c = c->after) {
                if (c->dropped)
                        continue;
                if (client_lag(ev, c) > CLIENT_LAG)
                        client_drop(c);
                else if (c->waiting) {
                        c->waiting = false;
                        gw_http_conn_resume(c->conn);
                }
        }
}

/* ---- what is published ---- */

void gw_events_job_recorded(struct gw_daemon *d, int64_t id, const struct gw_job *j, enum gw_job_state state,
                            const char *kind, const char *message) {
        struct gw_events *ev = d->events;
        if (!ev || !ev->attached)
                return;
        const char *st = gw_job_state_name(state);
        /* One stream for every reader, guests included: what a guest may see of any job.  The
         * job's owner reads the rest with GET /api/v1/jobs/ID. */
        unsigned view = ev->d->cfg->guest_job_details ? GW_VIEW_DETAILS : 0;
        json_t *o = json_pack("{s:I,s:s,s:o,s:o,s:f}", "id", (json_int_t) id, "state", st ? st : "?", "kind",
                              gw_json_text(kind), "message", gw_codec_event_message(message, view), "time",
                              (double) ev->d->now_wall / 1e6);
        if (j)
                json_object_set_new(o, "job", gw_codec_job(j, view));
        publish(ev, j ? "job" : "job_event", o);
}

void gw_events_booking(struct gw_daemon *d, const struct gw_store_booking *b) {
        if (d->events && d->events->attached)
                publish(d->events, "booking", gw_codec_booking(b));
}

bool gw_events_listened(const struct gw_daemon *d) { return d->events && d->events->n_clients; }

void gw_events_gpus(struct gw_daemon *d, json_t *gpus) {
        struct gw_events *ev = d->events;
        if (!ev || !ev->n_clients) {
                json_decref(gpus);
                return;
        }
        publish(ev, "gpus", gpus);
}

void gw_events_predictions(struct gw_daemon *d) {
        struct gw_events *ev = d->events;
        if (!ev || !ev->n_clients)
                return;
        json_t *arr = json_array();
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                const struct gw_job *j = d->jobs.queue[i]->job;
                json_array_append_new(arr, json_pack("[I,o]", (json_int_t) j->id,
                                                     j->predicted_start ? json_real((double) j->predicted_start / 1e6)
                                                                        : json_null()));
        }
        publish(ev, "predictions", json_pack("{s:o}", "jobs", arr));
}

/* ---- the stream of one client ---- */

static ssize_t client_read(void *cls, char *buf, size_t max) {
        struct ev_client *c = cls;
        struct gw_events *ev = c->ev;
        if (c->dropped)
                return -1;
        size_t w = 0;
        if (c->pre_off < c->pre_len) {
                size_t k = c->pre_len - c->pre_off < max ? c->pre_len - c->pre_off : max;
                memcpy(buf, c->pre + c->pre_off, k);
                c->pre_off += k;
                w += k;
        }
        while (w < max && c->next <= ev->last_id) {
                if (c->next < first_id(ev))
                        return -1; /* fell out of the ring: it reconnects and gets "reset" */
                const struct ev_item *it = item_at(ev, (size_t) (c->next - first_id(ev)));
                size_t k = it->len - c->off < max - w ? it->len - c->off : max - w;
                memcpy(buf + w, it->text + c->off, k);
                w += k;
                c->off += k;
                if (c->off == it->len) {
                        c->next++;
                        c->off = 0;
                }
        }
        c->waiting = w == 0;
        return (ssize_t) w;
}

static void client_done(void *cls) {
        struct ev_client *c = cls;
        struct gw_events *ev = c->ev;
        if (c->prev)
                c->prev->after = c->after;
        else
                ev->clients = c->after;
        if (c->after)
                c->after->prev = c->prev;
        ev->n_clients--;
        free(c);
}

/* Where a client starts: after the event it last saw when the ring still has what followed,
 * else at the newest event with a "reset" first. */
static void client_start(struct gw_events *ev, struct ev_client *c, const char *last) {
        long long id = -1;
        bool resumable = last && gw_parse_int(last, 0, INT64_MAX, &id) == 0 && (uint64_t) id >= first_id(ev) - 1 &&
                         (uint64_t) id <= ev->last_id;
        int n;
        if (resumable) {
                c->next = (uint64_t) id + 1;
                n = snprintf(c->pre, sizeof c->pre, "retry: 2000\n\n");
        } else {
                c->next = ev->last_id + 1;
                n = snprintf(c->pre, sizeof c->pre,
                             "retry: 2000\nid: %llu\nevent: %s\ndata: {\"id\":%llu,\"sample_interval\":%g}\n\n",
                             (unsigned long long) ev->last_id, last ? "reset" : "hello",
                             (unsigned long long) ev->last_id, (double) ev->d->cfg->sample_interval / 1e6);
        }
        c->pre_len = n > 0 && (size_t) n < sizeof c->pre ? (size_t) n : 0;
}

int gw_events_attach(struct gw_daemon *d, const struct gw_events_reader *who, const char *last,
                     struct gw_http_conn *conn, struct gw_http_reply *rep, char *why, size_t n) {
        struct gw_events *ev = d->events;
        if (!ev)
                return snprintf(why, n, "the event stream is not running"), 503;
        if (ev->n_clients >= CLIENTS_MAX)
                return snprintf(why, n, "too many event streams open (%d)", CLIENTS_MAX), 503;
        size_t mine = 0;
        for (const struct ev_client *o = ev->clients; o && !who->admin; o = o->after)
                mine += o->counted && o->known == who->known && (!o->known || o->uid == who->uid);
        if (mine >= CLIENTS_PER_CALLER)
                return snprintf(why, n, "%s already hold%s %d event streams",
                                who->known ? who->user : "callers without a token", who->known ? "s" : "",
                                CLIENTS_PER_CALLER),
                       429;
        struct ev_client *c = gw_xcalloc(1, sizeof *c);
        c->ev = ev;
        c->conn = conn;
        c->counted = !who->admin;
        c->known = who->known;
        c->uid = who->uid;
        client_start(ev, c, last);
        ev->attached = true;
        c->after = ev->clients;
        if (ev->clients)
                ev->clients->prev = c;
        ev->clients = c;
        ev->n_clients++;
        gw_http_conn_set_sndbuf(conn, CLIENT_SNDBUF);
        rep->status = 200;
        rep->content_type = "text/event-stream; charset=utf-8";
        rep->stream_read = client_read;
        rep->stream_done = client_done;
        rep->stream_cls = c;
        gw_http_reply_header(rep, "Cache-Control", "no-store");
        gw_http_reply_header(rep, "X-Accel-Buffering", "no");
        return 0;
}

int gw_events_open(struct gw_daemon *d) {
        struct gw_events *ev = gw_xcalloc(1, sizeof *ev);
        ev->d = d;
        ev->ring = gw_xcalloc(RING_EVENTS, sizeof *ev->ring);
        /* A fresh read: this runs before the loop first reads its clocks. */
        ev->last_id = (uint64_t) gw_now_wall();
        d->events = ev;
        return 0;
}

void gw_events_close(struct gw_daemon *d) {
        struct gw_events *ev = d->events;
        if (!ev)
                return;
        /* Streams still open end now; their done callbacks run while the servers stop, so the
         * ring and the client list stay until then (freed in gw_events_free). */
        for (struct ev_client *c = ev->clients; c; c = c->after)
                if (!c->dropped) {
                        c->dropped = true;
                        gw_http_conn_abort(c->conn);
                }
}

void gw_events_free(struct gw_daemon *d) {
        struct gw_events *ev = d->events;
        if (!ev)
                return;
        /* Clients the servers did not end (none after gw_http_stop) lose their owner here. */
        while (ev->clients) {
                struct ev_client *c = ev->clients;
                ev->clients = c->after;
                free(c);
        }
        for (size_t k = 0; k < ev->n; k++)
                free(item_at(ev, k)->text);
        free(ev->ring);
        free(ev);
        d->events = NULL;
}
