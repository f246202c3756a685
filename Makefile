# Litterbox: build, test and lint. `make test` is the README's test command.
GO ?= go
# Packages whose tests need no Docker engine: everything but the root
# package, which holds the testscript end-to-end suite.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '^github.com/litterbox-dev/litterbox$$')

.PHONY: build test test-unit lint clean-test demo bench

build:
	$(GO) build ./...

test:
	$(GO) test ./...

test-unit:
	$(GO) test $(UNIT_PKGS)

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean-test:
	bash scripts/clean-test-leftovers.sh

demo:
	$(GO) run ./demo

bench:
	bash scripts/bench.sh
