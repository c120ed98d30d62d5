package cmdrun

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// taskish are limit names as a caller other than the server gives them.
var taskish = watchdog.Names{Memory: "--memory", Processes: "--max-processes", Written: "--max-write-mb", CPU: "--cpu-ms"}

// startTree runs sh -c script in a one-off launcher (as task's native kind
// does), in a sandbox of the system paths and a scratch dir, with limits l.
func startTree(t *testing.T, script string, l *policy.Limits) Tree {
	t.Helper()
	if err := jail.Probe().Check(syspaths.Base()); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is closed to the other uid a root process
	// without namespaces runs commands as (jail.CommandCredential).
	dir, err := os.MkdirTemp("", "cmdrun-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if uid, gid, drop := jail.CommandCredential(); drop {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	sb := *syspaths.Base()
	sb.ReadWrite, sb.Tmp = []string{dir}, dir
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	tree, err := jail.Start(exe, &policy.Command{Argv: []string{"/bin/sh", "-c", script}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, Sandbox: sb, Limits: l}, null, null)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestEnforceReasons: a tree killed at a limit ends with its kind and a text
// in the caller's names; the first reason given stands, and a tree that ends
// on its own under the same limits is not killed (the control).
func TestEnforceReasons(t *testing.T) {
	lim := &policy.Limits{Processes: 64, WriteBytes: 1 << 20, CPU: time.Second, OpenFiles: 64}

	end := Enforce(startTree(t, "echo fine", lim), Limits{Command: lim, Names: taskish, Clock: &Clock{}, Timeout: time.Hour}).Wait()
	if end.Err != nil || end.KilledBy.Kind != "" || !end.Exit.Started || end.Exit.ExitCode != 0 || end.Usage.Processes < 1 {
		t.Fatalf("a command under its limits: %+v", end)
	}

	// Three files of 1 MB: none past RLIMIT_FSIZE, all together past the
	// watchdog's limit.
	end = Enforce(startTree(t, "for i in 1 2 3; do head -c 1048576 /dev/zero > f$i; done; sleep 30", lim), Limits{Command: lim, Names: taskish}).Wait()
	if end.KilledBy.Kind != KilledDisk || !strings.Contains(end.KilledBy.Text, "> --max-write-mb 1; watchdog)") {
		t.Errorf("3 MB past --max-write-mb 1: %+v", end.KilledBy)
	}

	// A busy loop meets the watchdog's CPU limit or RLIMIT_CPU's, whichever
	// comes first: either is the CPU limit, named as the caller names it.
	end = Enforce(startTree(t, "while :; do :; done", lim), Limits{Command: lim, Names: taskish}).Wait()
	if end.KilledBy.Kind != KilledCPU || !strings.Contains(end.KilledBy.Text, "--cpu-ms 1000") {
		t.Errorf("a busy loop past --cpu-ms 1000: %+v (signal %q)", end.KilledBy, end.Exit.Signal)
	}

	// The kernel's end at RLIMIT_CPU is SIGXCPU (sent by the shell itself
	// here, as the race above may never show it).
	end = Enforce(startTree(t, "kill -XCPU $$", lim), Limits{Command: lim, Names: taskish}).Wait()
	if end.KilledBy != (Reason{KilledCPU, "cpu limit exceeded (a process used the 1 s of RLIMIT_CPU that --cpu-ms 1000 gives each; killed by the kernel)"}) {
		t.Errorf("SIGXCPU under --cpu-ms 1000: %+v (signal %q)", end.KilledBy, end.Exit.Signal)
	}
	if end = Enforce(startTree(t, "kill -XCPU $$", nil), Limits{Names: taskish}).Wait(); end.KilledBy.Kind != "" || end.Exit.Signal != "SIGXCPU" {
		t.Errorf("SIGXCPU without a CPU limit is the command's own end: %+v (signal %q)", end.KilledBy, end.Exit.Signal)
	}

	var clock Clock
	end = Enforce(startTree(t, "sleep 30", lim), Limits{Command: lim, Names: taskish, Clock: &clock, Timeout: 50 * time.Millisecond}).Wait()
	if end.KilledBy != (Reason{Kind: KilledTimeout}) {
		t.Errorf("sleep 30 past a timeout of 50 ms: %+v", end.KilledBy)
	}

	run := Enforce(startTree(t, "sleep 30", lim), Limits{Command: lim, Names: taskish})
	run.Kill(Reason{KilledSession, "closed"})
	run.Kill(Reason{Kind: KilledCancelled})
	if end = run.Wait(); end.KilledBy != (Reason{KilledSession, "closed"}) {
		t.Errorf("killed twice: %+v, want the first reason", end.KilledBy)
	}
	run.Kill(Reason{Kind: KilledCancelled}) // after Wait: nothing to do, nothing changes
}
