package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/xfstest"
)

// onTmpfs sets up what scratchDirs reads to choose a tmpfs: TMPDIR unset,
// calls' memory bounded (or not), bases as given.
func onTmpfs(t *testing.T, bounded bool, bases ...string) {
	t.Helper()
	if old, set := os.LookupEnv("TMPDIR"); set {
		os.Unsetenv("TMPDIR")
		t.Cleanup(func() { os.Setenv("TMPDIR", old) })
	}
	savedB, savedM, savedF := tmpfsBases, memoryBounded, tmpfsFloor
	tmpfsBases = func() []string { return bases }
	memoryBounded = func() bool { return bounded }
	t.Cleanup(func() { tmpfsBases, memoryBounded, tmpfsFloor = savedB, savedM, savedF })
}

// shmDir is a directory of the test's own on /dev/shm (a tmpfs), or a skip.
func shmDir(t *testing.T) string {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a tmpfs here")
	}
	dir, err := os.MkdirTemp("/dev/shm", "autobox-test-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// takeScratch takes a scratch dir from scratchDirs of its own; both go at the
// test's end.
func takeScratch(t *testing.T) string {
	t.Helper()
	d := newScratchDirs()
	t.Cleanup(d.close)
	dir, err := d.take()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeScratch(dir) })
	return dir
}

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return fs.Type == unix.TMPFS_MAGIC
}

func mode(t *testing.T, p string) (os.FileMode, int) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return os.FileMode(st.Mode & 0o7777), int(st.Uid)
}

// TestScratchOnTmpfs: with calls' memory bounded and TMPDIR unset, each call's
// scratch dir is made in a private dir (0700, this process's, named for it) on
// the tmpfs, and both go once used and closed.
func TestScratchOnTmpfs(t *testing.T) {
	base := shmDir(t)
	onTmpfs(t, true, base)
	tmpfsFloor = 0
	d := newScratchDirs()
	dir, err := d.take()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(dir)
	if filepath.Dir(parent) != base || !strings.HasPrefix(filepath.Base(parent), scratchPrefix()) || !isTmpfs(t, dir) {
		t.Fatalf("scratch dir %s: want it in a dir %s* of %s, on a tmpfs", dir, scratchPrefix(), base)
	}
	for _, p := range []string{parent, dir} {
		if m, uid := mode(t, p); m != 0o700 || uid != os.Geteuid() {
			t.Errorf("%s: mode %o owner %d, want 0700 and %d", p, m, uid, os.Geteuid())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.release(dir)
	d.close()
	for _, p := range []string{dir, parent} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after close: %v", p, err)
		}
	}
}

// TestScratchStaysInTempDir: every condition for a tmpfs unmet in turn sends
// scratch dirs to the temp dir, and only that one.
func TestScratchStaysInTempDir(t *testing.T) {
	shm := shmDir(t)
	disk := t.TempDir()
	if isTmpfs(t, disk) {
		t.Skip("the temp dir is a tmpfs here")
	}
	open := filepath.Join(shm, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777) // writable by all, no sticky bit
	linkedShm := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(shm, linkedShm); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		bounded bool
		bases   []string
		floor   uint64
		tmpdir  bool
		want    string // base the scratch dir is in, "" for the temp dir
	}{
		{"control: a tmpfs", true, []string{shm}, 0, false, shm},
		{"control: a link to a tmpfs is resolved", true, []string{linkedShm}, 0, false, shm},
		{"control: the second base when the first is no tmpfs", true, []string{disk, shm}, 0, false, shm},
		{"no memory cgroup", false, []string{shm}, 0, false, ""},
		{"TMPDIR set", true, []string{shm}, 0, true, ""},
		{"not a tmpfs", true, []string{disk}, 0, false, ""},
		{"relative path", true, []string{"dev/shm"}, 0, false, ""},
		{"writable by all without the sticky bit", true, []string{open}, 0, false, ""},
		{"full: less free than the floor", true, []string{shm}, 1 << 62, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			onTmpfs(t, c.bounded, c.bases...)
			tmpfsFloor = c.floor
			if c.tmpdir {
				t.Setenv("TMPDIR", disk)
			}
			dir := takeScratch(t)
			in := filepath.Dir(filepath.Dir(dir))
			if c.want == "" {
				in = filepath.Dir(dir)
				if in != filepath.Clean(os.TempDir()) {
					t.Errorf("scratch dir %s: want it in the temp dir %s", dir, os.TempDir())
				}
				return
			}
			if in != c.want {
				t.Errorf("scratch dir %s: want it below %s", dir, c.want)
			}
		})
	}
}

