package task

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/autobox-dev/autobox/internal/exactjson"
)

// TestRecordKeysExact (issue 35 item 3): a task record whose keys only fold to
// a field, or repeat one, is refused naming the key: encoding/json would take
// "Sandboxed": false after "sandboxed": true, and a worktree a sandbox wrote
// would be handed out unchecked. The same record with exact keys reads.
func TestRecordKeysExact(t *testing.T) {
	dir := t.TempDir()
	read := func(text string) (record, error) {
		p := filepath.Join(dir, "rec.json")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return readRecord(p)
	}
	links := `"links": {"dotGit": "a", "commonDir": "b", "gitDir": "c"}`
	for text, key := range map[string]string{
		`{"id": "t", "kind": "native", ` + links + `, "sandboxed": true, "Sandboxed": false}`:       "Sandboxed",
		`{"id": "t", "kind": "native", ` + links + `, "unchecked": true, "unchecked": false}`:       "unchecked",
		`{"id": "t", "kind": "native", "links": {"dotGit": "a", "DOTGIT": "b"}, "sandboxed": true}`: "DOTGIT",
	} {
		_, err := read(text)
		var ke *exactjson.KeyError
		if !errors.As(err, &ke) || ke.Key != key {
			t.Errorf("%s: want it refused naming %s, got %v", text, key, err)
		}
	}
	rec, err := read(`{"id": "t", "kind": "native", ` + links + `, "sandboxed": true, "unchecked": true}`)
	if err != nil || !rec.Sandboxed || !rec.Unchecked {
		t.Errorf("exact keys: %+v %v", rec, err)
	}
}
