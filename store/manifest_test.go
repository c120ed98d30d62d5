package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sameTree reports how two trees differ ("" if they do not); empty and missing
// listings of a directory entry are the same.
func sameTree(a, b tree) string {
	var diffs []string
	for _, pair := range [][2]tree{{a, b}, {b, a}} {
		for d, l := range pair[0] {
			o, ok := pair[1][d]
			if !ok || !slices.Equal(l, o) {
				diffs = append(diffs, fmt.Sprintf("listing %q: %v vs %v (present %v)", d, l, o, ok))
			}
		}
	}
	return strings.Join(diffs, "\n")
}

// checkManifest verifies the workspace's manifest is valid and says what a scan of
// the baseline says.
func checkManifest(t *testing.T, e *env, id string) {
	t.Helper()
	o, err := e.s.open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	got, err := readManifest(o.dir, o.base)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	want, err := scan(context.Background(), o.base, o.ex)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameTree(got, want); d != "" {
		t.Fatalf("manifest differs from a baseline scan:\n%s", d)
	}
}

func (e *env) manifestPath(id string) string { return filepath.Join(e.storage, id, manifestName) }

// The manifest create writes, and the one every sync rewrites, match a scan of the
// baseline exactly, through every kind of change.
func TestManifestMatchesBaseline(t *testing.T) {
	e := newEnv(t)
	fillSource(t, e.src)
	writeFile(t, e.src, "del/x.txt", "x")
	writeFile(t, e.src, "f2d", "file")
	writeFile(t, e.src, "d2f/y.txt", "y")
	writeFile(t, e.src, "d2l/z.txt", "z")
	writeFile(t, e.src, "skip/me.txt", "excluded")
	os.Chmod(filepath.Join(e.src, "sub/emptydir"), 0o555)
	id := e.create("skip").WorkspaceID
	checkManifest(t, e, id)

	w := e.work(id)
	writeFile(t, w, "a.txt", "changed")
	writeFile(t, w, "new/deep/n.txt", "n")
	os.RemoveAll(filepath.Join(w, "del"))
	os.Remove(filepath.Join(w, "f2d"))
	writeFile(t, w, "f2d/in.txt", "in")
	os.RemoveAll(filepath.Join(w, "d2f"))
	writeFile(t, w, "d2f", "now a file")
	os.RemoveAll(filepath.Join(w, "d2l"))
	os.Symlink("sub", filepath.Join(w, "d2l"))
	os.Remove(filepath.Join(w, "link"))
	os.Symlink("a.txt", filepath.Join(w, "link"))
	os.Chmod(filepath.Join(w, "sub/b.bin"), 0o600)
	os.Chmod(filepath.Join(w, "sub"), 0o755)
	writeFile(t, e.src, "same.txt", "both")
	writeFile(t, w, "same.txt", "both") // converged: the baseline alone moves
	e.mustSync(id)
	checkManifest(t, e, id)
	if st := e.status(id); len(st.Changes)+len(st.Conflicts) != 0 {
		t.Fatalf("status after sync: %+v", st)
	}
}

// A missing, torn or corrupt manifest is never used: status scans the baseline, gets
// the right answer, and writes a good manifest for next time.
func TestManifestCorruptFallsBack(t *testing.T) {
	corruptions := map[string]func(b []byte) []byte{
		"missing":   nil,
		"empty":     func(b []byte) []byte { return nil },
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"flipped":   func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b },
		"zeroed":    func(b []byte) []byte { return make([]byte, len(b)) },
		"garbage":   func(b []byte) []byte { return bytes.Repeat([]byte("junk"), 100) },
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.src, "a.txt", "base")
			writeFile(t, e.src, "d/b.txt", "b")
			id := e.create().WorkspaceID
			writeFile(t, e.work(id), "d/b.txt", "edited")
			os.Remove(filepath.Join(e.work(id), "a.txt"))
			data, err := os.ReadFile(e.manifestPath(id))
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(e.manifestPath(id))
			if corrupt != nil {
				os.WriteFile(e.manifestPath(id), corrupt(data), 0o600)
			}
			if got := changesOf(e.status(id).Changes); got != "delete a.txt, modify d/b.txt" {
				t.Fatalf("status with a %s manifest: %q", name, got)
			}
			checkManifest(t, e, id) // rewritten
			if got := changesOf(e.status(id).Changes); got != "delete a.txt, modify d/b.txt" {
				t.Fatalf("status with the rewritten manifest: %q", got)
			}
		})
	}
}

