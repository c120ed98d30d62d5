package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRunInstall: `make run` (what an MCP client may be configured with)
// writes nothing but the server's JSON-RPC on stdout, and a banner on stderr;
// `make install` puts the binary in PREFIX/bin. The build step is skipped
// (-o build): the binary under test stands for what it makes.
func TestMakeRunInstall(t *testing.T) {
	makePath, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	src, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
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
