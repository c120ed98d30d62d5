package task

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/policy"
)

// harnessReadOnly is what a harness reads beyond the base every tree gets
// (syspaths.Base): the cgroup tree, where runtimes (Node, the JVM, Go) find the
// limits of the cgroup they run in to size their heaps and threads. A server's
// command, held to limits of the server's own, does not get it.
var harnessReadOnly = []string{"/sys/fs/cgroup"}

// sandboxPolicy prepares the repository so that the rules can be narrow, and returns what
// the harness of task rec may touch.
//
// Landlock grants rights per inode: a rule on a directory covers everything beneath it, and
// creating, renaming or deleting a file needs rights on its directory. What a commit on
// autobox/<id> writes in the repository's git directory G, and the rule that allows it:
//
//	G/objects/xx/tmp_obj_*, link to G/objects/xx/<hash>   ReadWrite on each of the 256
//	                                                      G/objects/xx (pre-created, so git
//	                                                      never needs G/objects itself)
//	G/refs/heads/autobox/<id>.lock, renamed onto <id>     ReadWrite on G/refs/heads/autobox
//	G/logs/refs/heads/autobox/<id> (appended)             ReadWrite on that file only
//	                                                      (pre-created), file rights only
//	G/worktrees/<name>/{index,HEAD,logs/HEAD,*.lock,      ReadWrite on the admin directory
//	  COMMIT_EDITMSG,ORIG_HEAD,...}
//
// Where this is broader than "only what committing on its own branch needs":
//   - G/refs/heads/autobox: the harness can create, move or delete any loose autobox/*
//     branch, so other tasks' branches too (and shadow a packed one). Branches outside
//     autobox/, tags, packed-refs, HEAD of the main checkout stay unwritable.
//   - G/objects/xx: it can delete or rewrite existing loose objects, which can corrupt
//     the repository's history (data only: no object is executed). G/objects/pack and
//     G/objects/info (alternates) stay unwritable.
//   - the admin directory: it can rewrite its HEAD and index, and (unless they are pinned,
//     see pin) its commondir and gitdir files, as it can the worktree's .git file. autobox's
//     own git commands never trust them: they pin GIT_DIR/GIT_COMMON_DIR/GIT_WORK_TREE (see
//     pinned), and autobox removes the worktree itself instead of through them. For host
//     git run by a person, autobox restores them after the run and moves away the git
//     directories and unfinished operations the harness left (see secure). NewNative
//     refuses repositories with extensions.worktreeConfig, whose config.worktree would
//     live there.
//
// G/hooks, G/config, G/info, G/packed-refs and the main checkout are read-only. With the
// checks after each run, nothing the harness writes runs on the host through git.
func (n *Native) sandboxPolicy(rec record) (*policy.Sandbox, error) {
	g := n.repo.common
	p := n.paths(rec.ID)
	for _, dir := range []string{filepath.Join(p.scratch, "home"), filepath.Join(p.scratch, "tmp")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("task scratch: %w", err)
		}
	}
	rw := []string{rec.Path, p.scratch, rec.Admin}
	have := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(g, "objects"))
	if err != nil {
		return nil, fmt.Errorf("reading %s/objects: %w", g, err)
	}
	for _, e := range entries {
		have[e.Name()] = e.IsDir()
	}
	for i := 0; i < 256; i++ {
		name := fmt.Sprintf("%02x", i)
		dir := filepath.Join(g, "objects", name)
		if !have[name] {
			if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("preparing %s: %w", dir, err)
			}
		}
		rw = append(rw, dir)
	}
	refDir := filepath.Join(g, "refs", "heads", "autobox")
	reflog := filepath.Join(g, "logs", "refs", "heads", "autobox", rec.ID)
	if err := os.MkdirAll(refDir, 0o777); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", refDir, err)
	}
	if err := os.MkdirAll(filepath.Dir(reflog), 0o777); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", reflog, err)
	}
	// O_APPEND without O_TRUNC: an existing reflog is kept as it is.
	f, err := os.OpenFile(reflog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return nil, fmt.Errorf("preparing %s: %w", reflog, err)
	}
	f.Close()
	rw = append(rw, refDir, reflog)
	rw = append(rw, n.o.ReadWrite...)

	// The base every tree gets, and the harness's own paths (its worktree, the
	// repository, the user's --ro and --rw) on top.
	sb := syspaths.Base()
	sb.AllowNetwork, sb.PrivateNetwork = !n.o.NoNetwork, len(n.o.AllowHosts) > 0
	if sb.AllowNetwork && !sb.PrivateNetwork {
		syspaths.HostResolver(sb) // DNS for the harness (/etc/resolv.conf -> /run/...)
	}
	// The harness's own paths are the host's names, not checked canonical (the
	// user's --ro and --rw): the enforcer follows links on the way to them.
	sb.NoFollow = false
	ro := append(sb.ReadOnly, harnessReadOnly...)
	ro = append(ro, n.repo.root)
	if !policy.Within(g, n.repo.root) {
		ro = append(ro, g)
	}
	ro = append(ro, alternates(filepath.Join(g, "objects"))...)
	ro = append(ro, n.o.ReadOnly...)

	var deny []string
	for _, d := range []string{filepath.Join(g, "hooks"), filepath.Join(g, "config")} {
		if fileExists(d) {
			deny = append(deny, d)
		}
	}
	sb.ReadOnly, sb.ReadWrite, sb.DenyWrite = ro, rw, deny
	return sb, nil
}

// alternates are the canonical object directories objects/info/alternates borrows from;
// git inside the sandbox must read them.
func alternates(objects string) []string {
	f, err := os.Open(filepath.Join(objects, "info", "alternates"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		if c, err := filepath.EvalSymlinks(line); err == nil {
			out = append(out, c)
		}
	}
	return out
}
