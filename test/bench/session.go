package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("session", benchSession) }

// sessionAnswer is what the session benchmarks read of a result.
type sessionAnswer struct {
	Stdout    string `json:"stdout"`
	Running   bool   `json:"running"`
	SessionID string `json:"sessionId"`
}

func callSession(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) sessionAnswer {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	check(err)
	raw, _ := json.Marshal(res.StructuredContent)
	var a sessionAnswer
	check(json.Unmarshal(raw, &a))
	if res.IsError {
		check(fmt.Errorf("%s: %s", tool, raw))
	}
	return a
}

// benchSession measures sessions through MCP beside a one-shot exec_command of
// `echo hi` measured in the same run, interleaved: the time from exec_command
// with yieldMs to its answer with the command's first output (the command goes
// on), and a write to cat and its answer with the echo. Both answers wait for
// the output to pause (3 ms) before they go.
func benchSession(ctx context.Context, _ string, cs *mcp.ClientSession, n int, rep *report) {
	n = max(n/5, 20) // each start takes a launcher: fewer, still spaced at agent speed
	var first, echo []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		a := callSession(ctx, cs, "exec_command", map[string]any{"command": []string{"sh", "-c", "echo ready; exec sleep 600"}, "yieldMs": 5000, "timeoutMs": 60000})
		first = append(first, time.Since(t))
		if !a.Running || a.Stdout != "ready\n" {
			check(fmt.Errorf("session start: %+v", a))
		}
		time.Sleep(100 * time.Millisecond)
		callSession(ctx, cs, "exec_session", map[string]any{"sessionId": a.SessionID, "action": "close"})
		time.Sleep(100 * time.Millisecond)
		t = time.Now()
		e := callSession(ctx, cs, "exec_command", map[string]any{"command": []string{"echo", "hi"}})
		echo = append(echo, time.Since(t))
		if e.Stdout != "hi\n" {
			check(fmt.Errorf("exec_command echo: %+v", e))
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := callSession(ctx, cs, "exec_command", map[string]any{"command": []string{"cat"}, "yieldMs": 0, "timeoutMs": 600000})
	var round []time.Duration
	for i := 0; i < n*5; i++ {
		t := time.Now()
		a := callSession(ctx, cs, "exec_session", map[string]any{"sessionId": c.SessionID, "action": "write", "input": "x\n", "yieldMs": 5000})
		round = append(round, time.Since(t))
		if a.Stdout != "x\n" {
			check(fmt.Errorf("cat's echo: %+v", a))
		}
		time.Sleep(100 * time.Millisecond)
	}
	callSession(ctx, cs, "exec_session", map[string]any{"sessionId": c.SessionID, "action": "close"})
	f := stats("session start to first output through MCP", first, "exec_command yieldMs, sh echoes then sleeps")
	w := stats("session write+poll round trip of cat", round, "exec_session write, yieldMs 5000")
	e := stats("exec_command echo hi (same run)", echo, "one-shot baseline")
	rep.Cases = append(rep.Cases, f, w, e)
	rep.Numbers["session first output p50 / one-shot echo p50 (target <= 2)"] = f.P50 / e.P50
	rep.Numbers["session write+poll p50 / one-shot echo p50 (target <= 2)"] = w.P50 / e.P50
}
