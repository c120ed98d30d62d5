//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/internal/treegen"
	"github.com/autobox-dev/autobox/internal/xfstest"
	"golang.org/x/sys/unix"
)

// The disk limit (maxWriteMb) and its kill: files written past it, an orphan left
// writing, fallocate, and a tree of many files.

// writeFiles is a shell script that writes n files of mb MB each into dir with dd,
// a moment apart: the watchdog looks every 10 ms, and a command that writes past
// its limit and exits within one look is not stopped (its usage tells).
func writeFiles(dir string, n, mb int) []string {
	return bash(fmt.Sprintf(`cd %s && for i in $(seq %d); do dd if=/dev/zero of=f$i bs=1M count=%d status=none || exit 9; sleep 0.05; done; echo wrote`, dir, n, mb))
}

// scratchListed is the listing of the files a disk-limit kill left in the scratch
// dir: f1 and f2 of writeFiles in $TMPDIR, named /tmp/f1 where the command had a
// private root (its /tmp), f1 where $TMPDIR was the scratch dir itself.
var scratchListed = regexp.MustCompile(`files in the scratch dir \(\$HOME, \$TMPDIR\), removed with the call: (/tmp/)?f1 \(8\.0 MB\), (/tmp/)?f2 \(8\.0 MB\)`)

// TestLimitDisk: bytes written to a rw mount (on a small XFS image or a tmpfs the
// test makes, never the machine's own disk) and to the scratch dir ($TMPDIR, put on
// such an image too) count against maxWriteMb: past it the call is killed, the files
// written before stay in the mount and are listed for the scratch dir; one file past
// it gets EFBIG.
func TestLimitDisk(t *testing.T) {
	requireSandbox(t)
	// Cleanups run last first: the server stops, then the scratch dirs are
	// checked, then the filesystems go.
	xfs, unmountXFS, err := xfstest.MountXFS(t.TempDir(), 320<<20)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unmountXFS() })
	tmpfs, unmountTmpfs, err := xfstest.MountTmpfs(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unmountTmpfs() })
	scratchBase := filepath.Join(xfs, "tmp")
	for _, d := range []string{scratchBase, filepath.Join(xfs, "rw")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if left, _ := filepath.Glob(filepath.Join(scratchBase, "autobox-scratch-*")); len(left) > 0 {
			t.Errorf("scratch dirs left: %v", left)
		}
	})
	s := startEnv(t, []string{"TMPDIR=" + scratchBase})
	places := []struct {
		name, host, dir string
		mounts          []map[string]any
	}{
		{"rw mount on xfs", filepath.Join(xfs, "rw"), "/mnt/out", []map[string]any{{"hostPath": filepath.Join(xfs, "rw"), "sandboxPath": "/mnt/out", "mode": "rw"}}},
		{"rw mount on tmpfs", tmpfs, "/mnt/out", []map[string]any{{"hostPath": tmpfs, "sandboxPath": "/mnt/out", "mode": "rw"}}},
		{"$TMPDIR", "", `"$TMPDIR"`, nil},
	}
	for _, p := range places {
		// Positive control: 16 MB under maxWriteMb 20.
		o := s.limited(map[string]any{"command": writeFiles(p.dir, 2, 8), "mounts": p.mounts, "maxWriteMb": 20, "timeoutMs": 20000})
		if o.Killed || o.Stdout != "wrote\n" || !within(o.Usage.WrittenMb, 16) {
			t.Errorf("%s: 16 MB under maxWriteMb 20: %+v", p.name, o)
		}
		// Gone before the next call: overwriting files whose pages are still
		// dirty cancels their bytes (cancelled_write_bytes), and the count is
		// the tree's net writes: 40 MB over 16 MB not yet written back counts 24.
		clean(t, p.host)
		// 5 files of 8 MB: killed once past 20 MB; the files written before remain.
		o = s.limited(map[string]any{"command": writeFiles(p.dir, 5, 8), "mounts": p.mounts, "maxWriteMb": 20, "timeoutMs": 20000})
		if !o.Killed || !strings.HasPrefix(o.Stderr, "disk limit exceeded (") || !strings.Contains(o.Stderr, " MB written > maxWriteMb 20; watchdog)") || o.Usage.WrittenMb <= 20 {
			t.Errorf("%s: 40 MB past maxWriteMb 20: %+v", p.name, o)
		}
		if p.host != "" {
			for _, f := range []string{"f1", "f2"} {
				if fi, err := os.Stat(filepath.Join(p.host, f)); err != nil || fi.Size() != 8<<20 {
					t.Errorf("%s: %s written before the kill: %v", p.name, f, err)
				}
			}
		} else if !scratchListed.MatchString(o.Stderr) {
			t.Errorf("%s: the files written before the kill are not listed: %q", p.name, o.Stderr)
		}
		clean(t, p.host)
		// One file past the limit: EFBIG (RLIMIT_FSIZE) at the limit, not a kill;
		// just under, no error.
		dd := func(mb int) []string {
			return bash(fmt.Sprintf(`cd %s && dd if=/dev/zero of=one bs=1M count=%d status=none; echo status=$?`, p.dir, mb))
		}
		o = s.limited(map[string]any{"command": dd(19), "mounts": p.mounts, "maxWriteMb": 20, "timeoutMs": 20000})
		if o.Killed || o.Stdout != "status=0\n" {
			t.Errorf("%s: one file just under maxWriteMb 20: %+v", p.name, o)
		}
		clean(t, p.host)
		o = s.limited(map[string]any{"command": dd(21), "mounts": p.mounts, "maxWriteMb": 20, "timeoutMs": 20000})
		if o.Killed || o.Stdout != "status=1\n" || !strings.Contains(o.Stderr, "File too large") {
			t.Errorf("%s: one file past maxWriteMb 20: want EFBIG, got %+v", p.name, o)
		}
		clean(t, p.host)
	}
}

