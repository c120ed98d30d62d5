package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/pace"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// testBin is the autobox binary built by TestMain: workers are the real binary.
var testBin string

// testBinEnv names, for a re-run of this test binary, the autobox binary to use.
const testBinEnv = "AUTOBOX_SUPERVISOR_TEST_BIN"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "autobox-supervisor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config")) // never the user's own ceiling file
	testBin = filepath.Join(dir, "autobox")
	if b := os.Getenv(testBinEnv); b != "" {
		testBin = b // a test that re-runs this binary passes its own
	} else {
		build := exec.Command("go", "build", "-o", testBin, "../cmd/autobox")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building autobox:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
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

// workerPids waits for the pool's warm worker and returns the pids of live workers.
func workerPids(t *testing.T, s *Server) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.pool.mu.Lock()
		var pids []int
		for w := range s.pool.live {
			pids = append(pids, w.proc.Pid)
		}
		s.pool.mu.Unlock()
		if len(pids) > 0 && len(s.pool.ready) > 0 {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no warm JS worker within 10s")
	return nil
}

// TestWorkerEveryThreadRestricted reads the status of every thread of a warm worker
// (V8 has started its own threads by then): each has no_new_privs, no capability and
// both seccomp filters, the sandbox's, loaded right before the worker's exec, and the
// worker's allow-list, loaded with TSYNC. Where the host gives workers namespaces, each
// is pid 1 of a pid namespace of its own, in a user namespace of its own.
func TestWorkerEveryThreadRestricted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux jail")
	}
	if st := jail.Probe(); st.LandlockABI < jail.MinLandlockABI {
		t.Skipf("host cannot jail workers: %s", st)
	}
	s := newTestServer(t, true)
	for _, pid := range workerPids(t, s) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		if len(tasks) < 2 {
			t.Fatalf("worker %d has %d threads; expected V8's threads too", pid, len(tasks))
		}
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // thread exited
			}
			st := string(b)
			for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "Seccomp_filters:\t2", "CapEff:\t0000000000000000"} {
				if !strings.Contains(st, want) {
					t.Errorf("%s lacks %q", f, want)
				}
			}
		}
	}
	if s.pool.jail.isolation != jail.ModeLandlock {
		self, _ := os.Readlink("/proc/self/ns/user")
		for _, pid := range workerPids(t, s) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if !strings.Contains(string(b), fmt.Sprintf("NSpid:\t%d\t1\n", pid)) {
				t.Errorf("worker %d is not pid 1 of a pid namespace of its own:\n%s", pid, b)
			}
			if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid)); ns == self || ns == "" {
				t.Errorf("worker %d is in the server's user namespace %s", pid, self)
			}
		}
	}
	// The server keeps no thread in the workers' domain (each was forked from a
	// thread of its own that exited), where a worker could signal it.
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && !strings.Contains(string(b), "Seccomp:\t0") {
			t.Errorf("a thread of the server is restricted: %s\n%s", f, b)
		}
	}
	// The positive control: an unjailed worker's threads carry no filter.
	u := newTestServer(t, false)
	for _, pid := range workerPids(t, u) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if !strings.Contains(string(b), "Seccomp:\t0") {
			t.Errorf("unjailed worker %d has a seccomp filter", pid)
		}
	}
}

// TestWorkerCannotOpenFiles asks a jailed worker to open files from two threads: all
// fail; an unjailed worker opens the same files.
func TestWorkerCannotOpenFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux jail")
	}
	if st := jail.Probe(); st.LandlockABI < jail.MinLandlockABI {
		t.Skipf("host cannot jail workers: %s", st)
	}
	file := filepath.Join(t.TempDir(), "readable.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{file, "/etc/hostname", "/proc/self/status", "/dev/null"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	lines, err := newTestServer(t, true).ProbeWorkerJail(ctx, paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2*len(paths) {
		t.Fatalf("probe lines: %q", lines)
	}
	for _, l := range lines {
		if strings.HasSuffix(l, ": opened") {
			t.Errorf("jailed worker: %s", l)
		}
	}
	lines, err = newTestServer(t, false).ProbeWorkerJail(ctx, paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, ": opened") {
			t.Errorf("unjailed worker (positive control): %s", l)
		}
	}
}

