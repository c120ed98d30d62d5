//go:build !linux

package launcherbin

// Path returns exe: launchers are a Linux matter.
func Path(exe string) string { return exe }

// SetLog is a no-op here.
func SetLog(func(msg string)) {}

// Small reports false: there is no small launcher here.
func Small() (bool, string) { return false, "not Linux" }
