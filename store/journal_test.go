package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The merge and resolve kill and fault harness (journal.go): a merge of four
// conflicted files (two merge cleanly, one gets conflict markers, one already
// holds the host's edit) is killed (SIGKILL) or failed (ENOSPC) before each of
// its steps in turn. After each trial the working tree holds no file of
// autobox's; each path merged cleanly is either merged and resolved (the
// merged text, no conflict) or untouched (its old text, still a conflict),
// never merged and still a conflict; a second merge and a sync finish the job,
// and nothing but the four files reaches the host.

// mergeCase is the scenario: each path's text in the source, the workspace
// and the host (after create), and what a finished merge leaves in the
// workspace.
type mergeCase struct {
	path                   string
	base, work, host, want string
	clean                  bool // merges cleanly (resolved)
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

var nine = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}

// edit returns nine lines with line i (from 1) replaced by v, for each pair.
func edit(pairs ...any) string {
	l := slices.Clone(nine)
	for i := 0; i < len(pairs); i += 2 {
		l[pairs[i].(int)-1] = pairs[i+1].(string)
	}
	return lines(l...)
}

func mergeCases() []mergeCase {
	return []mergeCase{
		{path: "a.txt", base: edit(), work: edit(2, "work"), host: edit(8, "h"), want: edit(2, "work", 8, "h"), clean: true},
		{path: "c.txt", base: edit(), work: edit(5, "work"), host: edit(5, "h")},
		{path: "d/b.txt", base: edit(), work: edit(1, "work"), host: edit(9, "h"), want: edit(1, "work", 9, "h"), clean: true},
		// The workspace holds the host's edit already: its file is not rewritten.
		{path: "same.txt", base: edit(), work: edit(2, "work", 8, "h"), host: edit(8, "h"), want: edit(2, "work", 8, "h"), clean: true},
	}
}

func mergePaths() []string {
	var out []string
	for _, c := range mergeCases() {
		out = append(out, c.path)
	}
	return out
}

// setupMerge makes the scenario's workspace.
func setupMerge(t *testing.T, e *env) string {
	t.Helper()
	for _, c := range mergeCases() {
		writeFile(t, e.src, c.path, c.base)
	}
	id := e.create().WorkspaceID
	for _, c := range mergeCases() {
		writeFile(t, e.work(id), c.path, c.work)
		writeFile(t, e.src, c.path, c.host)
	}
	return id
}

// checkMerged checks the state a merge left, whole or stopped: no file of
// autobox's in the working tree; each clean path merged and resolved, or
// untouched and a conflict. It returns the clean paths left untouched.
func checkMerged(t *testing.T, e *env, id, when string) (untouched []string) {
	t.Helper()
	if got, want := files(t, e.work(id)), mergePaths(); !slices.Equal(got, want) {
		t.Fatalf("%s: the working tree holds %v, want only %v", when, got, want)
	}
	st := e.status(id)
	conflict := map[string]bool{}
	for _, c := range st.Conflicts {
		conflict[c.Path] = true
	}
	for _, c := range mergeCases() {
		got := readFile(t, e.work(id), c.path)
		switch {
		case !c.clean:
			if got != c.work && !strings.Contains(got, "<<<<<<<") || !conflict[c.path] {
				t.Fatalf("%s: %s: want its text or conflict markers, and a conflict; got conflict %v, text %q", when, c.path, conflict[c.path], got)
			}
		case conflict[c.path]:
			if got != c.work {
				t.Fatalf("%s: %s is listed as a conflict but holds %q, not its text before the merge", when, c.path, got)
			}
			untouched = append(untouched, c.path)
		case got != c.want:
			t.Fatalf("%s: %s is resolved but holds %q, want the merge %q", when, c.path, got, c.want)
		}
	}
	return untouched
}

// finishMerge merges what is left, resolves the file with markers, syncs, and
// checks that the host holds the merged files and nothing else.
func finishMerge(t *testing.T, e *env, id string, untouched []string, when string) {
	t.Helper()
	ctx := context.Background()
	if len(untouched) > 0 {
		if _, err := e.s.Merge(ctx, id, untouched); err != nil {
			t.Fatalf("%s: merging %v again: %v", when, untouched, err)
		}
	}
	writeFile(t, e.work(id), "c.txt", edit(5, "both"))
	if _, err := e.s.Resolve(ctx, id, []string{"c.txt"}); err != nil {
		t.Fatalf("%s: resolving c.txt: %v", when, err)
	}
	e.mustSync(id)
	if got, want := files(t, e.src), mergePaths(); !slices.Equal(got, want) {
		t.Fatalf("%s: the host holds %v after the sync, want only %v", when, got, want)
	}
	for _, c := range mergeCases() {
		want := c.want
		if !c.clean {
			want = edit(5, "both")
		}
		if got := readFile(t, e.src, c.path); got != want {
			t.Fatalf("%s: host %s is %q, want %q", when, c.path, got, want)
		}
	}
}

