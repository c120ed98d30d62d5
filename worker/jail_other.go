//go:build cgo && !linux

package worker

// enterJail is a no-op here: on macOS the supervisor starts the worker under
// sandbox-exec with a deny-by-default profile.
func enterJail(stage string) error { return nil }
