package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestSessionRequestKeysExact (issue 35 item 3): the session server reads its
// requests with exact keys: a key that only folds to one of its members, a
// repeated one and an unknown one are refused naming the key, before any
// call is made. Positive control: the same request with exact keys reaches
// the call (which refuses it for want of yieldMs).
func TestSessionRequestKeysExact(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	v := &sessionServer{uid: os.Getuid(), self: self}
	ask := func(line string) string {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		conn := func(fd int) *net.UnixConn {
			f := os.NewFile(uintptr(fd), "sock")
			defer f.Close()
			c, err := net.FileConn(f)
			if err != nil {
				t.Fatal(err)
			}
			return c.(*net.UnixConn)
		}
		server, client := conn(fds[0]), conn(fds[1])
		defer client.Close()
		done := make(chan struct{})
		go func() { v.handle(context.Background(), server); close(done) }()
		client.Write([]byte(line + "\n"))
		reply, _ := bufio.NewReader(client).ReadString('\n')
		client.CloseWrite()
		<-done
		var r sessionReply
		json.Unmarshal([]byte(reply), &r)
		return r.Error
	}
	for line, key := range map[string]string{
		`{"tool": "exec_command", "arguments": {"command": ["true"]}, "Arguments": {"command": ["false"]}}`: `"Arguments"`,
		`{"tool": "exec_command", "tool": "exec_session", "arguments": {}}`:                                 `"tool" appears more than once`,
		`{"tool": "exec_command", "arguments": {"command": ["true"]}, "yieldMs": 1000}`:                     `unknown key "yieldMs"`,
		`{"tool": "exec_command", "arguments": {"command": ["true"], "COMMAND": ["false"]}}`:                `"COMMAND" is not a parameter of exec_command`,
	} {
		if got := ask(line); !strings.Contains(got, key) {
			t.Errorf("%s: want a refusal naming %s, got %q", line, key, got)
		}
	}
	if got := ask(`{"tool": "exec_command", "arguments": {"command": ["true"]}}`); !strings.Contains(got, "give yieldMs") {
		t.Errorf("exact keys: %q", got)
	}
}
