package jspool

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// specialTree makes a mount with one of each kind of file the bridge must refuse
// without blocking, beside a regular file and a directory for the positive controls.
func specialTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "file.txt"), []byte("data"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(err)
	t.Cleanup(func() { l.Close() })
	must(os.Symlink("loop2", filepath.Join(dir, "loop1")))
	must(os.Symlink("loop1", filepath.Join(dir, "loop2")))
	if os.Geteuid() == 0 {
		// A /dev/zero of the mount's own: reading it would never end.
		must(syscall.Mknod(filepath.Join(dir, "zero"), syscall.S_IFCHR|0o666, int(1<<8|5)))
	}
	return dir
}

func bridgeCall(t *testing.T, b *bridge, op string, args map[string]any) *proto.Reply {
	t.Helper()
	raw, _ := json.Marshal(args)
	done := make(chan *proto.Reply, 1)
	go func() { done <- b.handle(context.Background(), &proto.Bridge{ID: 1, Op: op, Args: raw}) }()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v: no answer", op, args)
		return nil
	}
}

// TestBridgeSpecialFiles: every file verb refuses a FIFO, a socket, a device and a
// symlink loop at once, with an error that says what the file is, and works on a
// regular file and a directory.
func TestBridgeSpecialFiles(t *testing.T) {
	dir := specialTree(t)
	mounts := []policy.Mount{{Host: dir, Sandbox: "/mnt/m", Writable: true}}
	b := newBridge(mounts, 1<<20, 1<<20, false, time.Now().Add(time.Minute))
	defer b.close()

	// Positive controls.
	if r := bridgeCall(t, b, "readFile", map[string]any{"path": "/mnt/m/file.txt"}); r.Error != "" || string(r.Data) != `"data"` {
		t.Errorf("readFile of a regular file: %+v", r)
	}
	if r := bridgeCall(t, b, "listDir", map[string]any{"path": "/mnt/m/sub"}); r.Error != "" || string(r.Data) != `[]` {
		t.Errorf("listDir of a directory: %+v", r)
	}
	if r := bridgeCall(t, b, "writeFile", map[string]any{"path": "/mnt/m/file.txt", "content": "new"}); r.Error != "" {
		t.Errorf("writeFile of a regular file: %+v", r)
	}

	cases := []struct{ name, kind string }{
		{"fifo", "it is a FIFO (named pipe)"},
		{"sock", "it is a unix socket"},
		{"zero", "it is a character device"},
		{"loop1", "too many levels of symbolic links"},
	}
	for _, c := range cases {
		if c.name == "zero" && os.Geteuid() != 0 {
			t.Logf("no device case: mknod needs root")
			continue
		}
		p := "/mnt/m/" + c.name
		for _, op := range []string{"readFile", "writeFile", "listDir"} {
			args := map[string]any{"path": p}
			if op == "writeFile" {
				args["content"] = "x"
			}
			r := bridgeCall(t, b, op, args)
			want := c.kind
			if op == "listDir" && c.name != "loop1" {
				want = "not a directory: " + c.kind
			}
			if !strings.HasPrefix(r.Error, op+": "+p+": ") || !strings.Contains(r.Error, want) {
				t.Errorf("%s(%s): got error %q, want one naming the path and %q", op, p, r.Error, want)
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced by a write: %v %v", fi, err)
	}
	leftovers(t, dir)
}

// leftovers fails the test for any temp file of the bridge left under dir.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".autobox-") && strings.HasSuffix(d.Name(), ".tmp") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

// TestBridgeWriteThroughLinks: a write through links that stay inside replaces the
// file they name, in the directory they lead to, and leaves no temp file anywhere.
func TestBridgeWriteThroughLinks(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "target"), []byte("old"), 0o600)
	os.Symlink("a/b/target", filepath.Join(dir, "l1"))
	os.Symlink("l1", filepath.Join(dir, "l2"))
	b := newBridge([]policy.Mount{{Host: dir, Sandbox: "/mnt/m", Writable: true}}, 1<<20, 1<<20, false, time.Now().Add(time.Minute))
	defer b.close()
	if r := bridgeCall(t, b, "writeFile", map[string]any{"path": "/mnt/m/l2", "content": "new"}); r.Error != "" {
		t.Fatalf("writeFile through two links: %s", r.Error)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a", "b", "target")); string(got) != "new" {
		t.Errorf("target holds %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a", "b", "target")); fi.Mode().Perm() != 0o600 {
		t.Errorf("target's mode became %v", fi.Mode().Perm())
	}
	for _, l := range []string{"l1", "l2"} {
		if fi, err := os.Lstat(filepath.Join(dir, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link", l)
		}
	}
	// Refused: a write into a directory that is not there.
	if r := bridgeCall(t, b, "writeFile", map[string]any{"path": "/mnt/m/nope/x", "content": "x"}); !strings.Contains(r.Error, "no such file or directory") {
		t.Errorf("writeFile into a missing directory: %q", r.Error)
	}
	leftovers(t, dir)
}

// TestBridgeDeadline: a request that arrives after its call's deadline is answered
// at once with an error, and touches nothing.
func TestBridgeDeadline(t *testing.T) {
	dir := specialTree(t)
	b := newBridge([]policy.Mount{{Host: dir, Sandbox: "/mnt/m", Writable: true}}, 1<<20, 1<<20, false, time.Now().Add(-time.Second))
	defer b.close()
	r := bridgeCall(t, b, "writeFile", map[string]any{"path": "/mnt/m/late.txt", "content": "x"})
	if !strings.Contains(r.Error, "time limit") {
		t.Errorf("late writeFile: %q", r.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "late.txt")); err == nil {
		t.Errorf("a write after the deadline happened")
	}
}

// TestHostOpAbandonsABlockedSyscall: an open that blocks in the kernel (a FIFO opened
// without O_NONBLOCK, as a FUSE or NFS call might) is given up at the deadline; when
// the kernel lets go later, what it opened is closed and the stuck count falls back.
func TestHostOpAbandonsABlockedSyscall(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	before := stuckHostOps.Load()
	var discarded atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := hostOp(ctx, func() (*os.File, error) { return os.Open(fifo) }, func(f *os.File) {
		f.Close()
		discarded.Store(true)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hostOp returned %v, want the deadline", err)
	}
	if got := stuckHostOps.Load(); got != before+1 {
		t.Errorf("stuck operations: %d, want %d", got, before+1)
	}
	if le := lateError("readFile", "/mnt/x", err); le == nil || !strings.Contains(le.Error(), "did not answer within the call's time limit") {
		t.Errorf("lateError: %v", le)
	}
	// A writer lets the blocked open return.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for end := time.Now().Add(10 * time.Second); stuckHostOps.Load() != before && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if stuckHostOps.Load() != before || !discarded.Load() {
		t.Errorf("after the kernel let go: stuck %d (want %d), discarded %v", stuckHostOps.Load(), before, discarded.Load())
	}
}

// TestHostOpBoundsStuckCalls: past maxStuckHostOps abandoned operations, new ones are
// refused without starting; once they return, operations run again.
func TestHostOpBoundsStuckCalls(t *testing.T) {
	release := make(chan struct{})
	before := stuckHostOps.Load()
	for range maxStuckHostOps - int(before) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		_, err := hostOp(ctx, func() (int, error) { <-release; return 0, nil }, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("blocked op: %v", err)
		}
	}
	ran := false
	_, err := hostOp(context.Background(), func() (int, error) { ran = true; return 0, nil }, nil)
	if !errors.Is(err, errHostStuck) || ran {
		t.Errorf("with %d operations stuck: err %v, ran %v", stuckHostOps.Load(), err, ran)
	}
	close(release)
	for end := time.Now().Add(10 * time.Second); stuckHostOps.Load() != before && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if v, err := hostOp(context.Background(), func() (int, error) { return 7, nil }, nil); v != 7 || err != nil {
		t.Errorf("after the stuck ones returned: %v %v", v, err)
	}
}

