package store

// Ignore rules for status and sync. A review of a workspace should show what the
// model changed, not the thousand files npm install or a test run generated, and
// sync should not put .pyc files and node_modules on the host. So status and sync
// leave out the changes the source's own ignore rules cover, exactly as git reads
// them, unless the caller asks for them (includeIgnored).
//
// Whose rules: the host's. Where git is installed and the source lies in a git work
// tree, `git check-ignore --stdin -z` runs in the host source (and in each repository
// nested in it, for the paths inside that one): the source's .gitignore files at every
// level, .git/info/exclude, the user's core.excludesFile, and the index (a tracked
// file is never ignored). The workspace's own .gitignore files are not read: the
// sandboxed command writes them, and a rule it adds must not hide files from the
// review. A .gitignore the command writes is an ordinary listed change; once synced it
// applies. Elsewhere (no git, no work tree, git failing) a default list applies
// (defaultIgnored), which also honours marker files a tool leaves in a directory it
// owns (CACHEDIR.TAG, pyvenv.cfg) in the baseline or the workspace.
//
// What ignoring may do: take a change out of the listing and out of the sync. Nothing
// more. An ignored host path is never deleted or overwritten by sync: a directory the
// workspace removes keeps its ignored entries (the directory stays; its other entries
// are removed one by one), and a directory the workspace replaces with a file while it
// holds ignored entries is a conflict. Paths in a .git directory are never ignored
// (gitRisk judges them), except beneath an ignored directory. When git fails, nothing
// is hidden by git and the result says why.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Ignored summarizes the changes left out by the ignore rules: how many paths, the
// outermost of them (at most ignoredShown), whose rules, and how to see them.
type Ignored struct {
	Count int      `json:"count"`
	Paths []string `json:"paths"`
	Rules string   `json:"rules"`
	Note  string   `json:"note"`
}

// ignoredShown bounds Ignored.Paths.
const ignoredShown = 10

// maxNestedRepos bounds the git runs one operation makes for repositories nested in
// the source; paths in repositories beyond it are judged by the enclosing one.
const maxNestedRepos = 32

// gitTimeout bounds one git run (a stuck git leaves the paths unjudged, not hidden).
const gitTimeout = 2 * time.Minute

// defaultIgnoredNames are the directory or file names ignored wherever they appear
// in a source that has no git rules: dependency trees, caches and virtual
// environments that tools regenerate. Build outputs users often keep or commit
// (dist, build, target, vendor, coverage) are not on it; target/ of cargo and the
// caches that carry CACHEDIR.TAG are ignored through the tag.
var defaultIgnoredNames = map[string]bool{
	"node_modules": true, "__pycache__": true, ".pytest_cache": true, ".mypy_cache": true,
	".ruff_cache": true, ".tox": true, ".nox": true, ".venv": true, ".gradle": true,
	".next": true, ".parcel-cache": true, ".turbo": true, ".svelte-kit": true, ".DS_Store": true,
}

// defaultIgnoredSuffixes are file name endings ignored without git rules.
var defaultIgnoredSuffixes = []string{".pyc", ".pyo"}

// defaultMarkers are files whose presence makes their directory ignored without git
// rules: the Cache Directory Tagging convention (cargo's target, pytest's and mypy's
// caches) and a Python virtual environment's configuration.
var defaultMarkers = []string{"CACHEDIR.TAG", "pyvenv.cfg"}

// DefaultIgnoreList describes the default list for the docs and notes.
const DefaultIgnoreList = "node_modules, __pycache__, *.pyc, *.pyo, .pytest_cache, .mypy_cache, .ruff_cache, .tox, .nox, .venv, .gradle, .next, .parcel-cache, .turbo, .svelte-kit, .DS_Store, and directories holding CACHEDIR.TAG or pyvenv.cfg"

// gitEnvDrop are variables that would point git somewhere other than the source
// (the autobox process may run under a git hook) or change how it reads paths.
var gitEnvDrop = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
	"GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_QUARANTINE_PATH"}

// gitCommand finds git, or "" (tests set it to simulate a machine without git).
var gitCommand = func() string {
	p, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	return p
}

