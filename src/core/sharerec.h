/* The records of bookings and API tokens, as the store keeps them and the API shows them:
 * plain data in core, so that the API's encoders (api/codec_share.c) need no store header. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/time.h"

/* A booking (state as enum gw_booking_state of core/calendar.h). */
struct gw_store_booking {
        int64_t id; /* 0: not stored yet (save inserts and sets it) */
        uint32_t uid;
        char user[64];
        char name[128];
        int ngpus;
        gw_usec_t start, end;
        uint64_t gpu_mask;
        int state;
        gw_usec_t last_used;
        char note[256]; /* why it was refused, released, ... */
        gw_usec_t created; /* when it was asked for (save sets it when 0) */
        bool resv_drop; /* over, its Slurm reservation not deleted yet */
};

/* An API token, stored as its SHA-256. */
struct gw_store_token {
        int64_t id;
        uint32_t uid;
        char user[64];
        char name[128];
        char hash[65];
        gw_usec_t created, last_used;
        gw_usec_t expires; /* wall clock; 0 = never */
        char scope[16]; /* "" = the account's whole rights; GW_TOKEN_SCOPE_AGENT */
        char node[65]; /* an agent's: the node it may post for; "" = none */
        bool revoked; /* only gw_store_token_find returns revoked ones */
};
