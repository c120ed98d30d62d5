package etcsecrets

import (
	"os"
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