// ignoreQuery is one path to judge: rel relative to the source, dir whether it is a
// directory on the side that decides (the workspace, or the baseline for a removal).
type ignoreQuery struct {
	rel string
	dir bool
}

// judgeIgnored returns the queried paths the rules ignore, and a description of
// the rules used. src is the host source directory; isRepo(d) says whether the
// source's directory d (relative) holds a nested repository on the host; marker(d,
// name) whether directory d holds file name in the baseline or the workspace;
// hostLink(d) whether host directory d is a symbolic link.
func judgeIgnored(ctx context.Context, src string, qs []ignoreQuery, isRepo func(string) bool, marker func(d, name string) bool, hostLink func(string) bool) (map[string]bool, string) {
	out := map[string]bool{}
	if len(qs) == 0 {
		return out, ""
	}
	git := gitCommand()
	// A path in a .git directory is judged as the directory holding that .git
	// (never ignored for the source's own); the others as themselves. Each judged
	// path goes to the repository that judges it: the deepest one nested in the
	// source on the host, or the source itself ("").
	groups := map[string][]ignoreQuery{}
	asked := map[string]bool{}
	repoOf := map[string]string{}
	repos := 0
	for _, q := range qs {
		if i := strings.Index("/"+q.rel+"/", "/.git/"); i >= 0 {
			if i == 0 {
				continue
			}
			q = ignoreQuery{rel: q.rel[:i-1], dir: true}
		}
		if asked[q.rel] {
			continue
		}
		asked[q.rel] = true
		root := ""
		for d := parentOf(q.rel); git != "" && d != ""; d = parentOf(d) {
			r, seen := repoOf[d]
			if !seen {
				r = "-"
				if isRepo(d) && repos < maxNestedRepos {
					repos++
					r = d
				}
				repoOf[d] = r
			}
			if r != "-" {
				root = r
				break
			}
		}
		groups[root] = append(groups[root], q)
	}
	var rules []string
	judged := map[string]bool{}
	roots := make([]string, 0, len(groups))
	for r := range groups {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	for _, r := range roots {
		got, how := judgeGroup(ctx, git, src, r, groups[r], marker, hostLink)
		for p := range got {
			judged[p] = true
		}
		switch {
		case r == "":
			rules = append([]string{how}, rules...)
		case !strings.HasPrefix(how, "git"):
			rules = append(rules, "in "+r+": "+how)
		}
	}
	if groups[""] == nil {
		rules = append([]string{gitRules}, rules...)
	}
	for _, q := range qs {
		j := q.rel
		if i := strings.Index("/"+q.rel+"/", "/.git/"); i > 0 {
			j = q.rel[:i-1]
		} else if i == 0 {
			continue
		}
		if judged[j] {
			out[q.rel] = true
		}
	}
	return out, strings.Join(rules, "; ")
}

// judgeGroup judges the paths of one repository root (relative to src; "" for the
// source itself) with git, or with the default list where git cannot.
func judgeGroup(ctx context.Context, git, src, root string, qs []ignoreQuery, marker func(d, name string) bool, hostLink func(string) bool) (map[string]bool, string) {
	why := "git is not installed"
	if git != "" {
		dir := src
		if root != "" {
			dir = src + "/" + root
		}
		got, err := gitIgnored(ctx, git, dir, root, qs, hostLink)
		if err == nil {
			return got, gitRules
		}
		if !errors.Is(err, errNotWorkTree) {
			// git judged nothing: hide nothing rather than guess.
			return map[string]bool{}, fmt.Sprintf("none: git failed (%v), so nothing was left out", err)
		}
		why = "the source is not in a git work tree"
	}
	out := map[string]bool{}
	for _, q := range qs {
		if defaultIgnored(q.rel, marker) {
			out[q.rel] = true
		}
	}
	return out, "the default list (" + why + ")"
}

// gitRules names git's rules in results.
const gitRules = "git (the source's .gitignore files, .git/info/exclude and core.excludesFile)"

var errNotWorkTree = errors.New("not a git work tree")

// gitIgnored asks git which of qs (relative to the source; root is dir relative to
// the source) its rules ignore. Paths go on stdin, NUL-terminated, each as "./path"
// so no name is read as pathspec magic or an option; a directory ends in "/" so
// directory-only patterns match it. A path beneath a host symbolic link is not
// asked (git refuses the whole batch for one): it is not ignored.
func gitIgnored(ctx context.Context, git, dir, root string, qs []ignoreQuery, hostLink func(string) bool) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	env := gitEnv()
	probe := exec.CommandContext(ctx, git, "rev-parse", "--is-inside-work-tree")
	probe.Dir, probe.Env = dir, env
	if out, err := probe.Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		var ee *exec.ExitError
		if errors.As(err, &ee) && bytes.Contains(ee.Stderr, []byte("dubious ownership")) {
			return nil, errors.New("git refuses the source: owned by another user (safe.directory)")
		}
		return nil, errNotWorkTree
	}
	var in bytes.Buffer
	asked := map[string]string{}
	linked := map[string]bool{}
	for _, q := range qs {
		rel := q.rel
		if root != "" {
			rel = strings.TrimPrefix(q.rel, root+"/")
		}
		if underHostLink(q.rel, root, hostLink, linked) {
			continue
		}
		arg := "./" + rel
		if q.dir && !isHostLink(q.rel, hostLink, linked) {
			arg += "/" // a trailing slash on a host link would make git look through it
		}
		asked[arg] = q.rel
		in.WriteString(arg)
		in.WriteByte(0)
	}
	if len(asked) == 0 {
		return map[string]bool{}, nil
	}
	cmd := exec.CommandContext(ctx, git, "-c", "core.fsmonitor=false", "check-ignore", "--stdin", "-z")
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return map[string]bool{}, nil // none ignored
	}
	if err != nil {
		msg := strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[0])
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git check-ignore in %s: %s", dir, msg)
	}
	got := map[string]bool{}
	for _, a := range bytes.Split(out, []byte{0}) {
		if rel, ok := asked[string(a)]; ok {
			got[rel] = true
		}
	}
	return got, nil
}

