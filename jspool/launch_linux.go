package jspool

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"github.com/autobox-dev/autobox/jail"
)

// workerLaunch says how JS workers start on Linux (see jail.WorkerSpawner): each from
// a thread of its own that confines itself first (Landlock allowing only the autobox
// binary and the libraries it maps, no_new_privs, no capabilities), made in a user and
// pid namespace of its own where the host allows, with the sandbox's seccomp filter,
// so that each worker is born confined, on every thread it will ever have. The worker
// then loads its seccomp allow-list on all its threads before it reads anything.
//
// On a host without a usable Landlock the workers run unjailed, said loudly.
func workerLaunch(exe string, log *slog.Logger) (*workerJail, error) {
	st := jail.Probe()
	if st.LandlockABI < jail.MinLandlockABI || !st.Seccomp {
		log.Warn("this host cannot jail JS workers: they run WITHOUT the filesystem/network jail (V8 isolation only)", "host", st.String())
		wj := unjailedWorkers(exe)
		wj.why = "this host cannot jail them: " + st.String()
		return wj, nil
	}
	sp, err := jail.NewWorkerSpawner(exe)
	if err != nil {
		return nil, fmt.Errorf("preparing the JS worker jail: %w", err)
	}
	why := sp.NoNamespacesWhy()
	if why != "" {
		log.Warn("JS workers run without a user and pid namespace of their own", "why", why)
		why = "no user and pid namespace of their own: " + why
	}
	return &workerJail{
		argv:    []string{exe, "worker", "js", "--jailed"},
		prepare: sp.Restrict,
		start: func(argv, env []string, files []*os.File) (*os.Process, error) {
			fds := make([]uintptr, len(files))
			for i, f := range files {
				fds[i] = f.Fd()
			}
			pid, err := sp.Start(argv[0], argv, env, fds)
			runtime.KeepAlive(files)
			if err != nil {
				return nil, err
			}
			return os.FindProcess(pid)
		},
		isolation: sp.Isolation(),
		why:       why,
		refusals:  jail.WorkerRefusals,
	}, nil
}
