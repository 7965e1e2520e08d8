#!/usr/bin/env bash
# Soak test (not part of `./run.sh test`): imports a generated feed with 2 workers while
# another process runs `ingest query` in a loop, SIGKILLs the importer KILLS times at
# random moments, resumes after each, then compares the store with a clean import.
#
#   ./run.sh soak                 # 5,000,000 records, 50 kills
#   RECORDS=200000 KILLS=10 ./run.sh soak
#
# Prints records, kills, wall time, the importers' peak RSS and the result; exits 1 when
# the stores differ, the check fails, or a query failed during the import.
set -euo pipefail
bin="${INGEST_BIN:?set by run.sh}"
records="${RECORDS:-5000000}"
kills="${KILLS:-50}"
work="${WORK:-/tmp/ingest-soak}"
pipeline="$(cd "$(dirname "$0")/../.." && pwd)/Pipelines/photos.json"
mkdir -p "$work"
feed="$work/photos-$records.json"
[ -f "$feed" ] || "$bin" generate --records "$records" -o "$feed" >/dev/null
store="$work/soak.sqlite"
clean="$work/clean.sqlite"
rm -rf "$store" "$store"-* "$store".* "$clean" "$clean"-* "$clean".*
peak=0
hits=0
run_import() {  # run_import TIMEOUT ARGS… — kills the importer after TIMEOUT seconds (0: never)
  local timeout="$1"; shift
  /usr/bin/time -f "%M" -o "$work/rss" "$bin" "$@" --quiet &
  local pid=$!
  if [ "$timeout" != 0 ]; then
    sleep "$timeout"
    if pkill -KILL -P "$pid" ingest 2>/dev/null; then hits=$((hits + 1)); fi
  fi
  wait "$pid" 2>/dev/null || true
  local rss; rss=$(tail -1 "$work/rss" | tr -dc '0-9'); rss=${rss:-0}
  [ "$rss" -gt "$peak" ] && peak=$rss
  return 0
}

start=$(date +%s)
# Readers during the whole run: a query loop counting failures once the store exists.
( failures=0; while [ ! -f "$work/stop-queries" ]; do
    if [ -f "$store" ] && ! "$bin" query "$store" Photo --count >/dev/null 2>"$work/query-error"; then
      failures=$((failures + 1)); cp "$work/query-error" "$work/query-error-$failures"
    fi
    sleep 0.2
  done; echo "$failures" > "$work/query-failures" ) &
rm -f "$work/stop-queries"
seed=${SEED:-7}
RANDOM=$seed
for i in $(seq 1 "$kills"); do
  delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 1 + (r % 500) / 100 }')
  run_import "$delay" import "$feed" --pipeline "$pipeline" --store "$store" --workers 2
  printf '\rkill %d/%d after %ss' "$i" "$kills" "$delay" >&2
done
echo >&2
run_import 0 resume "$store" --workers 2
touch "$work/stop-queries"; wait
end=$(date +%s)
run_import 0 import "$feed" --pipeline "$pipeline" --store "$clean" --workers 2

# Every column of every photo (its photographer by id) and every photographer.
digest() { local cols; cols=$(sqlite3 "$1" "SELECT group_concat('quote(p.\"' || name || '\")', ',') FROM pragma_table_info('Photo') WHERE name NOT IN ('_pk', '_whoTook')")
           sqlite3 "$1" "SELECT $cols, g.id FROM Photo p LEFT JOIN Photographer g ON g._pk = p._whoTook ORDER BY p.id;
                         SELECT id, name FROM Photographer ORDER BY id;" | sha256sum | cut -c1-16; }
a=$(digest "$store"); b=$(digest "$clean")
photos=$(sqlite3 "$store" "SELECT count(*) FROM Photo"); photographers=$(sqlite3 "$store" "SELECT count(*) FROM Photographer")
check=ok; "$bin" status "$store" --check >/dev/null || check=failed
failures=$(cat "$work/query-failures")
result=PASS; { [ "$a" = "$b" ] && [ "$check" = ok ] && [ "$failures" = 0 ]; } || result=FAIL
printf '| records | kills (of them mid-run) | wall time (kills + resumes) | peak RSS | Photo / Photographer | same as clean import | status --check | query failures | result |\n'
printf '|---:|---:|---:|---:|---:|:---:|:---:|---:|:---:|\n'
printf '| %s | %s (%s) | %s s | %s MiB | %s / %s | %s | %s | %s | %s |\n' "$records" "$kills" "$hits" "$((end - start))" "$((peak / 1024))" \
  "$photos" "$photographers" "$([ "$a" = "$b" ] && echo yes || echo "no ($a vs $b)")" "$check" "$failures" "$result"
[ "$result" = PASS ]
