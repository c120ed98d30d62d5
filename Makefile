# autobox: one Go binary (cgo, for V8). Every target works on a machine with only Go,
# gcc and git; `make test` also wants root and xfsprogs for the reflink tests (.ci/run
# installs it), and skips those tests with the reason otherwise.
GO      ?= go
BIN     := bin/autobox
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/autobox-dev/autobox/supervisor.Version=$(VERSION)

.PHONY: build test bench lint run clean

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/autobox

run: build
	./$(BIN)

# The end-to-end tests in ./test build the binary themselves (into a temp dir).
test:
	$(GO) test -count=1 -timeout 40m ./...

bench: build
	$(GO) run ./test/bench -bin $(BIN) -out bench/results.json

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/autobox

clean:
	rm -rf bin
