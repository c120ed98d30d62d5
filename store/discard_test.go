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

// A discard killed (SIGKILL) or failed before each of its steps: the
// workspace is whole (status lists every change) or visibly being discarded
// (every operation on it says so and what to do, list shows it), and discard
// again finishes the job. Never a half-deleted workspace that answers.

// setupDiscard makes a workspace with changes in several directories, so
// that its deletion takes several steps.
func setupDiscard(t *testing.T, e *env) (string, []string) {
	t.Helper()
	for i := range 6 {
		writeFile(t, e.src, fmt.Sprintf("d%d/f.txt", i), "old")
	}
	id := e.create().WorkspaceID
	var want []string
	for i := range 6 {
		writeFile(t, e.work(id), fmt.Sprintf("d%d/f.txt", i), "new!")
		want = append(want, fmt.Sprintf("modify d%d/f.txt", i))
	}
	return id, want
}

// checkDiscardState checks that id is whole (its changes are want) or being
// discarded, then discards it and checks that nothing of it is left. begun
// says which is expected.
func checkDiscardState(t *testing.T, e *env, id string, want []string, begun bool, when string) {
	t.Helper()
	ctx := context.Background()
	if !begun {
		if got := changesOf(e.status(id).Changes); got != strings.Join(want, ", ") {
			t.Fatalf("%s: a whole workspace's status lists %s, want %s", when, got, strings.Join(want, ", "))
		}
	} else {
		_, errStatus := e.s.Status(ctx, id)
		_, errSync := e.s.Sync(ctx, id)
		_, errMerge := e.s.Merge(ctx, id, []string{"d0/f.txt"})
		_, errResolve := e.s.Resolve(ctx, id, []string{"d0/f.txt"})
		_, errLookup := e.s.Lookup(id)
		_, errUse := e.s.Use(ctx, []string{id}, User{Who: "a test call"})
		for i, err := range []error{errStatus, errSync, errMerge, errResolve, errLookup, errUse} {
			if !errors.Is(err, ErrDiscarding) || !strings.Contains(err.Error(), "is being discarded") || !strings.Contains(err.Error(), `copy_then_sync action "discard" on it again`) {
				t.Fatalf("%s: operation %d on a workspace being discarded: %v", when, i, err)
			}
		}
		list, err := e.s.List(ctx)
		if err != nil || len(list) != 1 || !list[0].Discarding || !strings.Contains(list[0].Error, "being discarded") {
			t.Fatalf("%s: list: %+v, %v", when, list, err)
		}
	}
	if r, err := e.s.Discard(ctx, id); err != nil || !r.OK {
		t.Fatalf("%s: discard again: %+v, %v", when, r, err)
	}
	if _, err := e.s.Status(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("%s: status after the discard: %v", when, err)
	}
	if exists(filepath.Join(e.storage, id)) {
		t.Fatalf("%s: storage left after the discard", when)
	}
	if left, _ := filepath.Glob(filepath.Join(e.state, id+"*")); len(left) != 0 {
		t.Fatalf("%s: records left after the discard: %v", when, left)
	}
	if list, err := e.s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("%s: list after the discard: %+v, %v", when, list, err)
	}
	if got := files(t, e.src); len(got) != 6 || readFile(t, e.src, "d0/f.txt") != "old" {
		t.Fatalf("%s: the source changed: %v", when, got)
	}
}

func discardSteps(t *testing.T) []string {
	ref := newEnv(t)
	id, _ := setupDiscard(t, ref)
	steps := opSteps(t, func() error { _, err := ref.s.Discard(context.Background(), id); return err })
	if !slices.Contains(steps, "discard remove work/d3") || !slices.Contains(steps, "discard remove baseline/d3") {
		t.Fatalf("steps %v: want one per directory of the working tree and the baseline", steps)
	}
	return steps
}

func TestDiscardKilledAtEachStep(t *testing.T) {
	steps := discardSteps(t)
	t.Logf("%d steps: %s", len(steps), strings.Join(steps, ", "))
	for k := 1; k <= len(steps); k++ {
		when := fmt.Sprintf("killed at step %d (%s)", k, steps[k-1])
		e := newEnv(t)
		id, want := setupDiscard(t, e)
		killedAt(t, e, k, "OP=discard", "WORKSPACE_ID="+id)
		checkDiscardState(t, e, id, want, k > 1, when)
	}
}

func TestDiscardFailedAtEachStep(t *testing.T) {
	steps := discardSteps(t)
	defer func() { testHookStep = nil }()
	for k := 1; k <= len(steps); k++ {
		when := fmt.Sprintf("failed at step %d (%s)", k, steps[k-1])
		e := newEnv(t)
		id, want := setupDiscard(t, e)
		countSteps(func(n int, _ string) error {
			if n == k {
				return unix.EIO
			}
			return nil
		})
		_, err := e.s.Discard(context.Background(), id)
		testHookStep = nil
		wantSaid := "nothing was deleted and the workspace is whole"
		if k > 1 {
			wantSaid = "the workspace is marked as being discarded (no operation but discard works on it); run discard again to finish"
		}
		if err == nil || !errors.Is(err, unix.EIO) || !strings.HasSuffix(err.Error(), wantSaid) {
			t.Fatalf("%s: %v; want it to end with %q", when, err, wantSaid)
		}
		checkDiscardState(t, e, id, want, k > 1, when)
	}
}

// A workspace being discarded still counts as autobox's own: a call may not
// mount its storage read-write.
func TestDiscardingStorageStaysManaged(t *testing.T) {
	e := newEnv(t)
	id, _ := setupDiscard(t, e)
	if err := os.Rename(e.s.recordPath(id), e.s.discardingPath(id)); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.s.ManagedPaths(), e.storage) {
		t.Fatalf("managed paths %v lack the storage %s of a workspace being discarded", e.s.ManagedPaths(), e.storage)
	}
}
