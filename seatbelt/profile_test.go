package seatbelt

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const scratch = "/private/var/folders/zz/abc/T/autobox-call-1"

var execCases = []struct {
	name string
	p    policy.Sandbox
}{
	{"no_mounts", policy.Sandbox{AllowExec: true}},
	{"scratch_only", policy.Sandbox{ReadWrite: []string{scratch}, AllowExec: true}},
	{"ro_rw", policy.Sandbox{
		ReadOnly:  []string{"/Users/alice/data-ro", "/Volumes/ext/photos-ro"},
		ReadWrite: []string{"/Users/alice/ws-rw", scratch},
		Devices:   []string{"/dev/dtracehelper"},
		AllowExec: true,
	}},
	{"network", policy.Sandbox{ReadWrite: []string{scratch}, AllowNetwork: true, AllowExec: true}},
	{"deny_write", policy.Sandbox{
		ReadOnly:  []string{"/Users/alice/proj-rw/vendor-ro"},
		ReadWrite: []string{"/Users/alice/proj-rw", scratch},
		DenyWrite: []string{"/Users/alice/proj-rw/sub/src-dw", "/Users/alice/elsewhere-dw"},
		AllowExec: true,
	}},
	{"no_exec", policy.Sandbox{ReadOnly: []string{"/Users/alice/data-ro"}, ReadWrite: []string{scratch}}},
	{"bad_deny_path", policy.Sandbox{ReadWrite: []string{scratch}, DenyWrite: []string{"relative/src-dw"}, AllowExec: true}},
	{"hidden", policy.Sandbox{
		ReadOnly:  []string{"/Users/alice/conf-ro"},
		Hidden:    []string{"/Users/alice/conf-ro/shadow-hid", "/Users/alice/conf-ro/ssh/host_key-hid"},
		ReadWrite: []string{scratch},
		AllowExec: true,
	}},
	{"network_by_host", policy.Sandbox{ReadWrite: []string{scratch}, AllowNetwork: true, PrivateNetwork: true, ProxyPort: 51234, AllowExec: true}},
}

const workerExe = "/Users/alice/go/bin/autobox-worker"

func TestExecProfileGolden(t *testing.T) {
	for _, c := range execCases {
		t.Run(c.name, func(t *testing.T) {
			profile, params := ExecProfile(&c.p)
			golden(t, c.name, profile, params)
			checkProfile(t, profile, params, allPaths(&c.p))
		})
	}
}

