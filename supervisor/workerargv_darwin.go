package supervisor

import (
	"log/slog"

	"github.com/autobox-dev/autobox/seatbelt"
)

// workerLaunch runs the JS worker under a deny-by-default seatbelt profile.
func workerLaunch(exe string, log *slog.Logger) (*workerJail, error) {
	if err := seatbelt.Available(); err != nil {
		log.Warn("sandbox-exec is missing: JS workers run WITHOUT a seatbelt profile", "err", err)
		return unjailedWorkers(exe), nil
	}
	profile, params := seatbelt.WorkerProfile(exe)
	return &workerJail{argv: seatbelt.Args(profile, params, []string{exe, "worker", "js", "--jailed"}), isolation: "seatbelt"}, nil
}
