package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/autobox-dev/autobox/internal/xfstest"
)

// Filesystems made once for the whole run. An empty path means unavailable; the
// matching ...Why says why, for t.Skip.
var (
	xfsDir, xfsWhy     string
	tmpfsDir, tmpfsWhy string
)

// childEnv selects a helper role when the test binary re-executes itself.
const childEnv = "AUTOBOX_STORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	base, err := os.MkdirTemp("", "autobox-store-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(base)
	for _, fsys := range []struct {
		name     string
		dir, why *string
		mount    func(string) (string, func() error, error)
	}{
		{"xfs", &xfsDir, &xfsWhy, func(d string) (string, func() error, error) { return xfstest.MountXFS(d, 512<<20) }},
		{"tmpfs", &tmpfsDir, &tmpfsWhy, xfstest.MountTmpfs},
	} {
		if os.Getenv("AUTOBOX_STORE_TEST_NOMOUNT") != "" { // run as a machine without root would
			*fsys.why = "AUTOBOX_STORE_TEST_NOMOUNT is set"
			continue
		}
		dir := filepath.Join(base, fsys.name)
		os.MkdirAll(dir, 0o755)
		mnt, unmount, err := fsys.mount(dir)
		if err != nil {
			*fsys.why = err.Error()
			continue
		}
		*fsys.dir = mnt
		defer unmount()
	}
	return m.Run()
}

