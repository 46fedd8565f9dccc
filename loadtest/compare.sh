#!/usr/bin/env bash
# compare.sh: segorigin beside nginx, Go net/http and fasthttp.FS, on the
# same files, with the same wrk client, in the same session. For each round
# (order alternating) it starts each server on a loopback port, runs each
# workload (ARCHITECTURE.md, "Workloads") with wrk for a fixed time, reads the server's own CPU
# time (utime+stime of the server and its children, from /proc), and prints
# per workload the medians over rounds and each one's ratio to segorigin's.
# See loadtest/README.md.
#
#   bash loadtest/compare.sh [-d SECONDS] [-rounds N] [-workloads W1,W2,W3,W4,W5,W6]
#        [-servers segorigin,nginx,nethttp,fasthttpfs] [-dir DIR] [-t THREADS]
#        [-c CONNS] [-idle N] [-warmup SECONDS] [-check warmup|full|off] [-pin]
#        [-o FILE] [-chart]
#
# Quick smoke:  bash loadtest/compare.sh -d 1 -rounds 1 -workloads W4
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

DUR=10
ROUNDS=3
WORKLOADS=W1,W2,W3,W4,W5,W6
SERVERS=segorigin,nginx,nethttp,fasthttpfs
DIR=""
THREADS=2
CONNS=16
IDLE=5000
WARMUP=1
CHECK=warmup
OUT=""
CHART=0
PIN=0
ARGS=("$@")

usage() {
  cat <<'EOF'
usage: bash loadtest/compare.sh [options]
  -d SECONDS        length of each timed wrk run (10)
  -rounds N         rounds; the server order alternates each round (3)
  -workloads LIST   comma-separated W1..W6 (all; W5 = W1 beside -idle idle
                    keep-alive connections; W6 = conditional GETs of W4's
                    and W3's files with the server's own validator: 304)
  -servers LIST     comma-separated segorigin,nginx,nethttp,fasthttpfs (all), or
                    segorigin-nocache (-cache-files 0), segorigin-noinline (-inline-max 0),
                    segorigin-nocold (-cold-readers 0), segorigin-fasthttp (-engine fasthttp),
                    segorigin-content (-etag content), segorigin-gzipoff (-gzip off),
                    segorigin-access (-access: six allow prefixes, then deny all),
                    segorigin-uring (-poller uring: io_uring instead of epoll),
                    segorigin-base (the binary
                    SEGORIGIN_BASE_BIN names: another version, in the same sitting)
  -dir DIR          workload files: used if present, generated there if not
                    (default: a temporary directory, removed at the end)
  -t THREADS        wrk threads (2)
  -c CONNS          wrk connections (16)
  -idle N           W5's idle keep-alive connections (5000)
  -warmup SECONDS   checked wrk run before each timed one (1; 0: none)
  -check MODE       warmup: the warm-up run checks every response's status and
                    length, the timed run only counts status > 399 (so that
                    wrk's body buffering does not bound W1/W2); full: the timed
                    run checks too; off: no Lua response checks (warmup)
  -pin              run each server on CPU 0 (taskset; nginx with one worker,
                    Go servers get GOMAXPROCS 1) and wrk on CPU 1: steadier ratios
  -o FILE           also write the tables to FILE (default
                    loadtest/results/compare-DATE.txt), the medians to FILE.tsv
                    and every run to FILE.runs.tsv (FILE without .txt)
  -chart            also draw the medians as an SVG bar chart, FILE.svg
                    (go run ./loadtest/chart)
Needs nginx and wrk (it says what to apt-get install if they are missing).
Environment: SEGORIGIN_FLAGS adds flags to segorigin's command line; SEGORIGIN_BIN=FILE
runs that segorigin binary instead of building ./cmd/segorigin.
EOF
}

while (($#)); do
  case $1 in
  -d) DUR=$2 ;;
  -rounds) ROUNDS=$2 ;;
  -workloads) WORKLOADS=$2 ;;
  -servers) SERVERS=$2 ;;
  -dir) DIR=$2 ;;
  -t) THREADS=$2 ;;
  -c) CONNS=$2 ;;
  -idle) IDLE=$2 ;;
  -warmup) WARMUP=$2 ;;
  -check) CHECK=$2 ;;
  -o) OUT=$2 ;;
  -chart)
    CHART=1
    shift
    continue
    ;;
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
[[ $DUR =~ ^[0-9]+$ && $DUR -gt 0 ]] || lt_die "-d: want whole seconds > 0"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -gt 0 ]] || lt_die "-rounds: want a number > 0"
[[ $WARMUP =~ ^[0-9]+$ ]] || lt_die "-warmup: want whole seconds"
case $CHECK in warmup | full | off) ;; *) lt_die "-check: want warmup, full or off" ;; esac
IFS=, read -r -a WL <<<"$(echo "$WORKLOADS" | tr '[:lower:]' '[:upper:]')"
IFS=, read -r -a SV <<<"$SERVERS"
for w in "${WL[@]}"; do [[ $w =~ ^W[1-6]$ ]] || lt_die "unknown workload $w"; done
for s in "${SV[@]}"; do
  case $s in segorigin | segorigin-nocache | segorigin-noinline | segorigin-nocold | segorigin-fasthttp | segorigin-content | segorigin-gzipoff | segorigin-access | segorigin-uring | segorigin-base | nginx | nethttp | fasthttpfs) ;; *) lt_die "unknown server $s" ;; esac