func TestMergeKilledAtEachStep(t *testing.T) {
	ref := newEnv(t)
	refID := setupMerge(t, ref)
	steps := opSteps(t, func() error { _, err := ref.s.Merge(context.Background(), refID, mergePaths()); return err })
	checkMerged(t, ref, refID, "without faults")
	t.Logf("%d steps: %s", len(steps), strings.Join(steps, ", "))
	for k := 1; k <= len(steps); k++ {
		when := fmt.Sprintf("killed at step %d (%s)", k, steps[k-1])
		e := newEnv(t)
		id := setupMerge(t, e)
		killedAt(t, e, k, "OP=merge", "WORKSPACE_ID="+id, "PATHS="+strings.Join(mergePaths(), ","))
		if left, _ := filepath.Glob(filepath.Join(e.storage, id, "journal-*")); len(left) == 0 && k > slices.Index(steps, "merge commit")+1 && k < len(steps) {
			t.Fatalf("%s: no journal left to finish", when)
		}
		untouched := checkMerged(t, e, id, when)
		if left, _ := filepath.Glob(filepath.Join(e.storage, id, "journal-*")); len(left) != 0 {
			t.Fatalf("%s: journal left after the next operation: %v", when, left)
		}
		finishMerge(t, e, id, untouched, when)
	}
}

func TestMergeFailedAtEachStep(t *testing.T) {
	ref := newEnv(t)
	refID := setupMerge(t, ref)
	steps := opSteps(t, func() error { _, err := ref.s.Merge(context.Background(), refID, mergePaths()); return err })
	commit := slices.Index(steps, "merge commit") + 1
	defer func() { testHookStep = nil }()
	for k := 1; k <= len(steps); k++ {
		when := fmt.Sprintf("out of space at step %d (%s)", k, steps[k-1])
		e := newEnv(t)
		id := setupMerge(t, e)
		countSteps(func(n int, _ string) error {
			if n == k {
				return unix.ENOSPC
			}
			return nil
		})
		_, err := e.s.Merge(context.Background(), id, mergePaths())
		testHookStep = nil
		switch {
		case steps[k-1] == "merge done": // after the last change: nothing to report
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
		case err == nil || !errors.Is(err, unix.ENOSPC):
			t.Fatalf("%s: want an out-of-space error, got %v", when, err)
		case !strings.Contains(err.Error(), "which holds the workspace storage, is full"):
			t.Fatalf("%s: the error does not name the workspace storage's filesystem: %v", when, err)
		case k <= commit && !strings.HasSuffix(err.Error(), "; the merge changed nothing"):
			t.Fatalf("%s: the error does not say that nothing changed: %v", when, err)
		case k > commit && !strings.Contains(err.Error(), "Done: "):
			t.Fatalf("%s: the error does not say which paths were done: %v", when, err)
		}
		untouched := checkMerged(t, e, id, when)
		if k <= commit && len(untouched) != 3 {
			t.Fatalf("%s: the merge said it changed nothing, but %d of 3 paths are resolved", when, 3-len(untouched))
		}
		finishMerge(t, e, id, untouched, when)
	}
}

// A resolve of paths the host changed, added under a directory the baseline
// lacks, and deleted, killed at each step: all resolved or none.
func TestResolveKilledAtEachStep(t *testing.T) {
	setup := func(e *env) (string, []string) {
		for _, f := range []string{"a.txt", "gone.txt"} {
			writeFile(t, e.src, f, "base "+f)
		}
		id := e.create().WorkspaceID
		for _, f := range []string{"a.txt", "gone.txt", "n/new.txt"} {
			writeFile(t, e.work(id), f, "workspace "+f)
		}
		writeFile(t, e.src, "a.txt", "host a.txt")
		writeFile(t, e.src, "n/new.txt", "host n/new.txt")
		os.Remove(filepath.Join(e.src, "gone.txt"))
		return id, []string{"a.txt", "gone.txt", "n/new.txt"}
	}
	ref := newEnv(t)
	refID, paths := setup(ref)
	steps := opSteps(t, func() error { _, err := ref.s.Resolve(context.Background(), refID, paths); return err })
	commit := slices.Index(steps, "resolve commit") + 1
	for k := 1; k <= len(steps); k++ {
		when := fmt.Sprintf("killed at step %d (%s)", k, steps[k-1])
		e := newEnv(t)
		id, paths := setup(e)
		killedAt(t, e, k, "OP=resolve", "WORKSPACE_ID="+id, "PATHS="+strings.Join(paths, ","))
		st := e.status(id)
		if k <= commit && len(st.Conflicts) != 3 || k > commit && len(st.Conflicts) != 0 {
			t.Fatalf("%s: %d conflicts; want all 3 paths resolved or none", when, len(st.Conflicts))
		}
		if k <= commit {
			if _, err := e.s.Resolve(context.Background(), id, paths); err != nil {
				t.Fatalf("%s: resolving again: %v", when, err)
			}
		}
		e.mustSync(id)
		for _, f := range paths {
			if got := readFile(t, e.src, f); got != "workspace "+f {
				t.Fatalf("%s: host %s is %q after the sync", when, f, got)
			}
		}
		if got := files(t, e.src); !slices.Equal(got, paths) {
			t.Fatalf("%s: the host holds %v", when, got)
		}
	}
}