// runChild runs a helper role in a re-executed test binary.
func runChild(role string) int {
	s, err := Open(Options{StateDir: os.Getenv("STATE_DIR")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch role {
	case "lock": // hold the operation lock until stdin closes or we are killed
		unlock, err := s.Lock(context.Background())
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("locked")
		bufio.NewReader(os.Stdin).ReadString('\n')
		unlock()
		return 0
	case "use": // use WORKSPACE_ID as a session would, until stdin closes or we are killed
		release, err := s.Use(context.Background(), []string{os.Getenv("WORKSPACE_ID")}, User{Who: "session s-child (sleep 60)", Session: true})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("using")
		bufio.NewReader(os.Stdin).ReadString('\n')
		release()
		return 0
	case "asuser": // an unprivileged user's whole workflow over read-only directories
		if err := readOnlyWorkflow(s); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("ok")
		return 0
	case "sync-kill": // sync, killing ourselves at step KILL_AT (see fault_test.go)
		killAt, _ := strconv.Atoi(os.Getenv("KILL_AT"))
		if os.Getenv("NO_EXCHANGE") != "" {
			exchange = noExchange
		}
		countSteps(func(n int, _ string) error {
			if n == killAt {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			return nil
		})
		return syncAndPrint(s)
	case "op-kill": // OP (merge, resolve, discard, create) killing ourselves at step KILL_AT
		killAt, _ := strconv.Atoi(os.Getenv("KILL_AT"))
		countSteps(func(n int, _ string) error {
			if n == killAt {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			return nil
		})
		res, err := runOp(s, os.Getenv("OP"))
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		json.NewEncoder(os.Stdout).Encode(res)
		return 0
	case "sync": // sync, announcing on stdout when a few files are in, so the parent can kill us mid-way
		n := 0
		testHookApplied = func(string) {
			if n++; n == 3 {
				fmt.Println("progress")
			}
		}
		return syncAndPrint(s)
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}

// runOp runs op on WORKSPACE_ID with PATHS (comma-separated), or creates a
// workspace of HOST_PATH in STORAGE_PATH.
func runOp(s *Store, op string) (any, error) {
	ctx, id := context.Background(), os.Getenv("WORKSPACE_ID")
	paths := strings.Split(os.Getenv("PATHS"), ",")
	switch op {
	case "merge":
		return s.Merge(ctx, id, paths)
	case "resolve":
		return s.Resolve(ctx, id, paths)
	case "discard":
		return s.Discard(ctx, id)
	case "create":
		return s.Create(ctx, CreateRequest{HostPath: os.Getenv("HOST_PATH"), SandboxPath: "/mnt/project", StoragePath: os.Getenv("STORAGE_PATH"), CopyMode: os.Getenv("COPY_MODE")})
	}
	return nil, fmt.Errorf("unknown op %q", op)
}

// syncAndPrint syncs WORKSPACE_ID and prints the result for the parent.
func syncAndPrint(s *Store) int {
	res, err := s.Sync(context.Background(), os.Getenv("WORKSPACE_ID"))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// child starts the test binary in a helper role.
func child(t *testing.T, role, stateDir string, env ...string) (*exec.Cmd, *bufio.Reader, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role, "STATE_DIR=" + stateDir}, env...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(stop)
	return cmd, bufio.NewReader(stdout), func() { stdin.Close() }
}

// env is one test's store plus a source and storage directory. The source and storage
// are on the reflink XFS when there is one (copyMode clone); otherwise in the test's
// temp dir with copyMode auto, so behaviour tests run on any machine.
type env struct {
	t       testing.TB
	s       *Store
	state   string
	src     string
	storage string
	mode    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if xfsDir != "" {
		return newEnvOn(t, xfsDir, CopyModeClone)
	}
	return newEnvOn(t, t.TempDir(), CopyModeAuto)
}

func newEnvOn(t testing.TB, fsDir, mode string) *env {
	t.Helper()
	dir, err := os.MkdirTemp(fsDir, "t-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{t: t, state: t.TempDir(), src: filepath.Join(dir, "src"), storage: filepath.Join(dir, "storage"), mode: mode}
	os.Mkdir(e.src, 0o755)
	if e.s, err = Open(Options{StateDir: e.state, DefaultStorage: filepath.Join(dir, "default-storage")}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) create(excludes ...string) *CreateResult {
	e.t.Helper()
	res, err := e.s.Create(context.Background(), CreateRequest{
		HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: e.mode, Excludes: excludes,
	})
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return res
}

func (e *env) work(id string) string { return filepath.Join(e.storage, id, "work") }

func (e *env) status(id string) *StatusResult {
	e.t.Helper()
	st, err := e.s.Status(context.Background(), id)
	if err != nil {
		e.t.Fatalf("status: %v", err)
	}
	return st
}

func (e *env) sync(id string) *SyncResult {
	e.t.Helper()
	res, err := e.s.Sync(context.Background(), id)
	if err != nil {
		e.t.Fatalf("sync: %v", err)
	}
	return res
}

// mustSync syncs and fails the test unless it succeeded.
func (e *env) mustSync(id string) *SyncResult {
	e.t.Helper()
	res := e.sync(id)
	if !res.OK {
		js, _ := json.Marshal(res)
		e.t.Fatalf("sync not ok: %s", js)
	}
	return res
}

// writeFile writes content at dir/rel, creating parents.
func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// snapshot describes a tree for equality checks: type, permission bits, content or
// link target per path. Staging leftovers are part of it, so they show up in diffs.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v", fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		out[filepath.ToSlash(rel)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTrees(t *testing.T, a, b map[string]string) {
	t.Helper()
	var diffs []string
	for p, d := range a {
		if b[p] != d {
			diffs = append(diffs, fmt.Sprintf("%s: %q vs %q", p, d, b[p]))
		}
	}
	for p, d := range b {
		if _, ok := a[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: missing vs %q", p, d))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("trees differ:\n%s", strings.Join(diffs, "\n"))
	}
}

func changesOf(cs []Change) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, string(c.Action)+" "+c.Path)
	}
	return strings.Join(parts, ", ")
}

// files lists the non-directories beneath dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// opSteps runs op once without faults and returns its steps.
func opSteps(t *testing.T, run func() error) []string {
	t.Helper()
	var steps []string
	countSteps(func(_ int, what string) error { steps = append(steps, what); return nil })
	defer func() { testHookStep = nil }()
	if err := run(); err != nil {
		t.Fatal(err)
	}
	return steps
}

// killedAt runs op in a child that kills itself at step k; it fails the test
// if the op finished.
func killedAt(t *testing.T, e *env, k int, env ...string) {
	t.Helper()
	cmd, out, _ := child(t, "op-kill", e.state, append(env, fmt.Sprint("KILL_AT=", k))...)
	rest, _ := io.ReadAll(out)
	cmd.Wait()
	if len(rest) > 0 {
		t.Fatalf("killed at step %d: the operation finished: %s", k, rest)
	}
}
