package supervisor

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/autobox-dev/autobox/internal/pace"
	"github.com/autobox-dev/autobox/internal/procfs"
	"github.com/autobox-dev/autobox/jail"
)

// scratchDirs hands out per-call scratch directories (a command's HOME and TMPDIR),
// on a tmpfs where that is safe (scratchtmpfs.go), else in the temp dir.
// Making and removing a directory costs a journal write on most disks, so both
// happen shortly after a call (pace.AfterCall), when the result has gone out: the next
// directory is made then, and the used one removed. Close waits for both.
type scratchDirs struct {
	ready chan string
	wg    sync.WaitGroup
	// parent is this process's private dir on a tmpfs, made on the first
	// call; "" for none. asked: parent was called.
	parent func() string
	asked  atomic.Bool

	mu     sync.Mutex
	closed bool // a call that outlived close removes its dir at once, makes none
	// later are the removals release put off (pace.AfterCall), by dir: close
	// does them at once rather than wait for their time (a command line's
	// one call would otherwise wait it out before its process exits).
	later map[string]*time.Timer
}

const scratchAhead = 2

// newScratchDirs makes nothing yet: the first take does, so a server that never runs
// a command leaves no directory behind. It removes, in the background, the scratch
// dirs of autobox processes that are gone (killed before they could).
func newScratchDirs() *scratchDirs {
	d := &scratchDirs{ready: make(chan string, scratchAhead)}
	d.parent = sync.OnceValue(func() string {
		d.asked.Store(true)
		dir, _ := tmpfsScratchParent() // else the temp dir, as always
		return dir
	})
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		sweepScratch()
	}()
	return d
}

// scratchPrefix names scratch dirs after the process that made them:
// autobox-scratch-<pid>-<random>.
func scratchPrefix() string { return fmt.Sprintf("autobox-scratch-%d-", os.Getpid()) }

// sweepScratch removes the scratch dirs whose maker is no longer running: in the
// temp dir, and the private dirs on a tmpfs that are this user's (with the
// scratch dirs in them).
func sweepScratch() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "autobox-scratch-*-*"))
	for _, base := range tmpfsBases() {
		on, _ := filepath.Glob(filepath.Join(base, "autobox-scratch-*-*"))
		for _, dir := range on {
			if ownDir(dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	for _, dir := range dirs {
		owner, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), "autobox-scratch-"), "-")
		pid, err := strconv.Atoi(owner)
		if err != nil || pid <= 0 || procfs.Running(pid) {
			continue
		}
		removeScratch(dir)
	}
}

func (d *scratchDirs) refill() {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		dir, err := d.make()
		if err != nil {
			return // take makes its own and reports the error
		}
		select {
		case d.ready <- dir:
		default:
			removeScratch(dir)
		}
	}()
}

// take returns a fresh scratch dir (absolute, canonical, mode 0700).
func (d *scratchDirs) take() (string, error) {
	select {
	case dir := <-d.ready:
		return dir, nil
	default:
	}
	return d.make()
}

// make makes a scratch dir in the private dir on a tmpfs while that keeps its
// free space (a call's files go with it), else in the temp dir.
func (d *scratchDirs) make() (string, error) {
	if parent := d.parent(); parent != "" && tmpfsRoom(parent) {
		if dir, err := os.MkdirTemp(parent, "call-"); err == nil {
			return dir, nil // canonical: so is parent
		}
	}
	return makeScratch()
}

// release removes a used scratch dir and makes the next one, in the background.
func (d *scratchDirs) release(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		removeScratch(dir)
		d.removeParent()
		return
	}
	d.wg.Add(1)
	if d.later == nil {
		d.later = map[string]*time.Timer{}
	}
	d.later[dir] = time.AfterFunc(pace.AfterCall, func() {
		defer d.wg.Done()
		d.mu.Lock()
		if d.later[dir] == nil {
			d.mu.Unlock()
			return // close did it
		}
		delete(d.later, dir)
		d.mu.Unlock()
		removeScratch(dir)
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.closed {
			d.refill()
		}
	})
}

// close removes the dirs made ahead and waits for pending removals.
func (d *scratchDirs) close() {
	d.mu.Lock()
	d.closed = true
	later := d.later
	d.later = nil
	d.mu.Unlock()
	for dir, t := range later {
		if t.Stop() {
			d.wg.Done() // its func will not run
		}
		// Removed here even when its func runs now: that func finds it
		// gone from later and leaves it to us.
		removeScratch(dir)
	}
	for {
		select {
		case dir := <-d.ready:
			removeScratch(dir)
			continue
		default:
		}
		break
	}
	d.wg.Wait()
	for {
		select {
		case dir := <-d.ready: // a refill that finished during the wait
			removeScratch(dir)
			continue
		default:
		}
		d.removeParent()
		return
	}
}

// removeParent removes the private dir on a tmpfs once it is empty (a call
// that outlives close removes it after its own).
func (d *scratchDirs) removeParent() {
	if !d.asked.Load() {
		return
	}
	if parent := d.parent(); parent != "" {
		_ = os.Remove(parent)
	}
}

func makeScratch() (string, error) {
	dir, err := os.MkdirTemp("", scratchPrefix())
	if err != nil {
		return "", fmt.Errorf("creating the scratch dir: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("creating the scratch dir: %w", err)
	}
	// A root server without namespaces runs commands as another uid (see
	// jail.CommandCredential): the scratch dir is theirs.
	if uid, gid, drop := jail.CommandCredential(); drop {
		if err := os.Chown(real, uid, gid); err != nil {
			os.Remove(real)
			return "", fmt.Errorf("handing the scratch dir to uid %d: %w", uid, err)
		}
	}
	return real, nil
}

// removeScratch deletes a scratch dir whatever the child left in it: directories it
// made unreadable or unwritable are opened up first; links are never followed.
func removeScratch(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		} else if err != nil {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
