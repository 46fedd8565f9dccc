#!/usr/bin/env bash
# idle.sh: what idle keep-alive connections cost each server, side by side.
# For each server (order alternating over rounds) it opens N connections
# that each fetch one playlist and then wait, and reports the server's RSS
# growth per connection, its CPU time while they sit idle, and how long a
# new request takes to be answered among them (curl's time_total).
#
#   bash loadtest/idle.sh [-conns N] [-hold SECONDS] [-rounds N]
#        [-servers segorigin,segorigin-fasthttp,nginx] [-pin]
#
# N defaults to 19000: the descriptor hard limit here is 20,000 per process
# (client and server are separate processes).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

CONNS=19000
HOLD=10
ROUNDS=2
SERVERS=segorigin,segorigin-fasthttp,nginx
PIN=0
while [ $# -gt 0 ]; do
  case $1 in
  -conns) CONNS=$2; shift 2 ;;
  -hold) HOLD=$2; shift 2 ;;
  -rounds) ROUNDS=$2; shift 2 ;;
  -servers) SERVERS=$2; shift 2 ;;
  -pin) PIN=1; shift ;;
  *) lt_die "unknown option $1 (see the header of loadtest/idle.sh)" ;;
  esac
done
lt_need_tools curl
ulimit -n "$(ulimit -Hn)"
WORK=$(mktemp -d /tmp/segorigin-idle.XXXXXX)
trap 'lt_cleanup; rm -rf "$WORK"' EXIT
BIN=$WORK/bin
lt_build "$BIN"
lt_generate "$BIN" "$WORK/media" W4
IFS=, read -r -a names <<<"$SERVERS"
CLIENT_PIN=""
if [ "$PIN" = 1 ]; then
  LT_SERVER_PIN="taskset -c 0"
  CLIENT_PIN="taskset -c 1"
fi
hz=$(getconf CLK_TCK)
results=()
for ((round = 1; round <= ROUNDS; round++)); do
  order=("${names[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[$i]}"); done
  fi
  for name in "${order[@]}"; do
    lt_start "$name" "$BIN" "$WORK/media" "$WORK/$name"
    pid=$LT_PID
    curl -sf -o /dev/null "http://$LT_ADDR/w4/p00.m3u8" || lt_die "$name: first request failed"
    sleep 1
    rss0=$(lt_rss_kib "$pid")
    # The client holds the connections for the whole measurement, then exits.
    total=$((HOLD + 20))
    $CLIENT_PIN "$BIN/client" -url "http://$LT_ADDR" -sessions 0 -idle "$CONNS" -idle-path /w4/p00.m3u8 \
      -duration "${total}s" -q >"$WORK/$name.client" 2>&1 &
    cpid=$!
    # Wait until the server holds them all (bounded).
    for ((i = 0; i < 200; i++)); do
      n=$(ss -Htn state established "( sport = :${LT_ADDR##*:} )" 2>/dev/null | wc -l)
      [ "$n" -ge "$CONNS" ] && break
      sleep 0.1
    done
    sleep 5 # let start-up work (the scavenger returning freed memory) settle
    rss1=$(lt_rss_kib "$pid")
    t0=$(lt_cpu_ticks "$pid")
    sleep "$HOLD"
    t1=$(lt_cpu_ticks "$pid")
    lat=$(curl -s -o /dev/null -w '%{time_total}' "http://$LT_ADDR/w4/p01.m3u8")
    kill -TERM "$cpid" 2>/dev/null || true
    wait "$cpid" 2>/dev/null || true
    lt_stop "$pid"
    per=$(awk -v a="$rss0" -v b="$rss1" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / (n > 0 ? n : 1) }')
    cpu=$(awk -v t="$((t1 - t0))" -v hz="$hz" -v s="$HOLD" 'BEGIN { printf "%.1f", 1000 * t / hz / s }')
    ms=$(awk -v l="$lat" 'BEGIN { printf "%.2f", 1000 * l }')
    printf '  %-20s round %d: %6d conns  rss +%s KiB/conn  idle cpu %s ms/s  new request %s ms\n' "$name" "$round" "$n" "$per" "$cpu" "$ms"
    results+=("$name $per $cpu $ms")
  done
done
echo
echo "idle keep-alive connections: $CONNS, held ${HOLD}s, $ROUNDS round(s), medians; $(lt_segorigin_label), $(nginx -v 2>&1)"
echo "command: bash loadtest/idle.sh -conns $CONNS -hold $HOLD -rounds $ROUNDS -servers $SERVERS$([ "$PIN" = 1 ] && echo ' -pin')"
printf '%-20s %14s %16s %16s\n' server "KiB/conn" "idle cpu ms/s" "new request ms"
for name in "${names[@]}"; do
  printf '%s\n' "${results[@]}" | awk -v n="$name" '$1 == n' | sort -k2 -n | awk '{a[NR]=$2} END {printf "%s", a[int((NR+1)/2)]}' >"$WORK/m1"
  printf '%s\n' "${results[@]}" | awk -v n="$name" '$1 == n' | sort -k3 -n | awk '{a[NR]=$3} END {printf "%s", a[int((NR+1)/2)]}' >"$WORK/m2"
  printf '%s\n' "${results[@]}" | awk -v n="$name" '$1 == n' | sort -k4 -n | awk '{a[NR]=$4} END {printf "%s", a[int((NR+1)/2)]}' >"$WORK/m3"
  printf '%-20s %14s %16s %16s\n' "$name" "$(cat "$WORK/m1")" "$(cat "$WORK/m2")" "$(cat "$WORK/m3")"
done
