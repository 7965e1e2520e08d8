#ifndef INGEST_CYAJL_RECORD_SCAN_H
#define INGEST_CYAJL_RECORD_SCAN_H

/* SwiftPM does not track this header either: after editing it, touch
   Sources/IngestJSON/Reading/FeedParser+Scan.swift. */

#include "shim.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The feed reader's fast lane through an array of records (top-level, or at a key path),
   or through NDJSON.

   yajl tokenizes every byte and calls back for every token: about 24 instructions a byte
   of a feed of objects, most of the split's cost. Between two records of an array
   the reader needs only each record's first and last byte and, for an object, its own
   members' ends (shim.h). `cscan_next_record` finds them in one pass that checks JSON's
   grammar on the way, and takes a record only when it is sure: the record lies whole in
   the block, is well formed, nests less than `levels` deep, is no larger than `max_bytes`,
   and has no more members than the ends can hold. On anything else (the array's end, a
   record cut by the read, malformed JSON, a limit) it takes nothing and says so; the
   reader hands the bytes from there to yajl, which reads them as it always does, with its
   errors and refusals, and comes back to this lane after its next record.

   So this lane must never take what yajl (with StrictJSONBytes, which has checked the
   block before) would refuse; the differential tests in FeedRecordScanTests hold it to that. */

#define CSCAN_FAIL ((size_t)-1)
/* Most nesting the scan follows inside a record (below CYAJL_SCAN_LEVELS, so that the
   member-end flag for deeper members never comes up here). */
#define CSCAN_MOST_LEVELS 60

static inline int cscan_is_space(unsigned char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline size_t cscan_skip_space(const unsigned char *p, size_t i, size_t n) {
    while (i < n && cscan_is_space(p[i])) i++;
    return i;
}

/* The first byte from `i` that is not plain string text (printable ASCII but the quote and
   the backslash), or `n`. With SSE2, 16 bytes a step and the first such byte found by its bit
   in the mask: most keys and many values end in the first step. */
static inline size_t cscan_plain_end(const unsigned char *p, size_t i, size_t n) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (i + 16 <= n) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        /* Signed, bytes from 0x80 are negative: below the space are controls and non-ASCII alike. */
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, quote), _mm_cmpeq_epi8(b, backslash)),
                                       _mm_cmplt_epi8(b, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(special);
        if (mask) return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
#endif
    for (; i < n; i++) {
        unsigned char b = p[i];
        if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') return i;
    }
    return n;
}

/* The rest of a string from `i`, a byte that is not plain text: escapes, UTF-8, the end. */
static __attribute__((noinline)) size_t cscan_string_rest(const unsigned char *p, size_t i, size_t n, int *escaped) {
    for (;;) {
        if (i >= n) return CSCAN_FAIL;
        unsigned char c = p[i];
        if (c == '"') return i + 1;
        if (c == '\\') {
            *escaped = 1;
            if (i + 1 >= n) return CSCAN_FAIL;
            switch (p[i + 1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                i += 2;
                break;
            case 'u': {
                if (i + 6 > n) return CSCAN_FAIL;
                for (int k = 2; k < 6; k++) {
                    unsigned char h = p[i + k];
                    int hex = (h >= '0' && h <= '9') || ((h | 0x20) >= 'a' && (h | 0x20) <= 'f');
                    if (!hex) return CSCAN_FAIL;
                }
                i += 6;
                break;
            }
            default:
                return CSCAN_FAIL;
            }
        } else {
            if (c < 0x80) return CSCAN_FAIL; /* a control byte: JSON wants it escaped */
            /* UTF-8, checked in value as well as in shape (RFC 3629): no overlong forms, no
               surrogates, nothing above U+10FFFF. */
            size_t more;
            unsigned char low = 0x80, high = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) more = 1;
            else if (c >= 0xE0 && c <= 0xEF) {
                more = 2;
                if (c == 0xE0) low = 0xA0;
                if (c == 0xED) high = 0x9F;
            } else if (c >= 0xF0 && c <= 0xF4) {
                more = 3;
                if (c == 0xF0) low = 0x90;
                if (c == 0xF4) high = 0x8F;
            } else return CSCAN_FAIL;
            if (i + more >= n) return CSCAN_FAIL;
            if (p[i + 1] < low || p[i + 1] > high) return CSCAN_FAIL;
            for (size_t k = 2; k <= more; k++) {
                if ((p[i + k] & 0xC0) != 0x80) return CSCAN_FAIL;
            }
            i += more + 1;
        }
        i = cscan_plain_end(p, i, n);
    }
}

