# relock developer targets. `make test` is what CI runs (through .ci/run).

GO ?= go

.PHONY: test lint lint-tools test-faults soak redis-server postgres bench example example-fencing bench-scale chaos test-chaos chromium

# Linters, pinned; `make lint` installs them with `go install` into
# $(go env GOPATH)/bin when missing, at another version, or built by
# another Go than $(GO) (staticcheck must be as new as the code it reads).
STATICCHECK_VERSION ?= v0.8.2
ACTIONLINT_VERSION ?= v1.7.12
TOOLBIN := $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin
STATICCHECK := $(TOOLBIN)/staticcheck
ACTIONLINT := $(TOOLBIN)/actionlint
GOFMT := $(shell $(GO) env GOROOT)/bin/gofmt

# The behaviour suites also run against real redis-server processes
# (internal/testkit/redistest), because miniredis is not Redis. Without the binary
# those tests skip locally and fail in CI, so install it when we can.
redis-server:
	@if command -v redis-server >/dev/null 2>&1; then \
		echo "redis-server: $$(redis-server --version)"; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "redis-server not found; installing it with apt-get"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq redis-server || exit 1; \
		command -v redis-server >/dev/null 2>&1 || { echo "apt-get installed no redis-server on PATH" >&2; exit 1; }; \
	else \
		echo "" >&2; \
		echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2; \
		echo "!!! redis-server is NOT on PATH and we are not root, so it was not    !!!" >&2; \
		echo "!!! installed. Tests against real Redis will be SKIPPED (not passed). !!!" >&2; \
		echo "!!! Install it: sudo apt-get install redis-server (or brew install redis)" >&2; \
		echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2; \
		echo "" >&2; \
		case "$${CI:-}" in true|TRUE|True|1) echo "CI=$$CI: failing instead of skipping" >&2; exit 1;; esac; \
	fi

# PostgreSQL's binaries for the fence guards' tests (tools/fencecheck),
# which start their own server in a temporary directory (as the user
# postgres when root). Missing: installed when root, else those tests
# skip locally and fail in CI.
postgres:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || command -v postgres >/dev/null 2>&1; then \
		echo "postgres: $$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -n 1)"; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "PostgreSQL not found; installing it with apt-get"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq postgresql || exit 1; \
		ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { echo "apt-get installed no /usr/lib/postgresql/*/bin/postgres" >&2; exit 1; }; \
	else \
		echo "" >&2; \
		echo "!!! PostgreSQL is NOT installed and we are not root, so it was not installed." >&2; \
		echo "!!! The fence guards' PostgreSQL tests will be SKIPPED (not passed)." >&2; \
		echo "!!! Install it: sudo apt-get install postgresql" >&2; \
		echo "" >&2; \
		case "$${CI:-}" in true|TRUE|True|1) echo "CI=$$CI: failing instead of skipping" >&2; exit 1;; esac; \
	fi

test: lint redis-server postgres
	$(GO) test -race -count=1 -timeout 20m ./...
	cd bench && $(GO) test -count=1 ./...
	cd tools && $(GO) test -count=1 -timeout 10m ./fencecheck/
	cd examples/fencing && $(GO) test -count=1 ./...

