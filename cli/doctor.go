package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/autobox-dev/autobox/supervisor"
)

const doctorHelp = `Usage: autobox doctor [--json]
       autobox doctor --docker-seccomp-profile > autobox-seccomp.json

Print what this host enforces, one line per mechanism: ok, missing (with what that
means for calls) or info. It probes the kernel (Landlock ABI and the rules it
allows, seccomp, no_new_privs, user namespaces) or sandbox-exec on macOS, the RSS
watchdog, the state and storage directories and whether storage can clone files
(copy-on-write), then runs one execute_js and one exec_command call for real (a
command that lives past the watchdog's first polls, as real commands do). In a
container it names the container and the docker run flags that give autobox more.

--docker-seccomp-profile prints a seccomp profile for docker run --security-opt
seccomp=FILE: a container's default list of allowed system calls plus the
namespace and mount calls autobox's launchers make (see docs/containers.md).

Exit status: 0 when exec_command runs sandboxed here, 1 when it would be refused,
2 usage error.

Examples:
  autobox doctor
  autobox doctor --json | jq '.checks[] | select(.status == "missing")'
`

// Check statuses.
const (
	statusOK      = "ok"
	statusMissing = "missing"
	statusInfo    = "info"
)

// Check is one line of the doctor's report.
type Check struct {
	Name        string `json:"name"`
	Status      string `json:"status"` // ok, missing or info
	Detail      string `json:"detail"`
	Consequence string `json:"consequence,omitempty"` // what a missing mechanism means for calls
}

// DoctorReport is what `autobox doctor --json` prints.
type DoctorReport struct {
	Checks []Check `json:"checks"`
	// ExecCommand is true when exec_command runs sandboxed on this host.
	ExecCommand bool `json:"execCommand"`
}

func (r *DoctorReport) add(name, status, detail, consequence string) {
	r.Checks = append(r.Checks, Check{Name: name, Status: status, Detail: detail, Consequence: consequence})
}

func (e *env) doctor(args []string) int {
	fs := newFlags("doctor")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	profile := fs.Bool("docker-seccomp-profile", false, "print a seccomp profile for docker run --security-opt seccomp=FILE and exit")
	pos, done, status := e.parse(fs, "doctor", doctorHelp, args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return e.usage("doctor", "doctor takes no arguments")
	}
	if *profile {
		if *jsonOut {
			return e.usage("doctor", "--docker-seccomp-profile prints JSON already; give it without --json")
		}
		if err := writeDockerProfile(e.stdout); err != nil {
			return e.fail("doctor", err)
		}
		return ExitOK
	}
	r := &DoctorReport{}
	r.add("os", statusOK, osDetail(), "")
	platformChecks(r)
	r.rssCheck()
	s, err := e.server(-1) // its one execute_js starts its own worker
	if err != nil {
		r.add("autobox", statusMissing, err.Error(), "no call can run")
	} else {
		defer s.Close()
		r.dirChecks(s.StateDir(), s.DefaultStorage())
		r.liveChecks(e, s)
	}
	if *jsonOut {
		if err := writeJSON(e.stdout, r); err != nil {
			return e.fail("doctor", err)
		}
	} else if err := printReport(e.stdout, r); err != nil {
		return e.fail("doctor", err)
	}
	if !r.ExecCommand {
		return ExitFailed
	}
	return ExitOK
}

func printReport(w io.Writer, r *DoctorReport) error {
	ew := &errWriter{w: w}
	for _, c := range r.Checks {
		line := c.Detail
		if c.Consequence != "" {
			line += " → " + c.Consequence
		}
		// Fixed columns, the same on every host, so a script can grep "^missing".
		fmt.Fprintf(ew, "%-7s  %-16s  %s\n", c.Status, c.Name, line)
	}
	if r.ExecCommand {
		fmt.Fprintln(ew, "exec_command: runs sandboxed on this host")
	} else {
		fmt.Fprintln(ew, "exec_command: REFUSED on this host (see the missing lines above)")
	}
	return ew.err
}

// rssCheck: the watchdog that enforces memoryMb for exec_command measures resident
// memory through gopsutil and walks the process tree.
func (r *DoctorReport) rssCheck() {
	mi, err := (&process.Process{Pid: int32(os.Getpid())}).MemoryInfo()
	if err == nil {
		err = treeWalkable()
	}
	if err != nil {
		r.add("rss watchdog", statusMissing, err.Error(), "exec_command's memoryMb is not enforced")
		return
	}
	r.add("rss watchdog", statusOK, fmt.Sprintf("can measure process-tree memory (this process: %d MB)", mi.RSS>>20), "")
}