// TestBridgeHonoursPermissions: a directory nobody may enter is closed to the bridge
// as it is to a command, even when the server runs as root; and the capabilities the
// bridge's threads give up never come back to the server's other goroutines.
func TestBridgeHonoursPermissions(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(locked, "f"), []byte("secret"), 0o644)
	os.Chmod(locked, 0)
	defer os.Chmod(locked, 0o755)
	b := newBridge([]policy.Mount{{Host: dir, Sandbox: "/mnt/m", Writable: true}}, 1<<20, 1<<20, false, time.Now().Add(time.Minute))
	defer b.close()
	for op, args := range map[string]map[string]any{
		"listDir":   {"path": "/mnt/m/locked"},
		"readFile":  {"path": "/mnt/m/locked/f"},
		"writeFile": {"path": "/mnt/m/locked/g", "content": "x"},
	} {
		for range 20 {
			if r := bridgeCall(t, b, op, args); r.Error != op+": "+args["path"].(string)+": permission denied" {
				t.Fatalf("%s in a mode-0 directory: %+v", op, r)
			}
		}
	}
	// Positive control: the mount itself.
	if r := bridgeCall(t, b, "listDir", map[string]any{"path": "/mnt/m"}); r.Error != "" || string(r.Data) != `["locked"]` {
		t.Errorf("listDir /mnt/m: %+v", r)
	}
	if os.Geteuid() != 0 {
		return
	}
	// Root's other goroutines keep root's access, on whatever thread they run.
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := os.ReadDir(locked)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("the test process (root) lost its capabilities: %v", err)
		}
	}
}
