/*
 * Reference importer: the "physical limit for one core" that Ingest's
 * benchmark compares against. Single-threaded, plain C11: yajl callbacks
 * stream the feed (a top-level JSON array of photo records), photographers
 * are uniqued with an in-memory open-addressing hash table, and rows go into
 * SQLite through prepared statements, committing every 10,000 records.
 *
 * The store must already exist with the tables of Pipelines/bench-photos.json
 * (the benchmark creates them with Ingest).
 *
 * Build: cc -O2 -o importer Benchmarks/reference-importer/importer.c -lyajl -lsqlite3
 * Run:   importer FEED.json STORE.sqlite
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include <yajl/yajl_parse.h>

#define BLOCK (256 * 1024)
#define COMMIT_EVERY 10000

/* Text fields: the record's, then its photographer's. */
enum { F_ID, F_TITLE, F_SUBTITLE, F_PHOTO_URL, F_THUMB_URL, F_UPLOAD_DATE, P_ID, P_NAME, N_TEXT };
/* Numeric fields (after the text ones in the key numbering). */
enum { F_VIEWS = N_TEXT, F_LATITUDE, F_LONGITUDE, F_PHOTOGRAPHER, F_NONE = -1 };

static const struct { const char *name; size_t len; int field; } record_keys[] = {
    { "id", 2, F_ID }, { "title", 5, F_TITLE }, { "subtitle", 8, F_SUBTITLE }, { "photoURL", 8, F_PHOTO_URL },
    { "thumbnailURL", 12, F_THUMB_URL }, { "uploadDate", 10, F_UPLOAD_DATE }, { "views", 5, F_VIEWS },
    { "latitude", 8, F_LATITUDE }, { "longitude", 9, F_LONGITUDE }, { "photographer", 12, F_PHOTOGRAPHER },
};

typedef struct { char *p; size_t len, cap; int set; } Text;
typedef struct { char *key; size_t len; uint64_t hash; sqlite3_int64 pk; } Slot;

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *ins_photo, *ins_photographer;
    Slot *slots; size_t cap, used;              /* photographer id -> _pk */
    int depth, key, in_photographer;
    Text text[N_TEXT];
    sqlite3_int64 views; double lat, lon; int has_views, has_lat, has_lon;
    sqlite3_int64 next_photo, next_photographer, records, photographers;
    int failed;                                 /* a SQLite error is in db's errmsg */
} Ctx;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;        /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* The slot holding key, or the empty slot where it belongs. */
static Slot *lookup(Slot *slots, size_t cap, const char *key, size_t len, uint64_t h) {
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        Slot *s = &slots[i];
        if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)) return s;
    }
}

static int table_put(Ctx *c, const char *key, size_t len, uint64_t h, sqlite3_int64 pk) {
    if ((c->used + 1) * 10 > c->cap * 7) {      /* keep the load under 70% */
        size_t ncap = c->cap ? c->cap * 2 : 1024;
        Slot *n = calloc(ncap, sizeof *n);
        if (!n) return 0;
        for (size_t i = 0; i < c->cap; i++)
            if (c->slots[i].key) *lookup(n, ncap, c->slots[i].key, c->slots[i].len, c->slots[i].hash) = c->slots[i];
        free(c->slots);
        c->slots = n; c->cap = ncap;
    }
    Slot *s = lookup(c->slots, c->cap, key, len, h);
    if (!(s->key = malloc(len ? len : 1))) return 0;
    memcpy(s->key, key, len);
    s->len = len; s->hash = h; s->pk = pk;
    c->used++;
    return 1;
}

static int text_set(Text *t, const unsigned char *s, size_t n) {
    if (n > t->cap) {
        char *p = realloc(t->p, n);
        if (!p) return 0;
        t->p = p; t->cap = n;
    }
    memcpy(t->p, s, n);
    t->len = n; t->set = 1;
    return 1;
}

static void bind_text(sqlite3_stmt *st, int i, const Text *t) {
    if (t->set) sqlite3_bind_text(st, i, t->p, (int)t->len, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static int step(Ctx *c, sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) { c->failed = 1; return 0; }
    return 1;
}

static int exec(Ctx *c, const char *sql) {
    if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK) { c->failed = 1; return 0; }
    return 1;
}

