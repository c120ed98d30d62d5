package test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMakeRunInstall: `make run` (what an MCP client may be configured with)
// writes nothing but the server's JSON-RPC on stdout, and a banner on stderr;
// `make install` puts the binary in PREFIX/bin. The build step is skipped
// (-o build): the binary under test stands for what it makes.
func TestMakeRunInstall(t *testing.T) {
	makePath, src := makeAndTree(t)
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"), "XDG_DATA_HOME=" + filepath.Join(home, "data")}
	for _, args := range [][]string{{"-o", "build", "run"}, {"-s", "-C", src, "-o", "build", "run"}} {
		cmd := exec.Command(makePath, append(args, "BIN="+bin)...)
		cmd.Dir, cmd.Env = src, env
		cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, stderr.String())
		}
		if got := stdout.String(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
			t.Errorf("make %v: stdout must be the server's alone, got %q", args, got)
		}
		if !strings.Contains(stderr.String(), "autobox: serving MCP on stdin/stdout") {
			t.Errorf("make %v: no banner on stderr: %q", args, stderr.String())
		}
	}
	prefix := filepath.Join(home, "prefix")
	cmd := exec.Command(makePath, "-o", "build", "install", "BIN="+bin, "PREFIX="+prefix)
	cmd.Dir, cmd.Env = src, env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "installed "+prefix+"/bin/autobox") || !strings.Contains(string(out), "is not on your PATH") {
		t.Fatalf("make install: %v %s", err, out)
	}
	v, err := exec.Command(filepath.Join(prefix, "bin", "autobox"), "--version").CombinedOutput()
	if err != nil {
		t.Errorf("the installed binary: %v %s", err, v)
	}
}

// TestMakeRunStdoutIsProtocol: an MCP client configured with `make -C DIR run`
// reads the protocol from make's stdout, so its first bytes must be the
// server's answer, not make's "Entering directory" line. With -s or
// --no-print-directory that holds on every GNU make; without either, on GNU make
// 4.4.1 and later (the Makefile's MAKEFLAGS line), while older makes print the
// line before they read any makefile: there the test checks that run says so on
// stderr, naming the fix. The build step is skipped (-o build), as in
// TestMakeRunInstall.
func TestMakeRunStdoutIsProtocol(t *testing.T) {
	mk, root := makeAndTree(t)
	out, _ := exec.Command(mk, "--version").Output()
	fixed := makeHonoursNoPrintDirectory(string(out))
	version, _, _ := strings.Cut(string(out), "\n")
	t.Logf("%s: --no-print-directory from the Makefile honoured: %v", version, fixed)
	home := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"), "XDG_DATA_HOME=" + filepath.Join(home, "data")}
	for _, c := range []struct {
		args  []string
		clean bool
	}{
		{[]string{"-s", "-C", root, "run"}, true},
		{[]string{"--no-print-directory", "-C", root, "run"}, true},
		{[]string{"-C", root, "run"}, fixed},
	} {
		first, stderr := makeRunFirstLine(t, mk, env, append(c.args, "-o", "build", "BIN="+bin))
		name := "make " + strings.Join(c.args, " ")
		switch {
		case c.clean && !strings.HasPrefix(first, `{"jsonrpc":"2.0","id":0,"result":{`):
			t.Errorf("%s: stdout begins %.200q; stderr %s", name, first, stderr)
		case !c.clean && (!strings.HasPrefix(first, "make: Entering directory") || !strings.Contains(stderr, "configure the client with make -s -C "+root+" run")):
			t.Errorf("%s on an older make: stdout begins %.200q, and stderr does not name the fix: %s", name, first, stderr)
		case !c.clean:
			t.Logf("%s: this make prints %q before the protocol, and run says so on stderr", name, first)
		}
	}
}

// makeAndTree is the make on PATH (the test skips without one) and the source
// tree's root.
func makeAndTree(t *testing.T) (mk, root string) {
	t.Helper()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	if root, err = filepath.Abs(".."); err != nil {
		t.Fatal(err)
	}
	return mk, root
}

// makeRunFirstLine runs make with args as an MCP client would (an initialize
// request on stdin), and returns the first line of its stdout and its stderr.
func makeRunFirstLine(t *testing.T, mk string, env, args []string) (first, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung server fails, not hangs
	defer cancel()
	cmd := exec.CommandContext(ctx, mk, args...)
	cmd.Env = env
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"make-run","version":"1"}}}`+"\n")
	first, _ = bufio.NewReader(stdout).ReadString('\n')
	in.Close() // end of input: the server exits, and make with it
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("make %s: %v; stderr %s", strings.Join(args, " "), err, errBuf.String())
	}
	return first, errBuf.String()
}

// makeHonoursNoPrintDirectory reports whether a GNU make (its --version text)
// takes --no-print-directory from MAKEFLAGS set in a makefile for itself: 4.4.1
// and later.
func makeHonoursNoPrintDirectory(version string) bool {
	m := regexp.MustCompile(`GNU Make (\d+)\.(\d+)(?:\.(\d+))?`).FindStringSubmatch(version)
	if m == nil {
		return false
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v[0] > 4 || v[0] == 4 && (v[1] > 4 || v[1] == 4 && v[2] >= 1)
}

// TestMakeFindsGo: go is not assumed on the user's PATH. Without it there,
// make builds with /usr/local/go/bin/go (where Go's own tarball unpacks), and a
// go that is nowhere gets a message saying what to do, not "go: not found".
func TestMakeFindsGo(t *testing.T) {
	mk, root := makeAndTree(t)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GOTOOLCHAIN=local"}
	if goBin, err := exec.LookPath("go"); err == nil {
		for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
			v, _ := exec.Command(goBin, "env", k).Output()
			env = append(env, k+"="+strings.TrimSpace(string(v)))
		}
	}
	// Nowhere: the message, and no build.
	cmd := exec.Command(mk, "-s", "-C", root, "build", "GO=/nonexistent/go", "BIN="+filepath.Join(t.TempDir(), "autobox"))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "go not found on PATH nor at /usr/local/go/bin/go: install Go") || !strings.Contains(string(out), "make GO=/path/to/go") {
		t.Errorf("make build without go: %v, %s", err, out)
	}
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Skipf("no /usr/local/go/bin/go here to find: %v", err)
	}
	// Positive control: found there, the build runs with it (and reuses the
	// build cache: no compile of V8's bindings).
	built := filepath.Join(t.TempDir(), "autobox")
	cmd = exec.Command(mk, "-s", "-C", root, "build", "BIN="+built)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build with go only at /usr/local/go/bin: %v, %s", err, out)
	}
	if v, err := exec.Command(built, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(v), "autobox ") {
		t.Errorf("the binary built: %v, %s", err, v)
	}
}
