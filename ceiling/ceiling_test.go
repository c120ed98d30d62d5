package ceiling

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func load(t *testing.T, file string, flags *Flags) *Ceiling {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	if file != "" {
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if flags == nil {
		flags = &Flags{}
	}
	flags.File = path
	c, err := Load(flags, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rules(es []Excess) string {
	var r []string
	for _, e := range es {
		r = append(r, e.Rule)
	}
	return strings.Join(r, ",")
}

// Without a file everything is open but the never-mountable defaults, which
// hold whatever is below them and whatever holds them.
func TestDefaults(t *testing.T) {
	c := load(t, "", nil)
	home := RealHome()
	ssh := canonicalMaybeMissing(filepath.Join(home, ".ssh"))
	for _, m := range []MountAsk{
		{Param: "p", Path: ssh, Mode: ReadOnly},
		{Param: "p", Path: filepath.Join(ssh, "keys"), Mode: ReadOnly},
		{Param: "p", Path: canonicalMaybeMissing(home), Mode: ReadOnly},
		{Param: "p", Path: "/", Mode: ReadOnly},
	} {
		es := c.Check(Request{Mounts: []MountAsk{m}}, nil)
		if rules(es) != "neverMount" || es[0].Askable {
			t.Errorf("%s: %v", m.Path, es)
		} else if !strings.Contains(es[0].Error(), "liftNeverMount") {
			t.Errorf("%s: the refusal does not say how to lift it: %s", m.Path, es[0].Error())
		}
	}
	// Positive control: another directory, the network, any limit.
	dir := t.TempDir()
	if es := c.Check(Request{Mounts: []MountAsk{{Param: "p", Path: dir, Mode: ReadWrite}}, AllowNetwork: true, AllowHosts: []string{"example.com"}, Limits: Limits{TimeoutMs: 1 << 30}}, nil); len(es) != 0 {
		t.Errorf("open ceiling: %v", es)
	}
	// Lifted.
	c = load(t, `{"liftNeverMount": ["~/.ssh"]}`, nil)
	if es := c.Check(Request{Mounts: []MountAsk{{Param: "p", Path: ssh, Mode: ReadOnly}}}, nil); len(es) != 0 {
		t.Errorf("lifted ~/.ssh: %v", es)
	}
}

// autobox's own directories: never mounted, and a directory holding them only
// read-only.
func TestOwnDirectories(t *testing.T) {
	state := t.TempDir()
	c, err := Load(&Flags{File: filepath.Join(t.TempDir(), "policy.json")}, []string{state})
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(state)
	for _, tc := range []struct {
		path string
		mode Mode
		want string
	}{
		{state, ReadOnly, "neverMount"},
		{parent, ReadWrite, "neverMount"},
		{parent, ReadOnly, ""},
	} {
		if got := rules(c.Check(Request{Mounts: []MountAsk{{Param: "p", Path: tc.path, Mode: tc.mode}}}, nil)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.path, tc.mode, got, tc.want)
		}
	}
	if _, err := Load(&Flags{LiftNeverMount: []string{"~/.local/state/autobox"}}, nil); err == nil {
		t.Error("lifting autobox's own directory was allowed")
	}
}

func TestRules(t *testing.T) {
	src := t.TempDir()
	other := t.TempDir()
	c := load(t, `{"mounts": [{"path": "`+src+`", "mode": "ro"}], "allowHosts": ["example.com", "*.npmjs.org"],
		"limits": {"timeoutMs": 5000, "maxWriteMb": 10}}`, nil)
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"ro inside", Request{Mounts: []MountAsk{{Param: "p", Path: filepath.Join(src), Mode: ReadOnly}}}, ""},
		{"rw inside", Request{Mounts: []MountAsk{{Param: "p", Path: src, Mode: ReadWrite}}}, "mounts"},
		{"outside", Request{Mounts: []MountAsk{{Param: "p", Path: other, Mode: ReadOnly}}}, "mounts"},
		{"listed host", Request{AllowHosts: []string{"example.com", "registry.npmjs.org:443"}}, ""},
		{"other host", Request{AllowHosts: []string{"example.com", "other.test"}}, "allowHosts"},
		{"a port not listed", Request{AllowHosts: []string{"example.com:22"}}, "allowHosts"},
		{"whole network", Request{AllowNetwork: true}, "allowNetwork"},
		{"limits within", Request{Limits: Limits{TimeoutMs: 5000, MaxWriteMb: 10, MemoryMb: 4096}}, ""},
		{"limits beyond", Request{Limits: Limits{TimeoutMs: 5001, MaxWriteMb: 11}}, "limits.timeoutMs,limits.maxWriteMb"},
	} {
		if got := rules(c.Check(tc.r, nil)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The refusal names the rule and the file.
	es := c.Check(Request{AllowHosts: []string{"other.test"}}, nil)
	if msg := es[0].Error(); !strings.Contains(msg, `"allowHosts" rule`) || !strings.Contains(msg, c.File) {
		t.Errorf("refusal: %s", msg)
	}
	// Granted for the session: within from then on.
	var g Grants
	g.Apply(c.Check(Request{AllowHosts: []string{"other.test"}, AllowNetwork: true, Mounts: []MountAsk{{Param: "p", Path: other, Mode: ReadWrite}}, Limits: Limits{TimeoutMs: 9000}}, nil))
	if es := c.Check(Request{AllowHosts: []string{"other.test"}, AllowNetwork: true, Mounts: []MountAsk{{Param: "p", Path: other, Mode: ReadWrite}}, Limits: Limits{TimeoutMs: 9000}}, &g); len(es) != 0 {
		t.Errorf("after the grants: %v", es)
	}
	if got := rules(c.Check(Request{Limits: Limits{TimeoutMs: 9001}}, &g)); got != "limits.timeoutMs" {
		t.Errorf("past the grant: %q", got)
	}
	// A flag replaces the file's rule and names itself.
	c = load(t, `{"allowHosts": ["example.com"]}`, &Flags{Hosts: []string{"other.test"}})
	es = c.Check(Request{AllowHosts: []string{"example.com"}}, nil)
	if len(es) != 1 || !strings.Contains(es[0].Error(), "--ceiling-host") || !c.FromFlag("allowHosts") {
		t.Errorf("flag: %v", es)
	}
}

func TestBadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	for _, text := range []string{`{"mount": []}`, `{"mounts": [{"path": "rel"}]}`, `{"allowHosts": ["*"]}`, `[`, `{"limits": {"timeoutMs": -1}}`} {
		os.WriteFile(path, []byte(text), 0o600)
		if _, err := Load(&Flags{File: path}, nil); err == nil {
			t.Errorf("%s: loaded", text)
		} else if !strings.Contains(err.Error(), "policy.json") && !strings.Contains(err.Error(), "limits") {
			t.Errorf("%s: the error does not name the file: %v", text, err)
		}
	}
}

// "always" rewrites only what it changes, keeps the rest and its order, and
// replaces the file in one rename.
func TestUpdate(t *testing.T) {
	src := t.TempDir()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	os.WriteFile(path, []byte(`{
  "limits": {"memoryMb": 100},
  "allowHosts": ["example.com"],
  "mounts": []
}`), 0o640)
	c, err := Load(&Flags{File: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	es := c.Check(Request{AllowHosts: []string{"other.test"}, Mounts: []MountAsk{{Param: "p", Path: src, Mode: ReadWrite}}}, nil)
	if err := Update(path, func(f *File) { Edit(f, es) }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !strings.Contains(string(got["allowHosts"]), `"other.test"`) || !strings.Contains(string(got["mounts"]), src) || !strings.Contains(string(got["limits"]), "100") {
		t.Errorf("updated file:\n%s", b)
	}
	if i, j := strings.Index(string(b), "limits"), strings.Index(string(b), "mounts"); i > j {
		t.Errorf("order changed:\n%s", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	c2, err := Load(&Flags{File: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if es := c2.Check(Request{AllowHosts: []string{"other.test"}, Mounts: []MountAsk{{Param: "p", Path: src, Mode: ReadWrite}}}, nil); len(es) != 0 {
		t.Errorf("after always: %v", es)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".policy.json.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
