//go:build linux && !cgo

package restrict

// reportRefusals: without cgo there is no SIGSYS handler; the worker's filter
// then refuses with errnos, unreported.
func reportRefusals() bool { return false }
