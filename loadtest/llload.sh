#!/usr/bin/env bash
# llload.sh: the low-latency HLS load run. It starts segorigin on a
# loopback port over an empty root, and runs loadtest/llload against it:
# the test packager writes -playlists live renditions under the root, a
# part every -pace each, while -clients players (one connection each) sit
# in blocking playlist reloads for the next part and fetch each part an
# answer adds. It prints, per server, the delay from the rename that
# satisfied each parked reload to its answer's last byte (p50/p90/p99/max,
# on the one clock of the packager and the clients), the server's CPU per
# answer, its RSS and heap growth per parked request at the most parked,
# and the bytes verified (every playlist answer against the version
# published, every part against its file). See loadtest/README.md.
#
#   bash loadtest/llload.sh [-clients N] [-playlists N] [-pace D] [-d SECONDS]
#        [-servers segorigin,segorigin-fasthttp] [-pin] [-o FILE]
#
# Quick smoke:  bash loadtest/llload.sh -clients 200 -d 5
# The descriptor hard limit must hold the clients in one process and the
# server's side of them in the other (5,000 each under 20,000).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

CLIENTS=5000
PLAYLISTS=10
PACE=333ms
DUR=30
SERVERS=segorigin
OUT=""
PIN=0
while (($#)); do
  case $1 in
  -clients) CLIENTS=$2; shift 2 ;;
  -playlists) PLAYLISTS=$2; shift 2 ;;
  -pace) PACE=$2; shift 2 ;;
  -d) DUR=$2; shift 2 ;;
  -servers) SERVERS=$2; shift 2 ;;
  -o) OUT=$2; shift 2 ;;
  -pin) PIN=1; shift ;;
  *) lt_die "unknown option $1 (see the header of loadtest/llload.sh)" ;;
  esac
done
lt_need_tools go curl
ulimit -n "$(ulimit -Hn)"
((CLIENTS + 100 <= $(ulimit -n))) || lt_die "-clients $CLIENTS: the descriptor limit is $(ulimit -n)"
lt_setup llload ""
BIN=$LT_WORK/bin
mkdir -p "$BIN"
if [ -n "${SEGORIGIN_BIN:-}" ]; then
  cp "$SEGORIGIN_BIN" "$BIN/segorigin" || lt_die "SEGORIGIN_BIN=$SEGORIGIN_BIN: cannot copy"
else
  (cd "$LT_REPO" && go build -o "$BIN/segorigin" ./cmd/segorigin) || lt_die "build of ./cmd/segorigin failed"
fi
(cd "$LT_REPO" && go build -o "$BIN/llload" ./loadtest/llload) || lt_die "build of ./loadtest/llload failed"
CLIENT_PIN=()
if [ "$PIN" = 1 ]; then
  lt_pin
  CLIENT_PIN=("${LT_CLIENT_PIN[@]}")
fi
if [ -z "$OUT" ]; then
  mkdir -p "$LT_REPO/loadtest/results"
  OUT=$LT_REPO/loadtest/results/llload-$(date -u +%Y%m%d-%H%M%S).txt
fi
IFS=, read -r -a names <<<"$SERVERS"
FLAGS=${SEGORIGIN_FLAGS:-}
status=0
{
  echo "llload: $CLIENTS clients, $PLAYLISTS playlists, a part every $PACE, ${DUR}s; $(lt_segorigin_label); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: bash loadtest/llload.sh -clients $CLIENTS -playlists $PLAYLISTS -pace $PACE -d $DUR -servers $SERVERS$([ "$PIN" = 1 ] && echo ' -pin')"
} | tee "$OUT"
for name in "${names[@]}"; do
  root=$LT_WORK/root-$name
  mkdir -p "$root"
  admin=$(lt_free_port)
  alog=$LT_WORK/$name-access.log
  SEGORIGIN_FLAGS="$FLAGS -admin-listen 127.0.0.1:$admin -admin-pprof -access-log $alog -access-log-format json -access-log-buffer 65536" # lt_start's, never exported
  lt_start "$name" "$BIN" "$root" "$LT_WORK/$name"
  pid=$LT_PID
  lt_wait_port "$admin" || lt_die "$name: the admin listener did not open"
  echo "== $name" | tee -a "$OUT"
  "${CLIENT_PIN[@]}" "$BIN/llload" -url "http://$LT_ADDR" -root "$root" -clients "$CLIENTS" -playlists "$PLAYLISTS" \
    -pace "$PACE" -duration "${DUR}s" -pid "$pid" -metrics "http://127.0.0.1:$admin/metrics" -pprof "http://127.0.0.1:$admin/debug/pprof/" -access-log "$alog" 2>&1 | tee -a "$OUT" || status=1
  lt_stop "$pid"
done
echo "written to $OUT"
exit "$status"
