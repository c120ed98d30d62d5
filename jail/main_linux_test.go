package jail

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/internal/proctree"
	"github.com/autobox-dev/autobox/policy"
)

// RunTests is TestMain's body (testmain_linux_test.go, in package jail_test,
// plays autobox through jail/launcher's table); it returns the exit code.
func RunTests(m *testing.M) int {
	if os.Getenv(helperEnv) == "1" {
		return helperMain(os.Args[1:])
	}
	code := m.Run()
	// The suite must not leave children behind (zombies included). Launchers
	// are reaped in the background after Wait returns, so give them a moment;
	// this bounds a poll, it does not assert a time.
	kids := childrenOf(os.Getpid())
	for deadline := time.Now().Add(5 * time.Second); len(kids) > 0 && time.Now().Before(deadline); kids = childrenOf(os.Getpid()) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(kids) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "leaked child processes: %v\n", kids)
		code = 1
	}
	return code
}

func childrenOf(pid int) []proctree.Proc {
	procs, err := proctree.Scan()
	if err != nil {
		return nil
	}
	var out []proctree.Proc
	for _, p := range procs {
		if p.PPid == pid {
			out = append(out, p)
		}
	}
	return out
}

// testExe is this test binary, which also serves as launcher and victim.
func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// requireJail skips when this host cannot run the jail at all.
func requireJail(t testing.TB) Status {
	t.Helper()
	st := Probe()
	if err := st.Check(&policy.Sandbox{}); err != nil {
		t.Skipf("jail not enforceable here: %v", err)
	}
	return st
}

// basePolicy lets a victim run: system directories read-only with exec, the
// test binary's directory, /dev/null. A path that does not exist is listed
// too: it must be skipped, not fail the ruleset.
func basePolicy(t testing.TB) policy.Sandbox {
	return policy.Sandbox{
		ReadOnly:  []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/nonexistent-autobox", filepath.Dir(testExe(t))},
		Devices:   []string{"/dev/null"},
		AllowExec: true,
	}
}

// startHelper runs the victim with probes through Start and returns its
// results by probe.
func startHelper(t *testing.T, spec Spec, probes ...string) (map[string]string, Result, *Tree) {
	t.Helper()
	spec.Argv = append([]string{testExe(t)}, probes...)
	spec.Env = append([]string{helperEnv + "=1"}, spec.Env...)
	out := tempFile(t)
	tree, err := Start(testExe(t), &spec, out, out)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := tree.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	text := readBack(t, out)
	if !res.Started || res.ExitCode != 0 {
		t.Fatalf("victim: %+v, output:\n%s", res, text)
	}
	return parseResults(t, text, probes), res, tree
}

// selfRestricted runs the victim directly; it calls RestrictThread itself.
func selfRestricted(t *testing.T, p policy.Sandbox, probes ...string) map[string]string {
	t.Helper()
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testExe(t), probes...)
	cmd.Env = []string{helperEnv + "=1", policyEnv + "=" + string(js)}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("victim: %v, output:\n%s", err, out)
	}
	return parseResults(t, string(out), probes)
}

func parseResults(t *testing.T, out string, probes []string) map[string]string {
	t.Helper()
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			got[k] = v
		}
	}
	for _, p := range probes {
		if _, ok := got[p]; !ok {
			t.Fatalf("no result for %q in victim output:\n%s", p, out)
		}
	}
	return got
}

// expect checks probe results: want maps probe → expected result.
func expect(t *testing.T, label string, got map[string]string, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s = %s, want %s", label, p, got[p], w)
		}
	}
}

func tempFile(t testing.TB) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readBack(t testing.TB, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	p, ok := proctree.ReadStat(pid, make([]byte, 512))
	return ok && !p.Dead()
}

// waitForFile polls until path has content; the deadline only guards
// against a hung test, it is not a timing assertion.
func waitForFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

func readCmdline(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b), err
}

// jailMode is one way the jail runs: with namespaces (a pid namespace per
// launcher, a private root per command), which it uses where it holds
// CAP_SYS_ADMIN, or without (what an unprivileged user gets).
type jailMode struct {
	name string
	ns   bool
}

// eachMode runs f once per mode this host can run: without namespaces always,
// with them when the tests run as root. The mode is switched for launchers
// started during f (namespacesOff), so f must not run in parallel with others.
func eachMode(t *testing.T, f func(t *testing.T, m jailMode)) {
	t.Helper()
	modes := []jailMode{{"no-namespaces", false}}
	switch {
	case confine.HasCapSysAdmin():
		modes = append(modes, jailMode{"namespaces", true})
	case userNS().err == nil:
		modes = append(modes, jailMode{"user-namespaces", true})
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			saved, savedDrop := namespacesOff, dropRoot
			namespacesOff = !m.ns
			// A root launcher without namespaces would run the victim (this
			// test binary, in a directory of root's alone) as another uid:
			// the end-to-end tests check that, with the real binary.
			dropRoot = false
			defer func() { namespacesOff, dropRoot = saved, savedDrop }()
			f(t, m)
		})
	}
}

// hostPid maps a pid as a process inside tree's pid namespace sees it to this
// host's pid of the same process (the same pid if tree has no namespace), or -1
// if no such process is alive.
func hostPid(t testing.TB, tree *Tree, pid int) int {
	t.Helper()
	if !tree.pidns {
		return pid
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", tree.Pid()))
	if err != nil {
		return -1
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		if l, err := os.Readlink(dir + "/ns/pid"); err != nil || l != ns {
			continue
		}
		b, err := os.ReadFile(dir + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(strings.TrimPrefix(line, "NSpid:")); strings.HasPrefix(line, "NSpid:") && len(f) > 0 && f[len(f)-1] == strconv.Itoa(pid) {
				n, _ := strconv.Atoi(filepath.Base(dir))
				return n
			}
		}
	}
	return -1
}
