package launcher

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// A private root: where the launcher may make a mount namespace (it holds
// CAP_SYS_ADMIN, i.e. the server runs as root), the command's "/" is a fresh
// tmpfs that holds only what its policy allows, each path bound at its own
// host path: the system paths and read-only mounts read-only, the read-write
// mounts and the scratch dir writable, a few devices, and a /proc of the
// command's own pid namespace. Symlinks on the way to an allowed path (/bin ->
// usr/bin, /etc/resolv.conf -> ../run/...) are made again as they are on the
// host. Nothing else exists for the command: no other user's files, no host
// unix socket to send to, no name to stat, list the attributes of or watch.
// Landlock applies on top, unchanged: its rules hold inodes, and a bind mount
// shows the same inodes.
//
// The root is built on the thread that then restricts itself and starts the
// command (unshare(CLONE_NEWNS) is per thread here, so the launcher's other
// threads keep the host's mounts). A pooled launcher builds the part every
// command shares (the base policy) while it waits; the call adds its own
// paths and seals the root: the host's root, kept reachable below
// oldRootDir while the root is built, is detached and the tmpfs made
// read-only.

// oldRootDir is where the host's root hangs, inside the new root, until seal.
const oldRootDir = "/.autobox-host"

// tmpfsMountPoints are tried in order as the place where the new root's tmpfs
// is mounted (in the private namespace only) before pivot_root makes it "/".
var tmpfsMountPoints = []string{"/tmp", "/mnt", "/media", "/srv", "/opt"}

// newMountAPI tells whether the kernel has the calls the root is built with:
// open_tree and move_mount (Linux 5.2), mount_setattr (5.12). Asked with
// arguments they refuse, so nothing is changed.
var newMountAPI = sync.OnceValue(func() error {
	if _, err := unix.OpenTree(-1, "", 0); errors.Is(err, unix.ENOSYS) {
		return errors.New("open_tree(2) is missing (Linux >= 5.2)")
	}
	if err := unix.MountSetattr(-1, "", 0, &unix.MountAttr{}); errors.Is(err, unix.ENOSYS) {
		return errors.New("mount_setattr(2) is missing (Linux >= 5.12)")
	}
	return nil
})

// bindKind is how a path is bound into the private root.
type bindKind int

const (
	bindRO bindKind = iota
	bindRW
	bindDevice
	linkOnly // make the links on the way, bind nothing
)

type privateRoot struct {
	origNS  int                 // the mount namespace the thread came from (abandon)
	oldRoot int                 // O_PATH fd of the host's root (below oldRootDir)
	bound   map[string]bindKind // host paths bound (or made, for /proc) so far, and how
	asked   map[nameKind]bool   // the names (as a policy gives them) materialized so far
	binds   []boundFile         // what each bind showed when it was made
	links   []madeLink          // the symlinks made, as the host had them
	// waits: the root is built ahead of its call (a pooled launcher's, see
	// prepare) and may wait long for it, so the host's directories above its
	// binds and links are watched (see stale). A root built at its call is
	// not: nothing asks whether it is stale, and an inotify descriptor with
	// watches costs the launcher's exit an SRCU grace period (10-15 ms on
	// some hosts), which a command line waits out before it can remove the
	// launcher's cgroups.
	waits bool
	// watch is an inotify descriptor watching the host's directories that hold
	// a bound path or a made link (or one of their ancestors), -1 if none: no
	// event since they were bound means nothing to check (see stale).
	watch   int
	watched map[string]bool
	sealed  bool
	// placed are the files made for the call (rootfiles_linux.go) at the paths
	// the command reads them by; identity says passwd and group are made.
	placed   []string
	identity bool
}

// nameKind is a path as a policy names it, with how it is to be bound.
type nameKind struct {
	name string
	kind bindKind
}

// boundFile is a path bound into the root, and the file it was on the host.
type boundFile struct {
	path string
	id   confine.FileID
}

type madeLink struct{ path, target string }

// errRootSetup marks a failure before pivot_root, which leaves the thread as
// it was but for a private copy of the host's mount table: the caller may
// carry on without a private root. Later failures leave the thread half-built.
var errRootSetup = errors.New("setting up a private root")

