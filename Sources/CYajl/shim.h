#ifndef INGEST_CYAJL_SHIM_H
#define INGEST_CYAJL_SHIM_H

#include <stddef.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_version.h>

/* yajl_config is variadic, which Swift cannot call; every option Ingest sets is a
   plain on/off flag, so one fixed-arity wrapper covers them all. */
static inline int cyajl_config(yajl_handle handle, yajl_option option, int enabled) {
    return yajl_config(handle, option, enabled);
}

/* The feed reader's first line of callbacks, in C.

   yajl calls back for every token, and a feed of objects has dozens per record; most
   of them (values inside a record) matter to the reader only as nesting. These
   callbacks keep the nesting depth themselves and call into Swift only for what the
   reader acts on: a record's end, the records array's end, the depth limit, and
   everything while `watch` is set (outside the records array, where the reader looks
   for the top-level shape and key path). */
enum {
    CYAJL_NULL = 0, CYAJL_BOOLEAN, CYAJL_NUMBER, CYAJL_STRING,
    CYAJL_START_MAP, CYAJL_END_MAP, CYAJL_START_ARRAY, CYAJL_END_ARRAY
};

typedef struct {
    int depth;          /* open arrays and objects */
    int records_depth;  /* the depth at which records are values */
    int max_depth;
    int watch;          /* forward every event */
    int key_depth;      /* forward keys at this depth too (records that are an object's values) */
    int saw_value;      /* any value at all was seen */
    void *swift;
    int (*on_event)(void *swift, int event);
    int (*on_key)(void *swift, const unsigned char *key, size_t length);
} cyajl_feed_state;

static inline int cyajl_feed_scalar(void *ctx, int event) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    s->saw_value = 1;
    if (s->watch || s->depth == s->records_depth) return s->on_event(s->swift, event);
    return 1;
}

static int cyajl_feed_null(void *ctx) { return cyajl_feed_scalar(ctx, CYAJL_NULL); }
static int cyajl_feed_boolean(void *ctx, int value) { (void)value; return cyajl_feed_scalar(ctx, CYAJL_BOOLEAN); }
static int cyajl_feed_number(void *ctx, const char *text, size_t length) {
    (void)text; (void)length;
    return cyajl_feed_scalar(ctx, CYAJL_NUMBER);
}
static int cyajl_feed_string(void *ctx, const unsigned char *text, size_t length) {
    (void)text; (void)length;
    return cyajl_feed_scalar(ctx, CYAJL_STRING);
}

static inline int cyajl_feed_start(void *ctx, int event) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    s->saw_value = 1;
    if (s->watch || s->depth + 1 > s->max_depth) return s->on_event(s->swift, event);
    s->depth += 1;
    return 1;
}

static inline int cyajl_feed_end(void *ctx, int event) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    if (s->watch || s->depth - 1 <= s->records_depth) return s->on_event(s->swift, event);
    s->depth -= 1;
    return 1;
}

static int cyajl_feed_start_map(void *ctx) { return cyajl_feed_start(ctx, CYAJL_START_MAP); }
static int cyajl_feed_end_map(void *ctx) { return cyajl_feed_end(ctx, CYAJL_END_MAP); }
static int cyajl_feed_start_array(void *ctx) { return cyajl_feed_start(ctx, CYAJL_START_ARRAY); }
static int cyajl_feed_end_array(void *ctx) { return cyajl_feed_end(ctx, CYAJL_END_ARRAY); }

static int cyajl_feed_map_key(void *ctx, const unsigned char *key, size_t length) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    if (s->watch || s->depth == s->key_depth) return s->on_key(s->swift, key, length);
    return 1;
}

/* The table above; `with_keys` is 0 when keys never matter (no key path). */
static inline yajl_callbacks cyajl_feed_callbacks(int with_keys) {
    yajl_callbacks callbacks = {
        cyajl_feed_null, cyajl_feed_boolean, NULL, NULL, cyajl_feed_number, cyajl_feed_string,
        cyajl_feed_start_map, with_keys ? cyajl_feed_map_key : NULL, cyajl_feed_end_map,
        cyajl_feed_start_array, cyajl_feed_end_array
    };
    return callbacks;
}

#endif
