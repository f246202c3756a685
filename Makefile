# Litterbox: build, test and lint. `make demo` and `make test` are the
# README's two commands; each first makes a Docker engine and busybox:latest
# available (idempotent, quick when all is there).
GO ?= go
# No CGO_ENABLED here: litterbox copies its embedded static scanner
# (internal/scanbin) into sandboxes, so the host binary may be any build.
# What --version says: git describe of the checkout, and its commit. `go
# install` builds carry neither; they report what the toolchain recorded.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDINFO = github.com/litterbox-dev/litterbox/internal/buildinfo
LDFLAGS = -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT)
# Packages whose tests need no Docker engine: everything but e2e/, which
# holds the testscript end-to-end suite.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '^github.com/litterbox-dev/litterbox/e2e$$')

# Pinned, and run from the module proxy: no tool to install first.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: setup build cross release test test-unit test-e2e lint fuzz clean-test demo bench

setup:
	bash scripts/ensure-docker.sh
	bash scripts/ensure-busybox.sh

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o litterbox .

# The macOS build type-checks and vets (CI runs on Linux; nothing runs it).
# Vet compiles every package, tests too, without linking: building and
# linking darwin binaries, each with the embedded programs, was most of this
# step's time (748 s on a loaded fresh machine); `make release` builds them
# for real. One architecture: no file of the module depends on it (only on
# the OS: `//go:build linux` and `!linux`), so darwin/amd64 would check
# nothing more of ours.
cross:
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...

# Archives for linux and darwin on amd64 and arm64, and SHA256SUMS, in dist/.
release:
	VERSION="$(VERSION)" COMMIT="$(COMMIT)" bash scripts/release.sh

# Everything: the unit tests under the race detector, then the end-to-end
# scripts, the second even when the first failed (one failing package must
# not hide every script), and a line saying how each ended. -count=1: the
# test cache cannot see Docker, so a cached pass would say nothing about the
# engine the tests are meant to run against.
test: setup
	@unit=0; e2e=0; \
	$(MAKE) --no-print-directory test-unit || unit=$$?; \
	$(MAKE) --no-print-directory test-e2e || e2e=$$?; \
	echo "make test: unit tests $$([ $$unit = 0 ] && echo passed || echo FAILED), end-to-end scripts $$([ $$e2e = 0 ] && echo passed || echo FAILED)"; \
	[ $$unit = 0 ] && [ $$e2e = 0 ]

# The race detector needs cgo. 30 minutes: provider/vm's contract boots a VM,
# emulated where KVM cannot boot Debian's kernel (7-11 minutes here).
test-unit:
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m $(UNIT_PKGS)

test-e2e:
	$(GO) test -count=1 -timeout 45m ./e2e

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

# Every fuzz target of the module for FUZZTIME each (default 5s).
fuzz:
	bash scripts/fuzz.sh

# Removes every container and network labelled dev.litterbox.test, whoever
# made it: for CI machines. Pass VALUE=<id> to remove only one run's.
clean-test:
	bash scripts/clean-test-leftovers.sh $(VALUE)

demo: setup
	$(GO) run ./cmd/demo

bench: setup
	bash scripts/bench.sh
