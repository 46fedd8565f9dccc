#!/usr/bin/env bash
# players.sh: thousands of paced players against segorigin (both engines)
# and nginx, on the same W1 files. For each round (order alternating) it
# starts each server on a loopback port, runs the verifying load client
# (every session on its own keep-alive connection, fetching 2 MiB segments
# with its body reads capped at -bitrate) for a fixed time, reads the
# server's own CPU time (utime+stime of the server and its children, from
# /proc) around the run, and prints per server the medians over rounds of
# CPU seconds per GiB sent, TTFB p50/p99, fetch p99 and errors, and the
# CPU/GiB ratio to nginx. See loadtest/README.md.
#
#   bash loadtest/players.sh [-sessions N] [-bitrate B] [-d SECONDS] [-rounds N]
#        [-pause D] [-stagger D] [-servers LIST] [-dir DIR] [-pin] [-o FILE]
#
# Quick smoke:  bash loadtest/players.sh -sessions 200 -d 10 -rounds 1
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

SESSIONS=2000
BITRATE=2Mbit
DUR=60
ROUNDS=3
PAUSE=0s
STAGGER=""
SERVERS=segorigin,segorigin-fasthttp,nginx
DIR=""
OUT=""
PIN=0
ARGS=("$@")

usage() {
  cat <<'EOF'
usage: bash loadtest/players.sh [options]
  -sessions N       concurrent players, one keep-alive connection each (2000)
  -bitrate B        each player's cap on body reads: bits a second, or with
                    kbit, Mbit, Gbit (2Mbit)
  -d SECONDS        length of each timed run (60)
  -rounds N         rounds; the server order reverses every other round (3)
  -pause D          each player's wait after a segment, a Go duration (0s)
  -stagger D        each player's first request waits a random time below D
                    (default: one segment's time at -bitrate, at most -d/4;
                    0s: all ask at once, in lockstep from then on)
  -servers LIST     comma-separated, from segorigin (-engine loop, the default),
                    segorigin-fasthttp (-engine fasthttp), segorigin-uring
                    (-poller uring), segorigin-base (the binary
                    SEGORIGIN_BASE_BIN names: another version, in the same
                    sitting), nginx, nethttp, fasthttpfs
                    (segorigin,segorigin-fasthttp,nginx)
  -dir DIR          W1 files: used if present, generated there if not
                    (default: a temporary directory, removed at the end)
  -pin              run each server on CPU 0 (taskset; nginx with one worker,
                    Go servers get GOMAXPROCS 1) and the client on CPU 1
  -o FILE           also write the table to FILE (default
                    loadtest/results/players-DATE.txt) and every run to
                    FILE.runs.tsv (FILE without .txt)
Needs nginx for the nginx rows (it says what to apt-get install if missing).
Environment: SEGORIGIN_FLAGS adds flags to segorigin's command line; SEGORIGIN_BIN=FILE
runs that segorigin binary instead of building ./cmd/segorigin; SEGORIGIN_BASE_BIN=FILE
is the binary of segorigin-base.
EOF
}

while (($#)); do
  case $1 in
  -sessions) SESSIONS=$2 ;;
  -bitrate) BITRATE=$2 ;;
  -d) DUR=$2 ;;
  -rounds) ROUNDS=$2 ;;
  -pause) PAUSE=$2 ;;
  -stagger) STAGGER=$2 ;;
  -servers) SERVERS=$2 ;;
  -dir) DIR=$2 ;;
  -o) OUT=$2 ;;
  -pin)
    PIN=1
    shift
    continue
    ;;
  -h | -help | --help)
    usage
    exit 0
    ;;
  *)
    usage >&2
    exit 2
    ;;
  esac
  shift 2 || lt_die "$1 needs a value"
done
[[ $SESSIONS =~ ^[0-9]+$ && $SESSIONS -gt 0 ]] || lt_die "-sessions: want a number > 0"
[[ $DUR =~ ^[0-9]+$ && $DUR -gt 0 ]] || lt_die "-d: want whole seconds > 0"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -gt 0 ]] || lt_die "-rounds: want a number > 0"
IFS=, read -r -a SV <<<"$SERVERS"
for s in "${SV[@]}"; do
  case $s in segorigin | segorigin-fasthttp | segorigin-uring | segorigin-base | nginx | nethttp | fasthttpfs) ;; *) lt_die "unknown server $s" ;; esac
done

# Every session holds a descriptor in the client, and in the server: raise
# the soft limit to the hard one (the servers inherit it).
HARD=$(ulimit -Hn)
if [ "$HARD" != unlimited ]; then
  ((SESSIONS + 200 <= HARD)) || lt_die "-sessions $SESSIONS: the descriptor hard limit is $HARD"
