# autobox: one Go binary (cgo, for V8). Every target works on a machine with only Go,
# gcc and git; `make test` also wants root and xfsprogs for the reflink tests (.ci/run
# installs it), and skips those tests with the reason otherwise.
# Go: the go on PATH, else the official tarball's /usr/local/go/bin/go (not on PATH
# until a profile adds it); make GO=/path/to/go chooses another. Its directory goes
# first on the PATH of every recipe, for the tests that run go themselves.
ifeq ($(origin GO),undefined)
GO      := $(firstword $(shell command -v go 2>/dev/null) $(wildcard /usr/local/go/bin/go))
endif
ifneq ($(findstring /,$(GO)),)
export PATH := $(patsubst %/,%,$(dir $(GO))):$(PATH)
endif
NEED_GO  = @command -v "$(GO)" >/dev/null 2>&1 || { echo "make: go not found on PATH nor at /usr/local/go/bin/go: install Go $(shell sed -n 's/^go //p' go.mod) or later (https://go.dev/dl/ unpacks to /usr/local/go), or run make GO=/path/to/go" >&2; exit 127; }
BIN     := bin/autobox
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/autobox-dev/autobox/supervisor.Version=$(VERSION)

.PHONY: build test soak clients bench lint run install clean

# `make -C DIR run` is what an MCP client may be configured with: make's own
# lines ("Entering directory ...") would go to stdout, into the protocol. This line
# keeps them out on GNU make 4.4.1 and later. Older makes (4.3: Ubuntu 22.04 and
# 24.04, Debian 12) print "Entering directory" before they read any makefile, so
# nothing here can: there the client needs make -s -C DIR run (or the binary
# itself), and run says so on stderr when it finds that line was printed.
MAKEFLAGS += --no-print-directory
PRINTED_DIR_NOTE = autobox: make $(MAKE_VERSION) printed 'make: Entering directory' on stdout, into the MCP protocol: configure the client with make -s -C $(CURDIR) run, or with $(abspath $(BIN)) itself
PRINTED_DIR := $(and $(findstring w,$(firstword -$(MAKEFLAGS))),$(filter 3.% 4.0% 4.1% 4.2% 4.3% 4.4,$(MAKE_VERSION)))

# make install puts the binary in $(PREFIX)/bin (default ~/.local/bin, which
# most Linux shells have on PATH).
PREFIX  ?= $(HOME)/.local

# The binary is linked statically: each execute_js call starts a fresh worker
# process, and a static binary starts ~15% cheaper (no dynamic loader, no relocation
# of libstdc++ and libc); it also runs on any Linux, whatever its libraries. The
# netgo and osusergo tags keep Go's own DNS and user lookups (glibc's need shared
# NSS libraries). Where static libraries are missing, a dynamic binary is built.
STATIC  := -tags netgo,osusergo # with -extldflags=-static in its -ldflags

# On Linux the small launcher (./cmd/autobox-launcher: jail's child roles alone,
# pure Go as nothing they run needs cgo, no symbol table) is built first and
# appended to the binary with a 32-byte trailer (AUTOBOX-LAUNCHER and its length);
# the binary is linked with its build ID and starts its launchers from it, and
# from itself when it carries none (see internal/launcherbin). One file still.
LAUNCHER := bin/.parts/autobox-launcher
LAUNCHER_ID = -X github.com/autobox-dev/autobox/internal/launcherbin.buildID=$$lid
ifeq ($(shell uname -s),Linux)
MAIN     := bin/.parts/autobox
else
MAIN     := $(BIN)
endif

# Its messages go to stderr, so that `make run` keeps stdout for MCP.
build:
	$(NEED_GO)
	@mkdir -p bin/.parts
ifeq ($(MAIN),$(BIN))
	@echo "go build (static) -o $(BIN) ./cmd/autobox" >&2
	@$(GO) build $(STATIC) -ldflags '$(LDFLAGS) -extldflags=-static' -o $(MAIN) ./cmd/autobox >&2 || { \
		echo "static link failed (are libc.a and libstdc++.a installed?); building a dynamically linked binary" >&2; \
		$(GO) build -ldflags '$(LDFLAGS)' -o $(MAIN) ./cmd/autobox >&2; }
