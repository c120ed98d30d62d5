package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestScratchDirOnTmpfs: a command's scratch dir ($HOME) is on a tmpfs,
// $XDG_RUNTIME_DIR here, in a private dir of the server's, where calls get
// memory cgroups that hold what it writes there to their limit and TMPDIR is
// not set; else in the temp dir, as before. Either way it works and is gone
// after the call, its private dir with it.
func TestScratchDirOnTmpfs(t *testing.T) {
	requireSandbox(t)
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a tmpfs here")
	}
	runtime, err := os.MkdirTemp("/dev/shm", "autobox-e2e-run-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	home := t.TempDir()
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"XDG_RUNTIME_DIR=" + runtime,
		"AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
	}
	doctor := exec.Command(bin, "doctor")
	doctor.Env = env
	out, _ := doctor.CombinedOutput()
	memcg := false
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "memory" && f[2] == "cgroup" {
			memcg = f[0] == "ok"
		}
	}
	cmd := exec.Command(bin, "exec", "--", "/bin/sh", "-c", `echo "$HOME"; echo x > "$HOME/f" && cat "$HOME/f"`)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err != nil || len(lines) != 2 || lines[1] != "x" {
		t.Fatalf("autobox exec: %v\n%s", err, b)
	}
	scratch := lines[0]
	want := filepath.Clean(os.TempDir()) // the server's: /tmp without TMPDIR
	if memcg {
		want = runtime
		if filepath.Base(filepath.Dir(scratch)) == "" || !strings.HasPrefix(filepath.Base(filepath.Dir(scratch)), "autobox-scratch-") {
			t.Errorf("HOME %s: want it in a private dir autobox-scratch-* of %s", scratch, runtime)
		}
		scratch = filepath.Dir(scratch) // the private dir
	} else {
		t.Log("calls get no memory cgroup here: the scratch dir must stay in the temp dir")
	}
	if filepath.Dir(scratch) != want {
		t.Errorf("HOME below %s, want it below %s (memory cgroups: %v)", scratch, want, memcg)
	}
	if _, err := os.Lstat(scratch); !os.IsNotExist(err) {
		t.Errorf("%s outlived the call: %v", scratch, err)
	}
}
