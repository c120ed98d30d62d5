package launcher

import (
	"errors"
	"io"
	"os"
)

// oomAdjust makes the command, not the launcher, the OOM killer's choice (in
// the call's memory cgroup, which they share, and on the host). The launcher
// raises its score to the maximum just before it forks the command, which
// inherits it, then sets its own to the minimum, which takes
// CAP_SYS_RESOURCE; without it, back to what it was. A process may always
// raise its score, but lower it only to a floor that only a privileged write
// sets: with CAP_SYS_RESOURCE the raise sets the command's floor to the
// maximum too. Without, a command may lower its processes' scores to the
// launcher's, and the OOM killer may then pick the launcher: the pid
// namespace or the cgroup sweep still kills everything, and the supervisor
// reports a memory kill. The launcher's main thread opens it and passes it to
// the command thread (cmdThread.oom).
type oomAdjust struct {
	f      *os.File // opened before the command thread changes its root
	before []byte   // the score before raise, nil if not raised
}

// open, before the launcher makes itself not dumpable.
func (s *oomAdjust) open() {
	s.f, _ = os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
}

// raise, on the command thread before the fork.
func (s *oomAdjust) raise() {
	var buf [16]byte
	if s.f == nil {
		return
	}
	n, err := s.f.ReadAt(buf[:], 0)
	if n == 0 || err != nil && !errors.Is(err, io.EOF) {
		return
	}
	if s.write("1000") {
		s.before = append([]byte(nil), buf[:n]...)
	}
}

// settle, on the main thread once the command runs.
func (s *oomAdjust) settle() {
	if s.before != nil && !s.write("-1000") {
		_, _ = s.f.WriteAt(s.before, 0)
	}
}

func (s *oomAdjust) write(v string) bool {
	_, err := s.f.WriteAt([]byte(v), 0)
	return err == nil
}