fi
ulimit -n "$HARD"

tools=(go)
LT_CLIENT_PIN=()
if ((PIN)); then
  tools+=(taskset)
  lt_pin
fi
[[ ,$SERVERS, == *,nginx,* ]] && tools+=(nginx)
lt_need_tools "${tools[@]}"

lt_setup players "$DIR"
WORK=$LT_WORK DIR=$LT_DIR

echo "building into $WORK/bin ..." >&2
lt_build "$WORK/bin"
echo "W1 files in $DIR ..." >&2
lt_generate "$WORK/bin" "$DIR" W1
read -r COUNT SIZE <<<"$(lt_wrk_args "$DIR" W1)"

# The client checks the bit rate and the durations; the default stagger is
# one segment's time at the bit rate, at most a quarter of the run.
BPS=$(awk -v b="$BITRATE" 'BEGIN {
  s = tolower(b); sub(/\/s$/, "", s); m = 1
  if (s ~ /gbit$/) m = 1e9; else if (s ~ /mbit$/) m = 1e6; else if (s ~ /kbit$/) m = 1e3
  sub(/[a-z]+$/, "", s); printf "%.0f", s * m }')
if [ -z "$STAGGER" ]; then
  STAGGER=$(awk -v size="$SIZE" -v bps="$BPS" -v d="$DUR" 'BEGIN {
    t = bps > 0 ? size * 8 / bps : 0; if (t > d / 4) t = d / 4; printf "%dms", t * 1000 }')
fi
CLIENT_ARGS=(-workload W1 -count "$COUNT" -size "$SIZE" -sessions "$SESSIONS" -bitrate "$BITRATE"
  -pause "$PAUSE" -stagger "$STAGGER" -duration "${DUR}s" -q)

TICK=$(getconf CLK_TCK)
RAW=$WORK/raw.tsv
: >"$RAW"
LOGS=$WORK/logs
mkdir -p "$LOGS"

# client_run LOG ARGS... : one client run; prints its RESULT line with
# client_ms= added: the client's own CPU time (lt_ticks).
client_run() {
  local log=$1 ticks res
  shift
  ticks=$(lt_ticks "$log" "${LT_CLIENT_PIN[@]}" timeout $((DUR + 60)) "$WORK/bin/client" "$@") || true
  res=$(grep "^RESULT" "$log" | tail -1) || res="RESULT errors=-1"
  echo "$res client_ms=$((${ticks:-0} * 1000 / TICK))"
}

# measure ROUND SERVER PID ADDR : a short unpaced warm-up (the server's
# caches hold every file), then the timed run with the server's CPU time
# read around it; appends a line to RAW.
measure() {
  local round=$1 srv=$2 pid=$3 addr=$4 tag=$LOGS/r$1-$2 warm c0 c1 res
  warm=$(client_run "$tag-warmup.txt" -url "http://$addr" -workload W1 -count "$COUNT" -size "$SIZE" \
    -sessions 8 -duration 2s -q)
  c0=$(lt_cpu_ticks "$pid")
  res=$(client_run "$tag.txt" -url "http://$addr" "${CLIENT_ARGS[@]}")
  c1=$(lt_cpu_ticks "$pid")
  local cpu_ms=$(((c1 - c0) * 1000 / TICK)) errors
  errors=$(($(lt_kv "$warm" errors) + $(lt_kv "$res" errors)))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$round" "$srv" "$cpu_ms" "$(lt_kv "$res" bytes)" "$(lt_kv "$res" ttfb_p50_us)" "$(lt_kv "$res" ttfb_p99_us)" \
    "$(lt_kv "$res" p99_us)" "$errors" "$(lt_kv "$res" requests)" "$(lt_kv "$res" client_ms)" "$(lt_kv "$res" mibps)" >>"$RAW"
  printf '  %-18s %8s MiB/s  cpu %7s ms  ttfb p99 %8s µs  fetch p99 %9s µs  errors %s\n' \
    "$srv" "$(lt_kv "$res" mibps)" "$cpu_ms" "$(lt_kv "$res" ttfb_p99_us)" "$(lt_kv "$res" p99_us)" "$errors" >&2
}

for ((round = 1; round <= ROUNDS; round++)); do
  read -r -a order <<<"$(lt_order "$round" "${SV[@]}")"
  echo "round $round/$ROUNDS: ${order[*]}" >&2
  for srv in "${order[@]}"; do
    lt_start "$srv" "$WORK/bin" "$DIR" "$WORK/run-$round-$srv"
    measure "$round" "$srv" "$LT_PID" "$LT_ADDR"
    lt_stop "$LT_PID"
  done
done

