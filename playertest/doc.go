// Package playertest shows that real players play every fixture stream from
// segorigin: ffmpeg and ffprobe, GStreamer and VLC, and hls.js, dash.js and
// Shaka Player in Debian's headless Chromium from a page on another
// origin; over HTTP and
// HTTPS, with and without auth (a path token, and a query token that the
// server writes into every playlist and MPD it serves, seeking included).
//
// It owns no production code: its tests build cmd/segorigin, run it on
// 127.0.0.1:0 over fixtures/media, and point the players at it. The browser
// half is driven by driver.mjs (Node, playwright-core) with the page in
// page/; the Go test runs it and judges every request the page made to the
// media origin against the files on disk: each Range request must get a 206
// whose Content-Range and body are exactly the requested span.
//
// It needs ffmpeg, GStreamer (gst-launch-1.0 with the base, good, bad and
// libav plugins), VLC (cvlc; run as nobody when the test runs as root,
// since VLC refuses root), /usr/bin/chromium and playertest/node_modules
// (npm ci);
// `make test` (.ci/deps) installs them. A missing one fails the test: a
// skipped player test would hide a broken install.
package playertest
