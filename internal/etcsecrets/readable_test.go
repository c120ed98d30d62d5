package etcsecrets

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestReadable: as an ordinary user, Readable keeps of Hidden what the user
// could read itself: a world-readable secret (the positive control), the
// readable entries of a hidden directory it may list and enter (and one put
// there later), a directory it may enter but not list stays whole; it drops what the
// kernel's permissions keep from it (a 0600 file of its own made 0000, a 0700
// directory it cannot enter), and a hidden directory it may list that is empty. As root Readable is Hidden.
func TestReadable(t *testing.T) {
	root := t.TempDir()
	write := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keytab := write("krb5.keytab", 0o644)            // a secret by name, world-readable
	shadow := write("shadow", 0o000)                 // a secret nobody but root reads
	sudoPublic := write("sudoers.d/public", 0o644)   // inside a hidden directory the user lists
	sudoPrivate := write("sudoers.d/private", 0o000) // ...and one it cannot read
	write("ssl/private/key.pem", 0o644)
	locked := dir("ssl/private", 0o000) // cannot be entered at all
	write("listonly/inner", 0o644)
	if err := os.Mkdir(filepath.Join(root, "openvpn"), 0o755); err != nil { // a hidden directory, empty
		t.Fatal(err)
	}
	listOnly := dir("listonly", 0o311) // entered, not listed, even by its owner
	t.Cleanup(func() { os.Chmod(locked, 0o755); os.Chmod(listOnly, 0o755) })

	s := New(root)
	hidden := s.Hidden()
	for _, p := range []string{keytab, shadow, filepath.Join(root, "sudoers.d"), locked, listOnly} {
		if !slices.Contains(hidden, p) {
			t.Fatalf("%s is not in Hidden %v: the test's tree is not what it means", p, hidden)
		}
	}
	got := s.Readable()
	if os.Geteuid() == 0 {
		if !slices.Equal(got, hidden) {
			t.Errorf("as root Readable %v, want Hidden %v", got, hidden)
		}
		return
	}
	want := []string{keytab, sudoPublic, listOnly}
	slices.Sort(want)
	sorted := slices.Sorted(slices.Values(got))
	if !slices.Equal(sorted, want) {
		t.Errorf("Readable %v, want %v", sorted, want)
	}
	for _, p := range []string{shadow, sudoPrivate, locked, filepath.Join(root, "openvpn")} {
		if slices.Contains(got, p) {
			t.Errorf("%s kept, though the kernel keeps it from this user", p)
		}
	}

	// A file put later in the listed hidden directory is judged at a later call.
	later := write("sudoers.d/later", 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(s.Readable(), later) {
		if time.Now().After(deadline) {
			t.Fatalf("%s, made after the first call, is not in Readable %v", later, s.Readable())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