// isHostLink is hostLink(rel), memoized in linked.
func isHostLink(rel string, hostLink func(string) bool, linked map[string]bool) bool {
	l, seen := linked[rel]
	if !seen {
		l = hostLink(rel)
		linked[rel] = l
	}
	return l
}

// underHostLink reports whether a directory between root and rel (exclusive) is a
// symbolic link on the host; linked memoizes.
func underHostLink(rel, root string, hostLink func(string) bool, linked map[string]bool) bool {
	for d := parentOf(rel); d != root && d != ""; d = parentOf(d) {
		if isHostLink(d, hostLink, linked) {
			return true
		}
	}
	return false
}

// gitEnv is the environment for git: the process's, without the variables that
// would redirect it.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range gitEnvDrop {
			if name == d {
				drop = true
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return env
}

// defaultIgnored reports whether the default list ignores rel: a component on the
// list, a file name ending, or a directory on the way that holds a marker.
func defaultIgnored(rel string, marker func(d, name string) bool) bool {
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		if defaultIgnoredNames[c] {
			return true
		}
		if i == len(parts)-1 {
			for _, s := range defaultIgnoredSuffixes {
				if strings.HasSuffix(c, s) && len(c) > len(s) {
					return true
				}
			}
		}
	}
	for d := rel; d != ""; d = parentOf(d) {
		for _, m := range defaultMarkers {
			if marker(d, m) {
				return true
			}
		}
	}
	return false
}