/* End of a record: unique its photographer, insert the photo. */
static int finish_record(Ctx *c) {
    int has_photographer = c->text[P_ID].set;
    sqlite3_int64 who = 0;
    if (has_photographer) {
        const Text *id = &c->text[P_ID];
        uint64_t h = hash_bytes(id->p, id->len);
        Slot *s = c->cap ? lookup(c->slots, c->cap, id->p, id->len, h) : NULL;
        if (s && s->key) who = s->pk;
        else {
            who = c->next_photographer++;
            sqlite3_bind_int64(c->ins_photographer, 1, who);
            bind_text(c->ins_photographer, 2, id);
            bind_text(c->ins_photographer, 3, &c->text[P_NAME]);
            if (!step(c, c->ins_photographer) || !table_put(c, id->p, id->len, h, who)) return 0;
            c->photographers++;
        }
    }
    sqlite3_stmt *st = c->ins_photo;
    sqlite3_bind_int64(st, 1, c->next_photo++);
    for (int f = F_ID; f <= F_UPLOAD_DATE; f++) bind_text(st, f + 2, &c->text[f]);
    if (c->has_views) sqlite3_bind_int64(st, 8, c->views); else sqlite3_bind_null(st, 8);
    if (c->has_lat) sqlite3_bind_double(st, 9, c->lat); else sqlite3_bind_null(st, 9);
    if (c->has_lon) sqlite3_bind_double(st, 10, c->lon); else sqlite3_bind_null(st, 10);
    if (has_photographer) sqlite3_bind_int64(st, 11, who); else sqlite3_bind_null(st, 11);
    if (!step(c, st)) return 0;
    if (++c->records % COMMIT_EVERY == 0 && !exec(c, "COMMIT; BEGIN")) return 0;
    return 1;
}

/* yajl callbacks. Depth 1: the top array; 2: a record; 3: its photographer. */
static int on_start_map(void *ctx) {
    Ctx *c = ctx;
    if (c->depth == 1) {
        for (int f = 0; f < N_TEXT; f++) c->text[f].set = 0;
        c->has_views = c->has_lat = c->has_lon = 0;
    } else if (c->depth == 2 && c->key == F_PHOTOGRAPHER) c->in_photographer = 1;
    c->depth++; c->key = F_NONE;
    return 1;
}

static int on_end_map(void *ctx) {
    Ctx *c = ctx;
    c->depth--; c->key = F_NONE;
    if (c->depth == 2) c->in_photographer = 0;
    return c->depth == 1 ? finish_record(c) : 1;
}

static int on_start_array(void *ctx) { Ctx *c = ctx; c->depth++; c->key = F_NONE; return 1; }
static int on_end_array(void *ctx) { Ctx *c = ctx; c->depth--; c->key = F_NONE; return 1; }

static int on_map_key(void *ctx, const unsigned char *k, size_t n) {
    Ctx *c = ctx;
    c->key = F_NONE;
    if (c->depth == 2) {
        for (size_t i = 0; i < sizeof record_keys / sizeof *record_keys; i++)
            if (record_keys[i].len == n && memcmp(record_keys[i].name, k, n) == 0) { c->key = record_keys[i].field; break; }
    } else if (c->depth == 3 && c->in_photographer) {
        if (n == 2 && memcmp(k, "id", 2) == 0) c->key = P_ID;
        else if (n == 4 && memcmp(k, "name", 4) == 0) c->key = P_NAME;
    }
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t n) {
    Ctx *c = ctx;
    if (c->key == F_NONE) return 1;
    if (c->key < N_TEXT) return text_set(&c->text[c->key], s, n);
    if (c->key == F_VIEWS && n > 0 && n < 32) {  /* a numeric string: store the integer */
        char buf[32], *end;
        memcpy(buf, s, n); buf[n] = 0;
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (!*end && !errno) { c->views = v; c->has_views = 1; }
    }
    return 1;
}

static int on_integer(void *ctx, long long v) {
    Ctx *c = ctx;
    switch (c->key) {
    case F_VIEWS: c->views = v; c->has_views = 1; break;
    case F_LATITUDE: c->lat = (double)v; c->has_lat = 1; break;
    case F_LONGITUDE: c->lon = (double)v; c->has_lon = 1; break;
    }
    return 1;
}

static int on_double(void *ctx, double v) {
    Ctx *c = ctx;
    switch (c->key) {
    case F_VIEWS: c->views = (sqlite3_int64)v; c->has_views = 1; break;
    case F_LATITUDE: c->lat = v; c->has_lat = 1; break;
    case F_LONGITUDE: c->lon = v; c->has_lon = 1; break;
    }
    return 1;
}

static const yajl_callbacks callbacks = {
    NULL, NULL, on_integer, on_double, NULL, on_string,
    on_start_map, on_map_key, on_end_map, on_start_array, on_end_array
};

/* coalesce(max(_pk),0)+1 of a table. */
static int next_pk(Ctx *c, const char *sql, sqlite3_int64 *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) { c->failed = 1; return 0; }
    int ok = sqlite3_step(st) == SQLITE_ROW;
    if (ok) *out = sqlite3_column_int64(st, 0); else c->failed = 1;
    sqlite3_finalize(st);
    return ok;
}

