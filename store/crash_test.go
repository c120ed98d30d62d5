package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
)

// A sync killed with SIGKILL part-way leaves every host file whole (old or new bytes,
// never a mix), its leftovers are ignored and removed, and a retry finishes the job.
func TestSyncKilledMidway(t *testing.T) {
	const files, size = 200, 256 << 10
	e := newEnv(t)
	content := func(tag byte, i int) []byte {
		b := bytes.Repeat([]byte{tag}, size)
		copy(b, fmt.Sprintf("file %d ", i))
		return b
	}
	name := func(i int) string { return fmt.Sprintf("d%d/f%03d.dat", i%7, i) }
	for i := range files {
		writeFile(t, e.src, name(i), string(content('o', i)))
	}
	id := e.create().WorkspaceID
	for i := range files {
		writeFile(t, e.work(id), name(i), string(content('n', i)))
	}

	cmd, out, _ := child(t, "sync", e.state, "WORKSPACE_ID="+id)
	if line, err := out.ReadString('\n'); err != nil || line != "progress\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	rest, _ := io.ReadAll(out)
	cmd.Wait()
	if len(rest) > 0 {
		t.Fatalf("the sync finished before the kill (%q); it needs more work to be interrupted", rest)
	}

	var old []string
	for i := range files {
		got, err := os.ReadFile(filepath.Join(e.src, name(i)))
		switch {
		case err != nil:
			t.Fatalf("%s after the kill: %v", name(i), err)
		case bytes.Equal(got, content('o', i)):
			old = append(old, name(i))
		case !bytes.Equal(got, content('n', i)):
			t.Fatalf("%s is neither the old nor the new file (%d bytes)", name(i), len(got))
		}
	}
	if len(old) == 0 || len(old) > files-3 {
		t.Fatalf("%d of %d files still old; want the kill to land mid-way", len(old), files)
	}
	leftovers, _ := filepath.Glob(filepath.Join(e.src, ".autobox-sync-*"))
	t.Logf("killed with %d of %d files synced; %d host staging leftovers", files-len(old), files, len(leftovers))

	// Status lists exactly the files not yet synced (no leftovers), and removes leftovers.
	st := e.status(id)
	var listed []string
	for _, c := range st.Changes {
		listed = append(listed, c.Path)
	}
	sort.Strings(old)
	if strings.Join(listed, ",") != strings.Join(old, ",") || len(st.Conflicts) != 0 {
		t.Fatalf("status after the kill: %d changes, %d conflicts; want the %d old files", len(st.Changes), len(st.Conflicts), len(old))
	}
	if left, _ := filepath.Glob(filepath.Join(e.src, ".autobox-sync-*")); len(left) != 0 {
		t.Errorf("host staging not cleaned: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(e.storage, id, "stage-*")); len(left) != 0 {
		t.Errorf("baseline staging not cleaned: %v", left)
	}
	e.mustSync(id)
	for i := range files {
		if got, _ := os.ReadFile(filepath.Join(e.src, name(i))); !bytes.Equal(got, content('n', i)) {
			t.Fatalf("%s not synced by the retry", name(i))
		}
	}
	if st := e.status(id); len(st.Changes) != 0 {
		t.Errorf("changes after the retry: %s", changesOf(st.Changes))
	}
}

func TestLeftoverStagingIgnoredAndCleaned(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	id := e.create().WorkspaceID
	hostLeft := filepath.Join(e.src, ".autobox-sync-0123456789abcdef")
	baseLeft := filepath.Join(e.storage, id, "stage-0123456789abcdef")
	writeFile(t, hostLeft, "7", "partial")
	writeFile(t, baseLeft, "3", "partial")
	os.Chmod(hostLeft, 0o500) // a crashed sync's directory need not be writable
	writeFile(t, e.src, ".autobox-sync-notes", "a project file that only looks similar")
	writeFile(t, e.work(id), ".autobox-sync-fedcba9876543210", "not ours to sync either")

	st := e.status(id)
	if len(st.Changes) != 0 || len(st.Conflicts) != 0 {
		t.Fatalf("status reports leftovers: %+v", st)
	}
	if exists(hostLeft) || exists(baseLeft) {
		t.Error("leftover staging not removed by the next operation")
	}
	if !exists(filepath.Join(e.src, ".autobox-sync-notes")) {
		t.Error("a project file resembling staging was deleted")
	}
}

// A create that died part-way leaves a marker; the next operation removes the half
// workspace. A marker next to a finished record only loses the marker.
func TestInterruptedCreateCleaned(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	done := e.create().WorkspaceID
	os.WriteFile(filepath.Join(e.state, done+".creating"), []byte(e.storage), 0o600)

	half := uuid.NewString()
	writeFile(t, filepath.Join(e.storage, half, "baseline"), "a.txt", "a")
	os.WriteFile(filepath.Join(e.state, half+".creating"), []byte(e.storage), 0o600)

	// A create killed inside writeFileAtomic leaves its temporary file.
	var temps []string
	for _, n := range []string{"." + half + ".creating.tmp-123", "." + done + ".json.tmp-456"} {
		temps = append(temps, filepath.Join(e.state, n))
		os.WriteFile(temps[len(temps)-1], []byte("partial"), 0o600)
	}
	unrelated := filepath.Join(e.state, ".notes.creating.tmp-1")
	os.WriteFile(unrelated, nil, 0o600)

	list, err := e.s.List(context.Background())
	if err != nil || len(list) != 1 || list[0].ID != done {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for _, p := range temps {
		if exists(p) {
			t.Errorf("leftover %s not removed", filepath.Base(p))
		}
	}
	if !exists(unrelated) {
		t.Error("a file not named after a workspace id was removed")
	}
	if exists(filepath.Join(e.storage, half)) || exists(filepath.Join(e.state, half+".creating")) {
		t.Error("half-built workspace not removed")
	}
	if !exists(e.work(done)) || exists(filepath.Join(e.state, done+".creating")) {
		t.Error("finished workspace damaged, or its stale marker kept")
	}
}

// A create killed (SIGKILL) before each of its steps leaves no workspace and
// nothing of it in the storage or state directory once the next operation
// ran, or (killed after its record was written) a whole workspace.
func TestCreateKilledAtEachStep(t *testing.T) {
	setup := func(e *env) {
		for i := range 3 {
			writeFile(t, e.src, fmt.Sprintf("d%d/f.txt", i), "f")
		}
		os.Symlink("d0/f.txt", filepath.Join(e.src, "link"))
	}
	ref := newEnv(t)
	setup(ref)
	steps := opSteps(t, func() error { ref.create(); return nil })
	t.Logf("%d steps: %s", len(steps), strings.Join(steps, ", "))
	for k := 1; k <= len(steps); k++ {
		when := fmt.Sprintf("killed at step %d (%s)", k, steps[k-1])
		e := newEnv(t)
		setup(e)
		killedAt(t, e, k, "OP=create", "HOST_PATH="+e.src, "STORAGE_PATH="+e.storage, "COPY_MODE="+e.mode)
		list, err := e.s.List(context.Background())
		if err != nil {
			t.Fatalf("%s: list: %v", when, err)
		}
		left, _ := filepath.Glob(filepath.Join(e.storage, "*"))
		state, _ := filepath.Glob(filepath.Join(e.state, "*-*"))
		if steps[k-1] != "create unmark" {
			if len(list) != 0 || len(left) != 0 || len(state) != 0 {
				t.Fatalf("%s: list %+v, storage %v, state %v; want nothing", when, list, left, state)
			}
			continue
		}
		if len(list) != 1 || list[0].Dirty || list[0].Error != "" {
			t.Fatalf("%s: want one whole workspace: %+v", when, list)
		}
		if st := e.status(list[0].ID); len(st.Changes)+len(st.Conflicts) != 0 {
			t.Fatalf("%s: a whole workspace's status: %+v", when, st)
		}
		if exists(filepath.Join(e.state, list[0].ID+".creating")) {
			t.Fatalf("%s: its creation marker was left", when)
		}
	}
}
