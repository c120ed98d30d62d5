package store

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Replacing a directory on the host, safe at every instant.
//
// A sync that turns a host directory into a file (or link), or a file into a directory,
// never passes through a state where the path holds neither. The new entry is built
// whole in the host staging directory and swapped with the old one in one
// renameat2(RENAME_EXCHANGE); the old entry, now in staging, is removed afterwards.
// Removing a directory is one rename of the whole tree into staging. So a sync killed
// or out of space at any step leaves each path wholly old or wholly new:
//
//	before the swap: the old entry in place; staging holds the new one, and the next
//	                 operation removes staging (the path was not synced)
//	after the swap:  the new entry in place; staging holds the old one, removed by the
//	                 next operation, whose plan finds host and workspace alike and
//	                 records the path as synced (converged)
//
// The baseline of a path changes only after its host swap, for the same reason.
//
// Where the filesystem cannot exchange (EINVAL, ENOTSUP), the old entry is first
// renamed into staging as aside-<n>, next to a note aside-<n>.path of its path; the
// next operation puts an aside entry back where nothing took its place, so a crash
// between the two renames loses nothing.

// build is a new directory that replaces a host non-directory, built in staging under
// name; the ops beneath it put their entries into it.
type build struct {
	root  string         // host path being replaced
	name  string         // its name in the host staging directory
	left  int            // host puts at or beneath root not yet done
	old   entry          // the host entry it replaces, as planned
	base  []func() error // baseline updates, run after the swap
	reps  []string       // listed changes complete once the swap is done
	built bool
}

// testHookStep, when set by tests, runs before each step of a sync that changes the
// host or writes staging; a non-nil error is reported as that step's failure.
var testHookStep func(step string) error

// exchange is renameExchange; tests take it away to run the fallback.
var exchange = renameExchange

func step(what string) error {
	if testHookStep != nil {
		return testHookStep(what)
	}
	return nil
}

// planBuilds finds the host non-directories the workspace turns into directories and
// counts the host puts at or beneath each.
func (a *applier) planBuilds(puts []op) {
	a.builds = map[string]*build{}
	for _, o := range puts {
		if !o.host {
			continue
		}
		w, _ := a.pl.work.get(o.path)
		if h, ok := a.pl.hostAt(o.path); ok && !h.isDir() && w.isDir() {
			a.builds[o.path] = &build{root: o.path, old: h}
		}
	}
	for _, o := range puts {
		if b := a.buildOf(o.path); b != nil && o.host {
			b.left++
		}
	}
}

// buildOf returns the build at or above p, if any.
func (a *applier) buildOf(p string) *build {
	if len(a.builds) == 0 {
		return nil
	}
	if b := a.builds[p]; b != nil {
		return b
	}
	var found *build
	ancestors(p, func(q string) bool { found = a.builds[q]; return found != nil })
	return found
}

// hostDone counts one host op of p as done; a listed change is applied when all its
// host ops are, or, beneath a build, when the build is swapped in.
func (a *applier) hostDone(p string) {
	rep := a.pl.report[p]
	if a.left[rep]--; a.left[rep] != 0 {
		return
	}
	if b := a.buildOf(p); b != nil && !b.built {
		b.reps = append(b.reps, rep)
		return
	}
	a.applied = append(a.applied, rep)
}

// hostParent is the directory to put host path p in: its parent on the host, or inside
// the build it belongs to.
func (a *applier) hostParent(p string, b *build) (int, string, error) {
	if b == nil {
		return a.o.src.parent(p)
	}
	if p == b.root {
		fd, err := unix.Dup(a.hostStage.fd)
		return fd, b.name, err
	}
	r := &root{fd: a.hostStage.fd, path: "staging"}
	return r.parent(b.name + strings.TrimPrefix(p, b.root))
}

