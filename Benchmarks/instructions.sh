#!/usr/bin/env bash
# Deterministic cost of an import: instructions per record, counted with
# valgrind's callgrind as (count at LARGE records - count at SMALL) / (LARGE - SMALL),
# for the C reference importer (Benchmarks/reference-importer/importer.c) and for
# `ingest import ... --workers 1`, and their ratio. Fixed per-process costs
# (start-up, schema, index builds of an empty store) cancel out in the difference.
#
# Usage: Benchmarks/instructions.sh [--small N] [--large N] [--style realistic|classic]
#        (default 20000 40000 realistic: `ingest generate --style`; classic is the kinder feed
#        of the figures before 0.5)
# Env:   INGEST_BIN  the ingest binary (default .build/release/ingest, as ./run.sh builds it)
#        WORK        work directory (default /tmp/ingest-instructions); feeds there are reused
#        PIPELINE    the pipeline (default Pipelines/bench-photos.json; history on, as imports are)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INGEST_BIN="${INGEST_BIN:-$ROOT/.build/release/ingest}"
WORK="${WORK:-/tmp/ingest-instructions}"
SMALL=20000
LARGE=40000
STYLE=realistic

usage() { echo "usage: $0 [--small N] [--large N] [--style realistic|classic]" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --small) [ $# -ge 2 ] || usage; SMALL="$2"; shift 2 ;;
        --large) [ $# -ge 2 ] || usage; LARGE="$2"; shift 2 ;;
        --style) [ $# -ge 2 ] || usage; STYLE="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) usage ;;
    esac
done
[[ "$SMALL" =~ ^[0-9]+$ && "$LARGE" =~ ^[0-9]+$ && "$LARGE" -gt "$SMALL" ]] \
    || { echo "error: need 0 <= --small < --large (got $SMALL, $LARGE)" >&2; exit 2; }
[[ "$STYLE" = realistic || "$STYLE" = classic ]] || { echo "error: --style is realistic or classic (got $STYLE)" >&2; exit 2; }

command -v valgrind >/dev/null || {
    echo "error: valgrind not found; it does the counting (callgrind). Install it, e.g. apt-get install valgrind." >&2
    exit 1
}
for tool in cc objcopy sqlite3 awk; do
    command -v "$tool" >/dev/null || { echo "error: '$tool' not found" >&2; exit 1; }
done
[ -x "$INGEST_BIN" ] || { echo "error: no ingest binary at $INGEST_BIN (./run.sh --help builds it, or set INGEST_BIN)" >&2; exit 1; }
INGEST_BIN="$(cd "$(dirname "$INGEST_BIN")" && pwd)/$(basename "$INGEST_BIN")"
PIPELINE="${PIPELINE:-$ROOT/Pipelines/bench-photos.json}"
SOURCE="$ROOT/Benchmarks/reference-importer/importer.c"

mkdir -p "$WORK"
cd "$WORK"

# The programs measured: a stripped copy of ingest and the C importer.
objcopy --strip-debug "$INGEST_BIN" "$WORK/ingest"
cc -O2 -o "$WORK/reference-importer" "$SOURCE" -lyajl -lsqlite3

# Feeds (deterministic, so reused when present).
for n in 1 "$SMALL" "$LARGE"; do
    [ -s "$WORK/feed-$STYLE-$n.json" ] || "$INGEST_BIN" generate --records "$n" --style "$STYLE" -o "$WORK/feed-$STYLE-$n.json" 2>"$WORK/generate.log" \
        || { cat "$WORK/generate.log" >&2; exit 1; }
done

# Removes a store and everything ingest or SQLite keeps next to it.
clean_store() {
    rm -rf "$1" "$1-wal" "$1-shm" "$1-journal" "$1.chunks" "$1.report.json" "$1.rejects.ndjson" "$1.lock"
}

# An empty store with Ingest's tables, for the C importer: import one record, delete it.
clean_store "$WORK/template.sqlite"
"$INGEST_BIN" import "$WORK/feed-$STYLE-1.json" --pipeline "$PIPELINE" --store "$WORK/template.sqlite" --workers 1 --quiet
sqlite3 "$WORK/template.sqlite" 'DELETE FROM Photo; DELETE FROM Photographer; PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
mv "$WORK/template.sqlite" "$WORK/template.db"
clean_store "$WORK/template.sqlite"

# count TOOL N: runs TOOL (c or ingest) over feed-N under callgrind; sets COUNT.
COMMANDS=()
count() {
    local tool="$1" n="$2" store="$WORK/store-$1-$2.sqlite" out="$WORK/callgrind-$1-$2.out" note="" cmd
    clean_store "$store"
    if [ "$tool" = c ]; then
        cp "$WORK/template.db" "$store"
        note="   # STORE: a fresh copy of $WORK/template.db"
        cmd=("$WORK/reference-importer" "$WORK/feed-$STYLE-$n.json" "$store")
    else
        cmd=("$WORK/ingest" import "$WORK/feed-$STYLE-$n.json" --pipeline "$PIPELINE" --store "$store" --workers 1 --quiet)
    fi
    COMMANDS+=("valgrind --tool=callgrind --callgrind-out-file=$out ${cmd[*]}$note")
    rm -f "$out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" >"$WORK/run-$tool-$n.log" 2>&1 \
        || { echo "error: run failed, see $WORK/run-$tool-$n.log" >&2; exit 1; }
    local photos
    photos="$(sqlite3 "$store" 'SELECT count(*) FROM Photo')"
    [ "$photos" = "$n" ] || { echo "error: $tool stored $photos photos of $n (see $WORK/run-$tool-$n.log)" >&2; exit 1; }
    clean_store "$store"
    # One output file for all threads (no --separate-threads): its summary is the total.
    COUNT="$(awk '/^(summary|totals):/ { print $2; exit }' "$out")"
    [[ "$COUNT" =~ ^[0-9]+$ ]] || { echo "error: no instruction total in $out" >&2; exit 1; }
    echo "  $tool at $n records: $COUNT instructions" >&2
}

echo "counting instructions with callgrind (this takes a few minutes)..." >&2
count c "$SMALL";      C_SMALL="$COUNT"
count c "$LARGE";      C_LARGE="$COUNT"
count ingest "$SMALL"; I_SMALL="$COUNT"
count ingest "$LARGE"; I_LARGE="$COUNT"
echo >&2

awk -v s="$SMALL" -v l="$LARGE" -v cs="$C_SMALL" -v cl="$C_LARGE" -v is="$I_SMALL" -v il="$I_LARGE" 'BEGIN {
    cp = (cl - cs) / (l - s); ip = (il - is) / (l - s)
    printf "| program | instructions at %d | at %d | per record | ratio to C |\n", s, l
    printf "|---|---:|---:|---:|---:|\n"
    printf "| C reference importer | %.0f | %.0f | %.0f | 1.00 |\n", cs, cl, cp
    printf "| ingest import --workers 1 | %.0f | %.0f | %.0f | %.2f |\n", is, il, ip, ip / cp
}'
echo
echo "Commands (feeds: $INGEST_BIN generate --records N --style $STYLE -o $WORK/feed-$STYLE-N.json;"
echo "ingest stripped with objcopy --strip-debug; C importer: cc -O2 -o $WORK/reference-importer $SOURCE -lyajl -lsqlite3):"
echo
for c in "${COMMANDS[@]}"; do echo "    $c"; done
