package seccomp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

var (
	trapENOSYS = RetTrap(ENOSYS)
	trapEPERM  = RetTrap(EPERM)
	eacces     = RetErrno(EACCES)
)

const (
	// Thread flags as Go's runtime and glibc's pthread_create pass them.
	goThread    = 0x00000100 | 0x00000200 | 0x00000400 | 0x00000800 | 0x00040000 | 0x00010000 // VM|FS|FILES|SIGHAND|SYSVSEM|THREAD
	glibcThread = goThread | 0x00080000 | 0x00100000 | 0x00200000                             // |SETTLS|PARENT_SETTID|CHILD_CLEARTID
	sigchld     = 17                                                                          // fork
	vforkFlags  = 0x00004000 | 0x00000100 | sigchld                                           // CLONE_VFORK|CLONE_VM
	protRW      = 0x1 | 0x2                                                                   // PROT_READ|PROT_WRITE
	mapPrivate  = 0x02                                                                        // MAP_PRIVATE
	mapShared   = 0x01                                                                        // MAP_SHARED
	clonePidfd  = 0x00001000                                                                  // CLONE_PIDFD
	cloneParent = 0x00008000                                                                  // CLONE_PARENT
)

// workerCalls is the table the worker filter must answer, for a worker whose
// pid is pid.
func workerCalls(t *testing.T, a *Arch, pid uint64) []call {
	nr := func(name string) uint32 {
		if n, ok := WorkerNr(a, name); ok {
			return n
		}
		if n, ok := a.Nr(name); ok {
			return n
		}
		t.Fatalf("%s: no number for %s", a.Name, name)
		return 0
	}
	c := func(name string, want uint32, args ...uint64) call {
		return call{nr: nr(name), args: args, want: want}
	}
	var calls []call
	for _, w := range WorkerAllowed {
		calls = append(calls, c(w.Name, allow), c(w.Name, allow, 1<<40|7, 0xffffffff, 3, 4, 5, 6))
	}
	calls = append(calls,
		// Threads, as Go and glibc make them; nothing else.
		c("clone", allow, goThread),
		c("clone", allow, glibcThread),
		c("clone", allow, 1<<32|glibcThread), // the kernel reads the low word
		c("clone", trapEPERM, sigchld),
		c("clone", trapEPERM, 0),
		c("clone", trapEPERM, vforkFlags),
		c("clone", trapEPERM, 1<<32|sigchld),
		c("clone", trapEPERM, clonePidfd|cloneParent|sigchld),
		c("clone3", enosys),
		// Executable memory only anonymous.
		c("mmap", allow, 0, 4096, protRW, mapPrivate, 3, 0),
		c("mmap", allow, 0, 4096, protRW|ProtExec, mapPrivate|MapAnonymous, 1<<32-1, 0),
		c("mmap", allow, 0, 4096, ProtExec, mapShared|MapAnonymous, 1<<32-1, 0),
		c("mmap", trapEPERM, 0, 4096, ProtExec, mapPrivate, 3, 0),
		c("mmap", trapEPERM, 0, 4096, 0x1|ProtExec, mapShared, 3, 0),
		c("mmap", trapEPERM, 0, 4096, 1<<32|ProtExec, 1<<32|mapPrivate, 3, 0),
		// Signals to itself only.
		c("kill", allow, pid, 6),
		c("kill", trapEPERM, 0, 9),
		c("kill", trapEPERM, 1<<32-1, 9), // -1: every process it may signal
		c("kill", trapEPERM, pid+1, 9),
		c("kill", trapEPERM, 1<<32-pid, 9), // its process group
		c("tgkill", allow, pid, pid+3, 23),
		c("tgkill", trapEPERM, pid+1, pid+1, 9),
		c("tgkill", trapEPERM, 0, pid, 9),
		// fcntl: flags of descriptors, nothing more.
		c("fcntl", allow, 3, FGetFD),
		c("fcntl", allow, 3, FSetFD, 1),
		c("fcntl", allow, 3, FGetFL),
		c("fcntl", allow, 3, FSetFL, 0x800),
		c("fcntl", trapEPERM, 3, 0),     // F_DUPFD
		c("fcntl", trapEPERM, 3, 1030),  // F_DUPFD_CLOEXEC
		c("fcntl", trapEPERM, 3, 8, 1),  // F_SETOWN: SIGIO to a process of its choice
		c("fcntl", trapEPERM, 3, 10, 9), // F_SETSIG
		c("fcntl", trapEPERM, 3, 6),     // F_SETLK
		c("fcntl", trapEPERM, 3, 1<<32|5),
		// prctl: names only.
		c("prctl", allow, PRSetName, 0),
		c("prctl", allow, PRGetName, 0),
		c("prctl", allow, PRSetVMA, 0),
		c("prctl", trapEPERM, PRSetDumpable, 1),
		c("prctl", trapEPERM, 38, 1),         // PR_SET_NO_NEW_PRIVS
		c("prctl", trapEPERM, 22, 2),         // PR_SET_SECCOMP
		c("prctl", trapEPERM, 0x59616d61, 1), // PR_SET_PTRACER
		c("prctl", trapEPERM, 1, 9),          // PR_SET_PDEATHSIG
		c("prctl", trapEPERM, 47, 2),         // PR_CAP_AMBIENT
		// Its own limits only.
		c("prlimit64", allow, 0, 0, 0, 0),
		c("prlimit64", trapEPERM, pid, 0, 0, 0),
		c("prlimit64", trapEPERM, 1, 0, 0, 0),
		// Nothing to open, quietly.
		c("openat", eacces),
		c("openat", eacces, 1<<32-100, 0, 0x40, 0o600),
		// What a compromised worker would try: refused, reported.
		c("execve", trapENOSYS),
		c("execveat", trapENOSYS),
		c("socket", trapENOSYS, AFUnix, 1),
		c("socket", trapENOSYS, AFInet, 1),
		c("socketpair", trapENOSYS, AFUnix, 1),
		c("ptrace", trapENOSYS, 16, 1),
		c("process_vm_writev", trapENOSYS),
		c("unshare", trapENOSYS, 0x10000000),
		c("setns", trapENOSYS),
		c("mount", trapENOSYS),
		c("bpf", trapENOSYS),
		c("io_uring_setup", trapENOSYS),
		c("userfaultfd", trapENOSYS),
		c("perf_event_open", trapENOSYS),
		c("pidfd_open", trapENOSYS),
		c("pidfd_getfd", trapENOSYS),
		c("personality", trapENOSYS, 0x0400000),
		c("ioctl", trapENOSYS, 0, TIOCSTI),
		c("memfd_secret", trapENOSYS),
		c("keyctl", trapENOSYS),
		c("kcmp", trapENOSYS),
		c("setpriority", trapENOSYS),
		c("fallocate", trapENOSYS),
		// Other ABIs never reach the list.
		call{arch: AuditArchI386, nr: 11, want: enosys},
		call{arch: AuditArchARM, nr: 0, want: enosys},
	)
	if a.X32 {
		calls = append(calls,
			call{nr: x32SyscallBit | 0, want: enosys},   // x32 read
			call{nr: x32SyscallBit | 520, want: enosys}, // x32 execve
			call{nr: x32SyscallBit | 57, want: enosys},  // x32 fork
			call{nr: 57, want: trapENOSYS},              // fork
			call{nr: 58, want: trapENOSYS},              // vfork
			call{nr: 2, want: trapENOSYS},               // open
			call{nr: 42, want: trapENOSYS},              // connect
			call{nr: 319, want: trapENOSYS},             // memfd_create
			call{nr: 112, want: trapENOSYS},             // setsid
			call{nr: 200, want: trapENOSYS},             // tkill
			call{nr: 33, want: trapENOSYS},              // dup2
		)
	} else {
		calls = append(calls,
			call{nr: 203, want: trapENOSYS}, // connect
			call{nr: 279, want: trapENOSYS}, // memfd_create
			call{nr: 157, want: trapENOSYS}, // setsid
			call{nr: 130, want: trapENOSYS}, // tkill
			call{nr: 24, want: trapENOSYS},  // dup3
		)
	}
	return calls
}

