package watchdog

import (
	"bytes"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Reading a process's figures as its owner. The kernel shows /proc/<pid>/io
// (and the targets of /proc/<pid>/fd, which the memfd count reads) to a reader
// that may ptrace the process in read mode, judged by the reader's filesystem
// uid and gid: its own, or CAP_SYS_PTRACE. A root server without that
// capability (root in a default Docker container, whose commands run as uid
// 65534, see jail.CommandCredential) could read none of its commands' figures,
// and took every one of them for a process that hides its writes: any command
// alive past one poll was ended at its disk limit.
//
// So where root's read is refused, the watchdog reads again from a thread whose
// filesystem uid and gid are the process's own (setfsuid and setfsgid change
// the calling thread alone, and only the credentials checked on file access).
// As its owner the kernel shows the figures of a process that is dumpable, and
// refuses them still for one that is not (one that runs a program its user
// cannot read): the hidden-writer rule (sample.hidden) holds as it does for an
// ordinary user's server, and bytes written and memfds are counted.

// owner is the uid and gid a process runs as, when its real, effective, saved
// and filesystem ids are one each (ok); a process with mixed ids is not read
// as its owner.
type owner struct {
	uid, gid int
	ok       bool
}

// canReadAsOwner: only root may take another's filesystem ids.
var canReadAsOwner = unix.Geteuid() == 0

// ownerOf reads the Uid and Gid lines of a /proc/<pid>/status.
func ownerOf(status []byte) owner {
	uid, okU := sameIDs(status, "\nUid:")
	gid, okG := sameIDs(status, "\nGid:")
	return owner{uid: uid, gid: gid, ok: okU && okG && uid > 0}
}

// sameIDs is the id of a "Uid:" or "Gid:" line when its four ids are equal.
func sameIDs(status []byte, key string) (int, bool) {
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return 0, false
	}
	line, _, _ := bytes.Cut(status[i+len(key):], []byte("\n"))
	f := bytes.Fields(line)
	if len(f) != 4 {
		return 0, false
	}
	id, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return 0, false
	}
	for _, g := range f[1:] {
		if string(g) != string(f[0]) {
			return 0, false
		}
	}
	return id, true
}

// asOwner runs f on a thread whose filesystem uid and gid are o's, and reports
// whether it did. The thread is given back with root's ids again, or, if they
// could not be restored, left locked so that it exits with this goroutine
// (the watchdog's timer goroutine ends after each poll).
func asOwner(o owner, f func()) bool {
	if !canReadAsOwner || !o.ok {
		return false
	}
	runtime.LockOSThread()
	uid0, gid0 := setfsgid(o.gid), setfsuid(o.uid)
	// setfsuid and setfsgid return the previous id whether or not they changed
	// it; asking for an invalid id (-1) returns the current one.
	ran := setfsgid(-1) == o.gid && setfsuid(-1) == o.uid
	if ran {
		f()
	}
	setfsuid(uid0)
	setfsgid(gid0)
	if setfsuid(-1) == uid0 && setfsgid(-1) == gid0 {
		runtime.UnlockOSThread()
	}
	return ran
}

func setfsuid(id int) int {
	r, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, uintptr(id), 0, 0)
	return int(int32(r))
}

func setfsgid(id int) int {
	r, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, uintptr(id), 0, 0)
	return int(int32(r))
}
