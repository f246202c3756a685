# Litterbox: build, test and lint. `make demo` and `make test` are the
# README's two commands; each first makes a Docker engine and busybox:latest
# available (idempotent, quick when all is there).
GO ?= go
# Static: snapshots copy the litterbox binary into the busybox sandbox, which
# has no C library.
export CGO_ENABLED = 0
# Packages whose tests need no Docker engine: everything but the root
# package, which holds the testscript end-to-end suite.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '^github.com/litterbox-dev/litterbox$$')

.PHONY: setup build test test-unit lint clean-test demo bench

setup:
	bash scripts/ensure-docker.sh
	bash scripts/ensure-busybox.sh

build:
	$(GO) build -o litterbox .

# -count=1: the test cache cannot see Docker, so a cached pass would say
# nothing about the engine the tests are meant to run against.
test: setup
	$(GO) test -count=1 -timeout 30m ./...

test-unit:
	$(GO) test $(UNIT_PKGS)

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Removes every container and network labelled dev.litterbox.test, whoever
# made it: for CI machines. Pass VALUE=<id> to remove only one run's.
clean-test:
	bash scripts/clean-test-leftovers.sh $(VALUE)

demo: setup
	$(GO) run ./demo

bench: setup
	bash scripts/bench.sh