func TestWorkerProfileGolden(t *testing.T) {
	profile, params := WorkerProfile(workerExe)
	golden(t, "worker", profile, params)
	checkProfile(t, profile, params, []string{workerExe})
	if params[0] != "EXE="+workerExe {
		t.Errorf("first param = %q, want the worker binary", params[0])
	}
	forms, err := parseSBPL(profile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forms {
		if f.head() != "allow" {
			continue
		}
		for _, op := range f.list[1:] {
			switch op.atom {
			case "file-write*", "process-fork", "network-bind", "network-inbound", "network-outbound",
				"mach-lookup", "system-socket", "ipc-posix-sem":
				t.Errorf("worker profile allows %s", op.atom)
			case "process-exec":
				if len(f.list) != 3 || f.list[2].head() != "literal" || f.list[2].list[1].head() != "param" ||
					f.list[2].list[1].list[1].atom != `"EXE"` {
					t.Errorf("worker profile allows exec of more than its binary")
				}
			}
		}
	}
}

func allPaths(p *policy.Sandbox) []string {
	return slices.Concat(p.ReadOnly, p.ReadWrite, p.DenyWrite, p.Devices, p.Hidden)
}

// paramRefs returns the names of (param "NAME") forms, in order.
func paramRefs(nodes []*node) []string {
	var out []string
	for _, n := range nodes {
		if n.head() == "param" && len(n.list) == 2 {
			out = append(out, strings.Trim(n.list[1].atom, `"`))
		}
		out = append(out, paramRefs(n.list)...)
	}
	return out
}

// checkProfile asserts what every generated profile must hold.
func checkProfile(t *testing.T, profile string, params []string, paths []string) {
	t.Helper()
	checkSBPL(t, profile)
	for _, p := range paths {
		if strings.Contains(profile, p) {
			t.Errorf("profile text contains the path %q; paths must only be params", p)
		}
	}
	// Params are defined in the order the profile first refers to them, each
	// once, and every reference is defined.
	forms, _ := parseSBPL(profile)
	var referenced []string
	for _, name := range paramRefs(forms) {
		if !slices.Contains(referenced, name) {
			referenced = append(referenced, name)
		}
	}
	var defined []string
	for _, kv := range params {
		name, _, found := strings.Cut(kv, "=")
		if !found {
			t.Errorf("param %q is not NAME=value", kv)
		}
		defined = append(defined, name)
	}
	if !slices.Equal(referenced, defined) {
		t.Errorf("params in reference order %v, defined %v", referenced, defined)
	}
	// The write denials of ReadOnly/DenyWrite paths come after every allow.
	if i := strings.Index(profile, "(deny file-write*"); i >= 0 {
		if j := strings.LastIndex(profile, "(allow"); j > i {
			t.Errorf("an allow rule follows the write denials:\n%s", profile[j:])
		}
	}
}

func TestExecProfileOrder(t *testing.T) {
	p := execCases[4].p // deny_write
	profile, params := ExecProfile(&p)
	denyAt := strings.Index(profile, "(deny file-write*")
	if denyAt < 0 {
		t.Fatal("no write denial")
	}
	for _, want := range []string{`(subpath (param "RO_0"))`, `(subpath (param "DW_0"))`, `(subpath (param "DW_1"))`} {
		if !strings.Contains(profile[denyAt:], want) {
			t.Errorf("write denial lacks %s", want)
		}
	}
	// The directories between the rw mount and the protected paths are
	// guarded against rename; those outside any rw mount need no guard.
	guards := map[string]bool{}
	for _, kv := range params {
		if name, v, _ := strings.Cut(kv, "="); strings.HasPrefix(name, paramGuard+"_") {
			guards[v] = true
		}
	}
	want := map[string]bool{"/Users/alice/proj-rw": true, "/Users/alice/proj-rw/sub": true}
	if len(guards) != len(want) || !guards["/Users/alice/proj-rw"] || !guards["/Users/alice/proj-rw/sub"] {
		t.Errorf("guards = %v, want %v", guards, want)
	}
	// The rw mount stays writable (positive control): its allow precedes the denial.
	if i := strings.Index(profile, "(allow file-write*\n  (subpath (param \"RW_0\"))"); i < 0 || i > denyAt {
		t.Errorf("rw mount is not allowed for writes before the denials")
	}
}

func TestExecProfileSwitches(t *testing.T) {
	on, _ := ExecProfile(&policy.Sandbox{AllowNetwork: true, AllowExec: true})
	off, _ := ExecProfile(&policy.Sandbox{AllowExec: true})
	if !strings.Contains(on, `(remote ip "*:*")`) || strings.Contains(off, "remote ip") {
		t.Error("IP network must be allowed exactly when AllowNetwork")
	}
	noExec, _ := ExecProfile(&policy.Sandbox{})
	if !strings.HasSuffix(noExec, "(deny process-exec)\n") || strings.Contains(off, "(deny process-exec)") {
		t.Error("exec must be denied last exactly when !AllowExec")
	}
	bad, _ := ExecProfile(&policy.Sandbox{ReadOnly: []string{"/ok", "rel"}, AllowExec: true})
	if !strings.HasSuffix(bad, "(deny file-write*)\n") || strings.HasSuffix(off, "(deny file-write*)\n") {
		t.Error("an unusable ReadOnly path must deny every write")
	}
}

// Paths that would break the profile if they were pasted into it.
var hostile = []string{
	`/Users/a/q"uote`,
	`/Users/a/paren) (allow default) (`,
	"/Users/a/new\nline (allow file-write* (subpath \"/\"))",
	`/Users/a/semi;colon \ back`,
	`/Users/a/sp ace/#"re"`,
}

func hostilePolicy() policy.Sandbox {
	return policy.Sandbox{
		ReadOnly:  []string{hostile[0]},
		ReadWrite: []string{hostile[1], hostile[2]},
		DenyWrite: []string{hostile[3]},
		Devices:   []string{hostile[4]},
		AllowExec: true,
	}
}

func TestHostilePathsStayParams(t *testing.T) {
	evil := hostilePolicy()
	plain := policy.Sandbox{
		ReadOnly:  []string{"/Users/a/p0"},
		ReadWrite: []string{"/Users/a/p1", "/Users/a/p2/x"}, // same depth as hostile[2]
		DenyWrite: []string{"/Users/a/p3"},
		Devices:   []string{"/Users/a/p4"},
		AllowExec: true,
	}
	evilProfile, evilParams := ExecProfile(&evil)
	plainProfile, _ := ExecProfile(&plain)
	if evilProfile != plainProfile {
		t.Error("profile text depends on path contents")
	}
	checkProfile(t, evilProfile, evilParams, hostile)
	for _, h := range hostile {
		found := false
		for _, kv := range evilParams {
			_, v, _ := strings.Cut(kv, "=")
			found = found || v == h
		}
		if !found {
			t.Errorf("param value %q not passed through unchanged", h)
		}
	}
	workerProfile, workerParams := WorkerProfile(hostile[1])
	plainWorker, _ := WorkerProfile("/Users/a/p1")
	if workerProfile != plainWorker || workerParams[0] != "EXE="+hostile[1] {
		t.Error("worker profile text depends on the binary's path")
	}
}

func golden(t *testing.T, name, profile string, params []string) {
	t.Helper()
	got := profile + "\n;; ---- parameters (-D) ----\n;; " + strings.Join(params, "\n;; ") + "\n"
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./seatbelt -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the generated profile (go test ./seatbelt -update rewrites it); got:\n%s", file, got)
	}
}

func BenchmarkExecProfile(b *testing.B) {
	p := execCases[4].p // deny_write: every kind of rule
	for b.Loop() {
		profile, params := ExecProfile(&p)
		_ = Args(profile, params, []string{"/bin/echo", "hi"})
	}
}

// TestExecProfileNetworkByHost: with allowHosts the command may connect to the
// proxy's loopback port and nothing else: no open network, no name service.
// The same policy without PrivateNetwork is the control: the whole network.
func TestExecProfileNetworkByHost(t *testing.T) {
	p := policy.Sandbox{ReadWrite: []string{scratch}, AllowNetwork: true, PrivateNetwork: true, ProxyPort: 51234, AllowExec: true}
	profile, _ := ExecProfile(&p)
	if !strings.Contains(profile, `(allow network-outbound
  (remote tcp "localhost:51234"))`) {
		t.Errorf("no outbound rule for the proxy:\n%s", profile)
	}
	for _, not := range []string{`(remote ip "*:*")`, "mDNSResponder", "network-inbound", "dnssd"} {
		if strings.Contains(profile, not) {
			t.Errorf("the profile allows %s", not)
		}
	}
	p.PrivateNetwork = false
	if open, _ := ExecProfile(&p); !strings.Contains(open, `(remote ip "*:*")`) {
		t.Error("control: the whole network is not open without PrivateNetwork")
	}
}
