package test

import (
	"io"
	"strings"
	"testing"
	"time"
)

// A client that closes its end of the server's stdout: the server's next answer
// cannot be written, and it says so on stderr and exits with status 0 instead of
// dying of SIGPIPE without a word.
func TestClientClosedStdout(t *testing.T) {
	// Positive control: the server answers (initialize) while the client reads.
	cmd, in, outR, _, stderr := startPiped(t)
	defer in.Close()
	outR.Close()
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1 + 1"}}}`+"\n")

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the server ended with %v (%s); want status 0\nstderr:\n%s", err, cmd.ProcessState, stderr)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the server did not exit after its stdout was closed\nstderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "closed its end of stdout") {
		t.Errorf("stderr does not say the client closed stdout:\n%s", stderr)
	}
}

// The server catching SIGPIPE for itself does not leak to its commands: a command
// writing into a closed pipe still dies of it (exit 141 in bash's PIPESTATUS).
func TestCommandsStillGetSIGPIPE(t *testing.T) {
	s := start(t)
	o, _ := s.exec(map[string]any{"command": []string{"bash", "-c", "yes | head -1 >/dev/null; echo ${PIPESTATUS[0]}"}})
	if strings.TrimSpace(o.Stdout) != "141" {
		t.Fatalf("yes | head -1: yes ended with %q (stderr %q); want 141, killed by SIGPIPE", o.Stdout, o.Stderr)
	}
}