// enterPrivateRoot moves the calling thread into a new mount namespace whose
// root is an empty tmpfs, with the host's root below oldRootDir.
func enterPrivateRoot(waits bool) (*privateRoot, error) {
	if err := newMountAPI(); err != nil {
		return nil, fmt.Errorf("%w: %w", errRootSetup, err)
	}
	// The mount namespace the thread has now, to go back to if building the root
	// fails half-way (abandon).
	orig, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: opening the mount namespace: %w", errRootSetup, err)
	}
	r := &privateRoot{origNS: orig, oldRoot: -1, bound: map[string]bindKind{}, asked: map[nameKind]bool{}, waits: waits, watch: -1}
	if err := r.enter(); err != nil {
		return nil, r.abandon(err)
	}
	return r, nil
}

// enter makes the thread's mount namespace and pivots into the empty root.
func (r *privateRoot) enter() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
	}
	// Slave, not private: an unmount on the host (a USB disk, say) still reaches
	// this copy of the mount table, which would otherwise keep that filesystem
	// busy for as long as a launcher waits in the pool. Nothing made here
	// propagates back.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making mounts slaves: %w", err)
	}
	mp := ""
	for _, dir := range tmpfsMountPoints {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			mp = dir
			break
		}
	}
	if mp == "" {
		return fmt.Errorf("none of %v is a directory to mount the new root on", tmpfsMountPoints)
	}
	// Mount points only: a few inodes, no data.
	if err := unix.Mount("tmpfs", mp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=65536"); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", mp, err)
	}
	if err := unix.Mkdir(mp+oldRootDir, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", oldRootDir, err)
	}
	if err := unix.PivotRoot(mp, mp+oldRootDir); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	var err error
	if r.oldRoot, err = unix.Open(oldRootDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("opening the host's root: %w", err)
	}
	return r.devLinks()
}

// abandon puts the thread back in the mount namespace it had before the root
// was begun (the one it was made from stays as it was: nothing propagated back
// to it), and returns why, as an errRootSetup: the caller goes on without a
// private root. If even that fails the thread is not usable, and the error is
// not an errRootSetup.
func (r *privateRoot) abandon(why error) error {
	if r.oldRoot >= 0 {
		unix.Close(r.oldRoot)
		r.oldRoot = -1
	}
	err := unix.Setns(r.origNS, unix.CLONE_NEWNS)
	unix.Close(r.origNS)
	if err != nil {
		return fmt.Errorf("building a private root: %w; and going back to the host's mounts: setns: %w", why, err)
	}
	_ = unix.Chdir("/")
	return fmt.Errorf("%w: %w", errRootSetup, why)
}

// addPolicy binds every path of p not bound yet, outer paths before the paths
// inside them (so that an inner bind is not covered by an outer one), and makes
// its Links. A link to a path p does not allow is made, but leads nowhere.
func (r *privateRoot) addPolicy(p *policy.Sandbox) error {
	type entry struct {
		path string
		kind bindKind
	}
	ro, rw, places, err := splitPlaces(p) // places_linux.go
	if err != nil {
		return err
	}
	var all []entry
	for _, l := range []struct {
		paths []string
		kind  bindKind
	}{{ro, bindRO}, {rw, bindRW}, {p.Devices, bindDevice}, {p.Links, linkOnly}} {
		for _, path := range l.paths {
			all = append(all, entry{path, l.kind})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		return strings.Count(all[i].path, "/") < strings.Count(all[j].path, "/")
	})
	tmpDone := false
	for _, e := range all {
		if !tmpDone && strings.Count(e.path, "/") > 1 {
			if err := r.bindTmp(p); err != nil {
				return err
			}
			tmpDone = true
		}
		// A name done before (the base's, at prepare) costs nothing at the call.
		if nk := (nameKind{e.path, e.kind}); !r.asked[nk] {
			if err := r.materialize(e.path, e.kind, p.NoFollow); err != nil {
				return err
			}
			r.asked[nk] = true
		}
	}
	if !tmpDone {
		if err := r.bindTmp(p); err != nil {
			return err
		}
	}
	for _, pl := range places {
		if err := r.bindPlace(pl); err != nil {
			return err
		}
	}
	return r.identityFiles() // rootfiles_linux.go
}