# The report: medians over rounds, and CPU/GiB and TTFB p99 over nginx's
# (or the last server's, without nginx).
report() {
  echo "segorigin players, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Linux $(uname -r)"
  echo "servers: $(lt_segorigin_label); $("$(lt_nginx_bin)" -v 2>&1 | sed 's/.*version: //') (worker_processes ${LT_NGINX_WORKERS:-auto})"
  echo "client: $SESSIONS players × $BITRATE ($(awk -v b="$BPS" -v n="$SESSIONS" 'BEGIN { printf "%.0f", b * n / 8 / 1048576 }') MiB/s in all), $COUNT × $SIZE-byte W1 segments, pause $PAUSE, stagger $STAGGER, ${DUR} s per run, $ROUNDS round(s), order alternating"
  if ((PIN)); then
    echo "pinned: server on CPU 0 (nginx 1 worker; Go GOMAXPROCS 1), client on CPU 1 (taskset)"
  else
    echo "unpinned: servers and client share all CPUs"
  fi
  echo "command: bash loadtest/players.sh $*"
  echo "cpu = utime+stime of the server and its children during the timed run, per GiB of body the client read;"
  echo "ttfb = request written to response headers; fetch = request to the body's last byte (pacing included);"
  echo "medians over rounds; errors summed; ratios = median / nginx median (below 1 is better)."
  awk -F'\t' -v servers="$SERVERS" '
    function median(key,    n, i, j, t, a) {
      n = cnt[key]
      for (i = 1; i <= n; i++) a[i] = val[key, i]
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      if (n == 0) return 0
      if (n % 2) return a[(n + 1) / 2]
      return (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function add(s, m, v) { k = s SUBSEP m; cnt[k]++; val[k, cnt[k]] = v }
    function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
    {
      s = $2; gib = $4 / 1073741824
      add(s, "cpu", $3 / 1000); add(s, "gib", gib); add(s, "cpugib", gib > 0 ? $3 / 1000 / gib : 0)
      add(s, "ttfb50", $5 / 1000); add(s, "ttfb99", $6 / 1000); add(s, "fetch99", $7 / 1e6)
      add(s, "client", $10 / 1000); add(s, "mibps", $11)
      errs[s] += $8
    }
    END {
      ns = split(servers, sv, ",")
      base = sv[ns]
      for (i = 1; i <= ns; i++) if (sv[i] == "nginx") base = "nginx"
      bg = median(base SUBSEP "cpugib"); bt = median(base SUBSEP "ttfb99")
      printf "\n%-18s %8s %7s %7s %9s %9s %9s %9s %9s %7s  %s\n", "", "", "", "", "", "", "", "", "client", "", "ratio to " base
      printf "%-18s %8s %7s %7s %9s %9s %9s %9s %9s %7s %8s %8s\n", "server", "MiB/s", "GiB", "cpu s", "cpu s/GiB", "ttfb p50", "ttfb p99", "fetch p99", "cpu s", "errors", "cpu/GiB", "ttfb p99"
      printf "%-18s %8s %7s %7s %9s %9s %9s %9s\n", "", "", "", "", "", "ms", "ms", "s"
      for (k = 1; k <= ns; k++) {
        s = sv[k]
        if (!((s, "cpu") in cnt)) continue
        g = median(s SUBSEP "cpugib"); t = median(s SUBSEP "ttfb99")
        printf "%-18s %8.1f %7.2f %7.2f %9.3f %9.2f %9.2f %9.2f %9.2f %7d %8s %8s\n", s, median(s SUBSEP "mibps"), median(s SUBSEP "gib"),
          median(s SUBSEP "cpu"), g, median(s SUBSEP "ttfb50"), t, median(s SUBSEP "fetch99"), median(s SUBSEP "client"), errs[s],
          ratio(g, bg), ratio(t, bt)
      }
    }' "$RAW"
}

if [ -z "$OUT" ]; then
  mkdir -p "$LT_REPO/loadtest/results"
  OUT=$LT_REPO/loadtest/results/players-$(date -u +%Y%m%d-%H%M%S).txt
fi
report "${ARGS[@]}" | tee "$OUT"
{
  printf 'round\tserver\tcpu_ms\tbytes\tttfb_p50_us\tttfb_p99_us\tfetch_p99_us\terrors\trequests\tclient_ms\tmibps\n'
  cat "$RAW"
} >"${OUT%.txt}.runs.tsv"
echo >&2
echo "table written to $OUT (every run: ${OUT%.txt}.runs.tsv)" >&2
failed=$(awk -F'\t' '$8 != 0 { n++ } END { print n + 0 }' "$RAW")
((failed == 0)) || lt_die "$failed run(s) with errors: see the errors column"
