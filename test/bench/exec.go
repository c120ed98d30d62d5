package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("exec", benchExec) }

// benchExec sets exec_command of `echo hi` through MCP beside a bare fork/exec of the
// same command from this process.
func benchExec(ctx context.Context, _ string, cs *mcp.ClientSession, n int, rep *report) {
	echo, err := exec.LookPath("echo")
	check(err)
	var wall, bare []time.Duration
	for i := 0; i < n; i++ {
		wall = append(wall, execEcho(ctx, cs, map[string]any{"command": []string{"echo", "hi"}}))
		t := time.Now()
		out, err := exec.Command(echo, "hi").Output()
		check(err)
		bare = append(bare, time.Since(t))
		if string(out) != "hi\n" {
			check(fmt.Errorf("bare echo: %q", out))
		}
		time.Sleep(100 * time.Millisecond) // agent speed: the launcher pool has refilled
	}
	s := stats("exec_command echo hi through MCP", wall, "sandboxed")
	b := stats("bare fork/exec of echo hi", bare, "baseline")
	rep.Cases = append(rep.Cases, s, b)
	rep.Numbers["exec_command p50 / bare p50"] = s.P50 / b.P50
}

// execEcho makes an exec_command call of `echo hi` with args, checks its output and
// returns its wall time.
func execEcho(ctx context.Context, cs *mcp.ClientSession, args map[string]any) time.Duration {
	t := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: args})
	check(err)
	d := time.Since(t)
	var o struct {
		Stdout string `json:"stdout"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	check(json.Unmarshal(raw, &o))
	if o.Stdout != "hi\n" {
		check(fmt.Errorf("exec_command echo: %s", raw))
	}
	return d
}