// stale reports whether a path bound or a link made so far no longer matches
// the host (a directory replaced, a file renamed over, a link retargeted): a
// bind holds the file it was made with, and a pooled launcher may wait long.
func (r *privateRoot) stale() bool {
	if r.watch >= 0 {
		var buf [4096]byte
		if _, err := unix.Read(r.watch, buf[:]); errors.Is(err, unix.EAGAIN) {
			return false // no directory above a bind or link changed
		}
	}
	for _, l := range r.links {
		if target, err := readlinkAt(r.oldRoot, l.path[1:]); err != nil || target != l.target {
			return true
		}
	}
	for _, b := range r.binds {
		var st unix.Stat_t
		if unix.Fstatat(r.oldRoot, b.path[1:], &st, unix.AT_SYMLINK_NOFOLLOW) != nil || confine.IDOf(&st) != b.id {
			return true
		}
	}
	return false
}

// watchAbove has the host's directories above p watched for entries made,
// removed or renamed: the ways a bound path or a made link can come to name
// something else. Where inotify is not to be had, stale checks every time.
func (r *privateRoot) watchAbove(p string) {
	if !r.waits {
		return
	}
	if r.watch < 0 {
		if r.watched != nil {
			return // inotify failed before
		}
		r.watched = map[string]bool{}
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			return
		}
		r.watch = fd
	}
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		if !r.watched[dir] {
			r.watched[dir] = true
			host := oldRootDir + dir
			if dir == "/" {
				host = oldRootDir
			}
			if _, err := unix.InotifyAddWatch(r.watch, host, unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF); err != nil {
				unix.Close(r.watch) // a directory unwatched: check every time
				r.watch = -1
				return
			}
		}
		if dir == "/" {
			return
		}
	}
}

// reset starts the root again from an empty tmpfs: a new one is mounted inside
// the current root and pivoted to, the host's root is moved over to it, and
// the old tmpfs with everything bound in it is detached.
func (r *privateRoot) reset() error {
	const next, prev = "/.autobox-next", "/.autobox-prev"
	if err := unix.Mkdir(next, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", next, err)
	}
	if err := unix.Mount("tmpfs", next, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=65536"); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", next, err)
	}
	if err := unix.Mkdir(next+prev, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", next+prev, err)
	}
	if err := unix.PivotRoot(next, next+prev); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	if err := unix.Mkdir(oldRootDir, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", oldRootDir, err)
	}
	if err := unix.Mount(prev+oldRootDir, oldRootDir, "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("moving the host's root: %w", err)
	}
	if err := unix.Unmount(prev, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Rmdir(prev); err != nil {
		return fmt.Errorf("rmdir %s: %w", prev, err)
	}
	r.bound, r.asked, r.binds, r.links = map[string]bindKind{}, map[nameKind]bool{}, nil, nil
	r.placed, r.identity = nil, false
	if r.watch >= 0 {
		unix.Close(r.watch)
	}
	r.watch, r.watched = -1, nil
	return r.devLinks()
}

// makeGuardProc makes the unix socket guard's detached /proc (sealedProc) if
// there is none yet and the guard works here: while the host's root is still
// attached, as in a user namespace the kernel mounts a proc only where one is
// fully visible. A pooled launcher makes it while it waits: a proc's
// superblock costs 0.1-0.2 ms, which the call then does not wait for.
func (r *privateRoot) makeGuardProc() {
	if sealedProc.Load() >= 0 || !confine.UnixGuardAvailable() {
		return
	}
	if fd, err := detachedProc(); err == nil {
		if old := sealedProc.Swap(int32(fd)); old >= 0 {
			unix.Close(int(old))
		}
	}
}

// seal detaches the host's root and makes the tmpfs read-only: after it, only
// what was bound exists for the thread and what it starts.
func (r *privateRoot) seal() error {
	if r.sealed {
		return nil
	}
	// The guard's /proc, while the host's is still attached (unless a pooled
	// launcher made it while it waited, see prepare).
	r.makeGuardProc()
	unix.Close(r.oldRoot)
	unix.Close(r.origNS)
	// r.watch (a root that waited has one) stays open (close-on-exec, the
	// command does not get it): closing an inotify descriptor with watches
	// waits for an SRCU grace period, some milliseconds; the launcher's exit,
	// after the call, closes it instead.
	if err := unix.Unmount(oldRootDir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	if err := unix.Rmdir(oldRootDir); err != nil {
		return fmt.Errorf("rmdir %s: %w", oldRootDir, err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the new root read-only: %w", err)
	}
	r.sealed = true
	return nil
}
