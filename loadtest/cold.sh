#!/usr/bin/env bash
# cold.sh: a library bigger than the server's page cache, on slow storage,
# under a player-like load plus a cold burst; segorigin with and without
# read-ahead and the cold-read pool beside nginx with and without
# "aio threads", in one run. See docs/cold-storage.md.
#
#   bash loadtest/cold.sh [-d SECONDS] [-titles N] [-delay 5ms] [-mem 256M]
#        [-sessions N] [-burst N] [-lib DIR] [-servers LIST] [-o FILE]
#
# The rig: the library is served through a FUSE mount (loadtest/slowfs,
# go-fuse) that adds -delay to every read reaching it, i.e. every page-cache
# miss; each server runs in a cgroup v1 memory controller limited to -mem,
# which bounds the page cache charged to it (memory.force_empty between
# runs starts each one cold). coldload walks HLS and DASH titles at playback
# pace and sends -burst one-off requests for random segments at once.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

DUR=20 TITLES=40 DELAY=5ms MEM=256M SESSIONS=40 BURST=500 LIB="" OUT=""
SERVERS=segorigin,segorigin-noreadahead,segorigin-nopool,nginx,nginx-aio
while [ $# -gt 0 ]; do
  case $1 in
  -d) DUR=$2 ;;
  -titles) TITLES=$2 ;;
  -delay) DELAY=$2 ;;
  -mem) MEM=$2 ;;
  -sessions) SESSIONS=$2 ;;
  -burst) BURST=$2 ;;
  -lib) LIB=$2 ;;
  -servers) SERVERS=$2 ;;
  -o) OUT=$2 ;;
  *) lt_die "unknown option $1 (see the header of $0)" ;;
  esac
  shift 2
done
lt_need_tools go nginx
[ -e /dev/fuse ] || lt_die "no /dev/fuse: the slow-storage rig needs FUSE"
CGROOT=/sys/fs/cgroup/memory
[ -w "$CGROOT" ] || lt_die "no writable cgroup v1 memory controller at $CGROOT (run as root)"

WORK=$(mktemp -d /tmp/segorigin-cold.XXXXXX)
CG=$CGROOT/segorigin-cold-$$
MNT=$WORK/mnt
SLOWFS_PID=""
cleanup() {
  lt_cleanup
  if [ -n "$SLOWFS_PID" ]; then lt_stop "$SLOWFS_PID"; fi
  [ -d "$CG" ] && rmdir "$CG" 2>/dev/null || true
  mountpoint -q "$MNT" 2>/dev/null && umount "$MNT" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

lt_build "$WORK/bin"
(cd "$LT_REPO" && go build -o "$WORK/bin/slowfs" ./loadtest/slowfs && go build -o "$WORK/bin/coldload" ./loadtest/coldload) ||
  lt_die "build failed"
[ -n "$LIB" ] || LIB=/tmp/segorigin-cold-lib-$TITLES
if [ ! -d "$LIB/hls" ]; then
  echo "generating $TITLES titles x 30 segments x 1 MiB in $LIB"
  "$WORK/bin/coldload" -gen "$LIB" -titles "$TITLES"
fi
mkdir -p "$MNT"
"$WORK/bin/slowfs" -backing "$LIB" -mount "$MNT" -delay "$DELAY" >"$WORK/slowfs.log" 2>&1 &
SLOWFS_PID=$!
for _ in $(seq 1 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || { cat "$WORK/slowfs.log" >&2; lt_die "slowfs did not mount"; }
mkdir -p "$CG"
echo "$MEM" >"$CG/memory.limit_in_bytes"
printf '#!/bin/sh\necho $$ >"%s/cgroup.procs" && exec "$@"\n' "$CG" >"$WORK/cgexec"
chmod +x "$WORK/cgexec"

{
  echo "# cold storage: $(lt_segorigin_label), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
  echo "# rig: $(head -1 "$WORK/slowfs.log"); page cache limit $MEM (cgroup v1 memory)"
  echo "# load: $SESSIONS players over $TITLES titles (half HLS, half DASH; 30 x 1 MiB segments), one segment per 0.5 s each,"
  echo "#       playlist refetched every 4 segments, a burst of $BURST random segments at once at 8 s; ${DUR} s per server"
  echo "# command: bash loadtest/cold.sh -d $DUR -titles $TITLES -delay $DELAY -mem $MEM -sessions $SESSIONS -burst $BURST"
  echo
  echo "# TTFB: request sent to first body byte. resident (client): segment TTFB under 2 ms (a miss costs >= $DELAY);"
  echo "# resident (server): segorigin's cold_resident/cold_checked for segments; read-ahead: issued / hit / wasted / unused / dropped"
  echo
  echo "| server | playlist TTFB ms p50 / p99 | playlist p99 in the burst | segment TTFB ms p50 / p99 | resident (client) | resident (server) | read-ahead | burst TTFB ms p50 / p99 | max threads | errors |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} | tee "$WORK/table"

IFS=, read -r -a servers <<<"$SERVERS"
for s in "${servers[@]}"; do
  echo 0 >"$CG/memory.force_empty" 2>/dev/null || true # start cold
  LT_WRAP="$WORK/cgexec" SEGORIGIN_FLAGS="" LT_NGINX_HTTP_EXTRA=""
  case $s in
  segorigin) name=segorigin ;;
  segorigin-noreadahead) name=segorigin SEGORIGIN_FLAGS="-readahead-readers 0" ;;
  segorigin-nopool) name=segorigin SEGORIGIN_FLAGS="-cold-readers 0" ;;
  nginx) name=nginx ;;
  nginx-aio) name=nginx LT_NGINX_HTTP_EXTRA="    aio threads;" ;;
  *) lt_die "unknown server $s" ;;
  esac
  admin=127.0.0.1:$(lt_free_port)
  SEGORIGIN_FLAGS="$SEGORIGIN_FLAGS -watch=false -admin-listen $admin" LT_WRAP="$LT_WRAP" LT_NGINX_HTTP_EXTRA="$LT_NGINX_HTTP_EXTRA" \
    lt_start "$name" "$WORK/bin" "$MNT" "$WORK/$s"
  metrics=""
  if [ "$name" = segorigin ]; then
    metrics=http://$admin/metrics
  fi
  "$WORK/bin/coldload" -url "http://$LT_ADDR" -titles "$TITLES" -sessions "$SESSIONS" -burst "$BURST" \
    -duration "${DUR}s" -cgroup "$CG" -label "$s" -metrics "$metrics" | tee -a "$WORK/table"
  lt_stop "$LT_PID"
done
echo "# $(tail -1 "$WORK/slowfs.log" 2>/dev/null)"
if [ -n "$OUT" ]; then cp "$WORK/table" "$OUT"; fi
