package launcher

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// readOnlyMounts gives the calling thread a private mount namespace in which the whole
// filesystem is read-only except the ReadWrite paths of p, bound writable again on
// top. Landlock confines opens, creation and removal, but has no access right for
// chmod, chown, utimes or xattrs, and does not confine path walks: without this, a
// command could change the modes of any file its user owns. A read-only mount refuses
// all of them with EROFS. It matters most when the server runs as root, whose sandbox
// would otherwise own every system file.
//
// It needs CAP_SYS_ADMIN, before capabilities are dropped (the caller checks
// wantPrivateRoot). Only the calling thread, and what it forks, sees the new
// namespace; nothing propagates back to the host's mounts.
//
// Since the private root (rootfs_linux.go) this is the fallback where that root
// cannot be built (pivot_root refused, say, in some containers).
func readOnlyMounts(p *policy.Sandbox) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(-1, "/", unix.AT_RECURSIVE, ro); err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return nil // before Linux 5.12: the namespace stays as it was
		}
		return fmt.Errorf("making every mount read-only: %w", err)
	}
	for _, path := range p.ReadWrite {
		if err := bindWritable(path, p.NoFollow); err != nil {
			return err
		}
	}
	return nil
}

// bindWritable binds path onto itself, writable (a bind mount copies the flags
// of the mount it comes from: the copy is made writable, with any below it,
// before it is attached). Both ends are the one directory opened once: with
// noFollow without following any link, so that a link swapped in since the
// path was checked fails the call instead of making its target writable.
func bindWritable(path string, noFollow bool) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}
	if noFollow {
		how.Resolve = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, how)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ELOOP) && noFollow:
		return fmt.Errorf("%w: %s goes through a symbolic link now, which it did not when it was checked", confine.ErrPolicy, path)
	case err != nil:
		return fmt.Errorf("opening %s to bind it: %w", path, err)
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("binding %s: open_tree: %w", path, err)
	}
	defer unix.Close(tree)
	rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, rw); err != nil {
		return fmt.Errorf("making %s writable: %w", path, err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("binding %s: move_mount: %w", path, err)
	}
	return nil
}

// namespacesOff: the server that started this launcher has no namespaces
// (wire.NoNamespacesEnv, which its launcherEnv passes on).
var namespacesOff = os.Getenv(wire.NoNamespacesEnv) == "1"

// wantPrivateRoot reports whether the calling thread may and should build a
// private root (see privateRoot) or, failing that, read-only mounts.
func wantPrivateRoot() bool { return !namespacesOff && confine.HasCapSysAdmin() }

// isolate gives the calling thread the command's view of the filesystem,
// where the launcher may make mount namespaces (wantPrivateRoot): a private
// root holding only sb's paths, finished from what prepare began; or, where
// that root cannot be built, the host's mounts all read-only but sb's
// read-write paths. It reports whether the thread got a private root. With
// netFiles the root gets /etc/resolv.conf and /etc/hosts for a private network,
// at the paths placed.
func isolate(sb *policy.Sandbox, pr *prepared, netFiles bool) (used bool, placed []string, err error) {
	if !wantPrivateRoot() {
		return false, nil, nil
	}
	var root *privateRoot
	rebuilt := false
	switch {
	case pr != nil && pr.root != nil:
		root = pr.root
		// What the host changed since (rarely anything) makes the prepared
		// part unusable: start again (the prepared ruleset then fails its own
		// check of the same paths, see prepared.unchanged).
		if root.stale() {
			rebuilt = true
			if err := root.reset(); err != nil {
				return false, nil, err
			}
			if err := root.addPolicy(pr.base); err != nil {
				policyErr := errors.Is(err, confine.ErrPolicy)
				err = root.abandon(err)
				if !errors.Is(err, errRootSetup) || policyErr {
					return false, nil, err
				}
				return false, nil, readOnlyMounts(sb)
			}
		}
	case pr != nil && pr.rootErr != nil:
		err = pr.rootErr
	default:
		root, err = enterPrivateRoot(false)
	}
	if err != nil {
		if !errors.Is(err, errRootSetup) {
			return false, nil, err
		}
		return false, nil, readOnlyMounts(sb)
	}
	if pr != nil && root == pr.root && !rebuilt {
		defer func() {
			if r := pr.restricting(); r != nil {
				r.RootFresh = used && err == nil
			}
		}()
	}
	if err := root.addPolicy(sb); err != nil {
		// A path of the call's that cannot be bound (a filesystem that
		// refuses): the host's mounts made read-only instead, as where no
		// root can be built; the started frame says so. A path that goes
		// through a link swapped in since its check fails the call: the
		// fallback is no way around the check.
		policyErr := errors.Is(err, confine.ErrPolicy)
		if err = root.abandon(err); !errors.Is(err, errRootSetup) || policyErr {
			return false, nil, err
		}
		return false, nil, readOnlyMounts(sb)
	}
	if netFiles {
		if placed, err = root.netFiles(); err != nil {
			return false, nil, err
		}
	}
	return true, placed, root.seal()
}