else
	@echo "go build (static) -o $(BIN) ./cmd/autobox, with the small launcher ./cmd/autobox-launcher" >&2
	@CGO_ENABLED=0 $(GO) build -tags netgo,osusergo -ldflags '-s -w' -o $(LAUNCHER) ./cmd/autobox-launcher >&2
	@lid=$$($(GO) tool buildid $(LAUNCHER)) && { \
	$(GO) build $(STATIC) -ldflags "$(LDFLAGS) $(LAUNCHER_ID) -extldflags=-static" -o $(MAIN) ./cmd/autobox >&2 || { \
		echo "static link failed (are libc.a and libstdc++.a installed?); building a dynamically linked binary" >&2; \
		$(GO) build -ldflags "$(LDFLAGS) $(LAUNCHER_ID)" -o $(MAIN) ./cmd/autobox >&2; }; }
	@cat $(MAIN) $(LAUNCHER) > $(BIN).tmp && \
		printf 'AUTOBOX-LAUNCHER%016d' $$(($$(wc -c < $(LAUNCHER)))) >> $(BIN).tmp && \
		chmod 0755 $(BIN).tmp && mv -f $(BIN).tmp $(BIN)
endif

# stdout is the MCP server's alone; the banner goes to stderr.
run: build
	$(if $(PRINTED_DIR),@echo "$(PRINTED_DIR_NOTE)" >&2)
	@echo "autobox: serving MCP on stdin/stdout (JSON-RPC lines; Ctrl-C or end of input stops it). An MCP client runs $(abspath $(BIN)) itself." >&2
	@exec $(abspath $(BIN))

install: build
	@install -d "$(DESTDIR)$(PREFIX)/bin"
	@install -m 0755 $(BIN) "$(DESTDIR)$(PREFIX)/bin/autobox"
	@echo "installed $(DESTDIR)$(PREFIX)/bin/autobox"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH; add it (export PATH=\"$(PREFIX)/bin:\$$PATH\") or run make install PREFIX=/usr/local";; esac

# The end-to-end tests in ./test run the binary `make build` made (AUTOBOX_TEST_BIN);
# `go test ./test` alone builds one of its own.
# Run as root, it then runs the whole suite again as an ordinary user that it
# makes (test/asuser.sh; AUTOBOX_TEST_ROOT_ONLY=1 skips that pass).
test: build clients
	@if [ "$$(id -u)" = 0 ]; then bash test/asuser.sh make-user; fi
	AUTOBOX_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 40m ./...
	@if [ "$$(id -u)" = 0 ] && [ -z "$$AUTOBOX_TEST_ROOT_ONLY" ]; then bash test/asuser.sh; fi

# The fault harness in full: every step of a sync killed and failed, a disk-full sweep,
# and the server against a client that never reads (make test runs a few trials of each).
SOAK_TESTS := TestSync(KilledAtEachStep|KilledAtEachStepWithoutExchange|FailedAtEachStep|OutOfSpace)|TestCreateOutOfSpace|TestUnreadClient|TestPausedServer|TestClientClosedStdout
soak: build
	AUTOBOX_SOAK=1 AUTOBOX_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m -run '$(SOAK_TESTS)' -v ./store ./supervisor ./test

# The real MCP clients of the conformance tests (test/clients_test.go), pinned in
# test/clients/package-lock.json, are installed with npm ci when they are missing or
# older than the lock. Without npm (or the registry) those tests skip and say why
# (under CI=1 they fail).
CLIENTS := test/clients
clients:
	@if [ ! -f $(CLIENTS)/node_modules/.package-lock.json ] || [ $(CLIENTS)/package-lock.json -nt $(CLIENTS)/node_modules/.package-lock.json ]; then \
		if command -v npm >/dev/null; then \
			echo "npm ci in $(CLIENTS)"; \
			(cd $(CLIENTS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || \
				echo "npm ci failed: the TypeScript SDK and Inspector client tests will skip"; \
		else \
			echo "npm not found: the TypeScript SDK and Inspector client tests will skip"; \
		fi; \
	fi

bench: build
	$(GO) run ./test/bench -bin $(BIN) -out bench/results.json

lint:
	$(NEED_GO)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/autobox

clean:
	rm -rf bin
