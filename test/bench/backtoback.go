package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("b2b", benchBackToBack) }

// benchBackToBack sets calls made back to back, each as soon as the one
// before answered (batch runs, test loops, agents firing tools in a row):
// the launcher and worker pools refill while the calls go on. Ratios are
// against a bare spawn of echo and an MCP ping, each made back to back too.
// At least 200 calls of each, whatever -n says.
func benchBackToBack(ctx context.Context, _ string, cs *mcp.ClientSession, n int, rep *report) {
	n = max(n, 200)
	time.Sleep(500 * time.Millisecond) // the pools are full at the start
	echo, err := exec.LookPath("echo")
	check(err)
	args := map[string]any{"command": []string{"echo", "hi"}}
	var sandboxed, bare, ping, js []time.Duration
	for range n {
		sandboxed = append(sandboxed, execEcho(ctx, cs, args))
	}
	for range n {
		t := time.Now()
		out, err := exec.Command(echo, "hi").Output()
		check(err)
		bare = append(bare, time.Since(t))
		if string(out) != "hi\n" {
			check(fmt.Errorf("bare echo: %q", out))
		}
	}
	time.Sleep(500 * time.Millisecond)
	for range n {
		js = append(js, callJS(ctx, cs))
	}
	for range n {
		t := time.Now()
		check(cs.Ping(ctx, nil))
		ping = append(ping, time.Since(t))
	}
	e := stats("exec_command echo, back to back", sandboxed, "")
	b := stats("bare fork/exec of echo, back to back", bare, "baseline")
	j := stats("execute_js, back to back", js, "")
	p := stats("MCP ping, back to back", ping, "framing floor")
	rep.Cases = append(rep.Cases, e, b, j, p)
	rep.Numbers["b2b exec_command p50 / bare p50"] = e.P50 / b.P50
	rep.Numbers["b2b exec_command p90 / its p50"] = e.P90 / e.P50
	rep.Numbers["b2b execute_js p50 / ping p50"] = j.P50 / p.P50
	rep.Numbers["b2b execute_js p90 / its p50"] = j.P90 / j.P50
}
