package jail

import (
	"fmt"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// CommandAccess checks that this process's commands can use path: reach it
// (search every directory above it), read it, and write it with write. Where
// they run as this process's own uid it checks nothing; where a root server
// runs them as another (see dropuid_linux.go) it asks the kernel as that uid
// and gid, with no supplementary groups, as the command will be: on a thread
// of its own that takes those filesystem ids and is never given back (it
// exits with its goroutine), so ACLs and every rule of the kernel's count.
// The error names the directory that stops them, its mode and owner.
func CommandAccess(path string, write bool) error {
	uid, gid, drop := CommandCredential()
	if !drop {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		done <- accessAs(uid, gid, path, write)
	}()
	return <-done
}

func accessAs(uid, gid int, path string, write bool) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("checking %s as uid %d: setgroups: %w", path, uid, e)
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0)
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0)
	if r, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0); int(int32(r)) != uid {
		return fmt.Errorf("checking %s as uid %d: setfsuid refused", path, uid)
	}
	// Every directory above path, from the top: the first that refuses a
	// search is the one to name.
	var above []string
	for dir := filepath.Dir(filepath.Clean(path)); ; dir = filepath.Dir(dir) {
		above = append([]string{dir}, above...)
		if dir == "/" || dir == "." {
			break
		}
	}
	for _, dir := range above {
		if err := unix.Faccessat2(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS); err != nil {
			return denied(uid, path, "reach", dir, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mode, verb := uint32(unix.R_OK), "read"
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		mode |= unix.X_OK
	}
	if write {
		mode, verb = mode|unix.W_OK, "write"
	}
	if err := unix.Faccessat2(unix.AT_FDCWD, path, mode, unix.AT_EACCESS); err != nil {
		return denied(uid, path, verb, path, err)
	}
	return nil
}

// denied says which directory stops uid, with its mode and owner.
func denied(uid int, path, verb, at string, err error) error {
	what := at
	var st unix.Stat_t
	if unix.Stat(at, &st) == nil {
		what = fmt.Sprintf("%s (mode %04o, owner uid %d)", at, st.Mode&0o7777, st.Uid)
	}
	if at == path {
		return fmt.Errorf("%w: uid %d cannot %s %s: %v", ErrCommandAccess, uid, verb, what, err)
	}
	return fmt.Errorf("%w: uid %d cannot %s %s: %s refuses it: %v", ErrCommandAccess, uid, verb, path, what, err)
}
