//go:build linux && !cgo

package jail

import "errors"

// cloneProbe: without cgo no JS worker is started (worker_nocgo.go), and
// nothing is probed.
func cloneProbe(flags int) error { return errors.New("probing namespaces needs cgo") }
