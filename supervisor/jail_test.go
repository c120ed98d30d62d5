package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/testbin"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// testBin is the autobox binary built by TestMain: workers are the real binary.
var testBin string

// testBinEnv names, for a re-run of this test binary, the autobox binary to use.
const testBinEnv = "AUTOBOX_SUPERVISOR_TEST_BIN"

func TestMain(m *testing.M) {
	testbin.Main(m, testBinEnv, "../cmd/autobox", &testBin, func(dir string) {
		os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config")) // never the user's own ceiling file
	})
}

func newTestServer(t *testing.T, jailed bool) *Server {
	t.Helper()
	s, err := New(Options{Exe: testBin, PoolSize: 1, StateDir: t.TempDir(), noWorkerJail: !jailed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestExecTimeoutWithWedgedLauncher: a command killed at its time limit is reported
// as killed for the timeout even when its launcher cannot do the killing (stopped
// here, so the supervisor has to finish the job after the launcher's grace). The
// positive control is the same call with the launcher left alone.
func TestExecTimeoutWithWedgedLauncher(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux jail")
	}
	if err := jail.Probe().Check(&policy.Sandbox{}); err != nil {
		t.Skipf("host cannot sandbox commands: %v", err)
	}
	s := newTestServer(t, false)
	timeout := 400
	// Its own marker: other tests, and other runs of the suite beside this
	// one, run sleep 30 too.
	secs := fmt.Sprintf("30.%09d", rand.Int64N(1e9))
	run := func(wedge bool) *ExecOutput {
		t.Helper()
		if wedge {
			go func() {
				// Stop the call's launcher once it is running the command.
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					s.mu.Lock()
					var pids []int
					for tr := range s.trees {
						pids = append(pids, tr.Pid())
					}
					s.mu.Unlock()
					if len(pids) > 0 {
						for _, pid := range pids {
							_ = syscall.Kill(pid, syscall.SIGSTOP)
						}
						return
					}
				}
			}()
		}
		out, err := s.ExecCommand(context.Background(), &ExecInput{Command: []string{"sleep", secs}, TimeoutMs: &timeout})
		if err != nil {
			t.Fatalf("wedge=%v: %v", wedge, err)
		}
		return out
	}
	for _, wedge := range []bool{false, true} {
		out := run(wedge)
		if !out.Killed || !strings.Contains(out.Stderr, "killed: timeout after 400ms") {
			t.Errorf("wedge=%v: want killed for the timeout, got %+v", wedge, out)
		}
	}
	if pids := sleepers(secs); len(pids) > 0 {
		t.Errorf("sleep %s outlived its calls: %v", secs, pids)
	}
}

// sleepers lists the pids of `sleep SECS` processes.
func sleepers(secs string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, err := os.ReadFile(f); err == nil && string(b) == "sleep\x00"+secs+"\x00" {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}
