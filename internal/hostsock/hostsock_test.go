package hostsock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A parent too long for a socket address (a test's TMPDIR, say) gives a socket
// in /tmp; a short one is kept.
func TestListenLongParent(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	for parent, wantIn := range map[string]string{long: "/tmp", t.TempDir(): ""} {
		dir, ln, err := Listen(parent, "autobox-test", "x.sock")
		if err != nil {
			t.Fatalf("Listen below %s: %v", parent, err)
		}
		if wantIn == "" {
			wantIn = parent
		}
		if filepath.Dir(dir) != wantIn {
			t.Errorf("Listen below %s made %s, want it in %s", parent, dir, wantIn)
		}
		ln.Close()
		os.RemoveAll(dir)
	}
}