// TestLimitDiskOrphan: a writer that left its parent (a setsid'd subshell
// whose parent exited, so the launcher adopted it) is still in the watched
// tree: the watchdog reads a launcher's children from its main thread, which
// the kernel gives orphans to. Its writes count toward maxWriteMb and it is
// killed past it; positive control: the same orphan writing less runs on, and
// its writes are counted once it is gone. As root the command's cgroup counts
// the writes too; as an ordinary user without a cgroup of its own the walk is
// all there is (with the launcher's children unread, this failed there).
func TestLimitDiskOrphan(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	orphan := func(files int) []string {
		return bash(fmt.Sprintf(`(setsid bash -c 'cd "$TMPDIR"; for i in $(seq %d); do dd if=/dev/zero of=f$i bs=1M count=4 status=none; sleep 0.1; done' &); sleep 3; echo waited`, files))
	}
	o := s.limited(map[string]any{"command": orphan(2), "maxWriteMb": 10, "timeoutMs": 20000})
	if o.Killed || o.Stdout != "waited\n" || !within(o.Usage.WrittenMb, 8) {
		t.Errorf("an orphan writing 8 MB under maxWriteMb 10: %+v", o)
	}
	o = s.limited(map[string]any{"command": orphan(6), "maxWriteMb": 10, "timeoutMs": 20000})
	if !o.Killed || !strings.HasPrefix(o.Stderr, "disk limit exceeded (") || !strings.Contains(o.Stderr, " MB written > maxWriteMb 10; watchdog)") {
		t.Errorf("an orphan writing 24 MB past maxWriteMb 10: %+v", o)
	}
}

// TestLimitFallocate: fallocate(2) would allocate blocks without writing them,
// out of sight of the write accounting (and with KEEP_SIZE of RLIMIT_FSIZE): it
// fails with EOPNOTSUPP, and posix_fallocate writes the blocks instead, which
// count.
func TestLimitFallocate(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("fallocate"); err != nil {
		t.Skip("fallocate(1) is not installed")
	}
	xfs, unmount, err := xfstest.MountXFS(t.TempDir(), 320<<20)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unmount() })
	s := start(t)
	mounts := []map[string]any{{"hostPath": xfs, "sandboxPath": "/mnt/out", "mode": "rw"}}
	o := s.limited(map[string]any{"command": bash("touch /mnt/out/a && fallocate --keep-size -l 200M /mnt/out/a; echo status=$?"), "mounts": mounts, "maxWriteMb": 20})
	// fallocate(1) says "keep size mode is unsupported" for EOPNOTSUPP.
	if o.Stdout != "status=1\n" || !strings.Contains(o.Stderr, "unsupported") {
		t.Errorf("fallocate --keep-size: %+v", o)
	}
	o = s.limited(map[string]any{"command": bash("fallocate --posix -l 10M /mnt/out/b; echo status=$?"), "mounts": mounts, "maxWriteMb": 20, "timeoutMs": 10000})
	if o.Stdout != "status=0\n" || !within(o.Usage.WrittenMb, 10) {
		t.Errorf("fallocate --posix (written zeros): %+v", o)
	}
}

// clean empties a host directory the calls wrote to ("" for the scratch dir,
// which goes with its call).
func clean(t *testing.T, dir string) {
	t.Helper()
	if dir == "" {
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// TestLimitDiskBigTree: the writes watchdog costs the same whatever the size of
// the writable tree: a rw mount of 100,000 files, a command that grows a few and
// adds some, and the limit still holds there.
func TestLimitDiskBigTree(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs for the tree needs root")
	}
	tmpfs := t.TempDir()
	if err := unix.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=128m,nr_inodes=0,mode=0755"); err != nil {
		t.Skip(err)
	}
	defer unix.Unmount(tmpfs, unix.MNT_DETACH)
	if err := treegen.Generate(tmpfs, 100000, 0); err != nil { // empty files: no page each
		t.Fatal(err)
	}
	s := start(t)
	mounts := []map[string]any{{"hostPath": tmpfs, "sandboxPath": "/mnt/tree", "mode": "rw"}}
	o := s.limited(map[string]any{"command": bash(`cd /mnt/tree && find . -type f | head -3 | while read f; do head -c 2000000 /dev/zero >> "$f"; done && dd if=/dev/zero of=new bs=1M count=4 status=none && echo ok`), "mounts": mounts, "maxWriteMb": 20, "timeoutMs": 20000})
	if o.Killed || o.Stdout != "ok\n" || !within(o.Usage.WrittenMb, 10) {
		t.Errorf("10 MB into a tree of 100,000 files: %+v", o)
	}
	o = s.limited(map[string]any{"command": writeFiles("/mnt/tree", 5, 8), "mounts": mounts, "maxWriteMb": 20, "timeoutMs": 20000})
	if !o.Killed || !strings.HasPrefix(o.Stderr, "disk limit exceeded (") {
		t.Errorf("40 MB into a tree of 100,000 files past maxWriteMb 20: %+v", o)
	}
}
