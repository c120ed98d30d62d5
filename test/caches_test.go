//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolCaches: a call that asks for caches gets the tools' variables
// pointing at directories of the user's own that outlive the call; a call
// that does not ask has neither the variables nor access; a mount that
// overlaps a cache is refused; autobox cache clear empties them.
func TestToolCaches(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o, isErr := s.exec(map[string]any{"command": bash(`echo "$GOCACHE $GOMODCACHE $npm_config_cache $PIP_CACHE_DIR $CARGO_HOME"; echo kept > "$npm_config_cache/marker"`), "caches": []string{"go", "npm", "pip", "cargo"}})
	fields := strings.Fields(o.Stdout)
	if isErr || o.code() != 0 || len(fields) != 5 {
		t.Fatalf("a call with caches: %+v (tool error %v)", o, isErr)
	}
	npm := fields[2]
	if !strings.HasSuffix(fields[0], "/autobox-caches/go/build") || !strings.HasSuffix(npm, "/autobox-caches/npm") {
		t.Errorf("cache dirs: %q", o.Stdout)
	}
	if fi, err := os.Stat(filepath.Dir(npm)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("the caches' directory must be the user's alone: %v", fi.Mode())
	}
	// The next call that asks sees what the last one left.
	o, _ = s.exec(map[string]any{"command": bash(`cat "$npm_config_cache/marker"`), "caches": []string{"npm"}})
	if o.Stdout != "kept\n" {
		t.Errorf("the cache did not outlive its call: %+v", o)
	}
	// A call that does not ask has no variable and no access.
	o, _ = s.exec(map[string]any{"command": bash(`echo "[$npm_config_cache]"; cat "` + npm + `/marker"`)})
	if !strings.HasPrefix(o.Stdout, "[]\n") || o.code() == 0 {
		t.Errorf("a call without caches reached one: %+v", o)
	}
	res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "caches": []string{"npm"}, "mounts": []map[string]any{{"hostPath": filepath.Dir(npm), "sandboxPath": "/mnt/c", "mode": "ro"}}})
	if !res.IsError || !strings.Contains(textOf(res), "overlaps mounts[0]") {
		t.Errorf("a mount over the caches: %s", textOf(res))
	}
	res = s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "caches": []string{"maven"}})
	if !res.IsError {
		t.Errorf("an unknown cache: %s", textOf(res))
	}
}

func TestCLIToolCaches(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.want(h.run("", "exec", "--cache", "pip", "--", "sh", "-c", `echo x > "$PIP_CACHE_DIR/f"; echo ok`), 0, "ok", "")
	dir := filepath.Join(h.dir, "data", "autobox-caches")
	h.want(h.run("", "cache", "dir"), 0, dir, "")
	if _, err := os.Stat(filepath.Join(dir, "pip", "f")); err != nil {
		t.Errorf("the pip cache on the host: %v", err)
	}
	h.want(h.run("", "cache", "clear", "pip"), 0, "", "cleared")
	if _, err := os.Stat(filepath.Join(dir, "pip")); !os.IsNotExist(err) {
		t.Errorf("after clear: %v", err)
	}
	h.want(h.run("", "cache", "clear", "maven"), 125, "", `"maven" is not a cache`)
	h.want(h.run("", "exec", "--cache", "maven", "true"), 125, "", "--cache")
}
