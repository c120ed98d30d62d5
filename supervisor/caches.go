package supervisor

// Tool caches that a call opts into (exec_command's caches, exec --cache):
// npm's, pip's, Go's build and module caches and cargo's home, kept between
// calls so that `npm test` or `go test` does not start cold each time. They
// are the user's: a directory per tool under the user's data dir
// ($XDG_DATA_HOME/autobox-caches, ~/.local/share/autobox-caches; on macOS
// ~/Library/Caches/autobox), private to the user (0700), outside every mount
// (a call whose mounts overlap one is refused), mounted read-write into the
// command only when asked, and pointed at through the tool's own variables.
// A server of another user has caches of its own; nothing is shared between
// users. `autobox cache clear` empties them.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/autobox-dev/autobox/policy"
)

// cacheVars are the variables each cache kind sets, each to a directory of
// the kind's (sub "" is the kind's directory itself).
var cacheVars = map[string][][2]string{
	"npm":   {{"npm_config_cache", ""}},
	"pip":   {{"PIP_CACHE_DIR", ""}},
	"go":    {{"GOCACHE", "build"}, {"GOMODCACHE", "mod"}},
	"cargo": {{"CARGO_HOME", ""}},
}

// CacheKinds are the caches a call may ask for, sorted.
func CacheKinds() []string {
	kinds := make([]string, 0, len(cacheVars))
	for k := range cacheVars {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// CacheRoot is the directory of the user's caches.
func CacheRoot() (string, error) {
	if runtime.GOOS == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("tool caches: no home directory: %w", err)
		}
		return filepath.Join(home, "Library", "Caches", "autobox"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "autobox-caches"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("tool caches: no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "autobox-caches"), nil
}

// callCaches are the caches of one call: directories to mount rw, variables to set.
type callCaches struct {
	dirs []string
	env  []string
}

// resolveCaches validates a call's caches and makes their directories.
func resolveCaches(kinds []string, mounts []policy.Mount) (callCaches, error) {
	var cc callCaches
	if len(kinds) == 0 {
		return cc, nil
	}
	root, err := CacheRoot()
	if err != nil {
		return cc, err
	}
	seen := map[string]bool{}
	for i, k := range kinds {
		vars, ok := cacheVars[k]
		if !ok {
			return cc, fmt.Errorf("%w: caches[%d] is %q: the caches are %s", policy.ErrInvalid, i, k, strings.Join(CacheKinds(), ", "))
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		dir := filepath.Join(root, k)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return cc, fmt.Errorf("tool cache %s: %w", k, err)
		}
		os.Chmod(root, 0o700)
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return cc, fmt.Errorf("tool cache %s: %w", k, err)
		}
		for j, m := range mounts {
			if policy.Within(real, m.Host) || policy.Within(m.Host, real) {
				return cc, fmt.Errorf("%w: caches[%d] (%s, in %s) overlaps mounts[%d]: the caches stay outside every mount", policy.ErrInvalid, i, k, real, j)
			}
		}
		cc.dirs = append(cc.dirs, real)
		for _, v := range vars {
			p := real
			if v[1] != "" {
				p = filepath.Join(real, v[1])
				if err := os.MkdirAll(p, 0o700); err != nil {
					return cc, fmt.Errorf("tool cache %s: %w", k, err)
				}
			}
			cc.env = append(cc.env, v[0]+"="+p)
		}
	}
	return cc, nil
}

// ClearCaches empties the given caches (all of them when kinds is empty) and
// returns the bytes it removed.
func ClearCaches(kinds []string) (int64, error) {
	root, err := CacheRoot()
	if err != nil {
		return 0, err
	}
	if len(kinds) == 0 {
		kinds = CacheKinds()
	}
	var freed int64
	for _, k := range kinds {
		if !slices.Contains(CacheKinds(), k) {
			return freed, fmt.Errorf("%w: %q is not a cache: the caches are %s", policy.ErrInvalid, k, strings.Join(CacheKinds(), ", "))
		}
		dir := filepath.Join(root, k)
		freed += treeSize(dir)
		// Go's module cache is read-only on purpose: make it writable to remove it.
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			return freed, fmt.Errorf("clearing the %s cache: %w", k, err)
		}
	}
	return freed, nil
}

// treeSize is the apparent size of the files under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
