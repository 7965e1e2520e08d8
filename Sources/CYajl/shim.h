#ifndef INGEST_CYAJL_SHIM_H
#define INGEST_CYAJL_SHIM_H

/* SwiftPM does not track this header of a system library target: after editing it, touch
   Sources/IngestJSON/Reading/FeedParser.swift (which instantiates these functions), or an
   incremental build keeps the old ones. */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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
    int mute;           /* ignore every event: a fresh handle is being brought to where the
                           last one stopped (FeedParser+Scan.swift) */
    void *swift;
    int (*on_event)(void *swift, int event);
    int (*on_key)(void *swift, const unsigned char *key, size_t length);

    /* Member ends (`members_on`): while the parse is inside a record that is an object,
       each of its own members adds two offsets from the record's `{` to `ends`, just past
       the key and just past the value, so that the importer can step over members without
       scanning them again (see MemberEnds.swift). CYAJL_NOT_PLAIN marks a key or string
       whose bytes yajl did not hand over in place (it held an escape, or crossed a read), and
       an array or object value with such a key or string inside. */
    int members_on;
    int capture_depth;         /* records_depth + 1 inside an object record whose ends are kept, else -1 */
    int members_lost;          /* no ends for this record: too many members, refused, or no memory */
    int value_escaped;         /* a key or string inside the member's value is not plain (escaped, or split by a read) */
    yajl_handle handle;
    const unsigned char *block;  /* the bytes yajl is parsing */
    const unsigned char *block_end;
    long long base;              /* the block's feed offset */
    long long record_start;      /* the feed offset of the record's `{` */
    long long block_offset;      /* base - record_start */
    uint32_t *ends;
    size_t end_count, end_capacity;
} cyajl_feed_state;

#define CYAJL_NOT_PLAIN 0x80000000u

/* Most members a record's ends are kept for (a record with more is scanned), and the
   nesting below a member past which the importer's scan hands a record to the full
   parser (its value is then scanned too, so that the same happens). */
#define CYAJL_MOST_MEMBERS 65536
#define CYAJL_SCAN_LEVELS 64

/* The next block yajl parses, from `base` in the feed. */
static inline void cyajl_set_block(cyajl_feed_state *s, const unsigned char *block, size_t length, long long base) {
    s->block = block;
    s->block_end = block ? block + length : block;
    s->base = base;
    s->block_offset = base - s->record_start;
}

static inline void cyajl_lose_members(cyajl_feed_state *s) {
    s->members_lost = 1;
    s->capture_depth = -1;
}

static int cyajl_grow_ends(cyajl_feed_state *s) {
    size_t capacity = s->end_capacity ? s->end_capacity * 2 : 64;
    if (capacity > 2 * CYAJL_MOST_MEMBERS) { cyajl_lose_members(s); return 0; }
    uint32_t *grown = (uint32_t *)realloc(s->ends, capacity * sizeof(uint32_t));
    if (!grown) { cyajl_lose_members(s); return 0; }
    s->ends = grown;
    s->end_capacity = capacity;
    return 1;
}

/* Whether yajl handed a token's text over in place, inside the block it parses. */
static inline int cyajl_in_place(const cyajl_feed_state *s, const unsigned char *text, size_t length) {
    /* As integers: the pointers may belong to other allocations (yajl's own buffers). */
    uintptr_t at = (uintptr_t)text;
    return at >= (uintptr_t)s->block && at + length < (uintptr_t)s->block_end;
}

/* `text`/`length`: a key's, string's or number's bytes as yajl hands them (NULL for others);
   `flag`: CYAJL_NOT_PLAIN for an array or object with a key or string inside that is not. */
static inline void cyajl_member_end(cyajl_feed_state *s, const unsigned char *text, size_t length, int quoted, uint32_t flag) {
    if (s->end_count == s->end_capacity && !cyajl_grow_ends(s)) return;
    long long offset;
    if (cyajl_in_place(s, text, length)) {
        /* In place: the token ends right after its text (and the closing quote). */
        offset = (long long)(text - s->block) + (long long)length + quoted + s->block_offset;
    } else {
        offset = (long long)yajl_get_bytes_consumed(s->handle) + s->block_offset;
        if (quoted) flag = CYAJL_NOT_PLAIN;
    }
    if (offset <= 0 || offset >= (long long)CYAJL_NOT_PLAIN) { cyajl_lose_members(s); return; }
    s->ends[s->end_count++] = (uint32_t)offset | flag;
}

static inline void cyajl_members_free(cyajl_feed_state *s) {
    free(s->ends);
    s->ends = NULL;
    s->end_count = s->end_capacity = 0;
}

static inline int cyajl_feed_scalar(void *ctx, int event, const unsigned char *text, size_t length) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    if (s->mute) return 1;
    s->saw_value = 1;
    if (s->depth == s->capture_depth) {
        cyajl_member_end(s, text, length, event == CYAJL_STRING, 0);
        return 1;
    }
    /* Inside a member's value: an escaped string there is checked by the importer's scan. */
    if (event == CYAJL_STRING && s->capture_depth >= 0 && !cyajl_in_place(s, text, length)) s->value_escaped = 1;
    if (s->watch || s->depth == s->records_depth) return s->on_event(s->swift, event);
    return 1;
}

