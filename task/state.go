package task

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/autobox-dev/autobox/internal/exactjson"
	"github.com/autobox-dev/autobox/internal/lazyre"
)

// stateDirName holds per-task private state next to the worktrees. It starts with a dot, so
// no valid task id can name it.
const stateDirName = ".autobox"

// DefaultTasksDir is where worktrees go when Options.TasksDir is "": $AUTOBOX_TASKS_DIR, else
// $XDG_DATA_HOME/autobox-tasks, else ~/.local/share/autobox-tasks (macOS:
// ~/Library/Application Support/autobox-tasks, as autobox's other data).
func DefaultTasksDir() (string, error) {
	if dir := os.Getenv("AUTOBOX_TASKS_DIR"); dir != "" {
		return dir, nil
	}
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" && runtime.GOOS != "darwin" {
		return filepath.Join(dir, "autobox-tasks"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("tasks directory: %w", err)
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "autobox-tasks"), nil
	}
	return filepath.Join(home, ".local", "share", "autobox-tasks"), nil
}

var unsafeNameChars = lazyre.New(`[^A-Za-z0-9._-]+`)

// projectSlug is "<base>-<8 hex of sha256(root)>": readable, and distinct for two projects
// with the same base name. The base is reduced to safe characters so that it can also be
// part of a container name.
func projectSlug(root string) string {
	sum := sha256.Sum256([]byte(root))
	base := unsafeNameChars().ReplaceAllString(filepath.Base(root), "_")
	for len(base) > 0 && (base[0] == '.' || base[0] == '_' || base[0] == '-') {
		base = base[1:]
	}
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		base = "project"
	}
	return base + "-" + hex.EncodeToString(sum[:4])
}

// record is what autobox knows of a task, kept outside the worktree where no sandbox can
// write it. Admin is the worktree's admin directory in the repository and Links its link
// files, read from git right after the worktree was made (before any harness ran in it).
type record struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Root   string `json:"root"`
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Admin  string `json:"admin"`
	Links  *links `json:"links,omitempty"`
	// Sandboxed is set once a sandboxed harness (native or docker kind) could write the
	// worktree: from then on autobox checks the worktree (secure) before it hands it out.
	Sandboxed bool `json:"sandboxed,omitempty"`
	// Unchecked is set while a sandbox may have written the worktree since autobox last
	// looked for git directories and unfinished operations in it.
	Unchecked bool `json:"unchecked,omitempty"`
	// DockerClient and Container are, for the docker kind, the client that runs
	// its container and the container's name: stop and cleanup stop and remove
	// it from the record alone, whatever flags they are given.
	DockerClient string `json:"dockerClient,omitempty"`
	Container    string `json:"container,omitempty"`
}

func readRecord(path string) (record, error) {
	var r record
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := exactjson.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("task record %s: %w", path, err)
	}
	if r.Links == nil {
		// Written before autobox kept links: a native or docker task may have been
		// changed by its harness, and nobody has checked it.
		r.Links = canonicalLinks(r)
		if r.Kind != KindWorktree {
			r.Sandboxed, r.Unchecked = true, true
		}
	}
	return r, nil
}

// writeJSON replaces path atomically with v as JSON (writeFileAtomic).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces path: temp file in the same directory, fsync, rename. Readers
// see the old file or the new one, and the new one is a new inode.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// isEmptyDir reports whether path is a directory with no entries.
func isEmptyDir(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// exists reports whether path exists (without following a final symlink).
func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