// TestScratchTmpfsFills: a tmpfs that fills up past the floor sends the next
// calls to the temp dir, and back once it has room again.
func TestScratchTmpfsFills(t *testing.T) {
	mnt, unmount, err := xfstest.MountTmpfsSized(filepath.Join(t.TempDir(), "small"), 16<<20)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unmount() })
	os.Chmod(mnt, 0o777|os.ModeSticky)
	onTmpfs(t, true, mnt)
	tmpfsFloor = 8 << 20
	d := newScratchDirs()
	defer d.close()
	where := func() string {
		t.Helper()
		dir, err := d.take()
		if err != nil {
			t.Fatal(err)
		}
		defer removeScratch(dir)
		if strings.HasPrefix(dir, mnt+"/") {
			return "tmpfs"
		}
		return "temp dir"
	}
	if w := where(); w != "tmpfs" {
		t.Fatalf("control: an empty tmpfs: scratch dir in the %s", w)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 10<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if w := where(); w != "temp dir" {
		t.Errorf("a tmpfs with 6 of 16 MB free, floor 8: scratch dir on the %s", w)
	}
	os.Remove(filler)
	if w := where(); w != "tmpfs" {
		t.Errorf("the tmpfs emptied again: scratch dir in the %s", w)
	}
}

// TestScratchTmpfsRefusesNoexec: a tmpfs mounted noexec is not used (builds
// and tests run what they write to TMPDIR).
func TestScratchTmpfsRefusesNoexec(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "noexec")
	os.Mkdir(mnt, 0o755)
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_NOEXEC, "size=1m,mode=1777"); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	onTmpfs(t, true, mnt)
	tmpfsFloor = 0
	if dir, err := tmpfsScratchParent(); err == nil || !strings.Contains(err.Error(), "noexec") {
		t.Errorf("a noexec tmpfs: got %q, %v", dir, err)
	}
}

// TestScratchTmpfsOtherUser: another user can neither list this server's
// private dir nor enter a call's scratch dir in it, though both are in a
// directory every user may write to (/dev/shm); the server's own uid can.
func TestScratchTmpfsOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as another user needs root")
	}
	base := shmDir(t)
	os.Chmod(base, 0o777|os.ModeSticky)
	onTmpfs(t, true, base)
	tmpfsFloor = 0
	dir := takeScratch(t)
	if !strings.HasPrefix(dir, base+"/") {
		t.Fatalf("control: scratch dir %s is not on the tmpfs %s", dir, base)
	}
	as := func(uid uint32, argv ...string) error {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return cmd.Run()
	}
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := as(0, "/bin/ls", p); err != nil {
			t.Fatalf("control: its own uid cannot list %s: %v", p, err)
		}
		if err := as(65534, "/bin/ls", p); err == nil {
			t.Errorf("another user listed %s", p)
		}
	}
	if err := as(65534, "/bin/sh", "-c", "echo x > "+dir+"/planted"); err == nil {
		t.Errorf("another user wrote into %s", dir)
	}
}

// TestScratchSweepOnTmpfs: the private dirs of dead servers are removed, with
// what they hold; another user's, and a link planted under such a name, are
// left alone (the link's target too).
func TestScratchSweepOnTmpfs(t *testing.T) {
	base := shmDir(t)
	os.Chmod(base, 0o777|os.ModeSticky)
	onTmpfs(t, true, base)
	dead := deadPid(t)
	mine := filepath.Join(base, "autobox-scratch-"+dead+"-mine")
	if err := os.MkdirAll(filepath.Join(mine, "call-1", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o600)
	link := filepath.Join(base, "autobox-scratch-"+dead+"-link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(base, "autobox-scratch-"+strconv.Itoa(os.Getpid())+"-live")
	os.Mkdir(live, 0o700)
	var other string
	if os.Geteuid() == 0 {
		other = filepath.Join(base, "autobox-scratch-"+dead+"-other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	sweepScratch()
	if _, err := os.Lstat(mine); !os.IsNotExist(err) {
		t.Errorf("a dead server's private dir %s was left: %v", mine, err)
	}
	for _, p := range []string{link, filepath.Join(target, "keep"), live, other} {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// deadPid is a pid no process has now: a child's, once reaped.
func deadPid(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for i := 0; i < 50 && func() bool { _, err := os.Stat("/proc/" + strconv.Itoa(pid)); return err == nil }(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return strconv.Itoa(pid)
}

// TestScratchCloseDoesPutOffRemovals: a used dir's removal is put off
// (pace.AfterCall) while the server lives, and close does it at once instead
// of waiting for its time: the dir is gone when close returns, and nothing
// runs after (no refill made by the put-off removal).
func TestScratchCloseDoesPutOffRemovals(t *testing.T) {
	d := newScratchDirs()
	var dir string
	putOff := false
	// The check comes microseconds after release; a machine that stalls
	// this goroutine past pace.AfterCall sees the removal done: again.
	for try := 0; try < 20 && !putOff; try++ {
		var err error
		if dir, err = d.take(); err != nil {
			t.Fatal(err)
		}
		d.release(dir)
		d.mu.Lock()
		putOff = d.later[dir] != nil
		d.mu.Unlock()
	}
	if !putOff {
		t.Fatal("no removal was put off in 20 tries: the test checks nothing")
	}
	d.close()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("after close the used dir is still there (%v)", err)
	}
	if len(d.ready) != 0 {
		t.Errorf("close left %d dirs made ahead", len(d.ready))
	}
}
