#!/usr/bin/env bash
# Builds segorigin's Debian package with dpkg-deb (no debhelper): the
# release binary as /usr/bin/segorigin, deploy/segorigin.service as the
# systemd unit (running /usr/bin/segorigin), deploy/segorigin.env as the
# conffile /etc/default/segorigin, the sysusers.d and tmpfiles.d entries
# for its user and log directory, a logrotate conffile, a modules-load.d
# entry for the kernel's tls module, the Prometheus rules and Grafana
# dashboard (/usr/share/segorigin), the example environment files, the
# manual page made from the binary's own -h (internal/manpage/mkman), and
# the documentation. `make deb` runs it; deploy/deb_test.go inspects what
# it makes and deploy/systemd_test.go installs it under systemd.
#
#   build-deb.sh -b BINARY -m MANPAGE -v DEBVERSION -a DEBARCH \
#       -M 'Name <email>' -d 'RFC 2822 date' -o OUT.deb
set -euo pipefail

usage() { echo "usage: $0 -b binary -m manpage -v version -a arch -M maintainer -d date -o out.deb" >&2; exit 2; }
bin= man= version= arch= maintainer= date= out=
while getopts b:m:v:a:M:d:o: opt; do
	case $opt in
	b) bin=$OPTARG ;; m) man=$OPTARG ;; v) version=$OPTARG ;; a) arch=$OPTARG ;;
	M) maintainer=$OPTARG ;; d) date=$OPTARG ;; o) out=$OPTARG ;; *) usage ;;
	esac
done
[ -n "$bin" ] && [ -n "$man" ] && [ -n "$version" ] && [ -n "$arch" ] && [ -n "$maintainer" ] && [ -n "$date" ] && [ -n "$out" ] || usage
# A native package's version: digits first, no '-' (that would name a
# Debian revision).
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || { echo "$0: version $version is not a native Debian version" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
umask 022
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage" # the package's / (mktemp makes it 0700)

install -D -m 755 "$bin" "$stage/usr/bin/segorigin"
install -d -m 755 "$stage/usr/lib/systemd/system"
sed -e 's|/usr/local/bin/segorigin|/usr/bin/segorigin|g' \
	-e 's|^Documentation=.*|Documentation=man:segorigin(1) file:///usr/share/doc/segorigin/README.md|' \
	"$repo/deploy/segorigin.service" > "$stage/usr/lib/systemd/system/segorigin.service"
install -D -m 644 "$repo/deploy/segorigin.env" "$stage/etc/default/segorigin"
install -D -m 644 "$here/modules-load.conf" "$stage/usr/lib/modules-load.d/segorigin.conf"
install -D -m 644 "$here/sysusers.conf" "$stage/usr/lib/sysusers.d/segorigin.conf"
install -D -m 644 "$here/tmpfiles.conf" "$stage/usr/lib/tmpfiles.d/segorigin.conf"
install -D -m 644 "$here/logrotate" "$stage/etc/logrotate.d/segorigin"
install -D -m 644 "$repo/deploy/prometheus/alerts.yml" "$stage/usr/share/segorigin/prometheus/alerts.yml"
install -D -m 644 "$repo/deploy/grafana/segorigin.json" "$stage/usr/share/segorigin/grafana/segorigin.json"
install -d -m 755 "$stage/usr/share/man/man1"
gzip -9n < "$man" > "$stage/usr/share/man/man1/segorigin.1.gz"

doc=$stage/usr/share/doc/segorigin
install -D -m 644 "$here/copyright" "$doc/copyright"
install -m 644 "$repo/README.md" "$doc/README.md"
gzip -9n < "$repo/CHANGELOG.md" > "$doc/CHANGELOG.md.gz"
install -d -m 755 "$doc/docs" "$doc/examples"
install -m 644 "$repo"/docs/*.md "$doc/docs/"
install -m 644 "$repo"/deploy/examples/*.env "$doc/examples/"
# Links to files the package does not hold (the source tree's) become
# plain text naming the file; CHANGELOG.md is installed compressed.
perl -i -pe '
	BEGIN { $dir = shift @ARGV }
	s{\[([^\]]+)\]\(([^)#:]+?)(#[^)]*)?\)}{
		my ($text, $path, $frag) = ($1, $2, $3 // "");
		$path =~ s{^(\.\./)?CHANGELOG\.md$}{$1CHANGELOG.md.gz};
		my $base = $ARGV =~ m{/docs/[^/]+$} ? "$dir/docs" : $dir;
		(my $shown = $path) =~ s{^(\.\./)+}{};
		-e "$base/$path" ? "[$text]($path$frag)" : "$text (in the source tree: $shown)"
	}ge' "$doc" "$doc/README.md" "$doc"/docs/*.md
# A native package's changelog.gz, in Debian's format; the release notes
# are CHANGELOG.md.
printf 'segorigin (%s) unstable; urgency=medium\n\n  * Release notes: /usr/share/doc/segorigin/CHANGELOG.md.gz\n\n -- %s  %s\n' \
	"$version" "$maintainer" "$date" | gzip -9n > "$doc/changelog.gz"
install -D -m 644 "$here/segorigin.lintian-overrides" "$stage/usr/share/lintian/overrides/segorigin"

install -d -m 755 "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" -e "s|@SIZE@|$size|" \
	"$here/control" > "$stage/DEBIAN/control"
printf '%s\n' /etc/default/segorigin /etc/logrotate.d/segorigin > "$stage/DEBIAN/conffiles"
install -m 755 "$here/postinst" "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/md5sums"

mkdir -p "$(dirname "$out")"
# Reproducible: every mtime is the commit's (SOURCE_DATE_EPOCH, which
# dpkg-deb also uses for the archive's own times), when it is set.
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
fi
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