func TestWorkerFilter(t *testing.T) {
	for _, a := range []*Arch{AMD64, ARM64} {
		for _, pid := range []uint64{1, 4242} {
			t.Run(fmt.Sprintf("%s/pid=%d", a.Name, pid), func(t *testing.T) {
				raw, err := Worker(a, WorkerOptions{Pid: uint32(pid)})
				if err != nil {
					t.Fatal(err)
				}
				run(t, raw, a, append(workerCalls(t, a, pid), workerEveryNumber(a, pid)...))
			})
		}
	}
}

// TestWorkerFilterNoTrap: without a SIGSYS handler the same calls fail with
// the same errnos, unreported.
func TestWorkerFilterNoTrap(t *testing.T) {
	for _, a := range []*Arch{AMD64, ARM64} {
		raw, err := Worker(a, WorkerOptions{Pid: 1, NoTrap: true})
		if err != nil {
			t.Fatal(err)
		}
		var calls []call
		for _, c := range workerCalls(t, a, 1) {
			switch c.want {
			case trapENOSYS:
				c.want = enosys
			case trapEPERM:
				c.want = eperm
			}
			calls = append(calls, c)
		}
		run(t, raw, a, calls)
	}
}

// workerEveryNumber runs every system call number below 1024 through the
// filter with arguments every check allows: exactly the listed calls pass. It
// guards the binary search against a number that falls between two branches.
func workerEveryNumber(a *Arch, pid uint64) []call {
	want := map[uint32]uint32{}
	args := map[uint32][]uint64{}
	for _, c := range append(WorkerAllowed, WorkerChecked...) {
		nr, _ := WorkerNr(a, c.Name)
		want[nr] = allow
	}
	for _, q := range WorkerQuiet {
		nr, _ := WorkerNr(a, q.Name)
		want[nr] = RetErrno(q.Errno)
	}
	good := map[string][]uint64{
		"clone": {glibcThread}, "mmap": {0, 4096, protRW, mapPrivate, 3, 0}, "kill": {pid, 6},
		"tgkill": {pid, pid, 23}, "fcntl": {3, FGetFL}, "prctl": {PRSetName}, "prlimit64": {0},
	}
	for name, g := range good {
		nr, _ := WorkerNr(a, name)
		args[nr] = g
	}
	var calls []call
	for nr := uint32(0); nr < 1024; nr++ {
		w, ok := want[nr]
		if !ok {
			w = trapENOSYS
		}
		calls = append(calls, call{nr: nr, args: args[nr], want: w})
	}
	return calls
}

