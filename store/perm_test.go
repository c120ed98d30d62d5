package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

const nobody = 65534

// Root ignores permission bits, so the paths that matter to ordinary users (copying a
// read-only tree, updating a baseline directory without write permission, discarding
// it) are run by the test binary re-executed as an unprivileged user.
func TestReadOnlyTreeAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	e := newEnv(t)
	top := filepath.Dir(e.src)
	writeFile(t, e.src, "ro/f.txt", "old")
	writeFile(t, e.src, "ro/keep/k.txt", "k")
	os.Chmod(filepath.Join(e.src, "ro/f.txt"), 0o444)
	os.Chmod(filepath.Join(e.src, "ro/keep"), 0o555)
	os.Chmod(filepath.Join(e.src, "ro"), 0o555)
	bin := filepath.Join(top, "store.test")
	copyExecutable(t, os.Args[0], bin)
	for _, dir := range []string{top, e.state} {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
	}
	os.Chmod(e.state, 0o700)
	// The user must be able to reach the test's directories: open up the test's own
	// temporary directories, and skip if the temp root itself is closed.
	tmp := os.TempDir()
	for d := filepath.Dir(tmp); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by other users, so uid %d cannot reach the test tree", d, nobody)
		}
		if d == "/" {
			break
		}
	}
	for _, start := range []string{filepath.Dir(top), filepath.Dir(e.state)} {
		for d := start; policy.Within(d, tmp); d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
				os.Chmod(d, fi.Mode().Perm()|0o001)
			}
		}
	}

	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{childEnv + "=asuser", "STATE_DIR=" + e.state, "SRC=" + e.src, "STORAGE=" + e.storage, "MODE=" + e.mode, "HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
	if readFile(t, e.src, "ro/f.txt") != "new" || readFile(t, e.src, "ro/new.txt") != "added" {
		t.Error("host not updated")
	}
	if fi, _ := os.Stat(filepath.Join(e.src, "ro/keep")); fi.Mode().Perm() != 0o755 || readFile(t, e.src, "ro/keep/n.txt") != "n" {
		t.Errorf("ro/keep mode %v; want the host's 0755 kept and n.txt added", fi.Mode())
	}
}

// readOnlyWorkflow runs in the unprivileged child: create, edit inside read-only
// directories the way an agent must (open them up first), sync, sync again, discard.
func readOnlyWorkflow(s *Store) error {
	ctx := context.Background()
	res, err := s.Create(ctx, CreateRequest{HostPath: os.Getenv("SRC"), SandboxPath: "/mnt/p", StoragePath: os.Getenv("STORAGE"), CopyMode: os.Getenv("MODE")})
	if err != nil {
		return err
	}
	ws, err := s.Lookup(res.WorkspaceID)
	if err != nil {
		return err
	}
	ro := filepath.Join(ws.Work, "ro")
	for _, step := range []error{
		os.Chmod(ro, 0o755),
		os.Chmod(filepath.Join(ro, "f.txt"), 0o644),
		os.WriteFile(filepath.Join(ro, "f.txt"), []byte("new"), 0o644),
		os.WriteFile(filepath.Join(ro, "new.txt"), []byte("added"), 0o644),
	} {
		if step != nil {
			return step
		}
	}
	if sr, err := s.Sync(ctx, res.WorkspaceID); err != nil || !sr.OK {
		return fmt.Errorf("sync: %+v, %v", sr, err)
	}
	// The baseline now has ro writable; put it back read-only and sync the mode alone.
	if err := os.Chmod(ro, 0o555); err != nil {
		return err
	}
	if sr, err := s.Sync(ctx, res.WorkspaceID); err != nil || !sr.OK || changesOf(sr.Changes) != "modify ro" {
		return fmt.Errorf("second sync: %+v, %v", sr, err)
	}
	if st, err := s.Status(ctx, res.WorkspaceID); err != nil || len(st.Changes) != 0 {
		return fmt.Errorf("status after sync: %+v, %v", st, err)
	}
	// The host opens ro/keep while the workspace adds a file there and leaves it
	// read-only: the baseline's copy of keep must be opened up to take the file.
	keep := filepath.Join(os.Getenv("SRC"), "ro/keep")
	wkeep := filepath.Join(ws.Work, "ro/keep")
	for _, step := range []error{
		os.Chmod(keep, 0o755),
		os.Chmod(wkeep, 0o755),
		os.WriteFile(filepath.Join(wkeep, "n.txt"), []byte("n"), 0o644),
		os.Chmod(wkeep, 0o555),
	} {
		if step != nil {
			return step
		}
	}
	if sr, err := s.Sync(ctx, res.WorkspaceID); err != nil || !sr.OK || changesOf(sr.Changes) != "add ro/keep/n.txt" {
		return fmt.Errorf("third sync: %+v, %v", sr, err)
	}
	if _, err := s.Discard(ctx, res.WorkspaceID); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("STORAGE"), res.WorkspaceID)); !os.IsNotExist(err) {
		return fmt.Errorf("storage left after discard: %v", err)
	}
	return nil
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
