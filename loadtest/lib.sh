# shellcheck shell=bash
# lib.sh: what compare.sh and syscalls.sh share: checking tools, building
# the binaries, generating the workload files, and starting and stopping
# each server on a loopback port. Sourced, never run.
#
# Every server started here is recorded in LT_PIDS and stopped by
# lt_cleanup (by PID, never by name). Every wait is bounded.

LT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LT_PIDS=()
# SEGORIGIN_BIN, SEGORIGIN_BASE_BIN and SEGORIGIN_FLAGS are the scripts' own settings: keep them
# out of the servers' environment, where segorigin refuses a SEGORIGIN_*
# variable that names no flag.
export -n SEGORIGIN_BIN SEGORIGIN_BASE_BIN SEGORIGIN_FLAGS 2>/dev/null || true

lt_die() {
  echo "$(basename "$0"): $*" >&2
  exit 2
}

# lt_need_tools TOOL... : say exactly what to install when a tool is missing.
# Installs nothing. nginx counts as present at /usr/sbin/nginx too.
lt_need_tools() {
  local missing=() t
  for t in "$@"; do
    case $t in
    nginx) command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light) ;;
    go) command -v go >/dev/null || lt_die "go is not on PATH: install Go 1.26 (https://go.dev/dl/)" ;;
    *) command -v "$t" >/dev/null || missing+=("$t") ;;
    esac
  done
  if ((${#missing[@]})); then
    echo "$(basename "$0"): missing: ${missing[*]}" >&2
    echo "install them with:  sudo apt-get install -y ${missing[*]}" >&2
    exit 3
  fi
}

# lt_segorigin_label : which segorigin ran, for the report header.
lt_segorigin_label() {
  if [ -n "${SEGORIGIN_BIN:-}" ]; then
    echo "segorigin binary $SEGORIGIN_BIN ($(date -u -r "$SEGORIGIN_BIN" '+built %Y-%m-%d %H:%M UTC'))"
  else
    echo "segorigin $(cd "$LT_REPO" && git describe --always --dirty 2>/dev/null || echo '(no git)')"
  fi
}

lt_nginx_bin() {
  command -v nginx 2>/dev/null || echo /usr/sbin/nginx
}

# lt_build OUTDIR : builds segorigin, the peers, the load client and
# gensynth. SEGORIGIN_BIN=FILE uses that segorigin binary instead of
# building ./cmd/segorigin; SEGORIGIN_BASE_BIN=FILE is the binary of the
# server segorigin-base, to compare two versions in one sitting.
lt_build() {
  local out=$1
  mkdir -p "$out"
  if [ -n "${SEGORIGIN_BIN:-}" ]; then
    cp "$SEGORIGIN_BIN" "$out/segorigin" || lt_die "SEGORIGIN_BIN=$SEGORIGIN_BIN: cannot copy"
  else
    (cd "$LT_REPO" && go build -o "$out/segorigin" ./cmd/segorigin) || lt_die "build of ./cmd/segorigin failed"
  fi
  if [ -n "${SEGORIGIN_BASE_BIN:-}" ]; then
    cp "$SEGORIGIN_BASE_BIN" "$out/segorigin-base" || lt_die "SEGORIGIN_BASE_BIN=$SEGORIGIN_BASE_BIN: cannot copy"
  fi
  (cd "$LT_REPO" &&
    go build -o "$out/nethttp" ./loadtest/peers/nethttp &&
    go build -o "$out/fasthttpfs" ./loadtest/peers/fasthttpfs &&
    go build -o "$out/client" ./loadtest/client &&
    go build -o "$out/gensynth" ./fixtures/gensynth) || lt_die "build failed"
}

# lt_setup NAME DIR : a work directory /tmp/segorigin-NAME.XXXXXX in
# LT_WORK, removed on exit after every server started is stopped; the
# workload files' directory in LT_DIR: DIR, or LT_WORK/data if DIR is
# empty, created and made absolute.
lt_setup() {
  LT_WORK=$(mktemp -d "/tmp/segorigin-$1.XXXXXX")
  chmod 755 "$LT_WORK"
  trap 'lt_cleanup; rm -rf "$LT_WORK"' EXIT
  trap 'exit 130' INT TERM
  LT_DIR=${2:-$LT_WORK/data}
  mkdir -p "$LT_DIR"
  LT_DIR=$(cd "$LT_DIR" && pwd)
}

# lt_pin : for -pin: servers on CPU 0 (nginx with one worker), the client
# on CPU 1 through the command prefix in LT_CLIENT_PIN. Needs taskset.
lt_pin() {
  (($(nproc) >= 2)) || lt_die "-pin needs 2 CPUs"
  export LT_SERVER_PIN="taskset -c 0" LT_NGINX_WORKERS=1
  LT_CLIENT_PIN=(taskset -c 1)
}

# lt_order ROUND NAME... : the names, reversed in even rounds.
lt_order() {
  local round=$1 i
  shift
  if ((round % 2)); then
    echo "$@"
    return
  fi
  local names=("$@") rev=()
  for ((i = ${#names[@]} - 1; i >= 0; i--)); do rev+=("${names[i]}"); done
  echo "${rev[@]}"
}

# lt_ticks LOG CMD... : runs CMD with its output in LOG and prints the CPU
# time it used (utime+stime, clock ticks), read as the children's time of
# the shell that waited for it (/proc/PID/stat fields 16 and 17).
lt_ticks() {
  # shellcheck disable=SC2016
  bash -c 'log=$1; shift; "$@" >"$log" 2>&1; read -r rest </proc/$$/stat; rest=${rest##*) }; read -r -a f <<<"$rest"; echo $((f[13] + f[14]))' _ "$@"
}

# lt_generate BINDIR DIR W... : writes the workloads' files below DIR unless
# they are there already (W5 uses W1's files and W4's playlists).
lt_generate() {
  local bin=$1 dir=$2 w
  shift 2
  local want=()
  for w in "$@"; do
    case $w in
    W5) want+=(W1 W4) ;;
    W6) want+=(W3 W4) ;;
    *) want+=("$w") ;;
    esac
  done
  for w in $(printf '%s\n' "${want[@]}" | sort -u); do
    local sub
    sub=$(echo "$w" | tr 'W' 'w')
    if [ -d "$dir/$sub" ] && [ -n "$(ls -A "$dir/$sub")" ]; then
      continue
    fi
    "$bin/gensynth" -dir "$dir" -workload "$w" || lt_die "gensynth $w failed"
  done
}

# lt_wrk_args DIR W : the wrk script's arguments for the files found in DIR
# (named as gensynth names them, 0 .. COUNT-1, so that a smaller generated set
# works): COUNT SIZE, or SIZE SPAN for W2.
lt_wrk_args() {
  local dir=$1 w=$2 files
  case $w in
  W1 | W5) files=("$dir"/w1/*) ;;
  W2)
    echo "$(stat -c %s "$dir/w2/big.mp4") 262144"
    return
    ;;
  W3) files=("$dir"/w3/*) ;;
  W4) files=("$dir"/w4/*) ;;
  W6)
    echo "${LT_VALIDATORS:?lt_validators first}"
    return
    ;;
  esac
  echo "${#files[@]} $(stat -c %s "${files[0]}")"
}

# lt_validators ADDR DIR OUT : W6's requests for the server at ADDR: for the
# 10 W4 playlists and 10 W3 parts in DIR, the validator that server sends,
# as "PATH<TAB>HEADER<TAB>VALUE" lines in OUT: If-None-Match with its ETag,
# or If-Modified-Since with its Last-Modified when it sends no ETag.
lt_validators() {
  local addr=$1 dir=$2 out=$3 urls=() f
  for f in $(cd "$dir" && ls w4/* | head -10) $(cd "$dir" && ls w3/* | head -10); do
    urls+=("http://$addr/$f")
  done
  curl -s -o /dev/null -D - -w 'URL %{url_effective}\n' "${urls[@]}" | tr -d '\r' | awk -v host="http://$addr" '
    tolower($1) == "etag:" { etag = substr($0, index($0, ":") + 2) }
    tolower($1) == "last-modified:" { lm = substr($0, index($0, ":") + 2) }
    $1 == "URL" {
      path = substr($2, length(host) + 1)
      if (etag != "") printf "%s\tIf-None-Match\t%s\n", path, etag
      else if (lm != "") printf "%s\tIf-Modified-Since\t%s\n", path, lm
      etag = ""; lm = ""
    }' >"$out"
  [ -s "$out" ] || lt_die "no validators from $addr"
}

# lt_wait_addr LOG : waits (at most 10 s) for "addr=127.0.0.1:PORT" in a
# Go server's log and prints the address.
lt_wait_addr() {
  local log=$1 i addr
  for ((i = 0; i < 100; i++)); do
    addr=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$log" 2>/dev/null | head -1 | cut -d= -f2)
    if [ -n "$addr" ]; then
      echo "$addr"
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# lt_wait_port PORT : waits (at most 10 s) until 127.0.0.1:PORT accepts.
lt_wait_port() {
  local port=$1 i
  for ((i = 0; i < 100; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# lt_nginx_conf WORKDIR ROOT PORT : writes WORKDIR/nginx.conf. Workers:
# LT_NGINX_WORKERS, else auto (one per core). LT_NGINX_HTTP_EXTRA adds
# directives to the http block and LT_NGINX_LISTEN_OPTS to the listen line
# (compare_tls.sh: the ssl_* directives and "ssl").
lt_nginx_conf() {
  local work=$1 root=$2 port=$3 user=""
  mkdir -p "$work/tmp"
  # The master runs as the invoking user; as root, nginx would switch its
  # workers to "nobody", who may not read ROOT or write WORKDIR.
  if [ "$(id -u)" = 0 ]; then
    user="user root root;"
  fi
  cat >"$work/nginx.conf" <<EOF
# Written by loadtest/lib.sh for a loopback comparison; not for production.
$user
worker_processes ${LT_NGINX_WORKERS:-auto};
worker_rlimit_nofile 65536;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;

events {
    worker_connections 16384;
}

http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    open_file_cache max=10000 inactive=60s;
    open_file_cache_valid 60s;
    # The Go servers close no keep-alive connection after N requests; nor
    # does nginx here (its default, 1000, would add reconnects to its cost).
    keepalive_requests 10000000;
    keepalive_timeout 75s;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    types {
        application/vnd.apple.mpegurl m3u8;
        video/iso.segment m4s;
        video/mp4 mp4;
    }
    default_type application/octet-stream;
${LT_NGINX_HTTP_EXTRA:-}
    server {
        listen 127.0.0.1:$port ${LT_NGINX_LISTEN_OPTS:-};
        root $root;
    }
}
EOF
}

# lt_free_port : a loopback port for a server that cannot take port 0
# (nginx): below the ephemeral range, where no client connection (W5 opens
# thousands) can hold it, and unused in every TCP state. Another process
# may still take it before the server binds: callers retry.
lt_free_port() {
  local low port _
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  for _ in $(seq 1 50); do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! ss -Htan "( sport = :$port or dport = :$port )" 2>/dev/null | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  echo $((10000 + RANDOM % (low - 10000)))
}

# lt_start NAME BINDIR ROOT WORKDIR : starts server NAME (segorigin,
# segorigin-nocache, segorigin-noinline, segorigin-nocold,
# segorigin-fasthttp, segorigin-content, segorigin-gzipoff, segorigin-access,
# segorigin-uring, segorigin-base (SEGORIGIN_BASE_BIN), nginx, nethttp, fasthttpfs) on a loopback port. Sets LT_ADDR and LT_PID; the
# caller may prefix the command with a wrapper in LT_WRAP (e.g. strace).
lt_start() {
  local name=$1 bin=$2 root=$3 work=$4
  mkdir -p "$work"
  LT_ADDR="" LT_PID=""
  case $name in
  segorigin | segorigin-nocache | segorigin-noinline | segorigin-nocold | segorigin-fasthttp | segorigin-content | segorigin-gzipoff | segorigin-access | segorigin-uring | segorigin-base | nethttp | fasthttpfs)
    local extra=() exe=$name
    if [[ $name == segorigin* ]] && [ -n "${SEGORIGIN_FLAGS:-}" ]; then
      read -r -a extra <<<"$SEGORIGIN_FLAGS"
    fi
    if [ "$name" = segorigin-nocache ]; then # the fd cache off, to show what it saves
      exe=segorigin
      extra+=(-cache-files 0)
    fi
    if [ "$name" = segorigin-noinline ]; then # small files by sendfile, to choose -inline-max
      exe=segorigin
      extra+=(-inline-max 0)
    fi
    if [ "$name" = segorigin-nocold ]; then # no residency check or cold pool, to show what they cost on hits
      exe=segorigin
      extra+=(-cold-readers 0)
    fi
    if [ "$name" = segorigin-content ]; then # content ETags (a hash per file, known after the first request)
      exe=segorigin
      extra+=(-etag content)
    fi
    if [ "$name" = segorigin-gzipoff ]; then # no gzip step, to show what it costs a client that does not ask for it
      exe=segorigin
      extra+=(-gzip off)
    fi
    if [ "$name" = segorigin-access ]; then # the address check on: an origin closed to its CDN's ranges (and loopback)
      exe=segorigin
      extra+=(-access "allow 10.0.0.0/8; allow 172.16.0.0/12; allow 192.168.0.0/16; allow 198.51.100.0/24; allow 203.0.113.0/24; allow 127.0.0.0/8; deny all")
    fi
    if [ "$name" = segorigin-uring ]; then # the loops on io_uring instead of epoll
      exe=segorigin
      extra+=(-poller uring)
    fi
    if [ "$name" = segorigin-fasthttp ]; then # a goroutine per connection instead of the event loops
      exe=segorigin
      extra+=(-engine fasthttp)
    fi
    if [ "$name" = segorigin-base ]; then # another version, to compare in one sitting
      [ -x "$bin/segorigin-base" ] || lt_die "segorigin-base: set SEGORIGIN_BASE_BIN to the binary to compare with"
    fi
    : >"$work/$name.log"
    ${LT_WRAP:-} ${LT_SERVER_PIN:-} "$bin/$exe" -root "$root" -listen 127.0.0.1:0 "${extra[@]}" 2>"$work/$name.log" &
    LT_PID=$!
    LT_PIDS+=("$LT_PID")
    LT_ADDR=$(lt_wait_addr "$work/$name.log") || {
      cat "$work/$name.log" >&2
      lt_die "$name did not start"
    }
    ;;
  nginx)
    local port
    for _ in 1 2 3 4 5 6 7 8; do
      port=$(lt_free_port)
      lt_nginx_conf "$work/nginx" "$root" "$port"
      : >"$work/nginx/error.log"
      ${LT_WRAP:-} ${LT_SERVER_PIN:-} "$(lt_nginx_bin)" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" \
        2>"$work/nginx/stderr.log" &
      LT_PID=$!
      LT_PIDS+=("$LT_PID")
      if lt_wait_port "$port" && kill -0 "$LT_PID" 2>/dev/null; then
        LT_ADDR=127.0.0.1:$port
        break
      fi
      lt_stop "$LT_PID"
    done
    [ -n "$LT_ADDR" ] || {
      cat "$work/nginx/stderr.log" "$work/nginx/error.log" >&2
      lt_die "nginx did not start"
    }
    ;;
  *) lt_die "unknown server $name" ;;
  esac
}

# lt_stop PID : SIGTERM, then SIGKILL after 10 s; waits for it.
lt_stop() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

lt_cleanup() {
  local pid
  for pid in "${LT_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      lt_stop "$pid"
    fi
  done
}

# lt_children PID : PID's direct children (nginx's workers).
lt_children() {
  local parent=$1 f rest fields
  for f in /proc/[0-9]*/stat; do
    { read -r rest <"$f"; } 2>/dev/null || continue
    rest=${rest##*) } # fields from 3 on: the name may hold spaces and parens
    read -r -a fields <<<"$rest"
    if [ "${fields[1]}" = "$parent" ]; then
      f=${f#/proc/}
      echo "${f%/stat}"
    fi
  done
}

# lt_cpu_ticks PID : utime+stime (clock ticks) of PID and its direct
# children, from /proc/PID/stat fields 14 and 15.
lt_cpu_ticks() {
  local pid=$1 total=0 p rest
  local f
  for p in "$pid" $(lt_children "$pid"); do
    { read -r rest <"/proc/$p/stat"; } 2>/dev/null || continue
    rest=${rest##*) } # fields from 3 on: the name may hold spaces and parens
    read -r -a f <<<"$rest"
    total=$((total + f[11] + f[12]))
  done
  echo "$total"
}

# lt_rss_kib PID : resident memory of PID and its direct children, KiB.
lt_rss_kib() {
  local pid=$1 total=0 p v
  for p in "$pid" $(lt_children "$pid"); do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null) || continue
    total=$((total + ${v:-0}))
  done
  echo "$total"
}

# lt_kv LINE KEY : the value of KEY=VALUE in a RESULT line.
lt_kv() {
  local line=$1 key=$2 w
  for w in $line; do
    case $w in "$key="*)
      echo "${w#*=}"
      return 0
      ;;
    esac
  done
  echo 0
}