// dirChecks reports the state directory (records, lock) and the default storage
// directory, and whether storage can clone files.
func (r *DoctorReport) dirChecks(state, storage string) {
	if err := writable(state); err != nil {
		r.add("state dir", statusMissing, err.Error(), "workspaces cannot be used")
	} else {
		r.add("state dir", statusOK, state+" (writable)", "")
	}
	dir, note := storage, "exists"
	if _, err := os.Stat(storage); err != nil {
		note = "created by the first ws create"
		dir = existingAncestor(storage)
	}
	if err := writable(dir); err != nil {
		r.add("storage", statusMissing, fmt.Sprintf("%s: %v", storage, err), "ws create needs --storage")
		return
	}
	r.add("storage", statusOK, fmt.Sprintf("%s (%s, writable)", storage, note), "")
	fsName, ok, err := cloneProbe(dir)
	switch {
	case err != nil:
		r.add("reflink", statusMissing, fmt.Sprintf("could not test cloning in %s: %v", dir, err), "create copies files (copyMode auto, the default) where it cannot clone them")
	case ok:
		r.add("reflink", statusOK, fmt.Sprintf("yes (%s): create clones copy-on-write", fsName), "")
	default:
		r.add("reflink", statusMissing, fmt.Sprintf("no (%s)", fsName), "create copies files (copyMode auto, the default); copyMode clone is refused here")
	}
}

// liveChecks runs one call of each kind through the same code path as the tools.
func (r *DoctorReport) liveChecks(e *env, s *supervisor.Server) {
	js, err := s.ExecuteJS(e.ctx, &supervisor.JSInput{Code: "1 + 1"})
	switch {
	case err != nil:
		r.add("execute_js", statusMissing, err.Error(), "execute_js fails")
	case !js.OK || !resultIs(js.Result, 2):
		msg := "unexpected result"
		if js.Error != nil {
			msg = *js.Error
		}
		r.add("execute_js", statusMissing, msg, "execute_js fails")
	default:
		r.add("execute_js", statusOK, "a call ran in a fresh worker", "")
	}
	jsWorkerChecks(r, s.JSWorkers())
	// A command that outlives the watchdog's first polls, as real ones do: one
	// that ends before the first poll is never measured, and would pass where
	// the watchdog kills every real command.
	ex, err := s.ExecCommand(e.ctx, &supervisor.ExecInput{Command: quickCommand})
	switch {
	case errors.Is(err, supervisor.ErrSandboxUnavailable):
		r.add("exec_command", statusMissing, err.Error(), "exec_command is refused")
	case err != nil:
		r.add("exec_command", statusMissing, err.Error(), "exec_command fails")
	case ex.ExitCode == nil || *ex.ExitCode != 0 || ex.Killed || ex.Stdout != "ok\n":
		r.add("exec_command", statusMissing, fmt.Sprintf("`%s` did not succeed: %q", quickText, ex.Stderr), "exec_command fails")
	default:
		r.ExecCommand = true
		r.add("exec_command", statusOK, fmt.Sprintf("`%s` ran under the sandbox (isolation %s), measured by the watchdog as it ran", quickText, ex.Isolation), "")
		r.afterExec(ex.Isolation)
	}
}

// quickCommand is doctor's exec_command call: it lives 0.2 s, twenty of the
// watchdog's polls.
var quickCommand = []string{"sh", "-c", "sleep 0.2; echo ok"}

const quickText = "sh -c 'sleep 0.2; echo ok'"

// jsWorkerChecks names the V8 that runs execute_js and the jail around it: a V8 bug
// turns a script into native code in its worker, which then holds what the jail
// leaves it.
func jsWorkerChecks(r *DoctorReport, w supervisor.JSWorkers) {
	v8 := "V8 " + w.V8
	if w.V8 == "" {
		v8 = "V8 (version unknown: no worker started)"
	}
	if w.V8go != "" {
		v8 += ", through v8go " + w.V8go
	}
	r.add("v8", statusInfo, v8, "assume its bugs since its release are known: a script that exploits one runs native code in its worker, inside the jail below (SECURITY.md)")
	switch w.Isolation {
	case "unjailed":
		r.add("js worker jail", statusMissing, "none: "+w.Weaker, "code that breaks out of V8 runs as this user, with their files and network")
	case "seatbelt":
		r.add("js worker jail", statusOK, "a deny-by-default seatbelt profile per worker", "no files, no network, no processes")
	case "landlock-only":
		r.add("js worker jail", statusInfo, "Landlock (no files), a seccomp allow-list (no open, exec, socket or fork; threads only; signals to itself only); "+w.Weaker,
			"code that breaks out of V8 holds its pipes to the server and its own memory and CPU; it shares the host's pid namespace, where the filter keeps it from signalling or tracing anyone")
	default:
		r.add("js worker jail", statusOK, "Landlock (no files), a seccomp allow-list (no open, exec, socket or fork; threads only; signals to itself only), a user and pid namespace of its own ("+w.Isolation+")",
			"code that breaks out of V8 holds its pipes to the server and its own memory and CPU, and can name no other process")
	}
}

// resultIs reports whether an execute_js result is the JSON number n.
func resultIs(v any, n float64) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var got float64
	return json.Unmarshal(b, &got) == nil && got == n
}

// writable checks that files can be created in dir.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".autobox-doctor-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func existingAncestor(p string) string {
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}

// probeFiles makes a small source file and a path for its clone in dir; cleanup
// removes both.
func probeFiles(dir string) (src *os.File, dst string, cleanup func(), err error) {
	src, err = os.CreateTemp(dir, ".autobox-doctor-*")
	if err != nil {
		return nil, "", nil, err
	}
	dst = src.Name() + ".clone"
	cleanup = func() {
		src.Close()
		os.Remove(src.Name())
		os.Remove(dst)
	}
	if _, err := src.Write(make([]byte, 64<<10)); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	if err := src.Sync(); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return src, dst, cleanup, nil
}
