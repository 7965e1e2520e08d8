#!/usr/bin/env bash
# The cold release build `./run.sh` runs, on a fresh clone: its wall and CPU time, which
# module compiles when (a timeline read from `ps` once a second), and each module's
# compiler CPU (the frontend's own statistics, `-stats-output-dir`). With --tests, the
# debug build `./run.sh test` runs instead (`swift build --build-tests`, its flags included).
#
# Usage: Benchmarks/cold-build.sh [--commit REV] [--keep] [--tests] [-- EXTRA SWIFT BUILD ARGS...]
#        (default: HEAD of this repository's clone; the clone is removed unless --keep)
# Env:   WORK  where the clone and the results go (default /tmp/ingest-cold-build)
#
# Wall clock on a shared 2-core machine drifts: three builds of one commit within an hour
# took 193 s, 243 s and 260 s, with 285, 356 and 381 s of CPU. Compare builds run
# alternately in the same hour, and read the per-module CPU beside the wall time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/tmp/ingest-cold-build}"
COMMIT=HEAD
KEEP=0
TESTS=0
EXTRA=()
usage() { echo "usage: $0 [--commit REV] [--keep] [--tests] [-- EXTRA SWIFT BUILD ARGS...]" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --commit) [ $# -ge 2 ] || usage; COMMIT="$2"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --tests) TESTS=1; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) usage ;;
    esac
done
command -v swift >/dev/null || { echo "error: swift not found" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }

rev="$(git -C "$ROOT" rev-parse --short "$COMMIT")"
kind=release
build=(swift build -c release --static-swift-stdlib -Xswiftc -use-ld=lld --product ingest)
if [ $TESTS -eq 1 ]; then
    # As `./run.sh test` builds (its INGEST_OPTIMIZED_TESTS default included).
    kind=tests
    rev="$rev-tests"
    build=(env INGEST_OPTIMIZED_TESTS="${INGEST_OPTIMIZED_TESTS:-1}" swift build --build-tests -Xswiftc -driver-batch-count -Xswiftc 1)
fi
clone="$WORK/clone-$rev"
stats="$WORK/stats-$rev"
timeline="$WORK/timeline-$rev.txt"
mkdir -p "$WORK"
rm -rf "$clone" "$stats"
git clone -q "$ROOT" "$clone"
git -C "$clone" checkout -q "${rev%-tests}"
mkdir -p "$stats"

# The build `./run.sh` (or `./run.sh test`) runs, with the frontend's statistics on.
cd "$clone"
start=$(date +%s.%N)
(
    set +e +o pipefail
    while :; do
        now=$(date +%s.%N)
        modules=$(ps -eo args | grep -E '^[^ ]*swift-frontend ' | grep -oE 'module-name [A-Za-z_0-9]+' | awk '{print $2}' | sort | uniq -c | awk '{printf "%s%s ", $2, ($1 > 1 ? "×" $1 : "")}')
        printf '%.0f %s\n' "$(echo "$now - $start" | bc)" "$modules"
        sleep 1
    done
) > "$timeline.raw" &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT
status=0
/usr/bin/time -f "%e %U %S %M" -o "$WORK/time-$rev.txt" \
    "${build[@]}" -Xswiftc -stats-output-dir -Xswiftc "$stats" ${EXTRA[@]+"${EXTRA[@]}"} > "$WORK/build-$rev.log" 2>&1 || status=$?
kill $sampler 2>/dev/null || true
wait $sampler 2>/dev/null || true
[ $status -eq 0 ] || { tail -20 "$WORK/build-$rev.log" >&2; echo "error: the build failed (log: $WORK/build-$rev.log)" >&2; exit 1; }

# The timeline: one line per change of what compiles.
awk '{ t = $1; $1 = ""; if ($0 != last) { printf "%5s s %s\n", t, ($0 == "" ? " (no compiler running)" : $0); last = $0 } }' "$timeline.raw" > "$timeline"
rm -f "$timeline.raw"

read -r wall user sys rss < "$WORK/time-$rev.txt"
echo "cold $kind build of ${rev%-tests}: ${wall} s wall, ${user} s user CPU, ${sys} s system CPU"
echo
echo "compiler CPU by module (user + system seconds of its frontend jobs):"
python3 - "$stats" <<'PY'
import json, os, re, sys, collections
cpu = collections.Counter()
for name in os.listdir(sys.argv[1]):
    with open(os.path.join(sys.argv[1], name)) as f:
        data = json.load(f)
    for key, value in data.items():
        m = re.match(r'time\.swift-frontend\.([A-Za-z_0-9]+)-.*\.(user|sys)$', key)
        if m:
            cpu[m.group(1)] += value
for module, seconds in cpu.most_common():
    print(f"  {seconds:7.1f}  {module}")
print(f"  {sum(cpu.values()):7.1f}  in all")
PY
echo
echo "timeline (seconds from the start, the modules compiling; ×2: two jobs of one module):"
cat "$timeline"
echo
echo "log: $WORK/build-$rev.log; timeline: $timeline"
[ $KEEP -eq 1 ] || rm -rf "$clone"
