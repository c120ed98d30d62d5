package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/rlimit"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// The user namespace from inside, the launcher's side (the server's, which
// finds the mode and forks launchers into their namespaces, is
// jail's userns_linux.go): the probe child's body, and the process limit a
// user-namespace launcher holds its command to.

// inUserNS is true in a launcher forked into a user namespace.
var inUserNS = os.Getenv(wire.UserNSEnv) == "1"

// probeInside is the probe launcher's body: the namespaces a launcher makes
// or enters (mount, with a tmpfs and a proc of its pid namespace; network,
// with loopback up). It returns the exit code, having said what failed.
func probeInside() int {
	runtime.LockOSThread()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s in a user namespace: %v", what, err)
		return 1
	}
	if !confine.HasCapSysAdmin() {
		return fail("capabilities", errors.New("the launcher holds no CAP_SYS_ADMIN in its own namespace (an LSM such as AppArmor took it)"))
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fail("unshare(CLONE_NEWNS)", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fail("making mounts slaves", err)
	}
	dir := "/tmp"
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		return fail("mounting a tmpfs", err)
	}
	if err := unix.Mkdir(dir+"/proc", 0o755); err != nil {
		return fail("mkdir in the tmpfs", err)
	}
	if err := unix.Mount("proc", dir+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fail("mounting proc", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fail("unshare(CLONE_NEWNET)", err)
	}
	if err := loopbackUp(); err != nil {
		return fail("bringing loopback up", err)
	}
	return 0
}

// warmThreads makes spareThreads idle threads in the runtime, ahead of the
// process limit (see applyNproc).
func (t *cmdThread) warmThreads() {
	t.threadsWarm = true
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range spareThreads {
		wg.Add(1)
		go func() {
			runtime.LockOSThread()
			wg.Done()
			<-release
			runtime.UnlockOSThread() // the thread goes to the runtime's idle list
		}()
	}
	wg.Wait()
	close(release)
}

// spareThreads is how many idle threads a user-namespace launcher makes
// before its process limit is set: its Go runtime may want a thread later
// (a goroutine blocked in a system call), and a thread it cannot make is
// fatal to it.
const spareThreads = 4

// applyNproc makes maxProcesses a kernel limit in a user-namespace launcher
// without a pids cgroup. Since Linux 5.14 RLIMIT_NPROC is checked against the
// tasks of the caller's uid in the caller's user namespace, which here holds
// this launcher and its command's tree alone: the limit is the launcher's
// own tasks (less the command thread, which exits once the command runs)
// plus l.Processes, and a fork past it fails with EAGAIN, as under a pids
// cgroup. Like the other rlimits it is set on the launcher right before the
// fork (see applyRlimits): the launcher's later threads count against it,
// so it first makes the threads it may need, idle.
func (t *cmdThread) applyNproc(l *policy.Limits) error {
	if !inUserNS || l == nil || l.Processes <= 0 || t.pidsMax >= 0 || !confine.NprocPerUserNS() {
		return nil
	}
	if !t.threadsWarm {
		t.warmThreads() // a launcher that was not prepared
	}
	tasks, err := ownTasks()
	if err != nil {
		return err
	}
	n := uint64(l.Processes + tasks - 1)
	if err := rlimit.Set(unix.RLIMIT_NPROC, n, n); err != nil {
		return fmt.Errorf("RLIMIT_NPROC %d: %w", n, err)
	}
	t.nproc = int(n)
	return nil
}

// ownTasks counts the threads of this process: num_threads, the 20th field
// of /proc/self/stat (one read; listing /proc/self/task took ~0.3 ms on the
// call's path).
func ownTasks() (int, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, fmt.Errorf("counting this launcher's threads: %w", err)
	}
	// Fields after the command name, which may hold anything but ends at the
	// last ')': state is the 3rd field, num_threads the 20th.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 18 {
		return 0, fmt.Errorf("counting this launcher's threads: /proc/self/stat is %q", b)
	}
	n, err := strconv.Atoi(f[17])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("counting this launcher's threads: num_threads %q", f[17])
	}
	return n, nil
}