/* Photographers already in the store go into the table, so they stay unique. */
static int load_photographers(Ctx *c) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT id, _pk FROM Photographer WHERE id IS NOT NULL", -1, &st, NULL) != SQLITE_OK) {
        c->failed = 1; return 0;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        size_t n = (size_t)sqlite3_column_bytes(st, 0);
        if (!table_put(c, id, n, hash_bytes(id, n), sqlite3_column_int64(st, 1))) { rc = SQLITE_NOMEM; break; }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) { c->failed = 1; return 0; }
    return 1;
}

/* Secondary indexes (not the unique ones) are dropped for the load and built again at
 * the end, as Ingest does: both programs then pay for the same indexes the same way. */
static char *deferred_indexes;

static int defer_indexes(Ctx *c) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT group_concat(sql, ';' || char(10)) || ';', group_concat('DROP INDEX \"' || name || '\"', ';')"
                           " FROM sqlite_master WHERE type = 'index' AND name LIKE '\\_index\\_%' ESCAPE '\\' AND sql IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK) { c->failed = 1; return 0; }
    char *drops = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        deferred_indexes = strdup((const char *)sqlite3_column_text(st, 0));
        drops = strdup((const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    if (!deferred_indexes) deferred_indexes = strdup("");
    int ok = !drops || exec(c, drops);
    free(drops);
    return ok;
}

static int setup(Ctx *c) {
    /* The same writer page cache as Ingest's (8 MiB), so neither side pays for a smaller one. */
    return exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-8192")
        && next_pk(c, "SELECT coalesce(max(_pk),0)+1 FROM Photo", &c->next_photo)
        && next_pk(c, "SELECT coalesce(max(_pk),0)+1 FROM Photographer", &c->next_photographer)
        && load_photographers(c)
        && defer_indexes(c)
        && sqlite3_prepare_v2(c->db, "INSERT INTO Photo (_pk, id, title, subtitle, photoURL, thumbnailURL, uploadDate,"
                              " views, latitude, longitude, _whoTook) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                              -1, &c->ins_photo, NULL) == SQLITE_OK
        && sqlite3_prepare_v2(c->db, "INSERT INTO Photographer (_pk, id, name) VALUES (?,?,?)",
                              -1, &c->ins_photographer, NULL) == SQLITE_OK
        && exec(c, "BEGIN");
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s FEED.json STORE.sqlite\n", argv[0]); return 1; }
    Ctx c = { 0 };
    int fd = -1, ok = 0;
    unsigned char *buf = NULL;
    yajl_handle h = NULL;

    if (sqlite3_open_v2(argv[2], &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK || !setup(&c)) {
        fprintf(stderr, "sqlite: %s\n", c.db ? sqlite3_errmsg(c.db) : "out of memory");
        goto done;
    }
    if ((fd = open(argv[1], O_RDONLY)) < 0) { fprintf(stderr, "%s: %s\n", argv[1], strerror(errno)); goto done; }
    if (!(buf = malloc(BLOCK)) || !(h = yajl_alloc(&callbacks, NULL, &c))) { fprintf(stderr, "out of memory\n"); goto done; }

    yajl_status st = yajl_status_ok;
    for (;;) {
        ssize_t n = read(fd, buf, BLOCK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { fprintf(stderr, "%s: %s\n", argv[1], strerror(errno)); goto done; }
        st = n ? yajl_parse(h, buf, (size_t)n) : yajl_complete_parse(h);
        if (st != yajl_status_ok || n == 0) break;
    }
    if (st != yajl_status_ok) {
        if (c.failed) fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(c.db));
        else if (st == yajl_status_client_canceled) fprintf(stderr, "out of memory\n");
        else {
            unsigned char *msg = yajl_get_error(h, 0, NULL, 0);
            fprintf(stderr, "json: %s", (const char *)msg);
            yajl_free_error(h, msg);
        }
        goto done;
    }
    if (!exec(&c, "COMMIT") || !exec(&c, deferred_indexes)) { fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(c.db)); goto done; }
    printf("records %lld photographers %lld\n", (long long)c.records, (long long)c.photographers);
    ok = 1;

done:
    if (h) yajl_free(h);
    free(buf);
    if (fd >= 0) close(fd);
    sqlite3_finalize(c.ins_photo);
    sqlite3_finalize(c.ins_photographer);
    if (c.db) sqlite3_close(c.db);              /* an open transaction rolls back */
    for (size_t i = 0; i < c.cap; i++) free(c.slots[i].key);
    free(c.slots);
    free(deferred_indexes);
    for (int f = 0; f < N_TEXT; f++) free(c.text[f].p);
    return ok ? 0 : 1;
}
