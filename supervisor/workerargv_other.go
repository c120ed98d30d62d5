//go:build !linux && !darwin

package supervisor

import "log/slog"

func workerLaunch(exe string, log *slog.Logger) (*workerJail, error) {
	log.Warn("no OS sandbox on this platform: JS workers run unjailed (V8 isolation only)")
	return unjailedWorkers(exe), nil
}
