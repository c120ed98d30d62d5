package test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The invariant every end-to-end test ends with (start's and cliHome.run's
// cleanup): nothing a call made outlives the autobox process that served it.
// A command's processes are found by the scratch dir in their environment
// (HOME and TMPDIR are autobox-scratch-<server pid>-…), whatever their
// ancestry: a process that left its session and was orphaned to init is found
// too. Cgroups are named autobox-p<server pid>-…; scratch dirs are checked by
// the callers.

// checkNothingLeft fails the test if, 20 seconds after the autobox process pid
// has ended, a process with its scratch dir in its environment is alive or a
// cgroup it made remains. Usually nothing is left at once; after a SIGKILL of
// the server its launchers clean up for themselves, which on a loaded machine
// took more than 5 s.
func checkNothingLeft(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := append(callProcesses(pid), callCgroups(pid)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind by the calls of autobox %d: %v", pid, left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callProcesses lists the live processes whose environment names a scratch dir
// of autobox process pid.
func callProcesses(pid int) []string {
	marker := []byte(fmt.Sprintf("autobox-scratch-%d-", pid))
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		p, _ := strconv.Atoi(filepath.Base(d))
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, marker) || !alive(p) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out = append(out, fmt.Sprintf("process %d (%s)", p, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// callCgroups lists the cgroups of autobox process pid that remain, below this
// test process's own cgroups (where the server's are made).
func callCgroups(pid int) []string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		base := filepath.Join("/sys/fs/cgroup", parts[2])
		if parts[1] != "" {
			base = filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(parts[1], "name="), parts[2])
		}
		left, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("autobox-p%d-*", pid)))
		for _, l := range left {
			out = append(out, "cgroup "+l)
		}
	}
	return out
}
