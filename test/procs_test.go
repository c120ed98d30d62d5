// Finding a test's processes on the host by their command line. A test that
// looks for one gives it an argument no other run on this machine uses
// (uniqueSeconds), so a run beside it is never mistaken for it.

package test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitProcs waits, at most 30s, until a process whose command line holds s
// runs (want) or none does.
func waitProcs(t *testing.T, s string, want bool) {
	t.Helper()
	for i := 0; (len(findProcs(s)) > 0) != want; i++ {
		if i == 3000 {
			t.Fatalf("no process with %q running: %v, after 30s", s, !want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// uniqueSeconds is a sleep's argument of whole seconds and a fraction no other
// run of the suite on this machine uses: what findProcs looks for is then this
// test's process alone, not one of a run beside it.
func uniqueSeconds(whole int) string {
	return fmt.Sprintf("%d.%09d", whole, rand.Int64N(1e9))
}

// findProcs lists live processes whose command line contains s.
func findProcs(s string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			var pid int
			fmt.Sscan(filepath.Base(d), &pid)
			if alive(pid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func procsOf(exe string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		pid, _ := strconv.Atoi(filepath.Base(d))
		if err != nil || !bytes.HasPrefix(b, []byte(exe+"\x00")) || !alive(pid) {
			continue
		}
		out = append(out, filepath.Base(d)+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// workerBusy waits (up to a minute) for a JS worker of the server pid to spend
// CPU time as a busy loop does, and gives its pid.
func workerBusy(t *testing.T, server int) int {
	t.Helper()
	first := map[int]int64{}
	for i := 0; i < 600; i++ {
		for _, pid := range descendants(server) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil || !strings.Contains(string(b), "worker\x00js\x00") {
				continue
			}
			cpu := procCPUTicks(pid)
			if c0, ok := first[pid]; !ok {
				first[pid] = cpu
			} else if cpu-c0 >= 20 { // 0.2 s of CPU since first seen: the loop
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no JS worker ran the busy loop within a minute")
	return 0
}

// procCPUTicks is a process's user and system time in clock ticks (0 if gone).
func procCPUTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
