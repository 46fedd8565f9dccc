# segorigin: `make test` installs what the suite needs and runs all of it.
GO ?= go
FUZZTIME ?= 60000x
# The whole request path runs a server per input: fewer executions.
FUZZTIME_PATH ?= 20000x

.PHONY: test deps vet unit uring uring-players fuzz build run bench dist deb FORCE

test: deps vet unit uring fuzz

deps:
	bash .ci/deps

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 -timeout 15m ./...
	# Allocation budgets, which the race detector's sync.Pool defeats.
	$(GO) test -count=1 -run 'Alloc' ./...

# The loop engine's suites again with -poller uring (io_uring): the loops'
# own tests, conformance, request framing (bodies past the read buffer,
# pipelining), parity, hostile clients and the live playlist
# tests players see; then, against the binary (TEST_POLLER
# reaches every server a test starts as SEGORIGIN_POLLER), the shield
# behind nginx, ffmpeg and the native players, and a 20 s soak. (The
# browser players are left to `make uring-players`: 3 more minutes.)
# Where the kernel refuses io_uring (a container's seccomp profile) it
# says so and leaves them out.
URING_CONFORMANCE = '^(TestFraming|TestSingleRanges|TestManyIdenticalRanges|TestTooManyRanges|TestMultipartRanges|TestEmptyFile|TestConditionals|TestIfRangeDateMustBeStrong|TestMethods|TestHeadMatchesGet|TestPaths|TestLargeSparseFile|TestPipelinedKeepAlive|TestAuthTokens|TestLive.*)$$/^HTTP$$'
URING_BINARY = '^(TestShield.*|TestFFmpeg|TestNativePlayers)$$'
URING_CLIENTS = '^(TestInlinePipelined|TestLogLinesBounded|TestParity|TestHostileRequests|TestRefusalNotResetAway|TestSlowloris|TestConnectionLimits)$$'
uring:
	@if ! TEST_POLLER=uring $(GO) test -count=1 -run '^TestRingAvailable$$' ./origin/loop >/dev/null; then \
		echo "uring: this kernel refuses io_uring (a seccomp profile, kernel.io_uring_disabled): the suites on -poller uring are left out"; \
	else \
		TEST_POLLER=uring $(GO) test -race -count=1 -timeout 5m ./origin/loop && \
		TEST_POLLER=uring $(GO) test -race -count=1 -timeout 5m -run $(URING_CONFORMANCE) ./origin && \
		TEST_POLLER=uring $(GO) test -race -count=1 -timeout 5m -run $(URING_CLIENTS) ./origin && \
		TEST_POLLER=uring $(GO) test -count=1 -timeout 5m -run $(URING_BINARY) ./deploy ./playertest && \
		TEST_POLLER=uring $(GO) test -count=1 -timeout 5m -run '^TestSoak$$' ./loadtest -soak 20s; \
	fi

# The browser players (hls.js, dash.js, Shaka; live and VOD) on -poller uring.
uring-players:
	TEST_POLLER=uring $(GO) test -count=1 -timeout 10m ./playertest

# Short fuzz runs of every target, so the fuzzers and their seeds cannot rot.
# Counted in executions, not seconds: a time budget that expires while a
# worker is mid-input fails the run with "context deadline exceeded".
# 60,000 executions a target keep the 45 targets near 2-3 minutes on 2 cores;
# a longer hunt is `make fuzz FUZZTIME=5000000x`.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./ranges
	$(GO) test -run='^$$' -fuzz='^FuzzMultipart$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./ranges
	$(GO) test -run='^$$' -fuzz='^FuzzVerify$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzParseKeyFile$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzParseSegment$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzRedactor$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzSecureLink$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzSignScope$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzRequestPath$$' -fuzztime=$(FUZZTIME_PATH) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzCleanPath$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzParseMediaTypeRule$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzParkedFields$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzPrevNumbers$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzHLS$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/rewrite
	$(GO) test -run='^$$' -fuzz='^FuzzDASH$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/rewrite
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/percent
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/access
	$(GO) test -run='^$$' -fuzz='^FuzzObsFold$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzAsksClose$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzBareLF$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzRequestLineMajor$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzScanChunked$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzGzip$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/coding
	$(GO) test -run='^$$' -fuzz='^FuzzScanChunkedFrom$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzBareCR$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzMaskField$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzTidyTransferEncoding$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzValidHost$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzParseProxy$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/clientaddr
	$(GO) test -run='^$$' -fuzz='^FuzzForwarding$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/clientaddr
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/cmcd
	$(GO) test -run='^$$' -fuzz='^FuzzAppend$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/accesslog
	$(GO) test -run='^$$' -fuzz='^FuzzParseMedia$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/predict
	$(GO) test -run='^$$' -fuzz='^FuzzParseSidx$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/predict
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/llhls
	$(GO) test -run='^$$' -fuzz='^FuzzParseNextRange$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/predict
	$(GO) test -run='^$$' -fuzz='^FuzzInProgress$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/publish
	$(GO) test -run='^$$' -fuzz='^FuzzParseAttr$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/etag
	$(GO) test -run='^$$' -fuzz='^FuzzParseEnvFile$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/schema
	$(GO) test -run='^$$' -fuzz='^FuzzParseControl$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/ktls
	$(GO) test -run='^$$' -fuzz='^FuzzFramer$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/ktls
	$(GO) test -run='^$$' -fuzz='^FuzzHandshakeScanner$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/ktls
	$(GO) test -run='^$$' -fuzz='^FuzzKeyLog$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/ktls
	$(GO) test -run='^$$' -fuzz='^FuzzParseInfo$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/ktls
	$(GO) test -run='^$$' -fuzz='^FuzzReadTrack$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./fixtures/llmedia

