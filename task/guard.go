package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Host git finds a worktree's repository through files that a sandboxed harness can write:
// <worktree>/.git names the admin directory, its commondir names the repository (whose
// config says what git runs: core.fsmonitor, core.hooksPath, core.pager, aliases,
// core.sshCommand, drivers, includes), config.worktree adds configuration under
// extensions.worktreeConfig, and gitdir names the worktree back for `git worktree prune` and
// `repair`. Host git also enters other repositories it finds: a populated submodule or a
// nested repository (<dir>/.git) is read with its own configuration, even by `git status`
// at the top, and an unfinished rebase (<admin>/rebase-merge) runs the commands its todo list
// names when it is continued. What a harness wrote there must never reach host git:
//
//   - during a sandboxed run the link files are immutable where autobox can make them so
//     (pin);
//   - after the run, and whenever autobox hands the worktree out or runs git in it (Workspace,
//     run, Cleanup), the link files are compared with what git wrote when autobox made the
//     worktree and restored if they differ (restoreLinks);
//   - if a sandbox may have written the worktree since autobox last looked, git directories
//     below the top and unfinished operations in the admin directory are moved into the
//     task's private state, where git never looks (quarantine).

// links are a worktree's link files as git wrote them when autobox created it.
type links struct {
	DotGit    string `json:"dotGit"`    // <worktree>/.git: "gitdir: <admin>\n"
	CommonDir string `json:"commonDir"` // <admin>/commondir: "../..\n"
	GitDir    string `json:"gitDir"`    // <admin>/gitdir: "<worktree>/.git\n"
	// WorktreeConfig is <admin>/config.worktree; nil when there was none.
	WorktreeConfig *string `json:"worktreeConfig,omitempty"`
}

// canonicalLinks are what `git worktree add` writes without worktree.useRelativePaths, for
// records that were made before autobox kept links.
func canonicalLinks(rec record) *links {
	return &links{
		DotGit:    "gitdir: " + rec.Admin + "\n",
		CommonDir: "../..\n",
		GitDir:    filepath.Join(rec.Path, ".git") + "\n",
	}
}

// maxLinkSize bounds what autobox reads of a link file; git writes a path and a newline.
const maxLinkSize = 1 << 16

// readLinks reads the link files of a worktree git has just made.
func readLinks(worktree, admin string) (*links, error) {
	l := &links{}
	for _, f := range []struct {
		path string
		dst  *string
	}{
		{filepath.Join(worktree, ".git"), &l.DotGit},
		{filepath.Join(admin, "commondir"), &l.CommonDir},
		{filepath.Join(admin, "gitdir"), &l.GitDir},
	} {
		data, _, err := readLink(f.path)
		if err != nil {
			return nil, err
		}
		*f.dst = string(data)
	}
	data, _, err := readLink(filepath.Join(admin, "config.worktree"))
	switch {
	case err == nil:
		s := string(data)
		l.WorktreeConfig = &s
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return l, nil
}

// linkFile is one link file and what it must hold; want nil means it must not exist.
type linkFile struct {
	path string
	want *string
}

// linkFiles are .git, commondir, gitdir and config.worktree, in this order.
func (rec record) linkFiles() []linkFile {
	l := rec.Links
	if l == nil {
		l = canonicalLinks(rec)
	}
	return []linkFile{
		{filepath.Join(rec.Path, ".git"), &l.DotGit},
		{filepath.Join(rec.Admin, "commondir"), &l.CommonDir},
		{filepath.Join(rec.Admin, "gitdir"), &l.GitDir},
		{filepath.Join(rec.Admin, "config.worktree"), l.WorktreeConfig},
	}
}

// readLink reads a regular file without following a symlink and without blocking on a FIFO.
// It also returns the file's link count.
func readLink(path string) ([]byte, uint64, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLinkSize+1))
	return data, linkCount(fi), err
}

// check says how the file differs from what it must be, or "" when it does not.
func (f linkFile) check() string {
	fi, err := os.Lstat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && f.want == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return "it was missing"
	case err != nil:
		return "it could not be read: " + err.Error()
	case f.want == nil:
		return "autobox did not make it"
	case fi.Mode()&fs.ModeSymlink != 0:
		return "it was a symbolic link"
	case fi.IsDir():
		return "it was a directory"
	case !fi.Mode().IsRegular():
		return "it was not a regular file"
	}
	data, n, err := readLink(f.path)
	switch {
	case err != nil:
		return "it could not be read: " + err.Error()
	case !bytes.Equal(data, []byte(*f.want)):
		return "its content had changed"
	case n != 1:
		return "it had another name (a hard link) that could change it"
	}
	return ""
}

// restore replaces whatever is at the file's path by a new file with the wanted content
// (a new inode, so no other name of the old one can change it), or removes it.
func (f linkFile) restore() error {
	if f.want == nil {
		return os.RemoveAll(f.path)
	}
	if fi, err := os.Lstat(f.path); err == nil && fi.IsDir() {
		if err := os.RemoveAll(f.path); err != nil {
			return err
		}
	}
	return writeFileAtomic(f.path, []byte(*f.want), 0o644)
}

// changedLinks lists the link files of rec that differ from what they must be.
func changedLinks(rec record) []string {
	var out []string
	for _, f := range rec.linkFiles() {
		if why := f.check(); why != "" {
			out = append(out, f.path+" ("+why+")")
		}
	}
	return out
}

