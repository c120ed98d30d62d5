//go:build !linux

package restrict

// onMainThread cannot tell here; nothing restricts threads on this platform.
func onMainThread() bool { return true }
