package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// Writable mounts held by running calls, for every autobox process of a state
// dir. A workspace's storage and records must never be inside anything a call
// can write, now or later: a session with a rw mount of /proj could otherwise
// rewrite a workspace created with storagePath /proj/ws, baseline included,
// after `status` was reviewed and before `sync` applies it.
//
//   - A call's rw mounts may not overlap the state dir or any storage a record
//     or a create in progress names (policy.ResolveMounts, and again here once
//     the mounts are registered).
//   - A create may not put its storage inside or around the state dir or any
//     rw mount a running call holds, in this process or another (an MCP
//     server, the command line's session server, `autobox exec`).
//
// Each process registers what it holds in <state>/held/<pid>-<random>.json
// (replaced atomically) next to a .lock file it keeps flock'ed while it lives;
// a reader that can lock a .lock file knows its holder is gone and ignores
// (and removes) its files. A create writes its pending marker before it reads
// the registry, and a call registers its mounts before it reads the records
// and markers again, so of a create and a call that race, one sees the other.

// heldDir is where processes register their writable mounts.
func (s *Store) heldDir() string { return filepath.Join(s.stateDir, "held") }

// holds is this process's registration.
type holds struct {
	mu      sync.Mutex
	count   map[string]int // canonical host path -> calls holding it rw
	gen     uint64         // bumped by every change of count
	written uint64         // the gen the file on disk shows
	werr    error          // how writing it last failed

	wmu  sync.Mutex // one writer at a time; a write covers every change before it
	base string     // <heldDir>/<pid>-<random>, without extension (wmu)
	lock *os.File   // flock'ed while this process lives (wmu)
}

// HoldWritable registers paths (canonical host directories a call mounts
// read-write) as held until release is called, and refuses them if one
// overlaps the state dir, a workspace's storage or a create in progress.
//
// A call's release updates the registration file in the background, after the
// call has answered (another process may refuse a create there for that
// moment); a session's (session true) before it returns, so that once
// exec_session close has answered, no process sees the session's mounts.
func (s *Store) HoldWritable(paths []string, session bool) (release func(), err error) {
	if len(paths) == 0 {
		return func() {}, nil
	}
	h := &s.held
	h.mu.Lock()
	if h.count == nil {
		h.count = map[string]int{}
	}
	for _, p := range paths {
		h.count[p]++
	}
	h.gen++
	h.mu.Unlock()
	release = func() {
		h.mu.Lock()
		for _, p := range paths {
			if h.count[p]--; h.count[p] <= 0 {
				delete(h.count, p)
			}
		}
		h.gen++
		h.mu.Unlock()
		if session {
			s.publishHeld() // a failure leaves the paths listed, which only refuses a create there
			return
		}
		// Late is safe: a path still listed only refuses a create there.
		go s.publishHeld()
	}
	if err := s.publishHeld(); err != nil {
		release()
		return nil, fmt.Errorf("%w; the call was not run", s.inState("registering the call's read-write mounts", err))
	}
	managed := append(s.ManagedPaths(), s.pendingStorages()...)
	for _, p := range paths {
		for _, m := range managed {
			if policy.Within(p, m) || policy.Within(m, p) {
				release()
				return nil, invalidf("read-write hostPath %s overlaps autobox-managed %s (the state directory, or a workspace's storage): a call must never be able to write workspace records or storage", p, m)
			}
		}
	}
	return release, nil
}

// changed records that what this process holds changed (a workspace's users),
// for the next publishHeld.
func (h *holds) changed() {
	h.mu.Lock()
	h.gen++
	h.mu.Unlock()
}

// heldFile is a registration file: the read-write mounts a process's calls hold,
// and who uses each workspace (wslock.go). Older versions wrote the list alone.
type heldFile struct {
	RW         []string            `json:"rw"`
	Workspaces map[string][]string `json:"workspaces,omitempty"`
}

// publishHeld writes this process's registration as it is now, or returns
// once a write that began after the caller's change has. Calls that start
// together share one write.
func (s *Store) publishHeld() error {
	h := &s.held
	h.mu.Lock()
	want := h.gen
	h.mu.Unlock()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.mu.Lock()
	if h.written >= want {
		err := h.werr
		h.mu.Unlock()
		return err
	}
	gen := h.gen
	list := make([]string, 0, len(h.count))
	for p := range h.count {
		list = append(list, p)
	}
	h.mu.Unlock()
	sort.Strings(list)
	err := s.writeHeld(heldFile{RW: list, Workspaces: s.ws.uses()})
	h.mu.Lock()
	h.written, h.werr = gen, err
	h.mu.Unlock()
	return err
}