// TestPreludeCache: the first worker returns a code cache of the prelude and later
// workers start from it (a worker that rejected it would return its own).
func TestPreludeCache(t *testing.T) {
	s := newTestServer(t, true)
	for i := 0; i < 4; i++ {
		out, err := s.ExecuteJS(context.Background(), &JSInput{Code: fmt.Sprintf("%d * 2", i)})
		if err != nil || !out.OK || fmt.Sprintf("%s", out.Result) != fmt.Sprint(i*2) {
			t.Fatalf("call %d: %+v %v", i, out, err)
		}
	}
	if c := s.pool.preludeCache.Load(); c == nil || len(*c) == 0 {
		t.Fatal("no prelude cache after four workers")
	}
	if n := s.pool.cacheGiven.Load(); n < 2 {
		t.Errorf("%d workers were given the prelude cache, want at least 2", n)
	}
	if n := s.pool.cacheMisses.Load(); n != 0 {
		t.Errorf("%d workers rejected the prelude cache", n)
	}
}

// TestPreludeCacheRejected: a cache V8 cannot use (here: garbage) is rejected by the
// worker, which compiles the prelude itself; calls still succeed and the pool counts
// the miss.
func TestPreludeCacheRejected(t *testing.T) {
	s := newTestServer(t, true)
	bogus := []byte("not a V8 code cache, just bytes of the wrong shape entirely")
	s.pool.preludeCache.Store(&bogus)
	for i := 0; i < 3; i++ {
		out, err := s.ExecuteJS(context.Background(), &JSInput{Code: fmt.Sprintf("%d + 1", i)})
		if err != nil || !out.OK || fmt.Sprintf("%s", out.Result) != fmt.Sprint(i+1) {
			t.Fatalf("call %d: %+v %v", i, out, err)
		}
	}
	if s.pool.cacheGiven.Load() == 0 {
		t.Fatal("no worker was given the bogus cache")
	}
	if s.pool.cacheMisses.Load() == 0 {
		t.Error("workers given a bogus cache reported no miss")
	}
	// The cache a rejecting worker made replaced the bogus one.
	if c := s.pool.preludeCache.Load(); c == nil || string(*c) == string(bogus) {
		t.Error("the bogus cache was kept")
	}
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
		out, err := s.ExecCommand(context.Background(), &ExecInput{Command: []string{"sleep", "30"}, TimeoutMs: &timeout})
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
	if pids := sleepers(); len(pids) > 0 {
		t.Errorf("sleep 30 outlived its calls: %v", pids)
	}
}

// sleepers lists the pids of `sleep 30` processes.
func sleepers() []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, err := os.ReadFile(f); err == nil && string(b) == "sleep\x0030\x00" {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

// TestPoolRefillsAfterCalls: after calls spaced out (whose replacement workers
// start a little after the call) and calls back to back (at once), the pool is
// full again.
func TestPoolRefillsAfterCalls(t *testing.T) {
	s, err := New(Options{Exe: testBin, PoolSize: 2, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	full := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); len(s.pool.ready) < s.pool.size; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d workers ready after 20 s", what, len(s.pool.ready), s.pool.size)
			}
		}
	}
	call := func() {
		t.Helper()
		if out, err := s.ExecuteJS(context.Background(), &JSInput{Code: "1"}); err != nil || !out.OK {
			t.Fatalf("%+v %v", out, err)
		}
	}
	full("new server")
	for i := 0; i < 3; i++ {
		time.Sleep(pace.BurstGap)
		call()
		full("after a spaced call")
	}
	for i := 0; i < 6; i++ {
		call()
	}
	full("after calls back to back")
}

// TestBatchWorkersTimerSlack: workers of a Throughput server (command lines, batch
// runs) have the coarse timer slack, set before the Go runtime started any thread
// (threads inherit it; Linux shows it for the main thread only); a server's
// workers keep the default.
func TestBatchWorkersTimerSlack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading another process's timer slack needs CAP_SYS_NICE (root)")
	}
	slack := func(throughput bool) string {
		s, err := New(Options{Exe: testBin, PoolSize: 1, StateDir: t.TempDir(), Throughput: throughput})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", workerPids(t, s)[0]))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := slack(true); got != "2000000" {
		t.Errorf("batch worker's timer slack %s ns, want 2000000", got)
	}
	if got := slack(false); got == "2000000" {
		t.Errorf("server worker's timer slack %s ns, want the default", got)
	}
}
