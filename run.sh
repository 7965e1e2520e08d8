#!/usr/bin/env bash
# The one entry point. `./run.sh` installs what is missing, builds in release mode
# and runs the demo; `./run.sh ARGS…` runs `ingest ARGS…`; `./run.sh test` runs
# the whole test suite; `./run.sh soak` runs the long kill-and-resume soak test;
# `./run.sh docs` builds the DocC documentation.
set -euo pipefail
cd "$(dirname "$0")"

need=()
pkg-config --exists yajl 2>/dev/null || need+=(libyajl-dev)
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)                 # gzip feeds
{ [ -f /usr/include/curl/curl.h ] || compgen -G '/usr/include/*/curl/curl.h' >/dev/null; } || need+=(libcurl4-openssl-dev)  # feeds over HTTP(S)
[ -f /usr/include/postgresql/libpq-fe.h ] || need+=(libpq-dev)   # PostgreSQL stores (libpq)
[ -f /usr/include/zstd.h ] || need+=(libzstd-dev)                # PostgreSQL runs' chunks, compressed
[ -f /usr/include/libxml2/libxml/parser.h ] || need+=(libxml2-dev)  # Xcode model files (FoundationXML links libxml2)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)  # the PostgreSQL tests' server
command -v json_verify >/dev/null 2>&1 || need+=(yajl-tools)   # bench split's reference parser
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)           # bench fetch's reference shell
[ -x /usr/bin/python3 ] || need+=(python3)                       # the inference tests' independent counts
command -v jq >/dev/null 2>&1 || need+=(jq)                      # the replay tests fix rejects with jq, as users do
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "run.sh: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "run.sh: missing system packages; run as root: apt-get install -y ${need[*]}" >&2
    # Only the build needs are fatal; without the server the PostgreSQL tests are skipped.
    for p in "${need[@]}"; do [ "$p" = yajl-tools ] || [ "$p" = sqlite3 ] || [ "$p" = postgresql ] || [ "$p" = python3 ] || [ "$p" = jq ] || exit 1; done
  fi
fi

if [ "${1:-}" = docs ]; then
  # DocC for the libraries, warnings as errors, into .build/docs (swift-docc-plugin).
  out=.build/docs
  export INGEST_DOCS=1   # Package.swift adds swift-docc-plugin only then
  mkdir -p "$out"
  for target in IngestStore IngestPipeline; do
    swift package --allow-writing-to-directory "$out" generate-documentation --target "$target" \
      --output-path "$out/$target" --warnings-as-errors --disable-indexing
  done
  echo "documentation in $out/IngestStore and $out/IngestPipeline" >&2
  exit 0
fi

if [ "${1:-}" = test ]; then
  shift
  # The debug build optimises the import's hot path (Package.swift); 0 builds it as plain
  # `swift build` does, for stepping through it in a debugger.
  export INGEST_OPTIMIZED_TESTS="${INGEST_OPTIMIZED_TESTS:-1}"
  # With a time limit (CI sets one), a hung test ends the run with the test processes'
  # threads printed (by gdb, where it is installed) instead of holding CI to its end.
  limit="${INGEST_TEST_TIME_LIMIT:-}"
  [ -z "$limit" ] || [[ "$limit" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: INGEST_TEST_TIME_LIMIT is a number of seconds (got '$limit')" >&2; exit 2; }
  # One batch of files per module's compile job, not one per core: a job parses every file
  # of its module and checks the declarations its files use, so two did part of that twice
  # (a fresh clone's test build 273 s → 249 s, 499 → 448 s of CPU; Performance, "Session 42").
  swift build --build-tests -Xswiftc -driver-batch-count -Xswiftc 1
  # The tests' temporary files, and those of the `ingest` processes they start, in a
  # directory of the run's own that goes when it ends: tests kill imports on purpose, and a
  # killed PostgreSQL import leaves its `ingest-split-*` chunk directory behind (about 20 a
  # run, 1.5 GB in /tmp over a day of runs before this).
  tests_tmp="$(mktemp -d "${TMPDIR:-/tmp}/ingest-test-tmp.XXXXXX")"
  trap 'rm -rf "$tests_tmp"' EXIT
  export TMPDIR="$tests_tmp"
  if [ -z "$limit" ]; then
    status=0
    swift test --skip-build "$@" || status=$?
    exit "$status"
  fi
  servers_before=" $( (pgrep -f 'postgres -D [^ ]*/ingest-pg-' || true) | tr '\n' ' ') "
  # Made now (mktemp creates it, never through a link); the watchdog writes to it when it fires.
  fired="$(mktemp /tmp/ingest-test-limit.XXXXXX)"
  swift test --skip-build "$@" &
  tests=$!
  (
    sleep "$limit" & nap=$!
    trap 'kill $nap 2>/dev/null; exit 0' TERM
    wait $nap
    echo fired > "$fired"
    trap - TERM
    echo "run.sh: the tests ran past INGEST_TEST_TIME_LIMIT=${limit}s; stopping them" >&2
    for pid in $(pgrep -P "$tests" -f '\.xctest' || true); do
      if command -v gdb >/dev/null; then
        echo "run.sh: threads of test process $pid:" >&2
        gdb -p "$pid" -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread|#)' >&2 || true
      fi
      kill -KILL "$pid" 2>/dev/null || true
      # The tests' clusters and directories are under /dev/shm or /tmp (Tests/IngestTestSupport/ScratchRoot.swift).
      for root in ${INGEST_TEST_PG_ROOT:-} ${INGEST_TEST_TMPDIR:-} /dev/shm /tmp; do
        rm -rf "$root"/ingest-pg-template-"$pid"-* "$root"/ingest-tests-"$pid"-*
      done
    done
    kill -TERM "$tests" 2>/dev/null || true
    # The PostgreSQL servers the killed tests started (each test process stops its own
    # when it exits, which a killed one does not): an immediate shutdown, then their files.
    for pid in $(pgrep -f 'postgres -D [^ ]*/ingest-pg-' || true); do
      [[ "$servers_before" == *" $pid "* ]] && continue
      data=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | sed -n '/^-D$/{n;p;q}')
      kill -QUIT "$pid" 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      case "$data" in */ingest-pg-*/data) rm -rf "${data%/data}" ;; esac
    done
  ) &
  watchdog=$!
  status=0
  wait "$tests" || status=$?
  if [ -s "$fired" ]; then
    wait "$watchdog" 2>/dev/null || true
    status=124
  else
    kill -TERM "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
  fi
  rm -f "$fired"
  exit "$status"
fi

# The Swift runtime and Foundation linked in, not loaded as shared libraries: a process maps
# and relocates only what it uses (peak RSS about 5 MiB lower on every import). Linked by the
# toolchain's lld, which does not repeat glibc's link-time warning about static Foundation's
# use of mktemp (gold does).
release=(-c release --static-swift-stdlib -Xswiftc -use-ld=lld)
swift build "${release[@]}" --product ingest >&2
bin="$(swift build "${release[@]}" --show-bin-path)/ingest"
if [ "${1:-}" = soak ]; then
  INGEST_BIN="$bin" exec Tests/Soak/soak.sh
fi
if [ $# -eq 0 ]; then
  exec "$bin" demo
fi
exec "$bin" "$@"