# -buildvcs=auto: stamp the commit (segorigin -version, segorigin_build_info)
# where git can tell it, even when GOFLAGS says -buildvcs=false.
build:
	$(GO) build -buildvcs=auto -o bin/segorigin ./cmd/segorigin

run:
	$(GO) run ./cmd/segorigin

# Release binaries: static (no cgo) linux/amd64 and linux/arm64, with the
# version from git describe (a tag v*; v0.0.0-<commit> before the first)
# and the commit linked in, so -version and segorigin_build_info name them
# whatever the toolchain could stamp; then SHA256SUMS. make dist VERSION=v1.2.3
# names another version.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.0.0-$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty))
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DIST ?= dist

dist: $(DIST)/segorigin-$(VERSION)-linux-amd64 $(DIST)/segorigin-$(VERSION)-linux-arm64
	cd $(DIST) && sha256sum segorigin-$(VERSION)-linux-amd64 segorigin-$(VERSION)-linux-arm64 > SHA256SUMS

$(DIST)/segorigin-$(VERSION)-linux-%: FORCE
	@mkdir -p $(DIST)
	CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -trimpath -buildvcs=false \
		-ldflags '-s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)' -o $@ ./cmd/segorigin

# The Debian package (deploy/debian/build-deb.sh; lintian-clean, which
# deploy/deb_test.go checks): the release binary for DEB_ARCH (this
# machine's by default; amd64 or arm64), the systemd unit, the environment
# file, a modules-load.d entry for the tls module, and the manual page made
# from the binary's -h. A native package: the version is VERSION without
# its v, with '+' for '-' (v0.0.0-<commit> becomes 0.0.0+<commit>).
HOST_ARCH := $(shell $(GO) env GOARCH)
DEB_ARCH ?= $(HOST_ARCH)
DEBVERSION ?= $(shell echo '$(VERSION)' | sed -e 's/^v//' -e 's/-/+/g')
DEB_MAINTAINER ?= $(shell git log -1 --format='%an <%ae>' 2>/dev/null)
DEB_DATE ?= $(shell git log -1 --format=%cD 2>/dev/null || date -R)
DEB_DAY ?= $(shell git log -1 --format=%cs 2>/dev/null || date +%F)
DEB ?= $(DIST)/segorigin_$(DEBVERSION)_$(DEB_ARCH).deb

deb: $(DEB)

$(DEB): $(DIST)/segorigin-$(VERSION)-linux-$(DEB_ARCH) $(DIST)/segorigin.1 FORCE
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) bash deploy/debian/build-deb.sh -b $< -m $(DIST)/segorigin.1 -v '$(DEBVERSION)' -a $(DEB_ARCH) \
		-M '$(DEB_MAINTAINER)' -d '$(DEB_DATE)' -o $@

# segorigin(1), from what this machine's release binary prints (-h, sign -h).
$(DIST)/segorigin.1: $(DIST)/segorigin-$(VERSION)-linux-$(HOST_ARCH) FORCE
	$(GO) run ./internal/manpage/mkman -bin $< -date $(DEB_DAY) -o $@

FORCE:
