#!/usr/bin/env bash
# syscalls.sh: the syscalls each server makes per keep-alive request, for a
# fixed number of requests of each workload W1-W4, segorigin and nginx in
# the same run (the proof that a GET costs read -> sendmsg(MSG_MORE)
# -> sendfile). For each server and workload it starts the server, warms it
# (every file fetched once, so caches hold them), attaches
# `strace -f` to the server and its children, makes exactly -n requests
# on -sessions keep-alive connections with the verifying load client,
# detaches, and prints calls per request. Then it prints the syscall
# sequence of a few requests of one workload. See loadtest/README.md.
#
# Calls are counted from the full trace, not `strace -c`: strace 6.1's
# summary leaves out system calls it has no name for (cachestat, 451),
# and the trace names them syscall_0x1c3.
#
#   bash loadtest/syscalls.sh [-n REQUESTS] [-workloads W1,W2,W3,W4]
#        [-servers segorigin,nginx] [-sessions N] [-revalidate] [-settle S]
#        [-dir DIR] [-seq W3|none] [-o FILE]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

N=1000
WORKLOADS=W1,W2,W3,W4
SERVERS=segorigin,nginx
DIR=""
SEQ=W3
OUT=""
SESSIONS=1
REVALIDATE=0
SETTLE=1
ARGS=("$@")

usage() {
  cat <<'EOF'
usage: bash loadtest/syscalls.sh [options]
  -n REQUESTS       keep-alive requests traced per server and workload (1000)
  -workloads LIST   comma-separated W1..W4 (W1,W2,W3,W4)
  -sessions N       keep-alive clients, one after another, each on its own
                    connection making its share of the -n requests (1)
  -revalidate       a client asks again for a file it fetched with
                    If-None-Match and the ETag it saw (304s after its first
                    pass; W1, W3, W4)
  -settle SECONDS   wait after the warm-up before tracing, so the runtime's
                    threads are idle when counting starts (1); tracing also
                    waits until the newest workload file is 3 s old (older
                    than the server's -settle: not a file being written)
  -servers LIST     comma-separated segorigin,segorigin-uring,nginx,nethttp,fasthttpfs (segorigin,nginx)
  -dir DIR          workload files: used if present, generated there if not
                    (default: a temporary directory, removed at the end)
  -seq W|none       also show the syscall sequence of 3 requests of W (W3)
  -o FILE           also write the output to FILE (default
                    loadtest/results/syscalls-DATE.txt)
Needs strace (and nginx when it is in -servers); says what to apt-get install.
EOF
}

while (($#)); do
  case $1 in
  -n) N=$2 ;;
  -workloads) WORKLOADS=$2 ;;
  -servers) SERVERS=$2 ;;
  -dir) DIR=$2 ;;
  -seq) SEQ=$2 ;;
  -o) OUT=$2 ;;
  -sessions) SESSIONS=$2 ;;
  -settle) SETTLE=$2 ;;
  -revalidate)
    REVALIDATE=1
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
[[ $N =~ ^[0-9]+$ && $N -gt 0 ]] || lt_die "-n: want a number > 0"
[[ $SESSIONS =~ ^[0-9]+$ && $SESSIONS -gt 0 ]] || lt_die "-sessions: want a number > 0"
[[ $SETTLE =~ ^[0-9]+$ && $SETTLE -le 30 ]] || lt_die "-settle: want whole seconds, at most 30"
IFS=, read -r -a WL <<<"$(echo "$WORKLOADS" | tr '[:lower:]' '[:upper:]')"
IFS=, read -r -a SV <<<"$SERVERS"
for w in "${WL[@]}"; do [[ $w =~ ^W[1-4]$ ]] || lt_die "unknown workload $w (W1-W4)"; done
for s in "${SV[@]}"; do
  case $s in segorigin | segorigin-uring | nginx | nethttp | fasthttpfs) ;; *) lt_die "unknown server $s" ;; esac
done
SEQ=$(echo "$SEQ" | tr '[:lower:]' '[:upper:]')

