package jail

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHidden: a read-only directory with hidden paths below it is readable
// but for them (positive controls: its other files, a subdirectory's other
// files, listing it), in every mode; a file made at a hidden path after the
// restriction (as passwd(1) renames a new shadow over the old) is no more
// readable; nor is an entry only its owner may read, whatever the list says.
func TestHidden(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, m jailMode) {
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		write := func(rel string, mode os.FileMode) string {
			p := filepath.Join(dir, rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(rel), mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, mode)
			return p
		}
		ok, secret, sub, subSecret, private := write("ok.conf", 0o644), write("shadow", 0o644), write("sub/other", 0o644), write("sub/key", 0o644), write("private", 0o600)
		later := filepath.Join(dir, "later")
		p := basePolicy(t)
		p.ReadOnly = append(p.ReadOnly, dir)
		p.Hidden = []string{secret, subSecret}
		write("later", 0o644)
		got, _, _ := startHelper(t, Spec{Sandbox: p}, "readfile:"+ok, "readfile:"+sub, "readdir:"+dir, "readdir:"+filepath.Join(dir, "sub"),
			"read:"+secret, "read:"+subSecret, "read:"+private)
		expect(t, m.name, got, map[string]string{
			"readfile:" + ok: "ok.conf", "readfile:" + sub: "sub/other",
			"readdir:" + dir: "ok", "readdir:" + filepath.Join(dir, "sub"): "ok",
			"read:" + secret: "EACCES", "read:" + subSecret: "EACCES", "read:" + private: "EACCES",
		})
		if err := os.Rename(later, secret); err != nil {
			t.Fatal(err)
		}
		got, _, _ = startHelper(t, Spec{Sandbox: p}, "read:"+secret)
		expect(t, m.name+", secret replaced", got, map[string]string{"read:" + secret: "EACCES"})
	})
}
