package ceiling

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// The ceiling of a running server follows its file. Live holds the ceiling in
// force; Current stats the file at most once every ReloadEvery and, when it
// changed (another inode, size or modification time), reads it again with the
// same flags: a rule edited by the user, or an "always" answer written by
// another server, holds the next call without a restart. Flag rules stay, as
// they replace the file's.
//
// A file that no longer reads (invalid JSON, an unknown member, a bad path, a
// negative limit) does not open anything: the ceiling last read stays in force,
// and the server logs an error naming the file and the problem, once per
// change of the file. The alternative, no ceiling until the user fixes a typo,
// would let calls through that the user meant to bound; refusing every call
// would stop the user's work for a typo. A file removed while the server runs
// is treated the same way (an editor may remove a file before it writes the
// new one); to lift every rule, the user writes {} there.
//
// "always" (Update) replaces the file by a rename: a reload reads the old file
// or the new one, never half of one. An editor that rewrites the file in place
// may be read half-written: that reads as invalid, is logged, and the file's
// next change (its last write) is read whole.

// ReloadEvery is how often at most a running server looks at its ceiling file.
const ReloadEvery = time.Second

// Live is the ceiling in force for a running server. Safe for concurrent use.
type Live struct {
	flags Flags
	own   []string
	log   *slog.Logger

	mu      sync.Mutex
	cur     *Ceiling
	stamp   fileStamp
	checked time.Time
	broken  error // why the file as it is now is not in force; nil if it is
}

// fileStamp tells a changed file from the one read.
type fileStamp struct {
	exists     bool
	dev, ino   uint64
	size       int64
	mtime      int64 // ns
	statFailed string
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileStamp{}
	case err != nil:
		return fileStamp{exists: true, statFailed: err.Error()}
	}
	st := fileStamp{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return st
}

// NewLive loads the ceiling as Load does (an error stops the server from
// starting) and follows its file from then on; log receives the reloads and
// the files that no longer read.
func NewLive(flags *Flags, own []string, log *slog.Logger) (*Live, error) {
	l := &Live{own: own, log: log}
	if flags != nil {
		l.flags = *flags
	}
	if l.flags.File == "" {
		l.flags.File = DefaultFile()
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.stamp = stampOf(l.flags.File)
	c, err := Load(&l.flags, own)
	if err != nil {
		return nil, err
	}
	l.cur, l.checked = c, time.Now()
	return l, nil
}

// Current is the ceiling in force, read again if its file changed.
func (l *Live) Current() *Ceiling {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.checked) < ReloadEvery {
		return l.cur
	}
	l.checked = time.Now()
	st := stampOf(l.flags.File) // before the read: a change after it is seen next time
	if st == l.stamp {
		return l.cur
	}
	l.stamp = st
	path := l.flags.File
	if !st.exists && l.cur.FileExists {
		l.broken = errors.New("the file was removed (write {} there for no rules)")
		l.log.Error("the ceiling file is gone; the ceiling last read from it stays in force", "file", path)
		return l.cur
	}
	c, err := Load(&l.flags, l.own)
	if err != nil {
		l.broken = err
		l.log.Error("the ceiling file no longer reads; the ceiling last read from it stays in force until it is fixed", "file", path, "err", err)
		return l.cur
	}
	l.broken = nil
	l.cur = c
	l.log.Info("the ceiling file changed: its rules are in force from now", "file", path)
	return c
}

// Broken is why the file as it is now is not the ceiling in force (nil: it is).
func (l *Live) Broken() error {
	l.Current()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}
