package watchdog

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
)

// On Linux a tree is walked by the kernel's per-thread children lists
// (/proc/<pid>/task/<tid>/children), cheap enough every few milliseconds,
// unlike a scan of all of /proc; orphans are reparented to the launcher (a
// subreaper, or a pid namespace's init), so they stay in the tree. Each
// process costs a read of /proc/<pid>/stat (threads, CPU time of itself and of
// the children it reaped), of /proc/<pid>/status (its own memory: anonymous
// and shared memory, not the file pages of its program and libraries, which
// every process running them shares and which would count 256 times in 256
// shells) and of /proc/<pid>/io (bytes it dirtied in the page cache, less what
// it truncated before it reached the disk, and the same of the children it
// reaped), so the figures of processes that are gone are still counted, in
// their reaper's.

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on every
// architecture Linux builds for autobox's).
const clockTicks = 100

// maxTree bounds a walk (a fork bomb's tree held by no pids limit).
const maxTree = 65536

func measure(root int, m how) sample {
	excludeRoot, writes, memfds := m.excludeRoot, m.writes, m.memfds
	var s sample
	buf := make([]byte, 4096) // status is ~1.5 KB
	var dents, iobuf []byte
	pids := []int{root}
	for i := 0; i < len(pids) && len(pids) < maxTree; i++ {
		pid := pids[i]
		if i == 0 && excludeRoot {
			pids = appendThreadChildren(pids, pid, pid)
		} else {
			pids = appendChildren(pids, pid)
		}
		st, ok := readStat(pid, buf)
		if !ok {
			continue
		}
		reaped := st.cutime + st.cstime
		var w int64
		var denied bool
		if writes {
			w, denied = readWritten(pid, buf)
			s.written += w
		}
		ignoresCHLD := false
		if !(excludeRoot && pid == root) {
			status := readFile("/proc/"+strconv.Itoa(pid)+"/status", buf)
			// Refused to root without CAP_SYS_PTRACE: read as its owner
			// (owner_linux.go), which the kernel refuses only for a process
			// that is not dumpable.
			o := owner{}
			if denied {
				o = ownerOf(status)
				if iobuf == nil {
					iobuf = make([]byte, 512) // status stays in buf
				}
				if asOwner(o, func() { w, denied = readWritten(pid, iobuf) }) && denied {
					// Refused to its owner too: not dumpable, or it exited
					// since status was read (its files are root's then).
					status = readFile("/proc/"+strconv.Itoa(pid)+"/status", buf)
				}
				s.written += w
			}
			// A process that has exited (it has no memory: no VmSize) shows
			// its /proc files as root's until it is reaped; one that still
			// has its memory and hides its bytes written is not dumpable.
			if denied && s.hidden == 0 && procfs.LineValue(status, "VmSize:") > 0 {
				s.hidden = pid
				s.hiddenName = statusName(status)
			}
			ignoresCHLD = ignoresSIGCHLD(status)
			s.rss += procfs.Resident(status)
			if memfds {
				shmem := procfs.LineValue(status, "RssShmem:") << 10
				if dents == nil {
					dents = make([]byte, 4096)
				}
				var held int64
				if !asOwner(o, func() { held = memfdBytes(pid, dents) }) {
					held = memfdBytes(pid, dents)
				}
				s.rss += max(0, held-shmem)
			}
			s.tasks += st.threads
			reaped += st.utime + st.stime
		}
		cpu := time.Duration(reaped) * time.Second / clockTicks
		s.cpu += cpu
		if m.procs != nil {
			m.procs[pid] = proc{ppid: st.ppid, cpu: cpu, written: w, ignoresCHLD: ignoresCHLD}
		}
	}
	s.written = max(0, s.written)
	return s
}

// appendChildren appends the children of every thread of pid.
func appendChildren(pids []int, pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return pids
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	for _, tid := range tids {
		pids = appendChildrenOf(pids, dir+"/"+tid+"/children")
	}
	return pids
}

// appendThreadChildren appends the children of thread tid of pid alone. For a
// launcher (Options.ExcludeRoot) that is its main thread, which has all of its
// children: the launcher forks its command from a thread that exits once the
// command runs, and the kernel gives the children of a thread that exits, and
// the orphans a subreaper or a namespace's init adopts, to the first live
// thread of the process, the main one, which lives as long as the launcher.
//
// Listing the launcher's threads (/proc/<pid>/task) instead made reaping the
// launcher cost ~7 ms of kernel time on average and up to 60 ms (measured: 200
// back-to-back echo calls, 1.6 s in wait4 against 40 ms): the kernel
// invalidates a dead process's /proc entries as it is reaped, and those the
// listing made for the launcher's exited threads held it up.
func appendThreadChildren(pids []int, pid, tid int) []int {
	return appendChildrenOf(pids, "/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)+"/children")
}

// appendChildrenOf appends the pids listed in a /proc/<pid>/task/<tid>/children.
func appendChildrenOf(pids []int, path string) []int {
	b, _ := os.ReadFile(path) // a launcher may have thousands
	for _, w := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(w)); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

type stat struct {
	utime, stime, cutime, cstime int64 // clock ticks
	threads                      int
	ppid                         int
}

// readStat parses /proc/<pid>/stat; false if the process is gone.
func readStat(pid int, buf []byte) (stat, bool) {
	b := readFile("/proc/"+strconv.Itoa(pid)+"/stat", buf)
	// "pid (comm) S ppid ..."; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 22 {
		return stat{}, false
	}
	// Field n of proc(5) is f[n-3]: ppid 4, utime 14, stime 15, cutime 16,
	// cstime 17, num_threads 20.
	n := func(k int) int64 {
		v, _ := strconv.ParseInt(string(f[k-3]), 10, 64)
		return v
	}
	return stat{utime: n(14), stime: n(15), cutime: n(16), cstime: n(17), threads: int(n(20)), ppid: int(n(4))}, true
}

// readWritten is a process's write_bytes less its cancelled_write_bytes (its
// reaped children's included), 0 when unreadable. denied says the kernel
// refused to show them (EACCES): a launcher that is not dumpable, read
// without CAP_SYS_PTRACE, or a process that runs a program its user cannot
// read (mode 0111), which the kernel makes not dumpable: what it writes, and
// what its reaped children wrote, are then hidden from the watchdog (see
// sample.hidden).
func readWritten(pid int, buf []byte) (written int64, denied bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/io", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err == unix.EACCES
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return 0, err == unix.EACCES
	}
	return procfs.Written(buf[:n]), false
}

// readFile reads a small /proc file into buf (nil when unreadable).
func readFile(path string, buf []byte) []byte { return procfs.Read(path, buf) }

// statusName is the Name of a /proc/<pid>/status (its first line).
func statusName(status []byte) string {
	line, _, _ := bytes.Cut(status, []byte("\n"))
	name, _ := bytes.CutPrefix(line, []byte("Name:"))
	return string(bytes.TrimSpace(name))
}

// ignoresSIGCHLD reports whether the SigIgn mask of a /proc/<pid>/status has
// SIGCHLD: the process's children are then reaped by the kernel.
func ignoresSIGCHLD(status []byte) bool {
	i := bytes.Index(status, []byte("\nSigIgn:"))
	if i < 0 {
		return false
	}
	f := bytes.Fields(status[i+len("\nSigIgn:"):])
	if len(f) == 0 {
		return false
	}
	mask, err := strconv.ParseUint(string(f[0]), 16, 64)
	return err == nil && mask&(1<<(unix.SIGCHLD-1)) != 0
}
