#!/usr/bin/env bash
# syscalls_load.sh: the syscalls each server makes per request under wrk
# load (many connections, so that a poller can batch), where syscalls.sh
# traces one keep-alive connection. For each round (order alternating)
# and server it starts the server, warms it with a checked wrk run, then
# counts the server's syscalls with perf's raw_syscalls:sys_enter
# tracepoint (per thread, far cheaper than strace, so the load stays
# load) during one timed wrk run, and prints calls per request: all, and
# the data path's (read, sendmsg, sendfile, the poller's waits and
# changes, futex).
#
#   bash loadtest/syscalls_load.sh [-d SECONDS] [-rounds N] [-workloads W4]
#        [-servers segorigin,segorigin-uring] [-t THREADS] [-c CONNS] [-pin]
#
# Needs perf (linux-tools) with tracepoints readable (root) and wrk.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

DUR=5
ROUNDS=2
WORKLOADS=W4
SERVERS=segorigin,segorigin-uring
THREADS=2
CONNS=16
PIN=0
ARGS=("$@")
while (($#)); do
  case $1 in
  -d) DUR=$2 ;;
  -rounds) ROUNDS=$2 ;;
  -workloads) WORKLOADS=$2 ;;
  -servers) SERVERS=$2 ;;
  -t) THREADS=$2 ;;
  -c) CONNS=$2 ;;
  -pin)
    PIN=1
    shift
    continue
    ;;
  *) lt_die "unknown option $1 (see the header of loadtest/syscalls_load.sh)" ;;
  esac
  shift 2 || lt_die "$1 needs a value"
done
IFS=, read -r -a WL <<<"$(echo "$WORKLOADS" | tr '[:lower:]' '[:upper:]')"
IFS=, read -r -a SV <<<"$SERVERS"
for w in "${WL[@]}"; do [[ $w =~ ^W[1-4]$ ]] || lt_die "unknown workload $w (W1-W4)"; done
tools=(go wrk perf)
LT_CLIENT_PIN=()
if ((PIN)); then
  tools+=(taskset)
  lt_pin
fi
lt_need_tools "${tools[@]}"
lt_setup syscalls-load ""
WORK=$LT_WORK DIR=$LT_DIR
lt_build "$WORK/bin"
lt_generate "$WORK/bin" "$DIR" "${WL[@]}"

EVENTS=raw_syscalls:sys_enter
CALLS="read sendmsg sendfile64 epoll_pwait epoll_wait epoll_ctl io_uring_enter futex"
for c in $CALLS; do EVENTS+=",syscalls:sys_enter_$c"; done

# run ADDR W SECONDS LOG : one wrk run of W; prints its request count.
run() {
  local addr=$1 w=$2 secs=$3 log=$4
  # shellcheck disable=SC2046
  env WRK_NOCHECK=1 "${LT_CLIENT_PIN[@]}" timeout $((secs + 30)) wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" \
    -s "$LT_REPO/loadtest/wrk/$(echo "$w" | tr W w).lua" "http://$addr" -- $(lt_wrk_args "$DIR" "$w") >"$log" 2>&1 || true
  lt_kv "$(grep '^RESULT' "$log" | tail -1)" requests
}

RAW=$WORK/raw.tsv
: >"$RAW"
for ((round = 1; round <= ROUNDS; round++)); do
  for srv in $(lt_order "$round" "${SV[@]}"); do
    for w in "${WL[@]}"; do
      tag=$WORK/r$round-$srv-$w
      lt_start "$srv" "$WORK/bin" "$DIR" "$tag"
      pid=$LT_PID addr=$LT_ADDR
      run "$addr" "$w" 1 "$tag-warmup.txt" >/dev/null
      perf stat -x, -e "$EVENTS" -p "$pid" -o "$tag-perf.txt" &
      perf_pid=$!
      sleep 0.5
      n=$(run "$addr" "$w" "$DUR" "$tag-wrk.txt")
      kill -INT "$perf_pid"
      wait "$perf_pid" || true
      lt_stop "$pid"
      # perf -x,: "count,unit,event,...".
      awk -F, -v r="$round" -v s="$srv" -v w="$w" -v n="$n" '$3 ~ /sys_enter/ {
        e = $3; sub(/^.*sys_enter_?/, "", e); if (e == "") e = "all"
        printf "%s\t%s\t%s\t%s\t%s\t%s\n", r, s, w, e, $1, n }' "$tag-perf.txt" >>"$RAW"
      echo "  round $round $srv $w: $n requests" >&2
    done
  done
done

echo "segorigin syscalls under load, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, Linux $(uname -r)"
echo "command: bash loadtest/syscalls_load.sh ${ARGS[*]}"
echo "wrk -t$THREADS -c$CONNS, ${DUR}s per run, $ROUNDS rounds; perf stat -e raw_syscalls:sys_enter on the server; calls per request, median over rounds"
awk -F'\t' -v calls="all $CALLS" '
  { v[$2 "\t" $3 "\t" $4, ++k[$2 "\t" $3 "\t" $4]] = ($6 > 0 ? $5 / $6 : 0); rows[$2 "\t" $3] = 1 }
  function median(key,   i, j, t, m, a) {
    m = k[key]; for (i = 1; i <= m; i++) a[i] = v[key, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  END {
    nc = split(calls, c, " ")
    printf "%-17s %-3s", "server", "W"; for (i = 1; i <= nc; i++) printf " %14s", c[i]; printf "\n"
    for (r in rows) {
      split(r, p, "\t"); printf "%-17s %-3s", p[1], p[2]
      for (i = 1; i <= nc; i++) printf " %14.3f", median(r "\t" c[i])
      printf "\n"
    }
  }' "$RAW"
