//go:build linux && !cgo

package jail

import "errors"

// reportRefusals: without cgo there is no SIGSYS handler; the worker's filter
// then refuses with errnos, unreported.
func reportRefusals() bool { return false }

// cloneProbe: without cgo no JS worker is started (worker_nocgo.go), and
// nothing is probed.
func cloneProbe(flags int) error { return errors.New("probing namespaces needs cgo") }
