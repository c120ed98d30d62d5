package launcher

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// /dev and /run in a private root: the devices of the policy (null, zero, full,
// random, urandom, tty) are bound from the host; the rest is the call's own.
//
//   - fd, stdin, stdout, stderr: links into /proc/self, the command's own.
//   - shm: a tmpfs of the call's own (POSIX shared memory and semaphores:
//     Python's multiprocessing, Chromium, PostgreSQL), gone with the call. A
//     memory cgroup charges its pages to the call; without one the launcher
//     adds what it holds to the memory it reports (ipcBytes), so the watchdog
//     holds it to memoryMb.
//   - pts and ptmx: a devpts instance of the call's own, so that programs open
//     pseudo-terminals themselves (script, expect, tmux, pexpect, node-pty);
//     it holds the call's terminals alone.
//   - /run: a tmpfs of the call's own too (screen's sockets, locks), with
//     the user's XDG_RUNTIME_DIR in it.
//   - console: a session's terminal (from the supervisor's own devpts), where
//     ttyname(3) finds it once /dev/pts is the call's (as containers do).

// ttyGID is the tty group's id on Linux distributions (devpts' own default
// when mounted with gid=5, as systemd and util-linux do).
const ttyGID = 5

// ownTmpfs are the tmpfs mounts of the call's own in a private root:
// /dev/shm, and /run (programs that keep sockets and locks there: screen,
// and XDG_RUNTIME_DIR).
var ownTmpfs = [...]struct{ path, opts string }{{"/dev/shm", "mode=1777"}, {"/run", "mode=0755"}}

// tmpfsFDs are O_PATH descriptors of ownTmpfs, -1 where none: the launcher's
// IPC watch reads how much they hold (statfs).
var tmpfsFDs [len(ownTmpfs)]atomic.Int32

func init() {
	for i := range tmpfsFDs {
		tmpfsFDs[i].Store(-1)
	}
}

// runtimeDir is the command's XDG_RUNTIME_DIR in a private root.
func runtimeDir() string { return "/run/user/" + strconv.Itoa(os.Getuid()) }

// devLinks makes /dev: the links that shells and tools expect there (process
// substitution, `> /dev/stderr`), which lead into /proc/self, the command's
// own; /dev/shm; /dev/pts and /dev/ptmx.
func (r *privateRoot) devLinks() error {
	if err := unix.Mkdir("/dev", 0o755); err != nil {
		return fmt.Errorf("mkdir /dev: %w", err)
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
		"ptmx": "pts/ptmx",
	} {
		if err := unix.Symlink(target, "/dev/"+name); err != nil {
			return fmt.Errorf("symlink /dev/%s: %w", name, err)
		}
	}
	if err := unix.Mkdir("/dev/pts", 0o755); err != nil {
		return fmt.Errorf("mkdir /dev/pts: %w", err)
	}
	for i, t := range ownTmpfs {
		if err := mkdirAll(t.path); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", t.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, t.opts); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", t.path, err)
		}
		fd, err := unix.Open(t.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", t.path, err)
		}
		if old := tmpfsFDs[i].Swap(int32(fd)); old >= 0 {
			unix.Close(int(old)) // a root reset: the old one is gone with it
		}
	}
	// XDG_RUNTIME_DIR (see RootEnv): the user's, private, as a login makes it.
	run := runtimeDir()
	if err := mkdirAll(path.Dir(run)); err != nil {
		return err
	}
	if err := unix.Mkdir(run, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", run, err)
	}
	// Terminals belong to the tty group, as the host's do (screen and other
	// programs chown theirs to it, a no-op then); a user namespace does not
	// map that group, and each terminal there gets its opener's group.
	opts := "newinstance,ptmxmode=0666,mode=0620"
	if !inUserNS {
		opts += ",gid=" + strconv.Itoa(ttyGID)
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mounting a devpts on /dev/pts: %w", err)
	}
	return nil
}

// devRules are the paths of /dev that a private root adds to the command's
// Landlock rules: /dev to list, its shared memory read-write, its terminals
// as devices.
var devRules = struct{ readOnly, readWrite, devices []string }{[]string{"/dev"}, []string{"/dev/shm", "/run"}, []string{"/dev/pts"}}

// tmpfsBytes is what the call's own tmpfs mounts hold, 0 without any.
func tmpfsBytes() int64 {
	var total int64
	for i := range tmpfsFDs {
		fd := tmpfsFDs[i].Load()
		var st unix.Statfs_t
		if fd >= 0 && unix.Fstatfs(int(fd), &st) == nil {
			total += int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	return total
}

// rootEnv is env with the call's own directories where a private root shows
// them: TMPDIR (the scratch dir, tmp) at /tmp, XDG_RUNTIME_DIR (tmp too) at
// the user's own in /run. Programs then use short paths (a unix socket's
// path has 107 bytes at most) that look like the user's machine.
func rootEnv(env []string, tmp string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		switch kv {
		case "TMPDIR=" + tmp:
			kv = "TMPDIR=/tmp"
		case "XDG_RUNTIME_DIR=" + tmp:
			kv = "XDG_RUNTIME_DIR=" + runtimeDir()
		}
		out[i] = kv
	}
	return out
}

// privateRootRules is sb with the Landlock rules a private root adds: the
// files placed for the call (placed: its name service), /tmp (a bind of the
// scratch dir's wire.TmpDirName: a mount's root, below which Landlock sees no rule
// of the scratch dir's), /dev/shm and /dev/pts, and a session's terminal at
// wire.TerminalPath rather than its host path; a mount bound at its place
// (policy.Place) has its rule there.
func privateRootRules(sb *policy.Sandbox, placed []string) *policy.Sandbox {
	own := *sb
	ro, rw, hidden := placeRules(sb) // places_linux.go
	own.ReadOnly = append(append(append([]string(nil), ro...), placed...), devRules.readOnly...)
	own.ReadWrite = append(append([]string(nil), rw...), devRules.readWrite...)
	own.Hidden = hidden
	if sb.Tmp != "" {
		own.ReadWrite = append(own.ReadWrite, path.Join(sb.Tmp, wire.TmpDirName))
	}
	own.Devices = append([]string(nil), devRules.devices...)
	for _, d := range sb.Devices {
		if strings.HasPrefix(d, "/dev/pts/") {
			d = wire.TerminalPath
		}
		own.Devices = append(own.Devices, d)
	}
	return &own
}