/* Past the string whose opening quote is at `i`, or CSCAN_FAIL; sets `*escaped` when it
   holds an escape (yajl then hands over a decoded copy, not the bytes in place). */
static inline __attribute__((always_inline)) size_t cscan_string(const unsigned char *p, size_t i, size_t n, int *escaped) {
    i = cscan_plain_end(p, i + 1, n);
    if (i < n && p[i] == '"') return i + 1;
    return cscan_string_rest(p, i, n, escaped);
}

static inline int cscan_is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Past the number at `i` (JSON's grammar), or CSCAN_FAIL; also when it runs to the block's
   end, where it might go on. */
static inline size_t cscan_number(const unsigned char *p, size_t i, size_t n) {
    if (p[i] == '-') i++;
    if (i >= n) return CSCAN_FAIL;
    if (p[i] == '0') i++;
    else if (p[i] >= '1' && p[i] <= '9') {
        i++;
        while (i < n && cscan_is_digit(p[i])) i++;
    } else return CSCAN_FAIL;
    if (i < n && p[i] == '.') {
        i++;
        if (i >= n || !cscan_is_digit(p[i])) return CSCAN_FAIL;
        while (i < n && cscan_is_digit(p[i])) i++;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        if (i >= n || !cscan_is_digit(p[i])) return CSCAN_FAIL;
        while (i < n && cscan_is_digit(p[i])) i++;
    }
    return i < n ? i : CSCAN_FAIL;
}

/* Past the literal `word` (of `length` letters) at `i`, or CSCAN_FAIL. */
static inline size_t cscan_literal(const unsigned char *p, size_t i, size_t n, const char *word, size_t length) {
    if (i + length >= n) return CSCAN_FAIL;
    for (size_t k = 0; k < length; k++) {
        if (p[i + k] != (unsigned char)word[k]) return CSCAN_FAIL;
    }
    return i + length;
}

/* Past the scalar (string, number, literal) at `i`, or CSCAN_FAIL. */
static inline size_t cscan_scalar(const unsigned char *p, size_t i, size_t n, int *escaped) {
    switch (p[i]) {
    case '"': return cscan_string(p, i, n, escaped);
    case 't': return cscan_literal(p, i, n, "true", 4);
    case 'f': return cscan_literal(p, i, n, "false", 5);
    case 'n': return cscan_literal(p, i, n, "null", 4);
    default:
        if (p[i] == '-' || cscan_is_digit(p[i])) return cscan_number(p, i, n);
        return CSCAN_FAIL;
    }
}

/* One member end of the record being scanned (shim.h's form), or 0 when the ends are full. */
static inline int cscan_end(cyajl_feed_state *s, size_t offset, int not_plain) {
    if (s->end_count == s->end_capacity && !cyajl_grow_ends(s)) return 0;
    s->ends[s->end_count++] = (uint32_t)offset | (not_plain ? CYAJL_NOT_PLAIN : 0);
    return 1;
}

/* Past the value at `i` (not whitespace), or CSCAN_FAIL. With `s`, the value is a record
   that is an object, whose own members' ends go to `s->ends`, counted from `i`. */
static inline size_t cscan_value(cyajl_feed_state *s, const unsigned char *p, size_t i, size_t n, int levels) {
    const size_t first = i;
    uint64_t objects = 0; /* a bit per open level: 1 for an object */
    int depth = 0;
    int escaped = 0;      /* a key or string inside the member being read has an escape */
    int ignored = 0;
    unsigned char c = p[i];
    if (c != '{' && c != '[') return cscan_scalar(p, i, n, &ignored);

open:
    if (depth >= levels) return CSCAN_FAIL;
    objects = objects << 1 | (p[i] == '{');
    depth++;
    i = cscan_skip_space(p, i + 1, n);
    if (i >= n) return CSCAN_FAIL;
    if (objects & 1) {
        if (p[i] == '}') { i++; goto close; }
        goto key;
    }
    if (p[i] == ']') { i++; goto close; }
    goto value;

key:
    if (p[i] != '"') return CSCAN_FAIL;
    {
        int key_escaped = 0;
        i = cscan_string(p, i, n, &key_escaped);
        if (i == CSCAN_FAIL) return CSCAN_FAIL;
        if (s && depth == 1) {
            if (!cscan_end(s, i - first, key_escaped)) return CSCAN_FAIL;
        } else if (key_escaped) escaped = 1;
    }
    i = cscan_skip_space(p, i, n);
    if (i >= n || p[i] != ':') return CSCAN_FAIL;
    i = cscan_skip_space(p, i + 1, n);
    if (i >= n) return CSCAN_FAIL;

value:
    if (depth == 1) escaped = 0;
    c = p[i];
    if (c == '{' || c == '[') goto open;
    {
        int string_escaped = 0;
        i = cscan_scalar(p, i, n, &string_escaped);
        if (i == CSCAN_FAIL) return CSCAN_FAIL;
        if (s && depth == 1) {
            if (!cscan_end(s, i - first, string_escaped)) return CSCAN_FAIL;
        } else if (string_escaped) escaped = 1;
    }

after:
    i = cscan_skip_space(p, i, n);
    if (i >= n) return CSCAN_FAIL;
    if (p[i] == ',') {
        i = cscan_skip_space(p, i + 1, n);
        if (i >= n) return CSCAN_FAIL;
        if (objects & 1) goto key;
        goto value;
    }
    if (p[i] != ((objects & 1) ? '}' : ']')) return CSCAN_FAIL;
    i++;

close:
    objects >>= 1;
    depth--;
    if (depth == 0) return i;
    if (s && depth == 1 && !cscan_end(s, i - first, escaped)) return CSCAN_FAIL;
    goto after;
}

/* The next record of an array of records (or, with `lines`, of NDJSON), from `at` in the
   block `p` of `n` bytes, just past the record before (or a value yajl read). Returns 1
   with the record's range in `*start`..`*end`, its member ends in `s` as yajl's pass
   leaves them; or 0: the reader hands the block from `at` on to yajl. `levels`: the
   nesting a record may have (its own object counts one); `max_bytes`: the record size limit. */
static inline int cscan_next_record(cyajl_feed_state *s, const unsigned char *p, size_t n, size_t at, int lines,
                                    int levels, size_t max_bytes, size_t *start, size_t *end) {
    size_t i = at;
    if (lines) {
        /* NDJSON: only whitespace between two records, a line break among it. */
        int newline = 0;
        while (i < n && cscan_is_space(p[i])) newline |= p[i++] == '\n';
        if (i >= n || !newline) return 0;
    } else {
        i = cscan_skip_space(p, i, n);
        if (i >= n || p[i] != ',') return 0;
        i = cscan_skip_space(p, i + 1, n);
        if (i >= n) return 0;
    }
    if (levels > CSCAN_MOST_LEVELS) levels = CSCAN_MOST_LEVELS;
    const int object = p[i] == '{' && s->members_on;
    s->end_count = 0;
    s->members_lost = 0;
    size_t past = cscan_value(object ? s : NULL, p, i, n, levels);
    /* (Ends that could not be kept made the scan fail: cscan_end.) */
    if (past == CSCAN_FAIL || past - i > max_bytes) {
        s->end_count = 0;
        s->capture_depth = -1;
        return 0;
    }
    s->capture_depth = object ? s->records_depth + 1 : -1;
    *start = i;
    *end = past;
    return 1;
}

#endif