tools=(go strace)
[[ ,$SERVERS, == *,nginx,* ]] && tools+=(nginx)
lt_need_tools "${tools[@]}"

WORK=$(mktemp -d /tmp/segorigin-syscalls.XXXXXX)
chmod 755 "$WORK"
STRACE_PID=""
trap 'if [ -n "$STRACE_PID" ]; then kill -INT "$STRACE_PID" 2>/dev/null; wait "$STRACE_PID" 2>/dev/null; fi; lt_cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
[ -n "$DIR" ] || DIR=$WORK/data
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

echo "building into $WORK/bin ..." >&2
lt_build "$WORK/bin"
gen=("${WL[@]}")
[[ $SEQ == NONE ]] || gen+=("$SEQ")
lt_generate "$WORK/bin" "$DIR" "${gen[@]}"
# The files were perhaps written just now. One written within the server's
# -settle (2 s by default) is still being written as far as the server
# knows, and each request for it asks the kernel whether a writer holds it
# (two fcntl and an fstat): not what a library of finished files costs.
# Tracing starts once the newest is 3 s old (ctime: a touch cannot age it).
OLD_AT=$(( $(find "$DIR" -type f -printf '%C@\n' | sort -n | tail -1 | cut -d. -f1) + 3 ))

# client ADDR W REQUESTS : exactly REQUESTS verified requests of W on one
# keep-alive connection, walking the files in order; conditional after a
# file's first fetch with -revalidate.
client() {
  local addr=$1 w=$2 n=$3 a
  read -r -a a <<<"$(lt_wrk_args "$DIR" "$w")"
  local shape=(-count "${a[0]}" -size "${a[1]}")
  [ "$w" = W2 ] && shape=(-size "${a[0]}")
  local reval=()
  ((REVALIDATE)) && reval=(-revalidate)
  "$WORK/bin/client" -url "http://$addr" -workload "$w" "${shape[@]}" -sessions 1 \
    "${reval[@]}" -requests "$n" -duration 300s -seed 1 -q
}

# clients ADDR W REQUESTS : REQUESTS requests of W by -sessions clients,
# one after another, each on a connection of its own; the output of each.
clients() {
  local addr=$1 w=$2 n=$3 i share
  for ((i = 0; i < SESSIONS; i++)); do
    share=$((n / SESSIONS + (i < n % SESSIONS ? 1 : 0)))
    ((share > 0)) || continue
    client "$addr" "$w" "$share" || return
  done
}

# files W : how many requests one pass over W's files takes (the warm-up).
files() {
  local a
  read -r -a a <<<"$(lt_wrk_args "$DIR" "$1")"
  case $1 in
  W2) echo $((a[0] / a[1])) ;;
  *) echo "${a[0]}" ;;
  esac
}

# traced PID : the server's process and its children (nginx workers), one
# a line.
traced() {
  echo "$1"
  lt_children "$1"
}

