package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/jail"
)

// bin is the autobox binary built once by TestMain; toolsDir holds the static probe
// helper (test/probe), mounted read-only into sandboxes as /mnt/tools.
var bin, toolsDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "autobox-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Readable by all: a root server without namespaces runs commands as
	// another uid, and they run the probe (and the binary, as a helper).
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "autobox")
	args := []string{"build", "-o", bin}
	race := os.Getenv("AUTOBOX_TEST_RACE") != ""
	if race {
		args = append(args, "-race") // the server under the race detector
	}
	if given := os.Getenv("AUTOBOX_TEST_BIN"); given != "" && !race {
		// The binary `make build` made: the tests check what ships. A copy at a path
		// of this run's own, as some tests look for leftover processes by binary path.
		if err := copyFile(given, bin); err != nil {
			fmt.Fprintln(os.Stderr, "copying AUTOBOX_TEST_BIN:", err)
			os.Exit(1)
		}
	} else {
		build := exec.Command("go", append(args, "./cmd/autobox")...)
		build.Dir = ".."
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building autobox:", err)
			os.Exit(1)
		}
	}
	// Nothing a test starts reads the user's own ceiling file: every server's
	// environment names a config dir of the test's, and this is what the others
	// inherit.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	toolsDir = filepath.Join(dir, "tools")
	probe := exec.Command("go", "build", "-o", filepath.Join(toolsDir, "probe"), "./test/probe")
	probe.Dir = ".."
	probe.Env = append(os.Environ(), "CGO_ENABLED=0")
	probe.Stdout, probe.Stderr = os.Stderr, os.Stderr
	if err := probe.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the probe:", err)
		os.Exit(1)
	}
	os.Chmod(toolsDir, 0o755) // for commands run as another uid
	code := m.Run()
	removeDockerImage() // docker_test.go
	os.RemoveAll(dir)
	os.Exit(code)
}

// session is one running autobox server with an MCP client connected to it.
type session struct {
	t       *testing.T
	cs      *mcp.ClientSession
	cmd     *exec.Cmd
	state   string // AUTOBOX_STATE_DIR of this server
	tmp     string // its TMPDIR
	stderr  *syncBuffer
	schemas map[string]*jsonschema.Resolved // each tool's output schema, from tools/list
	// viaSessions makes exec run every command as a session (yieldMs), polled to
	// its end: the one-shot tests then check sessions.
	viaSessions   bool
	ranAsSessions int // commands that outlived their first answer
}

// syncBuffer is the server's stderr, safe to read while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// goroutines asks the server for its goroutine count (SIGUSR1, answered on stderr).
func (s *session) goroutines() int {
	s.t.Helper()
	before := strings.Count(s.stderr.String(), "goroutines=")
	s.cmd.Process.Signal(syscall.SIGUSR1)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) { // the answer ends the wait
		out := s.stderr.String()
		if strings.Count(out, "goroutines=") > before {
			i := strings.LastIndex(out, "goroutines=")
			n, _ := strconv.Atoi(strings.Fields(out[i+len("goroutines="):])[0])
			return n
		}
	}
	s.t.Fatal("the server did not report its goroutines within a minute of SIGUSR1")
	return 0
}

// start runs the binary as an MCP server and connects a client. The server gets a
// private state dir and data dir; it is stopped, and checked for leftovers, at the end
// of the test.
func start(t *testing.T, args ...string) *session {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with env added to the server's environment.
func startEnv(t *testing.T, env []string, args ...string) *session {
	t.Helper()
	return startArgv(t, env, append([]string{bin}, args...))
}

// startNoUserNS starts the server under the probe's seccomp filter that
// refuses to make user namespaces, as a host that forbids them does.
func startNoUserNS(t *testing.T, env []string, args ...string) *session {
	t.Helper()
	return startArgv(t, env, append([]string{filepath.Join(toolsDir, "probe"), "nouserns", bin}, args...))
}

// startArgv runs argv (the server, or a wrapper that execs it) as startEnv.
func startArgv(t *testing.T, env []string, argv []string) *session {
	t.Helper()
	return startClient(t, nil, nil, env, argv)
}

// startClient is startArgv with a client of these options (nil: the default), on
// a session of these options (nil: the default, the newest protocol).
func startClient(t *testing.T, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, env []string, argv []string) *session {
	t.Helper()
	home := t.TempDir()
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	// Open to all, as /tmp is: a root server without namespaces makes its
	// scratch dirs here for commands that run as another uid.
	for _, d := range []string{filepath.Dir(home), home} {
		os.Chmod(d, 0o755)
	}
	os.Chmod(tmp, 0o1777)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			tmp = v // the caller's, in place of the default
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), // the ceiling file: never the user's own
		"AUTOBOX_TEST_SECRET=canary-7c1e",
	}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "autobox-e2e", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sopts)
	if err != nil {
		t.Fatalf("connecting to autobox: %v\nstderr:\n%s", err, stderr)
	}
	s := &session{t: t, cs: cs, cmd: cmd, state: filepath.Join(home, "state"), stderr: stderr, tmp: tmp, schemas: outputSchemas(t, cs)}
	t.Cleanup(func() {
		pid := cmd.Process.Pid
		kids := descendants(pid)
		cs.Close()
		waitGone(t, append(kids, pid))
		checkNothingLeft(t, pid)
		// No scratch dir outlives its call.
		if left, _ := filepath.Glob(filepath.Join(tmp, "autobox-scratch-*")); len(left) > 0 {
			t.Errorf("scratch dirs left behind: %v", left)
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	return s
}

// call invokes a tool and returns its structured result decoded into out, and isError.
func (s *session) call(tool string, args any, out any) bool {
	s.t.Helper()
	res := s.callRaw(tool, args)
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if res.StructuredContent == nil {
			s.t.Fatalf("%s: no structured content; content: %s", tool, textOf(res))
		}
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s: decoding %s: %v", tool, raw, err)
		}
	}
	return res.IsError
}

// callRaw returns the whole result (for tests of error text). Every result of every
// end-to-end test passes here, and is checked against its tool's output schema, as
// the TypeScript SDK's client does with each result.
func (s *session) callRaw(tool string, args any) *mcp.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if err := checkResult(s.schemas, tool, res); err != nil {
		s.t.Errorf("%s %v: %v", tool, args, err)
	}
	return res
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// children lists the direct children of pid.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(w); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// descendants lists every process below pid.
func descendants(pid int) []int {
	var out []int
	queue := children(pid)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, p)
		queue = append(queue, children(p)...)
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is gone for our purposes (its parent reaps it).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone fails the test if any of pids is still alive after a few seconds.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
				t.Errorf("process %d (%s) outlived the server", p, strings.ReplaceAll(string(cmdline), "\x00", " "))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// copyFile copies an executable.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// hostMode is the mode a server started by this test process runs in, as its
// doctor says (the mode line).
var hostMode = sync.OnceValue(func() string {
	out, _ := exec.Command(bin, "doctor").CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "mode" {
			return strings.TrimSuffix(f[2], ":")
		}
	}
	return ""
})

// namespaced reports whether this process's servers give commands namespaces.
func namespaced() bool { return hostMode() == jail.ModeRoot || hostMode() == jail.ModeUserNS }
