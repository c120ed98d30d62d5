package launcherbin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Path is the program to exec for a launcher role of exe: the sealed memfd of
// the small launcher when exe is this very binary and it carries one, else
// exe itself. exe stays the launcher's argv[0] either way.
func Path(exe string) string {
	if !isSelf(exe) || refused.Load() {
		return exe
	}
	if p := load(); p.err == nil {
		return p.path
	}
	return exe
}

// Retry reports whether a launcher that failed to start from path (what Path
// gave for exe) with err is to be started again from exe: the exec of the
// small launcher failed (the memfd refused by a security module, say). Path
// then gives exe from now on, and the log says why, once.
func Retry(path, exe string, err error) bool {
	if path == exe || !(errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.EBADF)) {
		return false
	}
	if refused.CompareAndSwap(false, true) {
		logLine("launchers start from this binary itself from now on: the small launcher would not run: " + err.Error())
	}
	return true
}

// refused: the small launcher would not run (Retry).
var refused atomic.Bool

// Small reports whether this process's launchers start from the small
// launcher, and if not why not (it loads it if that was not done yet).
func Small() (bool, string) {
	p := load()
	switch {
	case p.err != nil:
		return false, p.err.Error()
	case refused.Load():
		return false, "the small launcher would not run"
	}
	return true, ""
}

var logf struct {
	mu sync.Mutex
	f  func(string)
}

// SetLog sets where the one line saying which launcher is used goes (it is
// written when the first launcher starts); nil: nowhere.
func SetLog(f func(msg string)) {
	logf.mu.Lock()
	logf.f = f
	logf.mu.Unlock()
}

type loaded struct {
	path string // /proc/self/fd/N
	err  error
}

// minFD is the least descriptor number the memfd gets: a fork's attributes
// move the child's descriptors to 0, 1, 2, ... (a launcher gets fewer than
// ten) and use the numbers just above as scratch; the memfd must be none of
// them, or the exec would find another file at /proc/self/fd/N.
const minFD = 100

var load = sync.OnceValue(func() loaded {
	path, err := makeMemfd()
	if err != nil {
		logLine("launchers start from this binary itself, not the small launcher: " + err.Error())
	} else {
		logLine("launchers start from the small launcher built into this binary (a sealed memfd)")
	}
	return loaded{path, err}
})

func logLine(msg string) {
	logf.mu.Lock()
	f := logf.f
	logf.mu.Unlock()
	if f != nil {
		f(msg)
	}
}

// errNotBuilt: the binary was built without the Makefile's launcher step.
var errNotBuilt = errors.New("this binary was built without the small launcher (go build or go install alone; make build adds it)")

func makeMemfd() (string, error) {
	if buildID == "" {
		return "", errNotBuilt
	}
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("opening this binary: %w", err)
	}
	defer self.Close()
	off, n, err := payload(self)
	if err != nil {
		return "", err
	}
	fd, err := unix.MemfdCreate("autobox-launcher", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC, and every memfd may be run.
		fd, err = unix.MemfdCreate("autobox-launcher", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return "", fmt.Errorf("memfd_create: %w (vm.memfd_noexec=2 refuses executable ones)", err)
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, minFD)
	unix.Close(fd)
	if err != nil {
		return "", fmt.Errorf("moving the memfd above %d: %w", minFD, err)
	}
	mem := os.NewFile(uintptr(high), "autobox-launcher")
	keep := false
	defer func() {
		if !keep {
			mem.Close()
		}
	}()
	// The copy stays in the kernel (sendfile: copy_file_range refuses a copy
	// from the binary's filesystem to a memfd's, and io.Copy then reads and
	// writes it in 32 KB pieces): mapping the payload to write it would fault
	// in each of its pages.
	if c, err := sendAll(high, int(self.Fd()), off, n); err != nil {
		return "", fmt.Errorf("copying the small launcher to its memfd: %d of %d bytes: %v", c, n, err)
	}
	if _, err := unix.FcntlInt(uintptr(high), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return "", fmt.Errorf("sealing the memfd: %w", err)
	}
	var st, via unix.Stat_t
	if err := unix.Fstat(high, &st); err != nil {
		return "", fmt.Errorf("memfd: %w", err)
	}
	if st.Mode&0o111 == 0 {
		return "", errors.New("the memfd may not be run (vm.memfd_noexec)")
	}
	path := "/proc/self/fd/" + strconv.Itoa(high)
	if err := unix.Stat(path, &via); err != nil || via.Ino != st.Ino || via.Dev != st.Dev {
		return "", fmt.Errorf("the memfd cannot be reached at %s (no /proc?): %v", path, err)
	}
	keep = true
	memfd = mem // open for the life of the process: no finalizer may close it
	return path, nil
}

// sendAll copies n bytes of in from off to out's position with sendfile.
func sendAll(out, in int, off, n int64) (int64, error) {
	done := int64(0)
	for done < n {
		c, err := unix.Sendfile(out, in, &off, int(min(n-done, 1<<30)))
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return done, err
		}
		if c == 0 {
			return done, io.ErrUnexpectedEOF
		}
		done += int64(c)
	}
	return done, nil
}

// memfd holds the small launcher's memfd once made.
var memfd *os.File

// payload finds the small launcher after this binary's ELF image: its offset
// and length, checked against the build ID this binary was linked with.
func payload(self *os.File) (off, n int64, err error) {
	fi, err := self.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := fi.Size()
	var tr [trailerSize]byte
	if size < int64(trailerSize) {
		return 0, 0, errors.New("no small launcher after this binary")
	}
	if _, err := self.ReadAt(tr[:], size-int64(trailerSize)); err != nil {
		return 0, 0, fmt.Errorf("reading this binary's trailer: %w", err)
	}
	if !bytes.HasPrefix(tr[:], []byte(TrailerMagic)) {
		return 0, 0, errors.New("no small launcher after this binary (stripped, or rebuilt without make)")
	}
	n, err = strconv.ParseInt(string(tr[len(TrailerMagic):]), 10, 64)
	off = size - int64(trailerSize) - n
	if err != nil || n <= 0 || off <= 0 {
		return 0, 0, fmt.Errorf("this binary's launcher trailer is damaged: %q", tr)
	}
	// The Go build ID sits in a note near the start of the image.
	head := make([]byte, min(n, 32<<10))
	if _, err := self.ReadAt(head, off); err != nil {
		return 0, 0, fmt.Errorf("reading the small launcher: %w", err)
	}
	if !bytes.HasPrefix(head, []byte("\x7fELF")) || !bytes.Contains(head, []byte(buildID)) {
		return 0, 0, errors.New("the small launcher after this binary is not the one it was built with (build ID differs)")
	}
	return off, n, nil
}

// isSelf reports whether exe is the file this process runs: only then is
// the payload its launcher. Asked once per path.
func isSelf(exe string) bool {
	if v, ok := selves.Load(exe); ok {
		return v.(bool)
	}
	var a, b unix.Stat_t
	same := unix.Stat(exe, &a) == nil && unix.Stat("/proc/self/exe", &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
	selves.Store(exe, same)
	return same
}

var selves sync.Map // exe path → bool
