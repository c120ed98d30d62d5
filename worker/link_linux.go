//go:build cgo

// libstdc++ and libgcc are linked into the binary instead of loaded at start-up: the
// dynamic loader's relocation of libstdc++ was about a tenth of a JS worker's start
// (each execute_js call starts a fresh worker process).

package worker

// #cgo linux LDFLAGS: -static-libstdc++ -static-libgcc
import "C"