static int cyajl_feed_null(void *ctx) { return cyajl_feed_scalar(ctx, CYAJL_NULL, NULL, 0); }
static int cyajl_feed_boolean(void *ctx, int value) { (void)value; return cyajl_feed_scalar(ctx, CYAJL_BOOLEAN, NULL, 0); }
static int cyajl_feed_number(void *ctx, const char *text, size_t length) {
    return cyajl_feed_scalar(ctx, CYAJL_NUMBER, (const unsigned char *)text, length);
}
static int cyajl_feed_string(void *ctx, const unsigned char *text, size_t length) {
    return cyajl_feed_scalar(ctx, CYAJL_STRING, text, length);
}

static inline int cyajl_feed_start(void *ctx, int event) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    if (s->mute) return 1;
    s->saw_value = 1;
    if (s->watch || s->depth + 1 > s->max_depth) return s->on_event(s->swift, event);
    /* Nested past what the scan follows: the member's key, the last end kept, is marked, so
       that the importer scans the record (and leaves it to the full parser, as before). */
    if (s->capture_depth >= 0 && s->depth - s->capture_depth >= CYAJL_SCAN_LEVELS && s->end_count > 0) {
        s->ends[s->end_count - 1] |= CYAJL_NOT_PLAIN;
    }
    if (s->depth == s->records_depth && s->members_on) {
        s->end_count = 0;
        s->value_escaped = 0;
        s->members_lost = event != CYAJL_START_MAP;
        s->capture_depth = event == CYAJL_START_MAP ? s->records_depth + 1 : -1;
        /* Just past the `{`, which is never split across reads. */
        s->record_start = s->base + (long long)yajl_get_bytes_consumed(s->handle) - 1;
        s->block_offset = s->base - s->record_start;
    }
    s->depth += 1;
    return 1;
}

static inline int cyajl_feed_end(void *ctx, int event) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    if (s->mute) return 1;
    if (s->watch || s->depth - 1 <= s->records_depth) return s->on_event(s->swift, event);
    s->depth -= 1;
    if (s->depth == s->capture_depth) {
        cyajl_member_end(s, NULL, 0, 0, s->value_escaped ? CYAJL_NOT_PLAIN : 0);
        s->value_escaped = 0;
    }
    return 1;
}

static int cyajl_feed_start_map(void *ctx) { return cyajl_feed_start(ctx, CYAJL_START_MAP); }
static int cyajl_feed_end_map(void *ctx) { return cyajl_feed_end(ctx, CYAJL_END_MAP); }
static int cyajl_feed_start_array(void *ctx) { return cyajl_feed_start(ctx, CYAJL_START_ARRAY); }
static int cyajl_feed_end_array(void *ctx) { return cyajl_feed_end(ctx, CYAJL_END_ARRAY); }

static int cyajl_feed_map_key(void *ctx, const unsigned char *key, size_t length) {
    cyajl_feed_state *s = (cyajl_feed_state *)ctx;
    if (s->mute) return 1;
    if (s->depth == s->capture_depth) {
        cyajl_member_end(s, key, length, 1, 0);
        return 1;
    }
    if (s->capture_depth >= 0 && !cyajl_in_place(s, key, length)) s->value_escaped = 1;
    if (s->watch || s->depth == s->key_depth) return s->on_key(s->swift, key, length);
    return 1;
}

/* The table above; `with_keys` is 0 when keys never matter (no key path, no member ends). */
static inline yajl_callbacks cyajl_feed_callbacks(int with_keys) {
    yajl_callbacks callbacks = {
        cyajl_feed_null, cyajl_feed_boolean, NULL, NULL, cyajl_feed_number, cyajl_feed_string,
        cyajl_feed_start_map, with_keys ? cyajl_feed_map_key : NULL, cyajl_feed_end_map,
        cyajl_feed_start_array, cyajl_feed_end_array
    };
    return callbacks;
}

/* StrictJSONBytes' search: the index of the first byte from `start` that is a UTF-8 lead
   byte of 0xC0 or above, a vertical tab (0x0B) or a form feed (0x0C), or `count`. In C
   because clang vectorizes the 32-byte loop (about 25 instructions per 32 bytes, with SSE2);
   Swift's word-at-a-time loop took about 1.5 instructions a byte. */
static inline size_t cyajl_strict_next(const unsigned char *bytes, size_t start, size_t count) {
    size_t i = start;
    while (i + 32 <= count) {
        unsigned char flag = 0;
        for (int k = 0; k < 32; k++) {
            unsigned char b = bytes[i + k];
            flag |= (unsigned char)((b >= 0xC0) | ((unsigned char)(b - 0x0B) < 2));
        }
        if (flag) break;
        i += 32;
    }
    for (; i < count; i++) {
        unsigned char b = bytes[i];
        if (b >= 0xC0 || b == 0x0B || b == 0x0C) return i;
    }
    return count;
}

#endif
