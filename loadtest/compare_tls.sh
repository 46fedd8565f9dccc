#!/usr/bin/env bash
# compare_tls.sh: segorigin beside nginx over HTTPS, with the same
# certificate (ECDSA P-256, made here with openssl), the same cipher
# (TLS 1.3 TLS_AES_128_GCM_SHA256, which both choose for wrk's OpenSSL),
# the same files and the same wrk client, in the same session. For each
# round (order alternating) it starts both servers on loopback ports, runs
# W1-W4 (ARCHITECTURE.md, "Workloads") for a fixed time, reads each
# server's own CPU time (utime+stime of the server and its children, from
# /proc), and prints the medians, CPU per GiB and per request, and
# segorigin's ratio to nginx per request. Unpinned by default (servers
# and wrk share every CPU, as an operator's load test does); -pin puts the server on
# CPU 0 (nginx one worker, segorigin GOMAXPROCS 1) and wrk on CPU 1. On a
# kernel without kTLS both servers seal in userspace; with kTLS, nginx
# needs "ssl_conf_command Options KTLS" to compare like with like.
#
#   bash loadtest/compare_tls.sh [-d SECONDS] [-rounds N] [-workloads W1,W2,W3,W4]
#        [-dir DIR] [-t THREADS] [-c CONNS] [-pin] [-o FILE]
#
# Quick smoke:  bash loadtest/compare_tls.sh -d 2 -rounds 1
# Environment: SEGORIGIN_FLAGS adds flags to segorigin (e.g. "-ktls off");
# SEGORIGIN_BIN=FILE runs that binary; LT_NGINX_WORKERS sets nginx's workers.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DUR=10
ROUNDS=3
WORKLOADS=W1,W2,W3,W4
PIN=0
DIR=""
THREADS=2
CONNS=16
OUT=""
ARGS=("$@")

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

while (($#)); do
  case $1 in
  -d) DUR=$2 ;;
  -rounds) ROUNDS=$2 ;;
  -workloads) WORKLOADS=$2 ;;
  -dir) DIR=$2 ;;
  -t) THREADS=$2 ;;
  -c) CONNS=$2 ;;
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
[[ $DUR =~ ^[0-9]+$ && $DUR -gt 0 ]] || lt_die "-d: want whole seconds > 0"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -gt 0 ]] || lt_die "-rounds: want a number > 0"
IFS=, read -r -a WL <<<"$(echo "$WORKLOADS" | tr a-z A-Z)"
for w in "${WL[@]}"; do [[ $w =~ ^W[1-4]$ ]] || lt_die "unknown workload $w (W1 to W4)"; done

lt_need_tools go wrk nginx openssl
LT_CLIENT_PIN=()
if ((PIN)); then
  lt_need_tools taskset
  lt_pin
fi
case $("$(lt_nginx_bin)" -V 2>&1) in
*--with-http_ssl_module*) ;;
*) lt_die "this nginx has no SSL module" ;;
esac

WORK=$(mktemp -d /tmp/segorigin-compare-tls.XXXXXX)
chmod 755 "$WORK"
trap 'lt_cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
[ -n "$DIR" ] || DIR=$WORK/data
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

echo "building into $WORK/bin ..." >&2
lt_build "$WORK/bin"
echo "workload files in $DIR ..." >&2
lt_generate "$WORK/bin" "$DIR" "${WL[@]}"

CERT=$WORK/cert.pem KEY=$WORK/key.pem
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$KEY" -out "$CERT" 2>/dev/null || lt_die "openssl could not make a certificate"