// finishBuild swaps a complete build in for the host entry it replaces, then updates
// the baseline.
func (a *applier) finishBuild(b *build) error {
	pfd, name, err := a.o.src.parent(b.root)
	if err != nil {
		return hostChanged(b.root, err.Error())
	}
	defer unix.Close(pfd)
	if err := a.recheckHost(pfd, name, b.root, b.old, true); err != nil {
		return err
	}
	if err := a.swapIn(pfd, name, b.root, b.name); err != nil {
		return err
	}
	b.built = true
	a.applied = append(a.applied, b.reps...)
	a.touched[parentOf(b.root)] = true
	for _, fn := range b.base {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

// swapIn puts staged entry tmp at host path p (pfd/name) in place of what is there,
// atomically where the filesystem can, and removes the old entry.
func (a *applier) swapIn(pfd int, name, p, tmp string) error {
	st := a.hostStage
	if err := step("exchange " + p); err != nil {
		return inUserWords(a.o.src, p, "replacing %s on the host", err)
	}
	err := exchange(st.fd, tmp, pfd, name)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS) {
		tmp, err = a.swapAside(pfd, name, p, tmp)
	}
	if err != nil {
		return inUserWords(a.o.src, p, "replacing %s on the host", err)
	}
	step("remove old " + p)
	removeAllAt(st.fd, tmp) // a leftover goes with staging, by the next operation at the latest
	return nil
}

// swapAside replaces without an exchange: the old entry is renamed into staging next
// to a note of its path, so the next operation restores it if the second rename never
// happens.
func (a *applier) swapAside(pfd int, name, p, tmp string) (aside string, err error) {
	st := a.hostStage
	aside = "aside-" + st.next()
	if err := writeNote(st.fd, aside+".path", p); err != nil {
		return "", err
	}
	if err := renameNoReplace(pfd, name, st.fd, aside); err != nil {
		return "", err
	}
	if err = step("rename new " + p); err == nil {
		if err = renameNoReplace(st.fd, tmp, pfd, name); err == nil {
			return aside, nil
		}
	}
	renameNoReplace(st.fd, aside, pfd, name)
	return "", err
}

// writeNote writes a small durable file in directory dirfd.
func writeNote(dirfd int, name, text string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(text)); err != nil {
		return err
	}
	return unix.Fsync(fd)
}

// removeHostDir removes directory p from the host in one rename into staging, after
// checking that what it moved is what the plan saw (otherwise it is put back).
func (a *applier) removeHostDir(pfd int, name, p string) error {
	tmp := a.hostStage.next()
	if err := step("remove " + p); err != nil {
		return err
	}
	if err := renameNoReplace(pfd, name, a.hostStage.fd, tmp); errors.Is(err, unix.EXDEV) {
		// p is on another filesystem mounted inside the source: removed where it is.
		if err := a.checkMoved(pfd, name, p); err != nil {
			return err
		}
		return removeAllAt(pfd, name)
	} else if err != nil {
		return err
	}
	if err := a.checkMoved(a.hostStage.fd, tmp, p); err != nil {
		if renameNoReplace(a.hostStage.fd, tmp, pfd, name) != nil {
			// Something took its place meanwhile: the host writer's tree is kept beside
			// it, under a name the error gives, never deleted with the staging.
			kept := name + ".autobox-kept-" + tmp
			if renameNoReplace(a.hostStage.fd, tmp, pfd, kept) == nil {
				return fmt.Errorf("%w; the directory as it was is kept at %s", err, joinRel(parentOf(p), kept))
			}
		}
		return err
	}
	step("remove old " + p)
	removeAllAt(a.hostStage.fd, tmp)
	return nil
}

// checkMoved compares the tree at dirfd/name, moved there from host path p, with the
// host as planned: an entry the plan did not see, or one changed since, means a host
// writer was at work and the tree must not be deleted.
func (a *applier) checkMoved(dirfd int, name, p string) error {
	cur, ok, err := lstatAt(dirfd, name)
	if err != nil || !ok {
		return hostChanged(p, "it could not be read back")
	}
	want, wok := a.pl.hostAt(p)
	switch {
	case !wok:
		return hostChanged(p, "something appeared there")
	case !sameMeta(cur, want):
		return hostChanged(p, "it was modified")
	case !cur.isDir():
		return nil
	}
	fd, err := unix.Openat(dirfd, name, openDirFlags, 0)
	if err != nil {
		return hostChanged(p, err.Error())
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return hostChanged(p, err.Error())
	}
	for _, n := range names {
		if err := a.checkMoved(fd, n, p+"/"+n); err != nil {
			return err
		}
	}
	return nil
}

// restoreAsides puts back entries a sync set aside (see swapAside) whose path is still
// empty on the host; it runs before the host staging is removed.
func restoreAsides(src *root, stage string) {
	fd, err := unix.Openat(src.fd, stage, openDirFlags, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	names, _ := readNames(fd)
	for _, n := range names {
		if !strings.HasPrefix(n, "aside-") || strings.HasSuffix(n, ".path") {
			continue
		}
		b, err := readNote(fd, n+".path")
		if err != nil || b == "" {
			continue
		}
		pfd, name, err := src.parent(b)
		if err != nil {
			continue
		}
		// Fails, leaving it to go with the staging, where the new entry is in place.
		renameNoReplace(fd, n, pfd, name)
		unix.Close(pfd)
	}
}

func readNote(dirfd int, name string) (string, error) {
	f, err := openFileAt(dirfd, name, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
