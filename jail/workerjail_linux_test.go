package jail

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/restrict"
)

// Native code under exactly the JS worker's jail. The test binary is started
// the way the supervisor starts a worker (WorkerSpawner.Restrict on a thread
// of its own, then WorkerSpawner.Start), calls restrict.EnterWorker first as `autobox
// worker js --jailed` does, and then does what code that broke out of V8
// would try, with raw system calls: open a file, connect over TCP and to a
// unix socket, exec, fork, signal and ptrace another process, map a file
// executable, make a namespace. Each probe runs on the main thread, on a
// thread made before restrict.EnterWorker and on one made after. The positive control
// is the same binary and probes without the jail.

// workerJailProbes are the probes, with what each must answer in the jail and
// the system call the jail reports for it (unreported: "").
type workerJailProbe struct {
	probe, jailed, reported string
}

func TestWorkerJailNativeCode(t *testing.T) {
	requireJail(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "readable")
	writeFile(t, file, strings.Repeat("x", 4096))
	// The file the helper is given as its descriptor 3 for the mmap probes: a
	// memfd, which no noexec mount keeps from being mapped executable.
	code, err := unix.MemfdCreate("code", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(code)
	if _, err := unix.Write(code, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sock := filepath.Join(dir, "sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	go acceptAll(ln)
	go acceptAll(uln)
	// A descriptor of this process without close-on-exec, past the numbers the
	// helper's own take: whatever started the server may have left one.
	leak, err := unix.FcntlInt(uintptr(code), unix.F_DUPFD, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)

	eachWorkerMode(t, func(t *testing.T, ns bool) {
		killVictim, ptraceVictim := startVictim(t), startVictim(t)
		probes := []workerJailProbe{
			{"open:" + file, "EACCES", ""},
			{"connect-inet:" + ln.Addr().String(), "socket: ENOSYS", "socket"},
			{"connect-unix:" + sock, "socket: ENOSYS", "socket"},
			{"socketpair", "ENOSYS", "socketpair"},
			{"exec:/bin/true", "ENOSYS", "execve"},
			{"fork", "EPERM", "clone"},
			{"vfork", "EPERM", "clone"},
			{"clone-newuser", "EPERM", "clone"},
			{"kill:" + strconv.Itoa(killVictim.Process.Pid), "EPERM", "kill"},
			{"ptrace:" + strconv.Itoa(ptraceVictim.Process.Pid), "ENOSYS", "ptrace"},
			{"memfd-exec", "memfd_create: ENOSYS", "system call " + strconv.Itoa(unix.SYS_MEMFD_CREATE)},
			{"mmap-exec-fd:3", "mmap: EPERM", "mmap"},
			{"mmap-fd:3", "ok", ""}, // the same mapping, not executable
			{"setsid", "ENOSYS", "system call " + strconv.Itoa(unix.SYS_SETSID)},
			{"dumpable", "EPERM", "prctl"},
		}
		var args []string
		for _, p := range probes {
			args = append(args, p.probe)
		}
		got, pid, stderr, threads := runJailedHelper(t, code, args)
		if got["enter"] != "ok" {
			t.Fatalf("restrict.EnterWorker: %s\nstderr: %s", got["enter"], stderr)
		}
		wantReported := map[string]bool{}
		for _, p := range probes {
			for _, where := range []string{"", "@old", "@new"} {
				if g := got[p.probe+where]; g != p.jailed {
					t.Errorf("jailed: %s%s = %s, want %s", p.probe, where, g, p.jailed)
				}
			}
			if p.reported != "" {
				wantReported[p.reported] = true
			}
		}
		if !alive(killVictim.Process.Pid) {
			t.Error("the jailed helper killed the victim")
		}
		// Refusals are reported, and nothing else was refused: the Go runtime
		// of the helper needed nothing outside the list.
		reported := WorkerRefusals([]byte(stderr))
		for name := range wantReported {
			if !slices.Contains(reported, name) {
				t.Errorf("%s was refused but not reported; reports: %v\nstderr: %s", name, reported, stderr)
			}
		}
		for _, name := range reported {
			if !wantReported[name] {
				t.Errorf("%s was refused, which no probe makes: the allow-list misses it", name)
			}
		}
		// Every thread carries both filters: the sandbox's from the spawner
		// and the allow-list (TSYNC reached the thread made before it).
		if len(threads) < 3 {
			t.Errorf("the helper has %d threads, want 3 or more", len(threads))
		}
		for tid, st := range threads {
			for _, want := range []string{"Seccomp:\t2", "Seccomp_filters:\t2", "NoNewPrivs:\t1", "CapEff:\t0000000000000000"} {
				if !strings.Contains(st, want) {
					t.Errorf("thread %s lacks %q", tid, want)
				}
			}
		}
		// Only the descriptors it was given: none the test process holds
		// without close-on-exec (leak).
		if got["fds"] != "0,1,2,3" {
			t.Errorf("the jailed helper has descriptors %s, want 0,1,2,3", got["fds"])
		}
		if ns && os.Geteuid() != 0 && got["nproc"] != strconv.Itoa(WorkerMaxThreads) {
			t.Errorf("the jailed helper's RLIMIT_NPROC is %s, want %d", got["nproc"], WorkerMaxThreads)
		}
		self, _ := os.Readlink("/proc/self/ns/pid")
		if ns {
			expect(t, "namespaces", got, map[string]string{"pid": "1", "uid": "65534"})
			if got["pidns"] == self {
				t.Errorf("the helper shares the test's pid namespace %s", self)
			}
		} else {
			expect(t, "no namespaces", got, map[string]string{"pid": strconv.Itoa(pid), "pidns": self})
		}

		// The positive control: the same probes, unjailed, succeed.
		killVictim2 := startVictim(t)
		args = nil
		for _, p := range probes {
			a := p.probe
			if strings.HasPrefix(a, "kill:") {
				a = "kill:" + strconv.Itoa(killVictim2.Process.Pid)
			}
			args = append(args, a)
		}
		ctl := runControlHelper(t, code, args)
		if !slices.Contains(strings.Split(ctl["fds"], ","), strconv.Itoa(leak)) {
			t.Errorf("control: descriptors %s lack %d, which a plain exec passes on", ctl["fds"], leak)
		}
		for _, a := range args {
			want := "ok"
			if a == "clone-newuser" && os.Geteuid() != 0 && userNS().err != nil {
				t.Logf("control: %s = %s (this host refuses user namespaces)", a, ctl[a])
				continue
			}
			if ctl[a] != want {
				t.Errorf("control: %s = %s, want %s", a, ctl[a], want)
			}
		}
		_ = killVictim2.Wait()
		if alive(killVictim2.Process.Pid) {
			t.Error("control: the victim survived kill")
		}
	})
}

// eachWorkerMode runs f with workers in namespaces of their own where this
// host allows them (as root, or an ordinary user with user namespaces), and
// without.
func eachWorkerMode(t *testing.T, f func(t *testing.T, ns bool)) {
	saved := namespacesOff
	defer func() { namespacesOff = saved }()
	for _, ns := range []bool{true, false} {
		name := map[bool]string{true: "namespaces", false: "no-namespaces"}[ns]
		t.Run(name, func(t *testing.T) {
			namespacesOff = !ns
			sp, err := NewWorkerSpawner(testExe(t))
			if err != nil {
				t.Fatal(err)
			}
			if ns && sp.NoNamespacesWhy() != "" {
				t.Skipf("workers get no namespaces here: %s", sp.NoNamespacesWhy())
			}
			if !ns && sp.Isolation() != ModeLandlock {
				t.Fatalf("isolation %s with namespaces off", sp.Isolation())
			}
			f(t, ns)
		})
	}
}

func acceptAll(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// startVictim starts a process of this user that lives until the test ends.
func startVictim(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testExe(t))
	cmd.Env = []string{workerVictimEnv + "=1"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// runJailedHelper starts the helper as the supervisor starts a worker, with
// file as its descriptor 3 (none if negative), and returns its results, its pid, its stderr and the
// status of each of its threads.
func runJailedHelper(t *testing.T, file int, probes []string) (map[string]string, int, string, map[string]string) {
	t.Helper()
	text, pid, stderr, threads := runJailedHelperRaw(t, file, probes)
	got := parseResults(t, text, append([]string{"pid", "uid", "pidns", "fds", "nproc", "enter", "ready"}, probes...))
	return got, pid, stderr, threads
}

// runJailedHelperRaw is runJailedHelper with the helper's output as it came.
func runJailedHelperRaw(t *testing.T, file int, probes []string) (string, int, string, map[string]string) {
	t.Helper()
	sp, err := NewWorkerSpawner(testExe(t))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	defer inW.Close()
	started := make(chan error, 1)
	var pid int
	go func() {
		runtime.LockOSThread() // retired with the goroutine, as the pool's spawner threads
		if err := sp.Restrict(); err != nil {
			started <- err
			return
		}
		env := []string{workerHelperEnv + "=jailed"}
		fds := []uintptr{inR.Fd(), outW.Fd(), errW.Fd()}
		if file >= 0 {
			fds = append(fds, uintptr(file))
		}
		pid, err = sp.Start(testExe(t), append([]string{testExe(t)}, probes...), env, fds)
		started <- err
	}()
	err = <-started
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		t.Fatalf("starting the helper: %v", err)
	}
	proc, _ := os.FindProcess(pid)
	defer func() {
		inW.Close()
		_, _ = proc.Wait()
	}()
	errc := make(chan string, 1)
	go func() { b, _ := io.ReadAll(errR); errR.Close(); errc <- string(b) }()
	var text strings.Builder
	sc := bufio.NewScanner(outR)
	threads := map[string]string{}
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if sc.Text() == "ready\tok" {
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
			for _, st := range tasks {
				if b, err := os.ReadFile(st); err == nil {
					threads[filepath.Base(filepath.Dir(st))] = string(b)
				}
			}
			inW.Close()
		}
	}
	outR.Close()
	stderr := <-errc
	return text.String(), pid, stderr, threads
}

// runControlHelper runs the helper unjailed with file as its descriptor 3.
func runControlHelper(t *testing.T, file int, probes []string) map[string]string {
	t.Helper()
	dup, err := unix.Dup(file)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "code")
	defer f.Close()
	cmd := exec.Command(testExe(t), probes...)
	cmd.Env = []string{workerHelperEnv + "=control"}
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("control helper: %v\n%s", err, out)
	}
	return parseResults(t, string(out), probes)
}

// TestWorkerThreadLimit: in a user namespace of its own, an ordinary user's worker
// cannot make more than WorkerMaxThreads threads (code that broke out of V8 could
// otherwise take the host's pids); unjailed, the same helper makes more.
func TestWorkerThreadLimit(t *testing.T) {
	requireJail(t)
	if os.Geteuid() == 0 {
		t.Skip("root's tasks are exempt from RLIMIT_NPROC: the limit is the ordinary user's")
	}
	sp, err := NewWorkerSpawner(testExe(t))
	if err != nil {
		t.Fatal(err)
	}
	if sp.NoNamespacesWhy() != "" {
		t.Skipf("workers get no user namespace here: %s", sp.NoNamespacesWhy())
	}
	probe := fmt.Sprintf("threads:%d", WorkerMaxThreads+100)
	text, _, stderr, _ := runJailedHelperRaw(t, -1, []string{probe})
	last := 0
	for _, l := range strings.Split(text, "\n") {
		if n, ok := strings.CutPrefix(l, "thread\t"); ok {
			last, _ = strconv.Atoi(n)
		}
	}
	if strings.Contains(text, probe+"\tok") || last >= WorkerMaxThreads || last == 0 {
		t.Errorf("the jailed helper made %d threads (limit %d):\n%s", last, WorkerMaxThreads, stderr)
	}
	t.Logf("the jailed helper made %d threads before the kernel refused one", last)
	if !strings.Contains(stderr, "Resource temporarily unavailable") {
		t.Errorf("the helper did not end at a refused thread:\n%s", stderr)
	}
	// The positive control: the same helper, unjailed, makes them all.
	ctl := exec.Command(testExe(t), probe)
	ctl.Env = []string{workerHelperEnv + "=control"}
	ctl.Stdin = strings.NewReader("")
	out, err := ctl.Output()
	if err != nil || !strings.Contains(string(out), probe+"\tok") {
		t.Errorf("control: %v\n%s", err, out)
	}
}

// TestWorkerRefusals reads the SIGSYS handler's reports back by name.
func TestWorkerRefusals(t *testing.T) {
	stderr := fmt.Sprintf("noise\n%s%d\n%s%d\n%s%d\nFatal error\n%s99999\n", restrict.RefusedPrefix, unix.SYS_SOCKET, restrict.RefusedPrefix, unix.SYS_PTRACE, restrict.RefusedPrefix, unix.SYS_SOCKET, restrict.RefusedPrefix)
	got := WorkerRefusals([]byte(stderr))
	want := []string{"socket", "ptrace", "system call 99999"}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("WorkerRefusals = %v, want %v", got, want)
	}
	if got := WorkerRefusals([]byte("Fatal javascript OOM\n")); got != nil {
		t.Errorf("WorkerRefusals of a stderr without reports = %v", got)
	}
}