# attach OUTFILE STRACE_ARGS... -- PIDS : starts strace on PIDS (all their
# threads) and waits, at most 10 s, until every thread is traced.
attach() {
  local out=$1
  shift
  local sargs=() pids=() p i t all
  while [ "$1" != -- ]; do
    sargs+=("$1")
    shift
  done
  shift
  pids=("$@")
  local pflags=()
  for p in "${pids[@]}"; do pflags+=(-p "$p"); done
  strace -f "${sargs[@]}" -o "$out" "${pflags[@]}" 2>"$out.err" &
  STRACE_PID=$!
  for ((i = 0; i < 100; i++)); do
    all=1
    for p in "${pids[@]}"; do
      for t in /proc/"$p"/task/*/status; do
        if awk '/^TracerPid:/ {exit $2 == 0 ? 0 : 1}' "$t" 2>/dev/null; then
          all=0
        fi
      done
    done
    ((all)) && return 0
    sleep 0.1
  done
  lt_die "strace did not attach: $(cat "$out.err")"
}

detach() {
  kill -INT "$STRACE_PID" 2>/dev/null || true
  wait "$STRACE_PID" 2>/dev/null || true
  STRACE_PID=""
}

# count_calls SERVER W TRACE : "SERVER W SYSCALL CALLS FAILED" lines from
# a full `strace -f` trace: a call is its first line ("PID name(" whether
# finished or "<unfinished ...>"); it failed when its result (on the same
# line or on "<... name resumed>") is -1. syscall_0x1c3 is cachestat.
count_calls() {
  awk -v s="$1" -v w="$2" '
    match($0, /^[0-9]+ +[a-z_0-9]+\(/) {
      c = substr($0, RSTART, RLENGTH - 1); sub(/^[0-9]+ +/, "", c)
      if (c == "syscall_0x1c3") c = "cachestat"
      calls[c]++
      if ($0 ~ /<unfinished \.\.\.>$/) { pending[$1] = c; next }
      if ($0 ~ /= -1 /) failed[c]++
      next
    }
    match($0, /^[0-9]+ +<\.\.\. /) { if ($0 ~ /= -1 / && ($1 in pending)) failed[pending[$1]]++; delete pending[$1] }
    END { for (c in calls) printf "%s\t%s\t%s\t%d\t%d\n", s, w, c, calls[c], failed[c] + 0 }' "$3"
}

# One nginx worker: each worker has its own open_file_cache, and the traced
# connection must land on the worker the warm-up filled. A single
# connection is served by one worker either way.
export LT_NGINX_WORKERS=1

RAW=$WORK/raw.tsv
: >"$RAW"
for srv in "${SV[@]}"; do
  for w in "${WL[@]}"; do
    lt_start "$srv" "$WORK/bin" "$DIR" "$WORK/run-$srv-$w"
    pid=$LT_PID addr=$LT_ADDR
    client "$addr" "$w" "$(files "$w")" >/dev/null || lt_die "$srv $w: warm-up failed"
    sleep "$SETTLE"
    now=$(date +%s)
    (( now >= OLD_AT )) || sleep $(( OLD_AT - now ))
    mapfile -t pids < <(traced "$pid")
    attach "$WORK/strace-$srv-$w.txt" -qq -- "${pids[@]}"
    res=$(clients "$addr" "$w" "$N") || {
      echo "$res" >&2
      lt_die "$srv $w: the client saw errors"
    }
    detach
    lt_stop "$pid"
    count_calls "$srv" "$w" "$WORK/strace-$srv-$w.txt" >>"$RAW"
    echo "  $srv $w: $(grep -o 'requests=[0-9]* errors=[0-9]*' <<<"$res" | tr '\n' ' ')" >&2
  done
done

report() {
  echo "segorigin syscalls, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, Linux $(uname -r), $(strace -V | head -1)"
  echo "command: bash loadtest/syscalls.sh $*"
  echo "servers: $(lt_segorigin_label); $("$(lt_nginx_bin)" -v 2>&1 | sed 's/.*version: //')"
  echo "$N keep-alive GETs per server and workload by $SESSIONS client(s) one after another, each on its own"
  echo "connection (loadtest/client -sessions 1, -requests $N in all$( ((REVALIDATE)) && echo ' -revalidate: 304s after a file'\''s first fetch'),"
  echo "every body verified), after a warm-up pass over every file and ${SETTLE} s to settle, every file 3 s old; strace -f attached to the"
  echo "server and its children for exactly those requests (the accepts and the final closes included), calls"
  echo "counted from the full trace (runtime's included). nginx runs one worker here (each worker has its own"
  echo "open_file_cache; one connection is served by one worker anyway)."
  echo "Calls per request:"
  awk -F'\t' -v n="$N" -v servers="$SERVERS" -v workloads="$(IFS=,; echo "${WL[*]}")" '
    BEGIN {
      ncol = split("read write writev sendmsg sendfile cachestat pread64 openat epoll futex", col, " ")
      desc["W1"] = "full GET of 2 MiB segments"; desc["W2"] = "Range GET of 256 KiB spans (206)"
      desc["W3"] = "full GET of 64 KiB parts"; desc["W4"] = "1 KiB playlists"
    }
    {
      s = $1; w = $2; c = $3
      k = (c ~ /^(epoll|io_uring)/) ? "epoll" : (c == "nanosleep" ? "futex" : c)
      calls[s, w, k] += $4; total[s, w] += $4
      all[s, w] = all[s, w] sprintf(" %s %.2f%s,", c, $4 / n, $5 > 0 ? sprintf(" (%.2f failed)", $5 / n) : "")
    }
    END {
      ns = split(servers, sv, ","); nw = split(workloads, wl, ",")
      for (x = 1; x <= nw; x++) {
        w = wl[x]
        printf "\n%s: %s\n", w, desc[w]
        printf "%-15s %7s", "server", "all"
        for (i = 1; i <= ncol; i++) printf " %9s", col[i] == "futex" ? "futex+ns" : col[i]
        printf "\n"
        for (k = 1; k <= ns; k++) {
          s = sv[k]
          if (!((s, w) in total)) continue
          printf "%-15s %7.2f", s, total[s, w] / n
          for (i = 1; i <= ncol; i++) printf " %9.2f", calls[s, w, col[i]] / n
          printf "\n"
        }
        for (k = 1; k <= ns; k++) {
          s = sv[k]
          if ((s, w) in all) printf "  %s:%s\n", s, substr(all[s, w], 1, length(all[s, w]) - 1)
        }
      }
      print "\n(epoll = epoll_wait, epoll_pwait and epoll_ctl, or io_uring_enter and io_uring_register (-poller uring); futex+ns = futex and nanosleep: Go runtime scheduling)"
    }' "$RAW"
}

# sequence SERVER W : the data-path syscalls of 3 keep-alive requests.
sequence() {
  local srv=$1 w=$2
  lt_start "$srv" "$WORK/bin" "$DIR" "$WORK/seq-$srv-$w"
  local pid=$LT_PID addr=$LT_ADDR
  client "$addr" "$w" "$(files "$w")" >/dev/null || lt_die "$srv $w: warm-up failed"
  local pids
  mapfile -t pids < <(traced "$pid")
  attach "$WORK/seq-$srv-$w.txt" -s 40 \
    -e trace=accept,accept4,read,recvfrom,write,writev,sendmsg,sendto,sendfile,setsockopt,pread64,openat,close \
    -- "${pids[@]}"
  client "$addr" "$w" 3 >/dev/null || lt_die "$srv $w: the client saw errors"
  detach
  lt_stop "$pid"
  echo
  echo "$srv, 3 keep-alive GETs of $w (strace -f -e trace=accept4,read,write,writev,sendmsg,sendfile,setsockopt,pread64,openat,close,...):"
  # Join each call that another thread's call interrupted ("<unfinished
  # ...>" then "<... NAME resumed>") back into one line, drop the pid
  # column, and drop the polls that found nothing (EAGAIN).
  awk '{
      pid = $1; sub(/^[0-9]+ +/, "")
      if (sub(/ <unfinished \.\.\.>$/, "")) { pending[pid] = $0; next }
      if (match($0, /^<\.\.\. [a-z0-9_]+ resumed>/)) { $0 = pending[pid] substr($0, RLENGTH + 1); delete pending[pid] }
      print
    }' "$WORK/seq-$srv-$w.txt" | grep -v 'EAGAIN' | sed 's/^/  /'
}

if [ -z "$OUT" ]; then
  mkdir -p "$LT_REPO/loadtest/results"
  OUT=$LT_REPO/loadtest/results/syscalls-$(date -u +%Y%m%d-%H%M%S).txt
fi
{
  report "${ARGS[@]}"
  if [ "$SEQ" != NONE ]; then
    for srv in "${SV[@]}"; do sequence "$srv" "$SEQ"; done
  fi
} | tee "$OUT"
echo "written to $OUT" >&2
