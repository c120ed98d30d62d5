package launcherbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The test binary plays a binary that carries a launcher: a copy of it with
// /bin/true appended as the payload, run with childEnv naming a string of the
// payload's head as the build ID it was "linked" with.
const childEnv = "AUTOBOX_LAUNCHERBIN_TEST_ID"

// TestMemfdLauncher: the payload is found, copied into a memfd that stays open
// through garbage collections (an *os.File's finalizer would close it), runs,
// and cannot be written; once it would not run, launchers start from the
// binary; a build ID that is not the payload's is refused.
func TestMemfdLauncher(t *testing.T) {
	if id := os.Getenv(childEnv); id != "" {
		child(t, id)
		return
	}
	payload, err := os.ReadFile("/bin/true")
	if err != nil || len(payload) < 4096 {
		t.Skip("no /bin/true to carry")
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	carrier := filepath.Join(t.TempDir(), "carrier")
	b := append(append(self, payload...), fmt.Sprintf("%s%016d", TrailerMagic, len(payload))...)
	if err := os.WriteFile(carrier, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, id, want string
	}{
		{"its own", printableRun(t, payload[:32<<10]), "memfd: ok"},
		{"another build's", "not-in-the-payload", "(build ID differs)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(carrier, "-test.run=^TestMemfdLauncher$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"="+c.id)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), c.want) {
				t.Errorf("want %q: %v\n%s", c.want, err, out)
			}
		})
	}
}

// printableRun is the first run of 12 or more printable bytes in b, a
// stand-in for the Go build ID a launcher carries near its start.
func printableRun(t *testing.T, b []byte) string {
	t.Helper()
	start := 0
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			if i-start >= 12 {
				return string(b[start:i])
			}
			start = i + 1
		}
	}
	t.Skip("no printable run in /bin/true's head")
	return ""
}

func child(t *testing.T, id string) {
	buildID = id
	self, _ := os.Executable()
	path := Path(self)
	if ok, why := Small(); !ok {
		t.Logf("memfd: %s", why)
		return
	}
	if !strings.HasPrefix(path, "/proc/self/fd/") {
		t.Fatalf("Path: %q", path)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if err := exec.Command(path).Run(); err != nil {
		t.Fatalf("running the memfd after collections: %v", err)
	}
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		_, err = f.Write([]byte("x"))
		f.Close()
		if err == nil {
			t.Fatal("the memfd was written to")
		}
	}
	if Path("/bin/true") != "/bin/true" {
		t.Error("another program's path was replaced")
	}
	// A memfd that will not run (here: gone) is given up for this binary.
	memfd.Close()
	err := exec.Command(path).Run()
	if err == nil || !Retry(path, self, err) {
		t.Fatalf("a memfd that would not run (%v): no retry from the binary", err)
	}
	if Path(self) != self || Retry(self, self, err) {
		t.Fatal("after a retry, launchers still start from the memfd, or the binary itself is retried")
	}
	t.Log("memfd: ok")
}