done

tools=(go wrk curl)
LT_CLIENT_PIN=()
if ((PIN)); then
  tools+=(taskset)
  lt_pin
fi
[[ ,$SERVERS, == *,nginx,* ]] && tools+=(nginx)
lt_need_tools "${tools[@]}"

lt_setup compare "$DIR"
WORK=$LT_WORK DIR=$LT_DIR

echo "building into $WORK/bin ..." >&2
lt_build "$WORK/bin"
echo "workload files in $DIR ..." >&2
lt_generate "$WORK/bin" "$DIR" "${WL[@]}"

TICK=$(getconf CLK_TCK)
RAW=$WORK/raw.tsv
MED=$WORK/medians.tsv
: >"$RAW"
LOGS=$WORK/logs
mkdir -p "$LOGS"

# wrk_run ADDR W SECONDS CHECKED LOG : one wrk run; prints its RESULT line
# with client_ms= added: wrk's own CPU time (lt_ticks).
wrk_run() {
  local addr=$1 w=$2 secs=$3 checked=$4 log=$5 script
  script=$LT_REPO/loadtest/wrk/$(echo "$w" | tr W w).lua
  local env=(env -u WRK_NOCHECK)
  [ "$checked" = 1 ] || env=(env WRK_NOCHECK=1)
  local ticks
  # shellcheck disable=SC2046
  ticks=$(lt_ticks "$log" "${env[@]}" "${LT_CLIENT_PIN[@]}" timeout $((secs + 30)) wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" --latency \
    -s "$script" "http://$addr" -- $(lt_wrk_args "$DIR" "$w")) || true
  local res
  res=$(grep "^RESULT" "$log" | tail -1) || res="RESULT failed=1 unexpected=1"
  echo "$res client_ms=$((${ticks:-0} * 1000 / TICK))"
}

# measure ROUND SERVER PID ADDR W : warm-up, then the timed run with the
# server's CPU time read around it; appends a line to RAW.
measure() {
  local round=$1 srv=$2 pid=$3 addr=$4 w=$5 helper="" idle_line=""
  local tag=$LOGS/r$round-$srv-$w
  if [ "$w" = W6 ]; then
    lt_validators "$addr" "$DIR" "$tag-validators.txt"
    export LT_VALIDATORS=$tag-validators.txt
  fi
  if [ "$w" = W5 ]; then
    "$WORK/bin/client" -url "http://$addr" -sessions 0 -idle "$IDLE" -idle-path /w4/p00.m3u8 \
      -duration $((WARMUP + DUR + 30))s >"$tag-idle.out" 2>"$tag-idle.err" &
    helper=$!
    LT_PIDS+=("$helper")
    local i
    for ((i = 0; i < 300; i++)); do
      grep -q '^idle connections open' "$tag-idle.err" 2>/dev/null && break
      kill -0 "$helper" 2>/dev/null || break
      sleep 0.1
    done
  fi
  local warm="RESULT unexpected=0"
  if ((WARMUP > 0)); then
    warm=$(wrk_run "$addr" "$w" "$WARMUP" "$([ "$CHECK" = off ] && echo 0 || echo 1)" "$tag-warmup.txt")
  fi
  local c0 c1 res
  c0=$(lt_cpu_ticks "$pid")
  res=$(wrk_run "$addr" "$w" "$DUR" "$([ "$CHECK" = full ] && echo 1 || echo 0)" "$tag.txt")
  c1=$(lt_cpu_ticks "$pid")
  local rss
  rss=$(lt_rss_kib "$pid")
  if [ -n "$helper" ]; then
    kill -TERM "$helper" 2>/dev/null || true
    wait "$helper" 2>/dev/null || true
    idle_line=$(grep '^RESULT' "$tag-idle.out" || true)
  fi
  local cpu_ms=$(((c1 - c0) * 1000 / TICK))
  local unexpected=$(($(lt_kv "$warm" unexpected) + $(lt_kv "$res" unexpected)))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$round" "$w" "$srv" "$(lt_kv "$res" rps)" "$(lt_kv "$res" mibps)" "$(lt_kv "$res" p99_us)" \
    "$cpu_ms" "$(lt_kv "$res" bytes)" "$(lt_kv "$res" requests)" "$unexpected" \
    "$(lt_kv "$res" socket_errors)" "$rss" "$(lt_kv "$idle_line" idle_open)" "$(lt_kv "$idle_line" idle_lost)" \
    "$(lt_kv "$res" client_ms)" >>"$RAW"
  printf '  %-10s %-3s %9s req/s %9s MiB/s  p99 %7s µs  cpu %6s ms  unexpected %s\n' \
    "$srv" "$w" "$(lt_kv "$res" rps)" "$(lt_kv "$res" mibps)" "$(lt_kv "$res" p99_us)" "$cpu_ms" "$unexpected" >&2
}

for ((round = 1; round <= ROUNDS; round++)); do
  read -r -a order <<<"$(lt_order "$round" "${SV[@]}")"
  echo "round $round/$ROUNDS: ${order[*]}" >&2
  for srv in "${order[@]}"; do
    lt_start "$srv" "$WORK/bin" "$DIR" "$WORK/run-$round-$srv"
    pid=$LT_PID addr=$LT_ADDR # set by lt_start
    for w in "${WL[@]}"; do
      measure "$round" "$srv" "$pid" "$addr" "$w"
    done
    lt_stop "$pid"
  done
done

# The report: medians over rounds of each metric, and each median's ratio
# to segorigin's (or the first server's, without segorigin).
report() {
  echo "segorigin compare, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Linux $(uname -r)"
  echo "servers: $(lt_segorigin_label), $("$(lt_nginx_bin)" -v 2>&1 | sed 's/.*version: //') (worker_processes auto), net/http $(go env GOVERSION), fasthttp.FS"
  echo "client: $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}') -t$THREADS -c$CONNS, ${DUR} s per run, $ROUNDS round(s), order alternating; checks: $CHECK"
  if ((PIN)); then
    echo "pinned: server on CPU 0 (nginx 1 worker; Go GOMAXPROCS 1), wrk on CPU 1 (taskset)"
  else
    echo "unpinned: servers and wrk share all CPUs (nginx worker_processes auto)"
  fi
  echo "command: bash loadtest/compare.sh $*"
  echo "MiB/s counts what wrk read (headers too); cpu = utime+stime of the server and its children"
  echo "during the timed run; +client = that plus wrk's own CPU per GiB (on loopback the receiver's TCP work"
  echo "is billed to the sender: compare W1/W2 by it); medians over rounds;"
  echo "ratios = median / segorigin median (below 1 is better for p99 and cpu)."
  awk -F'\t' -v medfile="$MED" -v servers="$SERVERS" -v workloads="$(IFS=,; echo "${WL[*]}")" -v idle="$IDLE" '
    function median(key,    n, i, j, t, a) {
      n = cnt[key]
      for (i = 1; i <= n; i++) a[i] = val[key, i]
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      if (n == 0) return 0
      if (n % 2) return a[(n + 1) / 2]
      return (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function add(w, s, m, v) { k = w SUBSEP s SUBSEP m; cnt[k]++; val[k, cnt[k]] = v }
    function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
    BEGIN {
      desc["W1"] = "full GET of random 2 MiB segments"
      desc["W2"] = "Range GET of random 256 KiB spans of a 256 MiB file (206)"
      desc["W3"] = "full GET of random 64 KiB parts"
      desc["W4"] = "1 KiB playlists"
      desc["W5"] = "W1 beside " idle " idle keep-alive connections"
      desc["W6"] = "conditional GET of 1 KiB and 64 KiB files with the current validator (304)"
    }
    {
      w = $2; s = $3
      add(w, s, "rps", $4); add(w, s, "mibps", $5); add(w, s, "p99", $6 / 1000)
      add(w, s, "msgib", $8 > 0 ? $7 / ($8 / 1073741824) : 0)
      add(w, s, "allgib", $8 > 0 ? ($7 + $15) / ($8 / 1073741824) : 0)
      add(w, s, "usreq", $9 > 0 ? $7 * 1000 / $9 : 0)
      add(w, s, "rss", $12 / 1024); add(w, s, "idleopen", $13); add(w, s, "idlelost", $14)
      unexp[w, s] += $10; sockerr[w, s] += $11
    }
    END {
      ns = split(servers, sv, ","); nw = split(workloads, wl, ",")
      base = sv[1]
      for (i = 1; i <= ns; i++) if (sv[i] == "segorigin") base = "segorigin"
      for (x = 1; x <= nw; x++) {
        w = wl[x]
        printf "\n%s: %s\n", w, desc[w]
        # µ and × are two bytes in UTF-8 and awk pads by bytes: widths +1.
        printf "%-18s %9s %9s %8s %10s %10s %11s   %s\n", "", "", "", "", "cpu", "+client", "cpu", "ratio to " base
        printf "%-18s %9s %9s %8s %10s %10s %11s %7s %7s %7s %7s %7s %8s %8s %10s\n", "server", "req/s", "MiB/s", "p99 ms", "ms/GiB", "ms/GiB", "µs/req", "req/s", "MiB/s", "p99", "ms/GiB", "+client", "µs/req", "rss MiB", "unexpected"
        for (k = 1; k <= ns; k++) {
          s = sv[k]
          if (!((w, s, "rps") in cnt)) continue
          r = median(w SUBSEP s SUBSEP "rps"); m = median(w SUBSEP s SUBSEP "mibps"); p = median(w SUBSEP s SUBSEP "p99")
          g = median(w SUBSEP s SUBSEP "msgib"); u = median(w SUBSEP s SUBSEP "usreq"); rs = median(w SUBSEP s SUBSEP "rss")
          br = median(w SUBSEP base SUBSEP "rps"); bm = median(w SUBSEP base SUBSEP "mibps"); bp = median(w SUBSEP base SUBSEP "p99")
          bg = median(w SUBSEP base SUBSEP "msgib"); bu = median(w SUBSEP base SUBSEP "usreq")
          a = median(w SUBSEP s SUBSEP "allgib"); ba = median(w SUBSEP base SUBSEP "allgib")
          flag = unexp[w, s] + 0
          if (sockerr[w, s] > 0) flag = flag " (" sockerr[w, s] " socket err)"
          printf "%-18s %9.0f %9.1f %8.2f %10.1f %10.1f %10.1f %7s %7s %7s %7s %7s %7s %8.0f %10s\n", s, r, m, p, g, a, u, ratio(r, br), ratio(m, bm), ratio(p, bp), ratio(g, bg), ratio(a, ba), ratio(u, bu), rs, flag
          printf "%s\t%s\t%.1f\t%.2f\t%.3f\t%.2f\t%.2f\t%.1f\t%d\t%.2f\n", w, s, r, m, p, g, u, rs, unexp[w, s], a > medfile
        }
        if (w == "W5") {
          for (k = 1; k <= ns; k++) {
            s = sv[k]
            if ((w, s, "rps") in cnt)
              printf "  %s: %d idle connections still open at the end, %d closed by the server (medians)\n", s, median(w SUBSEP s SUBSEP "idleopen"), median(w SUBSEP s SUBSEP "idlelost")
          }
        }
      }
    }' "$RAW"
}

if [ -z "$OUT" ]; then
  mkdir -p "$LT_REPO/loadtest/results"
  OUT=$LT_REPO/loadtest/results/compare-$(date -u +%Y%m%d-%H%M%S).txt
fi
report "${ARGS[@]}" | tee "$OUT"
cp "$RAW" "${OUT%.txt}.runs.tsv"
{
  printf 'workload\tserver\trps\tmibps\tp99_ms\tcpu_ms_per_gib\tcpu_us_per_req\trss_mib\tunexpected\tcpu_with_client_ms_per_gib\n'
  cat "$MED"
} >"${OUT%.txt}.tsv"
echo >&2
echo "tables written to $OUT (medians: ${OUT%.txt}.tsv, every run: ${OUT%.txt}.runs.tsv)" >&2
if ((CHART)); then
  (cd "$LT_REPO" && go run ./loadtest/chart -in "${OUT%.txt}.tsv" -o "${OUT%.txt}.svg" -title "$(head -1 "$OUT")") &&
    echo "chart: ${OUT%.txt}.svg" >&2
fi
