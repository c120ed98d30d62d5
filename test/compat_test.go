package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail"
)

// The compatibility test: everyday programs (compatCases), each doing a small
// real job, run bare and then inside exec_command with their directory
// mounted read-write and generous limits. Every program that works bare must
// work inside, in the mode this machine gives the server (root: namespaces;
// an ordinary user: user namespaces). Without namespaces (landlock-only) some
// cannot (no private /dev/shm, no unix sockets, no loopback of its own): each
// case says which and why, the README's table says the same, and the rest
// must work there too.
type compatCase struct {
	name   string
	needs  []string // programs on compatPath (or absolute paths)
	script string   // bash, run in a fresh directory
	// notRoot: the program refuses to run as root (bare too); the case is
	// skipped in a root server's modes.
	notRoot string
	// landlockOnly: why the case cannot work without namespaces; "" if it must.
	landlockOnly string
	// userNS: why the case cannot work in an ordinary user's user namespace;
	// "" if it must.
	userNS string
}

// compatPath is what bare runs search: the PATH commands get inside.
const compatPath = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

func TestCompat(t *testing.T) {
	requireSandbox(t)
	modes := []struct {
		name string
		env  []string
	}{{"default", nil}, {"no-namespaces", []string{"AUTOBOX_NO_NAMESPACES=1"}}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			// A TMPDIR as short as a user's (/tmp): without a root of its own
			// a command's TMPDIR is its scratch dir below it, and programs
			// put unix sockets there (107 bytes at most for their paths).
			s := startEnv(t, append([]string{"TMPDIR=" + shortTmp(t)}, m.env...))
			ns := m.env == nil && namespaced()
			var rows []string
			worked, bare := 0, 0
			for _, c := range compatCases {
				if missing := compatMissing(c.needs); missing != "" {
					if os.Getenv("CI") != "" {
						t.Errorf("%s: %s is missing (.ci/run installs it)", c.name, missing)
					}
					rows = append(rows, fmt.Sprintf("%-22s skipped: %s missing", c.name, missing))
					continue
				}
				if c.notRoot != "" && os.Getuid() == 0 {
					rows = append(rows, fmt.Sprintf("%-22s skipped as root: %s", c.name, c.notRoot))
					continue
				}
				out, err := compatBare(t, c)
				if err != nil {
					rows = append(rows, fmt.Sprintf("%-22s fails bare, not counted: %v\n%s", c.name, err, indent(out)))
					continue
				}
				bare++
				o := compatInside(t, s, c)
				switch {
				case o.code() == 0:
					worked++
					rows = append(rows, fmt.Sprintf("%-22s works inside", c.name))
				case !ns && c.landlockOnly != "":
					rows = append(rows, fmt.Sprintf("%-22s fails inside without namespaces, as documented: %s\n%s", c.name, c.landlockOnly, indent(lastLines(o.Stdout+o.Stderr, 3))))
				case ns && hostMode() == jail.ModeUserNS && c.userNS != "":
					rows = append(rows, fmt.Sprintf("%-22s fails inside a user namespace, as documented: %s", c.name, c.userNS))
				default:
					t.Errorf("%s works bare but not inside (exit %d, killed %v):\n%s\n%s", c.name, o.code(), o.Killed, indent(o.Stdout), indent(o.Stderr))
					rows = append(rows, fmt.Sprintf("%-22s FAILS inside", c.name))
				}
			}
			mode := hostMode()
			if !ns {
				mode = "landlock-only"
			}
			t.Logf("mode %s: %d of %d programs that work bare work inside\n%s", mode, worked, bare, strings.Join(rows, "\n"))
		})
	}
}

// compatGoDir is the directory of the go command that runs this test, for
// the go case (GODIR): inside, it must be below a system directory.
var compatGoDir = func() string {
	p, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return ""
	}
	for _, sys := range []string{"/usr/", "/opt/"} {
		if strings.HasPrefix(p, sys) {
			return filepath.Dir(p)
		}
	}
	return ""
}()

// compatMissing names the first of needs that is not installed, or "".
func compatMissing(needs []string) string {
	for _, n := range needs {
		if n == "go" {
			if compatGoDir == "" {
				return "go (below /usr or /opt)"
			}
			continue
		}
		if filepath.IsAbs(n) {
			if m, _ := filepath.Glob(n); len(m) == 0 {
				return n
			}
			continue
		}
		found := false
		for _, dir := range filepath.SplitList(compatPath) {
			if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode()&0o111 != 0 {
				found = true
				break
			}
		}
		if !found {
			return n
		}
	}
	return ""
}

// compatDir is a fresh directory that any uid may write (a root server
// without namespaces runs commands as nobody).
func compatDir(t *testing.T) string {
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// compatBare runs c's script in a fresh directory as the test runs, with an
// environment like the one commands get inside.
func compatBare(t *testing.T, c compatCase) (string, error) {
	dir := compatDir(t)
	home := filepath.Join(dir, ".home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", c.script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + compatPath, "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1", "GODIR=" + compatGoDir}
	timer := time.AfterFunc(2*time.Minute, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// compatInside runs c's script through exec_command, its directory mounted
// read-write as its working directory.
func compatInside(t *testing.T, s *session, c compatCase) execOut {
	dir := compatDir(t)
	o, _ := s.exec(map[string]any{
		"command":      bash(c.script),
		"mounts":       []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/w", "mode": "rw"}},
		"cwd":          "/mnt/w",
		"timeoutMs":    30000,
		"memoryMb":     2048,
		"maxProcesses": 256,
		"env":          []string{"GODIR=" + compatGoDir},
	})
	return o
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
