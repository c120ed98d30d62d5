package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
	"golang.org/x/sys/unix"
)

// inOwnMountNS runs f on a thread of its own that readOnlyMounts may change
// for good: the thread is thrown away after (its goroutine ends locked).
func inOwnMountNS(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- f()
	}()
	return <-done
}

// TestReadOnlyMountsLinkSwapped: the fallback where no private root can be built
// binds each read-write path onto itself; a path checked free of links that
// has become one since (proj/sub swapped for a link to a private directory)
// must fail the call, never make the link's target writable (nor, as a bind,
// allowed by the Landlock rule of the path). The control: the directory
// itself is bound writable while the rest of the host is read-only.
func TestReadOnlyMountsLinkSwapped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a mount namespace here needs root (CAP_SYS_ADMIN)")
	}
	base := t.TempDir()
	sub, private := filepath.Join(base, "sub"), filepath.Join(base, "private")
	for _, d := range []string{sub, private} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}

	err := inOwnMountNS(func() error {
		if err := readOnlyMounts(&policy.Sandbox{ReadWrite: []string{link}, NoFollow: true}); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(private, "planted"), nil, 0o644)
	})
	if !errors.Is(err, confine.ErrPolicy) {
		t.Errorf("a read-write path that is a link now: %v, want the call refused (confine.ErrPolicy)", err)
	}

	err = inOwnMountNS(func() error {
		if err := readOnlyMounts(&policy.Sandbox{ReadWrite: []string{sub}, NoFollow: true}); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sub, "ok"), nil, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(private, "planted"), nil, 0o644); !errors.Is(err, unix.EROFS) {
			return errors.New("the rest of the host is not read-only: " + errString(err))
		}
		return nil
	})
	if err != nil {
		t.Errorf("control, the directory itself read-write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(private, "planted")); err == nil {
		t.Error("a file was written into the private directory")
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