// writeHeld replaces this process's registration file with hf (h.wmu held).
func (s *Store) writeHeld(hf heldFile) error {
	h := &s.held
	if h.lock == nil {
		if len(hf.RW) == 0 && len(hf.Workspaces) == 0 {
			return nil
		}
		if err := os.MkdirAll(s.heldDir(), 0o700); err != nil {
			return err
		}
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		base := filepath.Join(s.heldDir(), fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
		f, err := os.OpenFile(base+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			return err
		}
		h.lock = f
		h.mu.Lock()
		h.base = base
		h.mu.Unlock()
	}
	b, _ := json.Marshal(hf)
	// Replaced atomically, but not synced: the registry is about processes
	// that are alive, which a crash ends; a sync per call would cost every
	// call with a rw mount a disk flush.
	f, err := os.CreateTemp(s.heldDir(), ".held-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), h.base+".json")
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// heldWritable lists the read-write mounts that live calls of every process
// hold, each with who holds it. This process's own are taken from memory, not
// from its registration file, which a release updates after the call has
// answered (see HoldWritable): a call or session that has ended holds nothing.
func (s *Store) heldWritable() (map[string]string, error) {
	files, err := s.readHeld(false)
	out := map[string]string{}
	for pid, hf := range files {
		for _, p := range hf.RW {
			out[p] = "process " + pid
		}
	}
	s.held.mu.Lock()
	for p := range s.held.count {
		out[p] = fmt.Sprintf("process %d, this one", os.Getpid())
	}
	s.held.mu.Unlock()
	return out, err
}

// otherUses lists, per workspace, the calls and sessions of other live processes
// that use it, as they registered them.
func (s *Store) otherUses() map[string][]string {
	files, _ := s.readHeld(false)
	out := map[string][]string{}
	for pid, hf := range files {
		for id, users := range hf.Workspaces {
			for _, u := range users {
				out[id] = append(out[id], fmt.Sprintf("%s (in process %s)", u, pid))
			}
		}
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// readHeld reads the registrations of live processes (this one's too, if own),
// keyed by pid, removing those of processes that are gone.
func (s *Store) readHeld(own bool) (map[string]heldFile, error) {
	ents, err := os.ReadDir(s.heldDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.held.mu.Lock()
	mine := s.held.base
	s.held.mu.Unlock()
	out := map[string]heldFile{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		base := filepath.Join(s.heldDir(), name)
		if base == mine && !own {
			continue
		}
		if base != mine && !holderAlive(base) {
			os.Remove(base + ".json")
			os.Remove(base + ".lock")
			continue
		}
		b, err := os.ReadFile(base + ".json")
		if err != nil {
			continue // replaced or removed meanwhile
		}
		var hf heldFile
		if json.Unmarshal(b, &hf) != nil && json.Unmarshal(b, &hf.RW) != nil {
			continue
		}
		pid, _, _ := strings.Cut(name, "-")
		prev := out[pid]
		prev.RW = append(prev.RW, hf.RW...)
		if len(hf.Workspaces) > 0 && prev.Workspaces == nil {
			prev.Workspaces = map[string][]string{}
		}
		for id, u := range hf.Workspaces {
			prev.Workspaces[id] = append(prev.Workspaces[id], u...)
		}
		out[pid] = prev
	}
	return out, nil
}

// holderAlive says whether the process that registered base still holds its
// lock. A lock that cannot be opened counts as held: the check fails closed.
func holderAlive(base string) bool {
	f, err := os.OpenFile(base+".lock", os.O_RDWR, 0)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN) // at once, whatever this process forks meanwhile
	return false
}

// pendingStorages are the storage roots of creates in progress.
func (s *Store) pendingStorages() []string {
	ents, _ := os.ReadDir(s.stateDir)
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".creating") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(s.stateDir, e.Name())); err == nil && filepath.IsAbs(string(b)) {
			out = append(out, string(b))
		}
	}
	return out
}

// checkStorage refuses a storage root inside or around the state dir or a
// read-write mount a live call holds.
func (s *Store) checkStorage(storage string) error {
	if policy.Within(storage, s.stateDir) || policy.Within(s.stateDir, storage) {
		return invalidf("storagePath %s overlaps the state directory %s: workspace storage must be out of reach of every call", storage, s.stateDir)
	}
	// Inside another workspace's storage root (its working tree, which calls
	// write, is there); sharing the root is what the default storage does.
	for _, m := range s.ManagedPaths() {
		if m != storage && m != s.stateDir && policy.Within(storage, m) {
			return invalidf("storagePath %s is inside %s, the storage of other workspaces (their working trees are written by calls): choose a directory outside it, or that directory itself", storage, m)
		}
	}
	held, err := s.heldWritable()
	if err != nil {
		return fmt.Errorf("reading the read-write mounts of running calls: %w", err)
	}
	paths := make([]string, 0, len(held))
	for p := range held {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if policy.Within(storage, p) || policy.Within(p, storage) {
			return invalidf("storagePath %s overlaps %s, which a running call or session (of %s) has mounted read-write: it could rewrite the workspace behind its review; choose storage outside every read-write mount", storage, p, held[p])
		}
	}
	return nil
}