# start_segorigin RUNDIR : segorigin with an HTTPS listener; sets LT_ADDR
# (the HTTPS address) and LT_PID.
start_segorigin() {
  local run=$1 extra=() i
  mkdir -p "$run"
  [ -n "${SEGORIGIN_FLAGS:-}" ] && read -r -a extra <<<"$SEGORIGIN_FLAGS"
  ${LT_SERVER_PIN:-} env ${LT_SERVER_PIN:+GOMAXPROCS=1} "$WORK/bin/segorigin" -root "$DIR" -listen 127.0.0.1:0 -tls-listen 127.0.0.1:0 \
    -tls-cert "$CERT" -tls-key "$KEY" -log-level info "${extra[@]}" 2>"$run/segorigin.log" &
  LT_PID=$!
  LT_PIDS+=("$LT_PID")
  LT_ADDR=""
  for ((i = 0; i < 100; i++)); do
    LT_ADDR=$(grep -o 'proto=https addr=127\.0\.0\.1:[0-9]*' "$run/segorigin.log" | head -1 | cut -d= -f3 || true)
    [ -n "$LT_ADDR" ] && break
    sleep 0.1
  done
  [ -n "$LT_ADDR" ] || {
    cat "$run/segorigin.log" >&2
    lt_die "segorigin did not start"
  }
  grep -o 'msg="body paths".*' "$run/segorigin.log" | head -1 >&2 || true
}

# start_nginx RUNDIR : nginx as loadtest/lib.sh configures it, listening
# with TLS on the same certificate; sets LT_ADDR and LT_PID.
start_nginx() {
  local run=$1 port
  for _ in 1 2 3 4 5; do
    port=$(lt_free_port) || continue # below the ephemeral range
    LT_NGINX_LISTEN_OPTS=ssl LT_NGINX_HTTP_EXTRA="    ssl_certificate $CERT;
    ssl_certificate_key $KEY;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;" lt_nginx_conf "$run" "$DIR" "$port"
    : >"$run/error.log"
    ${LT_SERVER_PIN:-} "$(lt_nginx_bin)" -p "$run" -c "$run/nginx.conf" -e "$run/error.log" &
    LT_PID=$!
    LT_PIDS+=("$LT_PID")
    if lt_wait_port "$port" && kill -0 "$LT_PID" 2>/dev/null; then
      LT_ADDR=127.0.0.1:$port
      return 0
    fi
    lt_stop "$LT_PID"
  done
  cat "$run/error.log" >&2
  lt_die "nginx did not start"
}

# cipher_of ADDR : the version and cipher a default OpenSSL client gets.
cipher_of() {
  openssl s_client -connect "$1" -CAfile "$CERT" </dev/null 2>/dev/null |
    awk '/^New, /{print $2, $5}' | head -1
}

TICK=$(getconf CLK_TCK)
RAW=$WORK/raw.tsv
: >"$RAW"

for ((round = 1; round <= ROUNDS; round++)); do
  order=(segorigin nginx)
  ((round % 2 == 0)) && order=(nginx segorigin)
  echo "round $round/$ROUNDS: ${order[*]}" >&2
  for srv in "${order[@]}"; do
    "start_$srv" "$WORK/run-$round-$srv"
    pid=$LT_PID addr=$LT_ADDR
    echo "  $srv on https://$addr: $(cipher_of "$addr")" >&2
    for w in "${WL[@]}"; do
      script=$LT_REPO/loadtest/wrk/$(echo "$w" | tr W w).lua
      # shellcheck disable=SC2046
      WRK_NOCHECK=1 timeout 60 "${LT_CLIENT_PIN[@]}" wrk -t"$THREADS" -c"$CONNS" -d1s -s "$script" "https://$addr" -- $(lt_wrk_args "$DIR" "$w") >/dev/null 2>&1 || true
      c0=$(lt_cpu_ticks "$pid")
      # shellcheck disable=SC2046
      res=$(WRK_NOCHECK=1 timeout $((DUR + 30)) "${LT_CLIENT_PIN[@]}" wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s "$script" \
        "https://$addr" -- $(lt_wrk_args "$DIR" "$w") 2>&1 | grep '^RESULT' | tail -1 || echo "RESULT unexpected=1")
      c1=$(lt_cpu_ticks "$pid")
      cpu_ms=$(((c1 - c0) * 1000 / TICK))
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$w" "$srv" "$(lt_kv "$res" rps)" \
        "$(lt_kv "$res" mibps)" "$(lt_kv "$res" p99_us)" "$cpu_ms" "$(lt_kv "$res" bytes)" "$(lt_kv "$res" unexpected)" \
        "$(lt_kv "$res" requests)" >>"$RAW"
      printf '  %-10s %s %9s req/s %9s MiB/s  p99 %7s µs  cpu %6s ms\n' "$srv" "$w" \
        "$(lt_kv "$res" rps)" "$(lt_kv "$res" mibps)" "$(lt_kv "$res" p99_us)" "$cpu_ms" >&2
    done
    lt_stop "$pid"
  done