// restoreLinks puts back every link file of rec that differs, saying what it did.
func (w *Worktree) restoreLinks(rec record) error {
	for _, f := range rec.linkFiles() {
		why := f.check()
		if why == "" {
			continue
		}
		if err := f.restore(); err != nil {
			return fmt.Errorf("%w: task %s: %s changed (%s) and could not be restored: %w", ErrTampered, rec.ID, f.path, why, err)
		}
		verb := "restored"
		if f.want == nil {
			verb = "removed"
		}
		w.notef(rec.ID, "%s %s: %s", verb, f.path, why)
	}
	return nil
}

// adminQuarantine are entries of an admin directory that host git would act on and that
// autobox never makes: unfinished rebases, cherry-picks and reverts (a todo list can say
// exec), and the git directories of submodules.
var adminQuarantine = []string{"rebase-merge", "rebase-apply", "sequencer", "modules"}

// quarantine moves, into the task's private state, every git directory in the worktree other
// than its own .git (nested repositories, populated submodules, .git files naming a git
// directory elsewhere) and the adminQuarantine entries of its admin directory. The files of a
// nested repository stay where they are; only its .git moves.
func (w *Worktree) quarantine(rec record) error {
	dest := filepath.Join(w.paths(rec.ID).state, "quarantine", time.Now().UTC().Format("20060102T150405.000000000"))
	move := func(src, rel, why string) error {
		dst := filepath.Join(dest, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		err := os.Rename(src, dst)
		if errors.Is(err, syscall.EXDEV) {
			// The admin directory can be on another filesystem: git never looks in a
			// directory of this name inside it either.
			dst = filepath.Join(rec.Admin, "autobox-quarantine", filepath.Base(dest), filepath.Base(src))
			if err = os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
				err = os.Rename(src, dst)
			}
		}
		if err != nil {
			return fmt.Errorf("%w: task %s: moving %s away: %w", ErrTampered, rec.ID, src, err)
		}
		w.notef(rec.ID, "moved %s to %s: %s", src, dst, why)
		return nil
	}
	err := filepath.WalkDir(rec.Path, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// A directory host git cannot list either could still be walked into by
			// name: autobox does not hand out what it could not check.
			return fmt.Errorf("%w: task %s: checking %s: %w", ErrTampered, rec.ID, path, err)
		}
		if path == rec.Path || !strings.EqualFold(d.Name(), ".git") || path == filepath.Join(rec.Path, ".git") {
			return nil
		}
		rel, _ := filepath.Rel(rec.Path, path)
		if err := move(path, filepath.Join("worktree", rel), fmt.Sprintf(
			"a git directory the harness could write; host git would use its configuration in %s, and for a submodule from `git status` at the top",
			filepath.Dir(path))); err != nil {
			return err
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range adminQuarantine {
		src := filepath.Join(rec.Admin, name)
		if ok, _ := exists(src); !ok {
			continue
		}
		why := "an unfinished operation the harness could write; continuing it on the host would run what it lists"
		if name == "modules" {
			why = "submodule git directories the harness could write; host git would use their configuration"
		}
		if err := move(src, filepath.Join("admin", name), why); err != nil {
			return err
		}
	}
	return nil
}

// secure makes a task worktree safe for host git before autobox hands it out or runs git in
// it: it clears the pins a killed run left, restores the link files, and quarantines what a
// sandbox may have left since autobox last looked. A task that no sandbox ever had is the
// user's and is left as it is. While another process runs the task's harness, only the
// link files are restored (and they are pinned where autobox can): that run checks the rest
// when it ends. It updates rec.Unchecked; the caller saves rec.
func (w *Worktree) secure(rec *record) error {
	if !rec.Sandboxed {
		return nil
	}
	live := runHolder(w.paths(rec.ID).runLock) != 0
	if !live {
		if err := unpin(*rec); err != nil {
			return err
		}
	}
	if err := w.restoreLinks(*rec); err != nil {
		return err
	}
	if rec.Unchecked && !live {
		if err := w.quarantine(*rec); err != nil {
			return err
		}
		rec.Unchecked = false
	}
	return nil
}

// restoreAllLinks restores the link files of every sandboxed task of the project before
// autobox runs `git worktree prune` or `git worktree add`, which read them: a harness could
// otherwise have prune delete its registration (a gitdir naming a missing path, or a
// missing .git), have `git worktree repair` write a .git file wherever its gitdir points,
// or make every `git worktree add` fail (a commondir that is a directory).
func (w *Worktree) restoreAllLinks() error {
	entries, err := os.ReadDir(filepath.Join(w.projDir, stateDirName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("task state: %w", err)
	}
	for _, e := range entries {
		if ValidateID(e.Name()) != nil {
			continue
		}
		p := w.paths(e.Name())
		rec, err := readRecord(p.record)
		if err != nil || !rec.Sandboxed || rec.Path != p.worktree || !w.isAdminDir(rec.Admin) || !isDir(rec.Path) || !isDir(rec.Admin) {
			continue // no usable record: inspect deals with the task when it is asked for
		}
		if err := w.restoreLinks(rec); err != nil {
			return err
		}
	}
	return nil
}

func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// notef tells Options.Log what autobox changed in a task worktree.
func (w *Worktree) notef(id, format string, a ...any) {
	if w.log != nil {
		fmt.Fprintf(w.log, "autobox: task %s: %s\n", id, fmt.Sprintf(format, a...))
	}
}