// TestWorkerFilterIsShallow bounds the longest path through the filter, as
// TestSandboxFilterIsShallow does for the sandbox's.
func TestWorkerFilterIsShallow(t *testing.T) {
	raw, err := Worker(AMD64, WorkerOptions{Pid: 1})
	if err != nil {
		t.Fatal(err)
	}
	insns, _ := bpf.Disassemble(raw)
	longest := make([]int, len(insns)+1)
	for i := len(insns) - 1; i >= 0; i-- {
		switch in := insns[i].(type) {
		case bpf.RetConstant:
			longest[i] = 1
		case bpf.JumpIf:
			longest[i] = 1 + max(longest[i+1+int(in.SkipTrue)], longest[i+1+int(in.SkipFalse)])
		default:
			longest[i] = 1 + longest[i+1]
		}
	}
	t.Logf("%d instructions, longest path %d", len(insns), longest[0])
	// The prologue (4), a binary search over ~55 numbers (7) and the longest
	// argument check (fcntl's or prctl's, 5).
	if longest[0] > 17 {
		t.Errorf("longest path through the filter is %d instructions, want at most 17", longest[0])
	}
}

// TestWorkerListsAreSound: each call is listed once, has a reason and a
// number on both architectures.
func TestWorkerListsAreSound(t *testing.T) {
	seen := map[string]bool{}
	all := append(append([]WorkerCall{}, WorkerAllowed...), WorkerChecked...)
	for _, q := range WorkerQuiet {
		all = append(all, q.WorkerCall)
	}
	for _, c := range all {
		if seen[c.Name] {
			t.Errorf("%s is listed twice", c.Name)
		}
		seen[c.Name] = true
		if strings.TrimSpace(c.Reason) == "" {
			t.Errorf("%s has no reason", c.Name)
		}
		for _, a := range []*Arch{AMD64, ARM64} {
			if _, ok := WorkerNr(a, c.Name); !ok {
				t.Errorf("%s has no number for %s", a.Name, c.Name)
			}
		}
	}
	for _, bad := range []string{"execve", "execveat", "socket", "connect", "open", "fork", "vfork", "ptrace", "unshare", "setns", "setsid", "memfd_create", "tkill"} {
		if seen[bad] {
			t.Errorf("%s must not be in the worker's lists", bad)
		}
	}
}

// TestWorkerNumbers checks the worker's numbers of both architectures against
// x/sys's tables, which are generated from the kernel headers: its source is in
// the module cache wherever this test builds.
func TestWorkerNumbers(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Skipf("cannot find x/sys's source: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	for goarch, arch := range map[string]string{"amd64": "x86_64", "arm64": "aarch64"} {
		b, err := os.ReadFile(filepath.Join(dir, "unix", "zsysnum_linux_"+goarch+".go"))
		if err != nil {
			t.Fatal(err)
		}
		xsys := map[string]uint32{}
		for _, m := range regexp.MustCompile(`(?m)^\s*SYS_([A-Z0-9_]+)\s*=\s*(\d+)`).FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[2])
			xsys[strings.ToLower(m[1])] = uint32(n)
		}
		if len(workerNumbers[arch]) == 0 {
			t.Fatalf("no worker numbers for %s", arch)
		}
		for name, nr := range workerNumbers[arch] {
			if want, ok := xsys[name]; !ok || want != nr {
				t.Errorf("%s: %s = %d, x/sys says %d (present %v)", arch, name, nr, want, ok)
			}
		}
	}
}
