# segorigin: `make test` installs what the suite needs and runs all of it.
GO ?= go
FUZZTIME ?= 300000x

.PHONY: test deps vet unit fuzz build run bench dist FORCE

test: deps vet unit fuzz

deps:
	bash .ci/deps

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 -timeout 15m ./...
	# Allocation budgets, which the race detector's sync.Pool defeats.
	$(GO) test -count=1 -run 'Alloc' ./...

# Short fuzz runs of every target, so the fuzzers and their seeds cannot rot.
# Counted in executions, not seconds: a time budget that expires while a
# worker is mid-input fails the run with "context deadline exceeded".
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./ranges
	$(GO) test -run='^$$' -fuzz='^FuzzMultipart$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./ranges
	$(GO) test -run='^$$' -fuzz='^FuzzVerify$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzParseKeyFile$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzParseSegment$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzRedactor$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/token
	$(GO) test -run='^$$' -fuzz='^FuzzCleanPath$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzParseMediaTypeRule$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/percent
	$(GO) test -run='^$$' -fuzz='^FuzzObsFold$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzAsksClose$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./internal/httpmsg
	$(GO) test -run='^$$' -fuzz='^FuzzParseProxy$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/clientaddr
	$(GO) test -run='^$$' -fuzz='^FuzzForwarding$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/clientaddr
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/cmcd
	$(GO) test -run='^$$' -fuzz='^FuzzAppend$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/accesslog
	$(GO) test -run='^$$' -fuzz='^FuzzParseMedia$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/predict
	$(GO) test -run='^$$' -fuzz='^FuzzParseSidx$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/predict
	$(GO) test -run='^$$' -fuzz='^FuzzParseNextRange$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=500x ./origin/predict

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

FORCE:
