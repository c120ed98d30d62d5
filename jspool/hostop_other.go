//go:build !linux

package jspool

// asCaller is a no-op where capabilities are not per thread: the bridge's file
// access is the server's.
func asCaller() error { return nil }
