//go:build !linux && !darwin

package cli

import "runtime"

// isTerminal is false where the terminal ioctls are not wired up: the commands then
// behave as under cron (no progress bar).
func isTerminal(f any) bool { return false }

// signalNumber knows no signal names here.
func signalNumber(name string) int { return 0 }

// osDetail names the platform, for doctor.
func osDetail() string { return runtime.GOOS + "/" + runtime.GOARCH }