done

report() {
  echo "segorigin vs nginx over HTTPS, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, Linux $(uname -r)"
  echo "nginx $("$(lt_nginx_bin)" -v 2>&1 | sed 's/.*version: //'); same ECDSA P-256 certificate; TLS 1.3 AES-128-GCM"
  echo "client: $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}') -t$THREADS -c$CONNS, ${DUR} s per run, $ROUNDS round(s); command: bash loadtest/compare_tls.sh $*"
  echo "cpu = utime+stime of the server and its children during the timed run; medians over rounds."
  if ((PIN)); then
    echo "pinned: server on CPU 0 (nginx 1 worker; segorigin GOMAXPROCS 1), wrk on CPU 1 (taskset)"
  else
    echo "unpinned: servers and wrk share all CPUs (nginx worker_processes auto)"
  fi
  awk -F'\t' '
    function median(key,    n, i, j, t, a) {
      n = cnt[key]
      for (i = 1; i <= n; i++) a[i] = val[key, i]
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      if (n == 0) return 0
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function add(w, s, m, v) { k = w SUBSEP s SUBSEP m; cnt[k]++; val[k, cnt[k]] = v }
    {
      add($2, $3, "rps", $4); add($2, $3, "mibps", $5); add($2, $3, "p99", $6 / 1000)
      add($2, $3, "msgib", $8 > 0 ? $7 / ($8 / 1073741824) : 0)
      add($2, $3, "usreq", $10 > 0 ? $7 * 1000 / $10 : 0)
      seen[$2] = 1; unexp[$2, $3] += $9
    }
    END {
      for (x = 1; x <= 4; x++) {
        w = "W" x
        if (!(w in seen)) continue
        printf "\n%s\n%-10s %9s %9s %8s %10s %10s %10s %10s\n", w, "server", "req/s", "MiB/s", "p99 ms", "cpu ms/GiB", "cpu µs/req", "cpu/nginx", "unexpected"
        # The ratio is per request: the answers of segorigin carry more
        # header fields (CORS, Vary), so per GiB would flatter it on
        # small files.
        n = median(w SUBSEP "nginx" SUBSEP "usreq")
        split("segorigin nginx", sv, " ")
        for (i = 1; i <= 2; i++) {
          s = sv[i]; u = median(w SUBSEP s SUBSEP "usreq")
          printf "%-10s %9.0f %9.1f %8.2f %10.1f %10.1f %10s %10d\n", s, median(w SUBSEP s SUBSEP "rps"), median(w SUBSEP s SUBSEP "mibps"),
            median(w SUBSEP s SUBSEP "p99"), median(w SUBSEP s SUBSEP "msgib"), u, (n > 0 ? sprintf("%.2f", u / n) : "-"), unexp[w, s]
        }
      }
    }' "$RAW"
}

mkdir -p "$LT_REPO/loadtest/results"
[ -n "$OUT" ] || OUT=$LT_REPO/loadtest/results/compare-tls-$(date -u +%Y%m%d-%H%M%S).txt
report "${ARGS[@]}" | tee "$OUT"
echo "table written to $OUT" >&2
