package etcsecrets

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHidden: every pattern of List hides what it names, world-readable or
// not, directories whole; an entry that is not world-readable is hidden
// wherever it is; everything else (the positive controls) is not.
func TestHidden(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, mode); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return filepath.Clean(p)
	}
	var want []string
	for _, pat := range List {
		rel := strings.ReplaceAll(pat, "*", "rsa")
		if !strings.Contains(rel, ".") && !strings.Contains(rel, "/") && !strings.HasSuffix(rel, "-") {
			// A bare name may be a directory (sudoers.d is one, wireguard
			// one): make the directory kinds as directories with a file.
			if strings.HasSuffix(pat, ".d") || slices.Contains([]string{"wireguard", "netplan", "wpa_supplicant", "openvpn", "letsencrypt", "krb5kdc", "rancher", "credstore", "gitlab-runner"}, pat) {
				want = append(want, mk(rel+"/", 0o755))
				mk(rel+"/inner", 0o644)
				continue
			}
		}
		want = append(want, mk(rel, 0o644))
	}
	want = append(want, mk("private.conf", 0o600), mk("deep/er/key.pem", 0o640), mk("locked/", 0o700), mk("listonly/", 0o711))
	controls := []string{mk("hostname", 0o644), mk("ssh/ssh_config", 0o644), mk("ssh/ssh_host_rsa_key.pub", 0o644),
		mk("ssl/certs/ca.pem", 0o644), mk("deep/er/cert.pem", 0o644), mk("fonts/", 0o755)}
	if err := os.Symlink("/nonexistent", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	got := New(root).Hidden()
	slices.Sort(want)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s is not hidden", strings.TrimPrefix(w, root))
		}
	}
	for _, c := range append(controls, filepath.Join(root, "dangling")) {
		if slices.Contains(got, c) {
			t.Errorf("%s is hidden", strings.TrimPrefix(c, root))
		}
	}
	for _, g := range got {
		if slices.Contains(want, g) {
			continue
		}
		// Only what is below a hidden directory may be listed besides.
		t.Errorf("unexpected hidden %s", strings.TrimPrefix(g, root))
	}
}

// TestRescan: a secret made, or a file whose mode stops being
// world-readable, after the first walk is hidden at a later call.
func TestRescan(t *testing.T) {
	root := t.TempDir()
	pub := filepath.Join(root, "app.conf")
	if err := os.WriteFile(pub, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(root)
	if got := s.Hidden(); len(got) != 0 {
		t.Fatalf("hidden at first: %v", got)
	}
	if err := os.WriteFile(filepath.Join(root, "shadow"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pub, 0o600); err != nil {
		t.Fatal(err)
	}
	// inotify's events come a moment later (or, without it, the next walk).
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = s.Hidden(); len(got) == 2 {
			break
		}
	}
	if want := []string{pub, filepath.Join(root, "shadow")}; !slices.Equal(got, want) {
		t.Errorf("after the changes: %v, want %v", got, want)
	}
}

// TestScanAgreesWithWalk: the scanner's walk by descriptors finds what a
// plain walk by paths finds (each entry's mode by lstat, each name against
// every pattern of List), on this host's /etc and on a tree of odd cases.
func TestScanAgreesWithWalk(t *testing.T) {
	plain := func(root string) []string {
		hidden := []string{}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if p == root {
				return nil
			}
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					hidden = append(hidden, p)
				}
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			for _, pat := range List {
				if ok, _ := path.Match(pat, rel); ok {
					hidden = append(hidden, p)
					if d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
			}
			if d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			m := info.Mode()
			if m.IsDir() && m.Perm()&0o005 != 0o005 || !m.IsDir() && m.Perm()&0o004 == 0 {
				hidden = append(hidden, p)
				if d.IsDir() {
					return fs.SkipDir
				}
			}
			return nil
		})
		slices.Sort(hidden)
		return hidden
	}
	odd := t.TempDir()
	for _, d := range []string{"a/b/c", "ssh", "sudoers.d", "x/ssh", "locked"} {
		if err := os.MkdirAll(filepath.Join(odd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, mode := range map[string]os.FileMode{"a/b/c/deep.key": 0o600, "a/b/pub": 0o644, "ssh/ssh_host_ed25519_key": 0o644,
		"ssh/moduli": 0o644, "x/ssh/ssh_host_rsa_key": 0o644, "x/shadow": 0o644, "sudoers.d/rule": 0o644, "locked/in": 0o644} {
		if err := os.WriteFile(filepath.Join(odd, f), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(odd, "locked"), 0o700)
	os.Symlink("a", filepath.Join(odd, "link-to-dir"))
	os.Symlink("/etc/shadow", filepath.Join(odd, "link-to-secret"))
	for _, root := range []string{"/etc", odd} {
		if _, err := os.Stat(root); err != nil {
			t.Logf("%s: %v", root, err)
			continue
		}
		got, want := New(root).Hidden(), plain(root)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the scanner hides %d paths, a plain walk %d:\nscanner %v\nwalk    %v", root, len(got), len(want), got, want)
		}
	}
}
