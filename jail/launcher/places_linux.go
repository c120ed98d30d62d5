package launcher

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// Places in a private root (policy.Place): a call's mount is bound at the
// path the caller named, not at its host path, so that the command, run with
// the caller's paths unrewritten, sees one name for each file. A place's
// parent directories are made on the root's tmpfs, read-only once sealed. The
// host directory is opened and bound as every other path is (bindAt: no link
// followed), and the place itself may not be, hold or lie in another path of
// the root (policy.PlaceConflict), nor pass through a link made in it.
// Landlock's rules are then made on the places (placeRules), in the root the
// command sees: a bind shows the host directory's inodes, which the rules
// hold.

// splitPlaces returns the paths of ReadOnly and ReadWrite that are bound
// where their names say, and the places with how each is bound. A place whose
// host path is in neither is refused.
func splitPlaces(p *policy.Sandbox) (ro, rw []string, places []placed, err error) {
	ro, rw = p.ReadOnly, p.ReadWrite
	if len(p.Places) == 0 {
		return ro, rw, nil, nil
	}
	ro, rw = append([]string(nil), ro...), append([]string(nil), rw...)
	for _, pl := range p.Places {
		if c := policy.PlaceConflict(p, pl.At, pl.Host); c != "" {
			return nil, nil, nil, fmt.Errorf("%w: sandboxPath %s overlaps %s, which the command's root has", confine.ErrPolicy, pl.At, c)
		}
		if pl.At != path.Clean(pl.At) || !path.IsAbs(pl.At) {
			return nil, nil, nil, fmt.Errorf("%w: sandboxPath %q is not absolute and clean", confine.ErrPolicy, pl.At)
		}
		switch {
		case removeOne(&rw, pl.Host):
			places = append(places, placed{pl, bindRW})
		case removeOne(&ro, pl.Host):
			places = append(places, placed{pl, bindRO})
		default:
			return nil, nil, nil, fmt.Errorf("%w: %s is placed at %s but not allowed", confine.ErrPolicy, pl.Host, pl.At)
		}
	}
	return ro, rw, places, nil
}

type placed struct {
	policy.Place
	kind bindKind
}

// removeOne removes the first occurrence of s from *l, if any.
func removeOne(l *[]string, s string) bool {
	for i, q := range *l {
		if q == s {
			*l = append((*l)[:i:i], (*l)[i+1:]...)
			return true
		}
	}
	return false
}

// bindPlace binds the host's pl.Host (canonical: free of symlinks) at pl.At.
func (r *privateRoot) bindPlace(pl placed) error {
	link, _, err := r.firstLink(pl.Host)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // gone since it was checked: skipped, as Landlock skips it
	}
	if err != nil {
		return err
	}
	if link != "" {
		return fmt.Errorf("%w: %s goes through the symbolic link %s now, which it did not when it was checked", confine.ErrPolicy, pl.Host, link)
	}
	// The root's own directories on the way: none may be a link.
	for dir := pl.At; dir != "/"; dir = path.Dir(dir) {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return fmt.Errorf("%w: sandboxPath %s passes through the link %s of the command's root", confine.ErrPolicy, pl.At, dir)
		}
	}
	return r.bindAt(pl.Host, pl.At, pl.kind)
}

// placeRules is sb's Landlock paths in a private root: each place's host path
// replaced by the place, and the hidden paths below it named there too.
func placeRules(sb *policy.Sandbox) (ro, rw, hidden []string) {
	ro, rw, hidden = sb.ReadOnly, sb.ReadWrite, sb.Hidden
	if len(sb.Places) == 0 {
		return ro, rw, hidden
	}
	ro, rw = append([]string(nil), ro...), append([]string(nil), rw...)
	hidden = append([]string(nil), hidden...)
	for _, pl := range sb.Places {
		switch {
		case removeOne(&rw, pl.Host):
			rw = append(rw, pl.At)
		case removeOne(&ro, pl.Host):
			ro = append(ro, pl.At)
		}
		// Its parents (the root's own empty directories, read-only once
		// sealed), so that `ls /mnt` lists the mounts: they hold nothing but
		// places and paths readable anyway (a place is, holds and lies in no
		// other path). Not "/", whose rule would reach every path below it.
		for dir := path.Dir(pl.At); dir != "/"; dir = path.Dir(dir) {
			if !slices.Contains(ro, dir) {
				ro = append(ro, dir)
			}
		}
		for _, h := range sb.Hidden {
			if rest, ok := strings.CutPrefix(h, pl.Host); ok && (rest == "" || rest[0] == '/') {
				hidden = append(hidden, pl.At+rest)
			}
		}
	}
	return ro, rw, hidden
}
