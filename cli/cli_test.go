package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/supervisor"
)

func TestParseMount(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   string
		want policy.MountSpec
	}{
		{"/data:/mnt/data", policy.MountSpec{HostPath: "/data", SandboxPath: "/mnt/data"}},
		{"/data:/mnt/data:ro", policy.MountSpec{HostPath: "/data", SandboxPath: "/mnt/data", Mode: "ro"}},
		{"/data:/mnt/data:rw", policy.MountSpec{HostPath: "/data", SandboxPath: "/mnt/data", Mode: "rw"}},
		{"/a:b:/mnt/x:rw", policy.MountSpec{HostPath: "/a:b", SandboxPath: "/mnt/x", Mode: "rw"}},
		{"./d:/mnt/d", policy.MountSpec{HostPath: filepath.Join(wd, "d"), SandboxPath: "/mnt/d"}},
		// The tool validates the sandbox path and mode; the flag only splits.
		{"/data:relative", policy.MountSpec{HostPath: "/data", SandboxPath: "relative"}},
		{"/data:/mnt/d:xx", policy.MountSpec{HostPath: "/data:/mnt/d", SandboxPath: "xx"}},
	}
	for _, c := range cases {
		got, err := parseMount(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseMount(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"nocolon", ":/mnt/x", ":/mnt/x:ro", ""} {
		if got, err := parseMount(bad); err == nil {
			t.Errorf("parseMount(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestParseMillis(t *testing.T) {
	for in, want := range map[string]int{"800": 800, "0": 0, "-5": -5, "2s": 2000, "1500ms": 1500, "1m": 60000, "-1s": -1000} {
		if got, err := parseMillis(in); err != nil || got != want {
			t.Errorf("parseMillis(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "soon", "1.5ms", "10us", "2x"} {
		if got, err := parseMillis(bad); err == nil {
			t.Errorf("parseMillis(%q) = %d, want an error", bad, got)
		}
	}
}

func testEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, &out, &errb
}

func TestParseInterspersed(t *testing.T) {
	e, _, _ := testEnv()
	fs := newFlags("x")
	j := fs.Bool("json", false, "")
	n := fs.Int("n", 0, "")
	pos, done, _ := e.parse(fs, "x", "", []string{"a", "--json", "b", "-n", "3", "--", "-c", "--json"})
	if done || !*j || *n != 3 || strings.Join(pos, " ") != "a b -c --json" {
		t.Errorf("pos %q json %v n %d done %v", pos, *j, *n, done)
	}
	e, out, _ := testEnv()
	if _, done, code := e.parse(newFlags("x"), "x", "HELP TEXT\n", []string{"a", "--help"}); !done || code != ExitOK || !strings.HasPrefix(out.String(), "HELP TEXT") {
		t.Errorf("--help: done %v code %d out %q", done, code, out)
	}
	e, out, errb := testEnv()
	if _, done, code := e.parse(newFlags("x"), "x", "", []string{"--nope"}); !done || code != ExitUsage || out.Len() != 0 || !strings.Contains(errb.String(), "-nope") {
		t.Errorf("unknown flag: done %v code %d stderr %q", done, code, errb)
	}
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", maxBatchLine+10)
	br := bufio.NewReaderSize(strings.NewReader("short\n"+long+"\nafter\nlast"), 64<<10)
	var got []string
	for {
		line, tooLong, err := readLine(br)
		if tooLong {
			got = append(got, "TOO LONG")
		} else {
			got = append(got, strings.TrimSuffix(string(line), "\n"))
		}
		if err != nil {
			break
		}
	}
	if strings.Join(got, "|") != "short|TOO LONG|after|last" {
		t.Errorf("lines: %q", got)
	}
}

func TestLenientID(t *testing.T) {
	for line, want := range map[string]string{
		`{"id": 7, "tool": 5}`:           "7",
		`{"id": "a", "extra": true}`:     `"a"`,
		`{"tool": "execute_js"}`:         "",
		`not json {"id": 1}`:             "",
		`{"id": {"nested": [1]}, "x":1}`: `{"nested": [1]}`,
	} {
		if got := string(lenientID([]byte(line))); got != want {
			t.Errorf("lenientID(%s) = %s, want %s", line, got, want)
		}
	}
}

// TestBatchOrder: results come out in input order with their ids, whatever order the
// jobs finish in, and bad lines fail alone. Only lines that never reach the server
// are used here; test/cli_test.go runs real calls.
func TestBatchOrder(t *testing.T) {
	var in strings.Builder
	for i := range 200 {
		switch i % 4 {
		case 0:
			in.WriteString(`{"id": ` + itoa(i) + `, "tool": "nope"}` + "\n")
		case 1:
			in.WriteString("garbage " + itoa(i) + "\n")
		case 2:
			in.WriteString("   \n") // blank: skipped
		case 3:
			in.WriteString(`{"id": ` + itoa(i) + `, "tool": "execute_js", "arguments": {"code": 1}}` + "\n")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &batchRun{ctx: ctx, cancel: cancel}
	var out bytes.Buffer
	passed, failed, err := r.run(strings.NewReader(in.String()), &out, 5, newProgress(&out, false))
	if err != nil || passed != 0 || failed != 150 {
		t.Fatalf("passed %d failed %d err %v", passed, failed, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 150 {
		t.Fatalf("%d output lines", len(lines))
	}
	n := 0
	for i := range 200 {
		if i%4 == 2 {
			continue
		}
		var res struct {
			ID    *int   `json:"id"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[n]), &res); err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 0:
			if res.ID == nil || *res.ID != i || !strings.Contains(res.Error, `unknown tool "nope"`) {
				t.Errorf("line %d: %s", i+1, lines[n])
			}
		case 1:
			if res.ID != nil || !strings.HasPrefix(res.Error, "line "+itoa(i+1)+": not a call object") {
				t.Errorf("line %d: %s", i+1, lines[n])
			}
		case 3:
			if res.ID == nil || *res.ID != i || !strings.Contains(res.Error, "execute_js: invalid arguments: code") {
				t.Errorf("line %d: %s", i+1, lines[n])
			}
		}
		n++
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestExitStatuses(t *testing.T) {
	e, _, _ := testEnv()
	code := func(c int) *int { return &c }
	for _, c := range []struct {
		out  supervisor.ExecOutput
		want int
	}{
		{supervisor.ExecOutput{ExitCode: code(0)}, 0},
		{supervisor.ExecOutput{ExitCode: code(3)}, 3},
		{supervisor.ExecOutput{ExitCode: code(-1), Signal: "SIGSEGV"}, 139},
		{supervisor.ExecOutput{ExitCode: code(-1), Signal: "SIGNOPE"}, ExitFailed},
		{supervisor.ExecOutput{ExitCode: nil, Stderr: "exec: not found"}, ExitCannotStart},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledTimeout, Stderr: "killed: timeout after 5ms\n"}, ExitTimeout},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledMemory, Stderr: "memory limit exceeded (70 MB RSS > memoryMb 64; RSS watchdog)\n"}, ExitMemory},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledCancelled, Stderr: "killed: call cancelled\n"}, ExitInterrupted},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledDisk, Stderr: "disk limit exceeded (9.0 MB written > maxWriteMb 8; watchdog)\n"}, ExitDisk},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledProcesses}, ExitProcesses},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledCPU}, ExitCPU},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledSession, Stderr: "killed: session closed\n"}, ExitInterrupted},
		// The status follows killedBy, not the text: a reworded reason keeps it.
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, KilledBy: supervisor.KilledTimeout, Stderr: "the time ran out\n"}, ExitTimeout},
		{supervisor.ExecOutput{ExitCode: code(-1), Killed: true, Stderr: "memory limit exceeded (text alone)\n"}, ExitInterrupted},
	} {
		if got := e.execStatus(&c.out); got != c.want {
			t.Errorf("execStatus(%+v) = %d, want %d", c.out, got, c.want)
		}
	}
	msg := func(s string) *string { return &s }
	for _, c := range []struct {
		out  supervisor.JSOutput
		want int
	}{
		{supervisor.JSOutput{OK: true}, 0},
		{supervisor.JSOutput{Error: msg("Error: boom")}, ExitFailed},
		{supervisor.JSOutput{Error: msg("TimeoutError: execution exceeded 60ms"), EndedAt: supervisor.JSTimeout}, ExitTimeout},
		{supervisor.JSOutput{Error: msg("MemoryLimitError: the isolate's heap exceeded memoryMb (16 MB)"), EndedAt: supervisor.JSMemory}, ExitMemory},
		{supervisor.JSOutput{Error: msg("Error: TimeoutError: not really")}, ExitFailed},
		// A script's own error named as a limit's is the script's failure:
		// the limit is EndedAt, never the text.
		{supervisor.JSOutput{Error: msg("TimeoutError: execution exceeded 60ms")}, ExitFailed},
		{supervisor.JSOutput{Error: msg("MemoryLimitError: thrown by the script")}, ExitFailed},
	} {
		if got := e.jsStatus(&c.out); got != c.want {
			t.Errorf("jsStatus(%+v) = %d, want %d", c.out, got, c.want)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 5 * time.Hour: "5h", 47 * time.Hour: "47h", 72 * time.Hour: "3d"} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %s, want %s", d, got, want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Errorf("a file or a buffer taken for a terminal")
	}
	// Positive control: a pseudo-terminal (its master side answers the ioctl too).
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to compare with: %v", err)
	}
	defer pty.Close()
	if !isTerminal(pty) {
		t.Errorf("a pseudo-terminal not taken for a terminal")
	}
}
