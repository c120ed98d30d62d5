package launcher

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
)

// TestPrivateRootAbandon: a root whose building fails half-way is abandoned: the
// thread goes back to the mount namespace it came from, with the host's files,
// and the error says the caller may go on without a private root.
func TestPrivateRootAbandon(t *testing.T) {
	if !confine.HasCapSysAdmin() {
		t.Skip("a private root needs CAP_SYS_ADMIN")
	}
	before, _ := os.Readlink("/proc/thread-self/ns/mnt")
	type result struct {
		inRoot, after string
		hostVisible   bool
		err           error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // the thread is retired with this goroutine
		var res result
		r, err := enterPrivateRoot(false)
		if err != nil {
			res.err = err
			done <- res
			return
		}
		_, statErr := os.Stat("/etc/os-release")
		res.inRoot = fmt.Sprint(statErr != nil)
		res.err = r.abandon(errors.New("a bind failed"))
		res.after, _ = os.Readlink("/proc/thread-self/ns/mnt")
		_, statErr = os.Stat("/etc/os-release")
		res.hostVisible = statErr == nil
		done <- res
	}()
	res := <-done
	if res.inRoot != "true" {
		t.Errorf("the empty root showed /etc/os-release")
	}
	if !errors.Is(res.err, errRootSetup) || !strings.Contains(res.err.Error(), "a bind failed") {
		t.Errorf("abandon: %v, want an errRootSetup saying why", res.err)
	}
	if res.after != before || !res.hostVisible {
		t.Errorf("after abandon: namespace %s (was %s), host files visible %v", res.after, before, res.hostVisible)
	}
}

// TestPrivateRootWatchesOnlyWhenItWaits: a root built ahead of its call (a
// pooled launcher's) watches the host's directories above what it binds, so
// that a long wait can end in a cheap check; one built at its call does not
// (closing the watch costs the launcher's exit an SRCU grace period). The
// positive control is the waiting root, with the same bind.
func TestPrivateRootWatchesOnlyWhenItWaits(t *testing.T) {
	if !confine.HasCapSysAdmin() {
		t.Skip("a private root needs CAP_SYS_ADMIN")
	}
	for _, waits := range []bool{true, false} {
		type result struct {
			watched bool
			err     error
		}
		done := make(chan result)
		go func() {
			runtime.LockOSThread() // the thread is retired with this goroutine
			r, err := enterPrivateRoot(waits)
			if err != nil {
				done <- result{err: err}
				return
			}
			err = r.bind("/usr", bindRO)
			res := result{watched: r.watch >= 0, err: err}
			if r.watch >= 0 {
				unix.Close(r.watch)
			}
			_ = r.abandon(errors.New("the test is done"))
			done <- res
		}()
		res := <-done
		if res.err != nil {
			t.Fatalf("waits %v: %v", waits, res.err)
		}
		if res.watched != waits {
			t.Errorf("a root with waits %v: watched %v, want %v", waits, res.watched, waits)
		}
	}
}
