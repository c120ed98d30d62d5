package jail

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChildEnvironment: the command gets fds 0-2 only (even when the
// supervisor leaks one), /dev/null on stdin, no controlling terminal, its own
// process group in the launcher's new session, exactly the given environment
// and directory, no_new_privs and seccomp filter mode.
func TestChildEnvironment(t *testing.T) {
	requireJail(t)
	eachMode(t, testChildEnvironment)
}

func testChildEnvironment(t *testing.T, m jailMode) {
	leak, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	// Clear close-on-exec: the launcher inherits this fd and must not pass it on.
	if _, err := unix.FcntlInt(leak.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := basePolicy(t)
	p.ReadOnly = append(p.ReadOnly, "/proc")
	p.ReadWrite = []string{dir}
	spec := Spec{Sandbox: p, Dir: dir, Env: []string{"A=1", "B=two words"}}
	probes := []string{"info:fds", "info:stdin", "info:session", "info:status", "info:env", "info:cwd"}
	got, _, tree := startHelper(t, spec, probes...)
	_, _ = unix.FcntlInt(leak.Fd(), unix.F_SETFD, unix.FD_CLOEXEC)

	var null unix.Stat_t
	if err := unix.Stat(os.DevNull, &null); err != nil {
		t.Fatal(err)
	}
	expect(t, "", got, map[string]string{
		"info:fds":    "0,1,2",
		"info:stdin":  fmt.Sprintf("mode=%o rdev=%d:%d", unix.S_IFCHR, unix.Major(null.Rdev), unix.Minor(null.Rdev)),
		"info:status": "NoNewPrivs=1 Seccomp=2",
		"info:env":    helperEnv + "=1 A=1 B=two words",
		"info:cwd":    dir,
	})
	var pid, pgrp, sid, tty int
	if _, err := fmt.Sscanf(got["info:session"], "pid=%d pgrp=%d sid=%d tty=%d", &pid, &pgrp, &sid, &tty); err != nil {
		t.Fatalf("session %q: %v", got["info:session"], err)
	}
	mySid, _ := unix.Getsid(0)
	launcher := tree.Pid()
	if m.ns {
		launcher = 1 // the init of the command's pid namespace
	}
	if pgrp != pid || sid != launcher || sid == mySid || tty != 0 || tree.pidns != m.ns {
		t.Errorf("session %q (pid namespace %v): want own process group, session of launcher %d (not ours, %d), no tty", got["info:session"], tree.pidns, launcher, mySid)
	}

	// Positive control for the fd check: unsafe mode leaves the rest alone,
	// yet the leaked fd is still not inherited.
	got, _, _ = startHelper(t, Spec{Unsafe: true}, "info:fds", "info:status")
	if got["info:fds"] != "0,1,2" || !strings.Contains(got["info:status"], "Seccomp=0") {
		t.Errorf("unsafe: fds %q status %q", got["info:fds"], got["info:status"])
	}
}

// TestLauncherOutOfReach: the command shares its launcher's Landlock domain (the
// launcher restricts its main thread), so only the launcher being non-dumpable
// keeps the command from writing forged frames into the launcher's status pipe or
// reading and writing its memory through /proc. The same files of the command's
// own process are the positive control.
func TestLauncherOutOfReach(t *testing.T) {
	requireJail(t)
	p := basePolicy(t)
	p.ReadOnly = append(p.ReadOnly, "/proc")
	probes := []string{
		"parent-write:fd/4", "parent-read:mem", "parent-read:environ", "parent-read:stat",
		"write:/proc/self/fd/0", "read:/proc/self/mem", "read:/proc/self/environ",
	}
	got, _, _ := startHelper(t, Spec{Sandbox: p}, probes...)
	expect(t, "", got, map[string]string{
		"parent-write:fd/4":       "EACCES",
		"parent-read:mem":         "EACCES",
		"parent-read:environ":     "EACCES",
		"parent-read:stat":        "ok",
		"write:/proc/self/fd/0":   "ok", // /dev/null
		"read:/proc/self/mem":     "ok",
		"read:/proc/self/environ": "ok",
	})
}