// dropIgnored takes the ignored changes out of the plan (see the file comment) and
// returns what it left out.
func (pl *plan) dropIgnored(ctx context.Context) *Ignored {
	if len(pl.ws) == 0 {
		return nil
	}
	isRepo := func(d string) bool {
		_, ok := pl.base.get(d + "/.git")
		return ok
	}
	marker := func(d, name string) bool {
		for _, t := range []tree{pl.base, pl.work} {
			if e, ok := t.get(joinRel(d, name)); ok && e.typ == unix.S_IFREG {
				return true
			}
		}
		return false
	}
	hostLink := func(d string) bool {
		e, ok, err := pl.o.src.lstat(d)
		return err == nil && ok && e.typ == unix.S_IFLNK
	}
	ign, rules := pl.judgeInRounds(func(qs []ignoreQuery) (map[string]bool, string) {
		return judgeIgnored(ctx, pl.o.src.path, qs, isRepo, marker, hostLink)
	})
	// A directory the workspace removes or replaces keeps its ignored entries on the
	// host: its removal is dropped (its other entries go one by one); a replacement
	// by a non-directory cannot keep them and is a conflict.
	for p := range ign {
		if _, inBase := pl.base.get(p); !inBase {
			continue
		}
		ancestors(p, func(a string) bool {
			switch pl.ws[a] {
			case ActionDelete:
				delete(pl.ws, a)
			case ActionReplace:
				if w, ok := pl.work.get(a); ok && !w.isDir() && !ign[a] {
					if _, dup := pl.ignoreBlocks[a]; !dup {
						pl.ignoreBlocks[a] = p
					}
				}
			}
			return false
		})
	}
	var top []string
	for p := range ign {
		delete(pl.ws, p)
		outer := true
		ancestors(p, func(a string) bool {
			if ign[a] {
				outer = false
				return true
			}
			return false
		})
		if outer {
			top = append(top, p)
		}
	}
	if len(ign) == 0 && !strings.HasPrefix(rules, "none") {
		return nil
	}
	sort.Strings(top)
	if len(top) > ignoredShown {
		top = top[:ignoredShown]
	}
	return &Ignored{Count: len(ign), Paths: top, Rules: rules,
		Note: "ignored paths are neither listed nor synced, and sync never deletes or overwrites them on the host; includeIgnored: true (autobox ws --include-ignored) lists and syncs them"}
}

// pruneRounds bounds the rounds of judgeInRounds; what is left after them is asked
// in one.
const pruneRounds = 8

// judgeInRounds asks judge about the plan's changed paths, a level of new
// directories at a time: the entries of a new directory the rules ignore are ignored
// without asking (git never looks inside an ignored directory for untracked files,
// and a new directory's entries are untracked), so a new node_modules of 100,000
// files costs one question, not 100,000. It returns the ignored paths and the rules'
// description of the first round.
func (pl *plan) judgeInRounds(judge func([]ignoreQuery) (map[string]bool, string)) (map[string]bool, string) {
	newDir := func(p string) bool {
		if pl.ws[p] != ActionAdd {
			return false
		}
		w, ok := pl.work.get(p)
		return ok && w.isDir()
	}
	children := map[string][]string{}
	var round []string
	for p := range pl.ws {
		if par := parentOf(p); par != "" && newDir(par) {
			children[par] = append(children[par], p)
		} else {
			round = append(round, p)
		}
	}
	var below func(p string, fn func(string))
	below = func(p string, fn func(string)) {
		for _, c := range children[p] {
			fn(c)
			below(c, fn)
		}
	}
	ign := map[string]bool{}
	var rules string
	for n := 0; len(round) > 0; n++ {
		if n == pruneRounds-1 { // the last round: everything left
			var all []string
			for _, p := range round {
				all = append(all, p)
				below(p, func(c string) { all = append(all, c) })
			}
			round = all
		}
		qs := make([]ignoreQuery, len(round))
		for i, p := range round {
			e, ok := pl.work.get(p)
			if pl.ws[p] == ActionDelete || !ok {
				e, _ = pl.base.get(p)
			}
			qs[i] = ignoreQuery{rel: p, dir: e.isDir()}
		}
		got, how := judge(qs)
		if n == 0 || strings.HasPrefix(how, "none") {
			rules = how
		}
		var next []string
		for _, p := range round {
			switch {
			case got[p]:
				ign[p] = true
				below(p, func(c string) { ign[c] = true })
			case n < pruneRounds-1:
				next = append(next, children[p]...)
			}
		}
		round = next
	}
	return ign, rules
}
