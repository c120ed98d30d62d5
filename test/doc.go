// Package test holds autobox's end-to-end tests: they build the real binary and drive
// it through the MCP Go SDK's client over stdio, with real Landlock, seccomp and
// filesystems. Benchmarks live in test/bench (run by `make bench`), not here.
package test
