package supervisor

import (
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// The resource limits of a command tree beyond time and memory (issue 14), for
// exec_command and for anything else that runs a command the same way (sessions):
// the parameters, their validation and their names in texts; package cmdrun holds
// a tree to them.

var (
	execMaxProcesses = intParam{"maxProcesses", policy.ExecDefaultMaxProcesses, policy.ExecMinMaxProcesses, policy.ExecMaxMaxProcesses}
	execMaxWriteMb   = intParam{"maxWriteMb", policy.ExecDefaultMaxWriteMb, 0, policy.ExecMaxMaxWriteMb}
	execCPUMs        = intParam{"cpuMs", 0, 0, policy.ExecMaxCPUMs}
	execMaxOpenFiles = intParam{"maxOpenFiles", policy.ExecDefaultMaxOpenFiles, policy.ExecMinMaxOpenFiles, policy.ExecMaxMaxOpenFiles}
)

// limitRules are the input schema's rules of the limit parameters.
func limitRules(rules map[string][]rule) map[string][]rule {
	for _, p := range []intParam{execMaxProcesses, execMaxWriteMb, execCPUMs, execMaxOpenFiles} {
		rules[p.name] = []rule{p.rule()}
	}
	return rules
}

// limitArgs are the limit parameters of a call as given (nil: not given).
type limitArgs struct {
	maxProcesses, maxWriteMb, cpuMs, maxOpenFiles *int
}

// treeLimits are a call's limits, validated: memory (which runners take apart) and
// the rest (policy.Limits, which travel with the command).
type treeLimits struct {
	memoryMb int
	policy.Limits
}

// limits validates the arguments into limits, with the parameters' defaults.
func (a limitArgs) limits(memoryMb int) (treeLimits, error) {
	l := treeLimits{memoryMb: memoryMb}
	procs, err := bounded(execMaxProcesses, a.maxProcesses)
	if err != nil {
		return l, err
	}
	writeMb, err := bounded(execMaxWriteMb, a.maxWriteMb)
	if err != nil {
		return l, err
	}
	files, err := bounded(execMaxOpenFiles, a.maxOpenFiles)
	if err != nil {
		return l, err
	}
	cpuMs, err := bounded(execCPUMs, a.cpuMs)
	if err != nil {
		return l, err
	}
	if hard, ok := cmdrun.HardOpenFiles(); ok && uint64(files) > hard {
		return l, fmt.Errorf("%w: maxOpenFiles %d is above this host's hard limit of %d open files (ulimit -Hn), which autobox cannot raise", policy.ErrInvalid, files, hard)
	}
	l.Limits = policy.Limits{Processes: procs, WriteBytes: int64(writeMb) << 20, CPU: time.Duration(cpuMs) * time.Millisecond, OpenFiles: files}
	return l, nil
}

// command returns the limits that travel with a command (nil under noLimits).
func (l treeLimits) command() *policy.Limits {
	if noLimits {
		return nil
	}
	p := l.Limits
	return &p
}

// runLimits are what cmdrun.Enforce holds the call's tree to: its memory, the
// limits that travel with its command, and timeoutMs on its clock.
func (c *execCall) runLimits() cmdrun.Limits {
	return cmdrun.Limits{Memory: int64(c.memoryMb) << 20, Command: c.limits.command(), Names: paramNames, Clock: &c.clock, Timeout: c.timeout}
}

// paramNames are the limits' names in the tools' texts.
var paramNames = watchdog.Names{Memory: "memoryMb", Processes: "maxProcesses", Written: "maxWriteMb", CPU: "cpuMs"}

func mb(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// Usage is what a command tree used, as results report it.
type Usage struct {
	CPUMs     float64 `json:"cpuMs" jsonschema:"CPU time of the whole process tree in ms"`
	MaxRSSMb  float64 `json:"maxRssMb" jsonschema:"most memory the tree held at once, in MB: its processes' own (anonymous and shared), sampled, or the peak of its largest process"`
	Processes int     `json:"processes" jsonschema:"most processes and threads alive at once in the tree"`
	WrittenMb float64 `json:"writtenMb" jsonschema:"MB the tree wrote to files (rw mounts, workspaces, scratch)"`
	// ForksRefused: see refusals.go.
	ForksRefused int `json:"forksRefused,omitempty" jsonschema:"forks the kernel refused at maxProcesses (EAGAIN), where it counts them; a note at the end of stderr says so"`
}

func usageOf(u policy.Usage) Usage {
	round := func(v float64) float64 { return math.Round(v*10) / 10 }
	return Usage{
		CPUMs:     round(float64(u.CPU.Microseconds()) / 1000),
		MaxRSSMb:  round(float64(u.MaxRSS) / (1 << 20)),
		Processes: u.Processes,
		WrittenMb: round(float64(u.Written) / (1 << 20)),
	}
}

// scratchListing names the biggest files a command left in its scratch dir, which
// is removed with the call: after a disk-limit kill they are the evidence. At most
// scratchListed files, from a walk of at most scratchWalk entries. Where the
// command had a private root (isolation), its /tmp was the scratch dir's .tmp:
// the files there are named as the command saw them, /tmp/NAME.
func scratchListing(dir, isolation string) string {
	tmpShown := isolation == jail.ModeRoot || isolation == jail.ModeUserNS
	type file struct {
		name string
		size int64
	}
	var files []file
	seen := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if seen++; err != nil || seen > scratchWalk {
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				rel, _ := filepath.Rel(dir, p)
				if in, ok := strings.CutPrefix(rel, jail.TmpDirName+"/"); ok && tmpShown {
					rel = "/tmp/" + in
				}
				files = append(files, file{rel, fi.Size()})
			}
		}
		return nil
	})
	if len(files) == 0 {
		return ""
	}
	slices.SortFunc(files, func(a, b file) int { return int(b.size - a.size) })
	var parts []string
	for _, f := range files[:min(len(files), scratchListed)] {
		parts = append(parts, fmt.Sprintf("%s (%s MB)", f.name, mb(f.size)))
	}
	more := ""
	if len(files) > scratchListed {
		more = fmt.Sprintf(" and %d more", len(files)-scratchListed)
	}
	return "files in the scratch dir ($HOME, $TMPDIR), removed with the call: " + strings.Join(parts, ", ") + more + "\n"
}

const (
	scratchListed = 10
	scratchWalk   = 10000
)
