package main

import (
	"strings"

	"segorigin/internal/manpage"
)

// page is segorigin(1): the fixed prose around what the binary printed.
// server's first paragraph (the environment) and second (the signals)
// become ENVIRONMENT and SIGNALS; sign's first describes the command.
func page(server, sign manpage.Usage, version, date string) manpage.Page {
	p := manpage.Page{
		Name: "segorigin", Section: "1", Date: date, Source: "segorigin " + version, Manual: "User Commands",
		Summary:  "HTTP/1.1 origin server for HLS and DASH video on demand",
		Synopsis: append(append([]string{}, server.Synopsis...), sign.Synopsis...),
	}
	p.Sections = append(p.Sections, manpage.Section{Title: "DESCRIPTION", Paragraphs: []string{
		"segorigin serves a directory of HLS playlists, DASH manifests and media segments to players and CDNs, " +
			"with RFC 9110 Range and conditional requests, from a cache of open files invalidated by file system events. " +
			"Bodies leave by sendfile(2); on HTTPS the kernel's TLS (kTLS) keeps them on sendfile.",
		"The default -root, fixtures/media, is relative to the working directory: run with no flags from a " +
			"checkout of the source, it serves the bundled fixtures on 127.0.0.1:8080; anywhere else (the installed " +
			"binary) it exits with status 2 and says the root does not exist: give -root (or SEGORIGIN_ROOT). " +
			"On start it logs one line per listener with the address it bound and the URL to play from " +
			"(\"url\": a playlist at <root>/hls/master.m3u8 plays at <url>hls/master.m3u8), and one " +
			"\"body paths\" line saying whether sendfile and kTLS are in use, and why not.",
	}})
	p.Sections = append(p.Sections, manpage.Section{Title: "OPTIONS", Flags: server.Flags})
	var env, signals []string
	for _, para := range server.Paragraphs {
		if strings.HasPrefix(para, "Signals:") {
			signals = append(signals, strings.TrimSpace(strings.TrimPrefix(para, "Signals:")))
		} else {
			env = append(env, para)
		}
	}
	p.Sections = append(p.Sections,
		manpage.Section{Title: "ENVIRONMENT", Paragraphs: env},
		manpage.Section{Title: "SIGNALS", Paragraphs: signals},
		manpage.Section{Title: "SIGN", Paragraphs: sign.Paragraphs, Flags: sign.Flags},
		manpage.Section{Title: "KERNEL TLS", Paragraphs: []string{
			"The kernel loads its tls module on demand only for a process with CAP_NET_ADMIN, which the systemd unit " +
				"does not grant. The package lists tls in /usr/lib/modules-load.d/segorigin.conf, so " +
				"systemd-modules-load(8) loads it at boot; until the next boot, run modprobe tls. " +
				"When the module is not loaded, segorigin logs one line at start saying so and serves HTTPS " +
				"through a userspace copy.",
		}},
		manpage.Section{Title: "FILES", Items: []manpage.Item{
			{Term: "/etc/default/segorigin", Text: "SEGORIGIN_* settings read by the systemd unit; as shipped, /srv/media over HTTP on port 80."},
			{Term: "/etc/segorigin/", Text: "the files the service reads, group segorigin, mode 0640: a TLS certificate and key, " +
				"auth keys or a secure_link secret, wherever SEGORIGIN_* names them; systemctl reload re-reads them."},
			{Term: "/usr/lib/systemd/system/segorigin.service", Text: "the systemd unit: runs as the system user segorigin, sandboxed."},
			{Term: "/var/log/segorigin/access.log", Text: "the access log, 0640 segorigin:adm; /etc/logrotate.d/segorigin rotates it daily."},
			{Term: "/usr/share/doc/segorigin/examples/", Text: "environment files for signed URLs (secure_link) and HTTPS."},
			{Term: "/usr/share/segorigin/", Text: "Prometheus alert rules (prometheus/alerts.yml) and a Grafana dashboard (grafana/segorigin.json)."},
			{Term: "/usr/lib/modules-load.d/segorigin.conf", Text: "loads the kernel's tls module at boot."},
			{Term: "/usr/share/doc/segorigin/", Text: "the README, the changelog and the operator's documentation."},
		}},
		manpage.Section{Title: "SEE ALSO", Paragraphs: []string{
			"systemd.exec(5), modules-load.d(5), modprobe(8), logrotate(8)",
		}},
	)
	return p
}