# gofmt, go vet and staticcheck over the four modules (the root, bench/,
# examples/fencing/, tools/; tools/ with and without the faults tag),
# actionlint over the CI workflows. Any finding fails it.
lint: lint-tools
	@out="$$($(GOFMT) -l .)"; if [ -n "$$out" ]; then echo "gofmt -l: not formatted:" >&2; echo "$$out" >&2; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd examples/fencing && $(GO) vet ./...
	cd tools && $(GO) vet ./... && $(GO) vet -tags faults ./... && $(GO) vet -tags chaos ./...
	$(STATICCHECK) ./...
	cd bench && $(STATICCHECK) ./...
	cd examples/fencing && $(STATICCHECK) ./...
	cd tools && $(STATICCHECK) ./... && $(STATICCHECK) -tags faults ./... && $(STATICCHECK) -tags chaos ./...
	$(ACTIONLINT) .github/workflows/*.yml

lint-tools:
	@if ! "$(STATICCHECK)" -version 2>/dev/null | grep -qF "($(STATICCHECK_VERSION:v%=%))" || \
	   [ "$$($(GO) version "$(STATICCHECK)" 2>/dev/null | cut -d' ' -f2)" != "$$($(GO) env GOVERSION)" ]; then \
		echo "installing staticcheck $(STATICCHECK_VERSION) into $(TOOLBIN)"; \
		GOBIN="$(TOOLBIN)" $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) || exit 1; \
	fi
	@if [ "$$("$(ACTIONLINT)" -version 2>/dev/null | head -n 1)" != "$(ACTIONLINT_VERSION)" ]; then \
		echo "installing actionlint $(ACTIONLINT_VERSION) into $(TOOLBIN)"; \
		GOBIN="$(TOOLBIN)" $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) || exit 1; \
	fi

# The fault suite (in tools/, a module of its own, so that toxiproxy and
# its graph stay out of the library's go.mod; build tag faults): toxiproxy
# latency and partitions, redis-server killed and restarted, the pub/sub
# connection killed, holder processes killed with SIGKILL and stalled with
# SIGSTOP. Bounded to a few minutes; CI runs it.
test-faults: redis-server
	cd tools && $(GO) vet -tags faults ./... && $(GO) test -race -tags faults -count=1 -timeout 10m ./faults/...

# Chaos (tools/chaos): a Jepsen-style run of every primitive under a
# seeded schedule of faults (servers paused, killed, failed over, links cut
# or slowed, clients paused or killed, clocks stepped) on its own Sentinel
# group, Redlock masters and cluster; checkers read the recorded history
# and write results.json and a self-contained report.html to CHAOS_OUT.
# The same SEED gives the same schedule. Exit status 3: a violation.
SEED ?= 1
DURATION ?= 3m
CHAOS_OUT ?= chaos-out
chaos: redis-server
	cd tools && $(GO) run ./chaos -seed $(SEED) -duration $(DURATION) -out $(abspath $(CHAOS_OUT)) $(CHAOS_ARGS)

# The chaos unit tests, then a short seeded run whose report is rendered
# in headless Chromium (installed with apt-get when missing and root).
test-chaos: redis-server chromium
	cd tools && $(GO) vet -tags chaos ./chaos && $(GO) test -tags chaos -count=1 -timeout 10m ./chaos

chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "chromium not found; installing it with apt-get"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq chromium || exit 1; \
	else \
		echo "chromium is not on PATH and we are not root: install it (apt-get install chromium)" >&2; exit 1; \
	fi

# Soak: 200 goroutines x 50 locks of mixed primitives for SOAK_DURATION
# (default 60s) on its own redis-server; fails on any overlap, leaked
# goroutine or key left behind. Not in CI.
SOAK_DURATION ?= 60s
soak: redis-server
	cd tools && $(GO) run ./soak -duration $(SOAK_DURATION) $(SOAK_ARGS)

bench: redis-server
	$(GO) test -run '^$$' -bench . -skip Scale -benchmem -count 5 ./lock/

# Scale scenarios, each run once on a real redis-server: 100k
# leases renewed by one watchdog, 10k waiters on one pub/sub connection.
bench-scale: redis-server
	$(GO) test -run '^$$' -bench 'Scale' -benchtime 1x -timeout 10m ./watchdog/ ./lock/

example:
	$(GO) run ./examples/quickstart

# examples/fencing is a module of its own (its database drivers stay out
# of the library's go.mod).
example-fencing:
	$(GO) -C examples/fencing run .

# Side-by-side comparison with redsync, bsm/redislock and rueidislock
# (bench/, a separate module, so the peers never enter this go.mod).
.PHONY: bench-peers bench-allocs bench-rtt

bench-peers: redis-server
	cd bench && $(GO) run . $(BENCH_ARGS)
	$(MAKE) bench-allocs

bench-allocs:
	cd bench && $(GO) test -run '^$$' -bench Uncontended -benchmem -count 5 .

# The lock rows at 0 to 2 ms round trips through toxiproxy (~4 min), with
# the charts rewritten into docs/bench.
bench-rtt: redis-server
	cd bench && $(GO) run . -rtt 0,0.2ms,1ms,2ms -only 'u1|64g|onekey|redlock' -duration 2s -runs 1 -svg ../docs/bench $(BENCH_ARGS)
