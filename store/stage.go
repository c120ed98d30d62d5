package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/lazyre"
)

// stageFiles is how many files a sync stages at once before applying them.
const stageFiles = 16

// stagedFile is a working-tree file copied into the staging directories ahead of its
// turn: hostTmp (durable, for a host op) and baseTmp, both of the version the plan saw.
type stagedFile struct {
	hostTmp, baseTmp string
	cloned           bool
	err              error // reported when the op's turn comes, so earlier ops still apply
}

// stageWindow stages, in parallel, the regular files among the next ops, up to
// stageFiles of them, and returns how many ops the window covers. The host copies are
// made durable once all are written, before any is renamed into place, so a crash
// leaves the old file or the whole new one: fsyncs issued together share the
// filesystem's log commits (one after each clone cost about 1 ms per file on XFS).
func (a *applier) stageWindow(ctx context.Context, ops []op) int {
	a.staged = map[string]*stagedFile{}
	var wg sync.WaitGroup
	n := 0
	for ; n < len(ops); n++ {
		o := ops[n]
		w, _ := a.pl.work.get(o.path)
		if o.remove || w.typ != unix.S_IFREG {
			continue
		}
		if len(a.staged) == stageFiles {
			break
		}
		sf := &stagedFile{baseTmp: a.baseStage.next()}
		if o.host {
			sf.hostTmp = a.hostStage.next()
		}
		a.staged[o.path] = sf
		if ctx.Err() == nil {
			wg.Go(func() { a.stageFile(o, w, sf) })
		}
	}
	wg.Wait()
	for path, sf := range a.staged {
		if sf.hostTmp != "" && sf.err == nil {
			wg.Go(func() {
				if err := fsyncAt(a.hostStage.fd, sf.hostTmp); err != nil {
					sf.err = inUserWords(a.o.src, path, "writing %s to the host", err)
				}
			})
		}
	}
	wg.Wait()
	return n
}

// fsyncAt makes file name in directory dirfd durable.
func fsyncAt(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	return nil
}

// stageFile copies working-tree file o.path, which the plan saw as w, into the staging
// directories; stageWindow then makes the host copy durable.
func (a *applier) stageFile(o op, w entry, sf *stagedFile) {
	f, err := a.o.work.openFile(o.path)
	if err != nil {
		sf.err = workChanged(o.path)
		return
	}
	defer f.Close()
	src := int(f.Fd())
	var st, after unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil || !sameMeta(entryOf(&st), w) {
		sf.err = workChanged(o.path)
		return
	}
	if o.host {
		if err := step("stage " + o.path); err != nil {
			sf.err = inUserWords(a.o.src, o.path, "writing %s to the host", err)
			return
		}
		pf, err := placeFile(src, &st, a.hostStage.fd, sf.hostTmp, w.perm, true, &a.hostStage.memo)
		if err == nil {
			err = pf.finish(w.perm, w.mtime, nil)
		}
		if err != nil {
			sf.err = inUserWords(a.o.src, o.path, "writing %s to the host", err)
			return
		}
		sf.cloned = pf.cloned
	}
	pf, err := placeFile(src, &st, a.baseStage.fd, sf.baseTmp, w.perm, true, &a.baseStage.memo)
	if err == nil {
		err = pf.finish(w.perm, w.mtime, nil)
	}
	if err != nil {
		sf.err = inUserWords(a.o.base, o.path, "updating baseline %s", err)
		return
	}
	// Both copies are of the version the plan saw only if it did not change meanwhile.
	if err := unix.Fstat(src, &after); err != nil || !sameVersion(&st, &after) {
		sf.err = workChanged(o.path)
	}
}

// stageDir is a private directory for building entries before renaming them into place.
type stageDir struct {
	parent int
	name   string
	fd     int
	n      int
	memo   cloneMemo
}

// baseStaging matches the baseline staging directories in a workspace's storage.
var baseStaging = lazyre.New(`^stage-[0-9a-f]{16}$`)

func newStage(in *root, prefix string) (*stageDir, error) {
	var b [8]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if err := unix.Mkdirat(in.fd, name, 0o700); err != nil {
		return nil, in.errorf("mkdir", name, err)
	}
	fd, err := unix.Openat(in.fd, name, openDirFlags, 0)
	if err != nil {
		unix.Unlinkat(in.fd, name, unix.AT_REMOVEDIR)
		return nil, in.errorf("open", name, err)
	}
	return &stageDir{parent: in.fd, name: name, fd: fd}, nil
}

// next returns a fresh name in the directory. Not safe for concurrent use.
func (s *stageDir) next() string { s.n++; return strconv.Itoa(s.n) }

func (s *stageDir) remove() {
	unix.Close(s.fd)
	removeAllAt(s.parent, s.name) // a leftover is removed by the next operation
}
