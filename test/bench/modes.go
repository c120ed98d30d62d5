package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("modes", benchModes) }

// benchModes sets exec_command of `echo hi` in each Linux mode side by side,
// calls interleaved: the server this bench runs (root: namespaces; an
// ordinary user: user namespaces), the same with AUTOBOX_NO_NAMESPACES=1
// (landlock-only), and, when the bench runs as root, a server run as an
// ordinary user (AUTOBOX_BENCH_USER, default autobox-test, which `make test`
// makes): its launchers are made in user namespaces.
func benchModes(ctx context.Context, bin string, cs *mcp.ClientSession, n int, rep *report) {
	type mode struct {
		name string
		cs   *mcp.ClientSession
		d    []time.Duration
	}
	self := "namespaces (root)"
	if os.Geteuid() != 0 {
		self = "user-namespaces (this user)"
	}
	modes := []*mode{{name: self, cs: cs}}
	off := exec.Command(bin)
	off.Env = append(os.Environ(), "AUTOBOX_NO_NAMESPACES=1")
	modes = append(modes, &mode{name: "landlock-only", cs: connectCmd(ctx, off)})
	if os.Geteuid() == 0 {
		name := os.Getenv("AUTOBOX_BENCH_USER")
		if name == "" {
			name = "autobox-test"
		}
		if u, err := user.Lookup(name); err != nil {
			fmt.Fprintf(os.Stderr, "bench: no user %s (make test makes it): the user-namespace mode is not measured\n", name)
		} else {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			state, err := os.MkdirTemp("", "autobox-bench-state-")
			check(err)
			defer os.RemoveAll(state)
			check(os.Chown(state, uid, gid))
			c := exec.Command(bin)
			c.Env = []string{"HOME=" + u.HomeDir, "PATH=/usr/local/bin:/usr/bin:/bin", "AUTOBOX_STATE_DIR=" + state}
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
			modes = append(modes, &mode{name: "user-namespaces (uid " + u.Uid + ")", cs: connectCmd(ctx, c)})
		}
	}
	for _, m := range modes[1:] {
		defer m.cs.Close()
	}
	args := map[string]any{"command": []string{"echo", "hi"}}
	for i := range n {
		// Each call alone on the machine: after a pause in which every
		// server's pool has refilled (a server refills right after a call,
		// and that work would land on the next mode's call), in an order
		// that rotates so that no mode always comes first.
		for j := range modes {
			m := modes[(i+j)%len(modes)]
			time.Sleep(modesPause)
			m.d = append(m.d, execEcho(ctx, m.cs, args))
		}
	}
	p50 := map[string]float64{}
	for _, m := range modes {
		s := stats("exec_command echo, mode "+m.name, m.d, "interleaved")
		rep.Cases = append(rep.Cases, s)
		p50[m.name] = s.P50
	}
	root := p50["namespaces (root)"]
	for _, m := range modes {
		if root > 0 && m.name != "namespaces (root)" {
			rep.Numbers["exec "+m.name+" p50 / namespaces (root) p50"] = p50[m.name] / root
		}
	}
}

// connectCmd starts cmd as an MCP server and connects to it.
func connectCmd(ctx context.Context, cmd *exec.Cmd) *mcp.ClientSession {
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "autobox-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	check(err)
	return cs
}

// modesPause spaces the calls of benchModes (AUTOBOX_BENCH_PAUSE, default 100ms).
var modesPause = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("AUTOBOX_BENCH_PAUSE")); err == nil {
		return d
	}
	return 100 * time.Millisecond
}()
