package launcher

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// searchTasks finds the kernel's count within the margin, from any hint: a
// right one costs two forks, a wrong one or none a bisection.
func TestSearchTasks(t *testing.T) {
	for _, c := range []struct{ count, hint, maxTries int }{
		{count: 300, hint: 290, maxTries: 2},
		{count: 300, hint: 300, maxTries: 2},
		{count: 300, hint: 240, maxTries: 20},
		{count: 300, hint: 5000, maxTries: 20},
		{count: 300, hint: -1, maxTries: 20},
		{count: 0, hint: -1, maxTries: 20},
		{count: 90000, hint: 12, maxTries: 20},
	} {
		tries := 0
		up, ok := searchTasks(c.hint, 96367, 64, func(n int) bool { tries++; return c.count >= n })
		if !ok || up <= c.count || up > c.count+64 || tries > c.maxTries {
			t.Errorf("count %d, hint %d: up %d, ok %v after %d forks; want the count below up, up at most 64 above, in %d forks at most", c.count, c.hint, up, ok, tries, c.maxTries)
		}
	}
	if _, ok := searchTasks(-1, 1000, 64, func(n int) bool { return n <= 1000 }); ok {
		t.Error("a user at the hard limit already: want not ok")
	}
}

// retryRefusedFork tries a fork refused EAGAIN again until it succeeds, gives
// up after its wait with the limit named, and returns any other error at once.
func TestRetryRefusedFork(t *testing.T) {
	calls := 0
	fork := func() (int, error) {
		calls++
		if calls < 3 {
			return 0, syscall.EAGAIN
		}
		return 42, nil
	}
	pid, err := fork()
	if pid, err = retryRefusedFork(pid, err, fork, 5*time.Second, 99); pid != 42 || err != nil || calls != 3 {
		t.Errorf("refused twice, then started: pid %d, %v after %d forks; want 42 after 3", pid, err, calls)
	}
	calls = 0
	refused := func() (int, error) { calls++; return 0, syscall.EAGAIN }
	pid, err = refused()
	_, err = retryRefusedFork(pid, err, refused, 30*time.Millisecond, 99)
	if !errors.Is(err, syscall.EAGAIN) || !strings.Contains(err.Error(), "RLIMIT_NPROC of 99 for 30ms") || calls < 2 {
		t.Errorf("refused throughout: %v after %d forks; want EAGAIN naming the limit, after more than one fork", err, calls)
	}
	calls = 0
	missing := func() (int, error) { calls++; return 0, syscall.ENOENT }
	pid, err = missing()
	if _, err = retryRefusedFork(pid, err, missing, 5*time.Second, 99); !errors.Is(err, syscall.ENOENT) || calls != 1 {
		t.Errorf("another error: %v after %d forks; want it at once", err, calls)
	}
}
