package jspool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/pace"
	"github.com/autobox-dev/autobox/jail"
)

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
	s := newTestPool(t, Options{Size: 1})
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
	if s.Isolation() != jail.ModeLandlock {
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
	u := newTestPool(t, Options{Size: 1, Unjailed: true})
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

	lines, err := newTestPool(t, Options{Size: 1}).Probe(ctx, paths)
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
	lines, err = newTestPool(t, Options{Size: 1, Unjailed: true}).Probe(ctx, paths)
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
	s := newTestPool(t, Options{Size: 1})
	for i := 0; i < 4; i++ {
		if out := runCode(t, s, fmt.Sprintf("%d * 2", i)); !out.OK || string(out.Result) != fmt.Sprint(i*2) {
			t.Fatalf("call %d: %+v", i, out)
		}
	}
	if c := s.preludeCache.Load(); c == nil || len(*c) == 0 {
		t.Fatal("no prelude cache after four workers")
	}
	if n := s.cacheGiven.Load(); n < 2 {
		t.Errorf("%d workers were given the prelude cache, want at least 2", n)
	}
	if n := s.cacheMisses.Load(); n != 0 {
		t.Errorf("%d workers rejected the prelude cache", n)
	}
}

// TestPreludeCacheRejected: a cache V8 cannot use (here: garbage) is rejected by the
// worker, which compiles the prelude itself; calls still succeed and the pool counts
// the miss.
func TestPreludeCacheRejected(t *testing.T) {
	s := newTestPool(t, Options{Size: 1})
	bogus := []byte("not a V8 code cache, just bytes of the wrong shape entirely")
	s.preludeCache.Store(&bogus)
	for i := 0; i < 3; i++ {
		if out := runCode(t, s, fmt.Sprintf("%d + 1", i)); !out.OK || string(out.Result) != fmt.Sprint(i+1) {
			t.Fatalf("call %d: %+v", i, out)
		}
	}
	if s.cacheGiven.Load() == 0 {
		t.Fatal("no worker was given the bogus cache")
	}
	if s.cacheMisses.Load() == 0 {
		t.Error("workers given a bogus cache reported no miss")
	}
	// The cache a rejecting worker made replaced the bogus one.
	if c := s.preludeCache.Load(); c == nil || string(*c) == string(bogus) {
		t.Error("the bogus cache was kept")
	}
}

// TestPoolRefillsAfterCalls: after calls spaced out (whose replacement workers
// start a little after the call) and calls back to back (at once), the pool is
// full again.
func TestPoolRefillsAfterCalls(t *testing.T) {
	s := newTestPool(t, Options{Size: 2})
	full := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); len(s.ready) < s.size; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d workers ready after 20 s", what, len(s.ready), s.size)
			}
		}
	}
	call := func() {
		t.Helper()
		if out := runCode(t, s, "1"); !out.OK {
			t.Fatalf("%+v", out)
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
		s := newTestPool(t, Options{Size: 1, Throughput: throughput})
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

// TestWorkerFDs: a worker holds its pipes and /dev/null, and nothing the server
// holds without close-on-exec.
func TestWorkerFDs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux jail")
	}
	if st := jail.Probe(); st.LandlockABI < jail.MinLandlockABI {
		t.Skipf("host cannot jail workers: %s", st)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A copy without close-on-exec, past the numbers a worker's own descriptors
	// take.
	fd, _, e := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), syscall.F_DUPFD, 100)
	if e != 0 {
		t.Fatal(e)
	}
	defer syscall.Close(int(fd))
	leaked := fmt.Sprintf("pipe:[%d]", inode(t, r))
	for _, jailed := range []bool{true, false} {
		s := newTestPool(t, Options{Size: 1, Unjailed: !jailed})
		for _, pid := range workerPids(t, s) {
			entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			if err != nil {
				t.Fatal(err)
			}
			var fds []string
			for _, e := range entries {
				target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
				fds = append(fds, e.Name()+"->"+target)
			}
			has := strings.Contains(strings.Join(fds, " "), leaked)
			if jailed && has {
				t.Errorf("jailed worker %d holds the server's %s: %v", pid, leaked, fds)
			}
			if !jailed && !has {
				// The control: a plain fork and exec passes it on.
				t.Errorf("unjailed worker %d lacks %s, which a plain exec passes on: %v", pid, leaked, fds)
			}
		}
	}
}

func inode(t *testing.T, f *os.File) uint64 {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestHostTimeZone: the zone workers are given is the server's TZ when ICU would
// take it as a zone name, else /etc/localtime's, else UTC; never a path or a rule.
func TestHostTimeZone(t *testing.T) {
	for _, c := range []struct {
		tz   string
		zone bool
	}{
		{"Europe/Paris", true}, {"America/Argentina/Buenos_Aires", true}, {"UTC", true}, {"EST5EDT", true},
		{"Etc/GMT+5", false}, {"/etc/localtime", false}, {"../../etc/passwd", false}, {"CET-1CEST,M3.5.0,M10.5.0/3", false},
		{"JST-9", false}, {"", false}, {"Europe/Paris\n", false},
	} {
		if got := zoneName(c.tz); got != c.zone {
			t.Errorf("zoneName(%q) = %v, want %v", c.tz, got, c.zone)
		}
	}
	t.Setenv("TZ", ":Asia/Tokyo")
	if got := hostTimeZone(); got != "Asia/Tokyo" {
		t.Errorf("with TZ=:Asia/Tokyo: %q", got)
	}
	t.Setenv("TZ", "JST-9")
	want := "UTC"
	if l, err := os.Readlink("/etc/localtime"); err == nil {
		if _, z, ok := strings.Cut(l, "zoneinfo/"); ok && zoneName(z) {
			want = z
		}
	}
	if got := hostTimeZone(); got != want {
		t.Errorf("with TZ=JST-9: %q, want /etc/localtime's %q", got, want)
	}
}
