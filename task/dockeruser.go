package task

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The docker kind's --user. A harness run as another uid than the worktree's owner
// (the user who runs autobox) cannot write the worktree it is handed. So before the
// harness starts, autobox gives the worktree's files and directories to that uid and
// gid (UID:GID as `docker run --user` takes it, numerically), without following links
// and leaving files with other hard links alone, and the worktree's top directory to that group, group-writable: the top stays its
// owner's, as host git requires (it refuses a worktree another user owns), and the
// harness can create files in it through the group. The .git link file is left as git
// wrote it. Only root may give files away: another user's autobox refuses a --user
// that is not its own uid, naming why, rather than start a harness that cannot write.
// A user name (not numeric) is passed to docker as it is: autobox cannot know its uid
// in the image.

// errUser: the harness's --user cannot be given the worktree.
var errUser = errors.New("the harness's user cannot write the worktree")

// parseUser reads "UID" or "UID:GID"; ok is false for names.
func parseUser(user string) (uid, gid int, ok bool) {
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	gid = -1
	if hasGroup {
		if gid, err = strconv.Atoi(g); err != nil || gid < 0 {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

// mapOwner gives worktree to the harness's user, where one is set (see above).
func (d *Docker) mapOwner(worktree string) error {
	uid, gid, ok := parseUser(d.o.User)
	if d.o.User == "" || !ok {
		return nil
	}
	top, err := os.Stat(worktree)
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if owner, ok := fileOwner(top); ok && owner == uid {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: --user %s: the worktree %s belongs to uid %d, and only root may give it to uid %d; run the harness as --user %d:%d (yours), or autobox as root", errUser, d.o.User, worktree, os.Geteuid(), uid, os.Geteuid(), os.Getegid())
	}
	err = filepath.WalkDir(worktree, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == worktree || (filepath.Dir(path) == worktree && e.Name() == ".git" && !e.IsDir()) {
			return nil
		}
		// A file with other hard links may be one outside the worktree too: it
		// stays its owner's.
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && linkCount(fi) > 1 {
			return nil
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("%w: giving %s to --user %s: %w", errUser, worktree, d.o.User, err)
	}
	if gid >= 0 {
		if err := os.Chown(worktree, -1, gid); err != nil {
			return fmt.Errorf("%w: giving %s to group %d: %w", errUser, worktree, gid, err)
		}
		if err := os.Chmod(worktree, top.Mode().Perm()|0o070); err != nil {
			return fmt.Errorf("%w: %w", errUser, err)
		}
	}
	return nil
}