// A manifest left over from before a sync (as if its removal had been lost in a
// crash) would hide a change if trusted: here the working tree goes back to exactly
// the bytes, size and mtime the old manifest recorded. The baseline's directory
// times show it is stale, so status scans and reports the change.
func TestManifestStaleIsDetected(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "version one")
	old := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	os.Chtimes(filepath.Join(e.src, "a.txt"), old, old)
	id := e.create().WorkspaceID
	stale, err := os.ReadFile(e.manifestPath(id))
	if err != nil {
		t.Fatal(err)
	}
	w := e.work(id)
	writeFile(t, w, "a.txt", "version two")
	e.mustSync(id)
	writeFile(t, w, "a.txt", "version one")
	os.Chtimes(filepath.Join(w, "a.txt"), old, old)
	// Positive control: with the manifest sync wrote, the revert is a change.
	if got := changesOf(e.status(id).Changes); got != "modify a.txt" {
		t.Fatalf("status: %q", got)
	}
	if err := os.WriteFile(e.manifestPath(id), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := e.s.open(id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = readManifest(o.dir, o.base)
	o.Close()
	if !errors.Is(err, errStaleManifest) {
		t.Fatalf("stale manifest accepted: %v", err)
	}
	if got := changesOf(e.status(id).Changes); got != "modify a.txt" {
		t.Fatalf("status with a stale manifest: %q", got)
	}
	checkManifest(t, e, id)
}

// Sync removes the manifest before it touches the baseline, so a sync that stops
// part-way leaves none, and the next status scans.
func TestManifestDroppedDuringSync(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	writeFile(t, e.src, "b.txt", "b")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "a.txt", "a2")
	writeFile(t, e.work(id), "b.txt", "b2")
	present := true
	testHookApplied = func(rel string) {
		if rel == "a.txt" {
			present = exists(e.manifestPath(id))
			writeFile(t, e.src, "b.txt", "host edit") // stops the sync at b.txt
		}
	}
	defer func() { testHookApplied = nil }()
	sr := e.sync(id)
	testHookApplied = nil
	if sr.OK || !slices.Equal(sr.Applied, []string{"a.txt"}) {
		t.Fatalf("sync: %+v", sr)
	}
	if present || exists(e.manifestPath(id)) {
		t.Fatalf("manifest present during the sync (%v) or after it stopped (%v)", present, exists(e.manifestPath(id)))
	}
	st := e.status(id)
	if len(st.Conflicts) != 1 || st.Conflicts[0].Path != "b.txt" || changesOf(st.Changes) != "modify b.txt" {
		t.Fatalf("status after the stopped sync: %+v", st)
	}
	checkManifest(t, e, id)
}

// What status promises about content: a file whose size and mtime match the baseline
// is unchanged; a different mtime with the same size is read, so an edit that keeps
// the size is reported and a touch is not.
func TestContentComparedWhenOnlyMtimeDiffers(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "aaaa")
	writeFile(t, e.src, "b.txt", "bbbb")
	id := e.create().WorkspaceID
	w := e.work(id)
	later := time.Now().Add(time.Hour)
	writeFile(t, w, "a.txt", "AAAA")
	os.Chtimes(filepath.Join(w, "b.txt"), later, later)
	if got := changesOf(e.status(id).Changes); got != "modify a.txt" {
		t.Fatalf("status: %q", got)
	}
	e.mustSync(id)
	writeFile(t, w, "a.txt", "ZZZZ") // same size again, against the advanced baseline
	if got := changesOf(e.status(id).Changes); got != "modify a.txt" {
		t.Fatalf("status after sync: %q", got)
	}
}

func FuzzDecodeManifest(f *testing.F) {
	t := tree{"": {{"a", entry{typ: 0o040000, perm: 0o755, ino: 7, ctime: 9}}, {"f", entry{typ: 0o100000, perm: 0o644, size: 3}}},
		"a": {{"l", entry{typ: 0o120000, perm: 0o777, link: "../f"}}}}
	good := encodeManifest(rootStamp{1, 2, 3, 4}, t)
	f.Add(good[:len(good)-4])
	f.Add([]byte(manifestMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		// The checksum is recomputed so the decoder, not the CRC, meets the input.
		data := binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, crcTable()))
		root, got, err := decodeManifest(data)
		if err != nil {
			return
		}
		again, got2, err := decodeManifest(encodeManifest(root, got))
		if err != nil || again != root || sameTree(got, got2) != "" {
			t.Fatalf("decoded manifest does not survive re-encoding: %v", err)
		}
	})
}

func TestExcludesMatchIn(t *testing.T) {
	ex := excludes{"a", "b/c", "d/e/f"}
	for _, p := range []string{"a", "a/x", "ab", "b", "b/c", "b/c/d", "b/cd", "x/b/c", "d/e", "d/e/f", "d/e/f/g", "d/e/ff", "c"} {
		dir, name := splitRel(p)
		if got, want := ex.matchIn(dir, name), ex.match(p); got != want {
			t.Errorf("matchIn(%q, %q) = %v, match(%q) = %v", dir, name, got, p, want)
		}
	}
}
