package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("floor", benchFloor) }

// benchFloor measures the per-call floor side by side with what users compare
// autobox with, in one run, and prints each ratio beside its target (#33):
//
//   - exec_command echo back to back against bubblewrap (`bwrap --unshare-all
//     --ro-bind / / echo`) started from this process back to back: p50 ratio
//     (target <= 1), and exec_command's own p90/p50 (target <= 2);
//   - the same at an agent's pace (100 ms between calls; target <= 0.5);
//   - `autobox exec -- echo hi` as a whole process, what scripts pay, against a
//     bare echo (target <= 10);
//   - execute_js back to back: p90/p50 (target <= 2) and p50 against its
//     agent-pace p50 (target <= 1.5).
//
// Without bwrap on PATH the bubblewrap ratios are left out and the report says so.
func benchFloor(ctx context.Context, bin string, cs *mcp.ClientSession, n int, rep *report) {
	n = max(n, 200)
	echo, err := exec.LookPath("echo")
	check(err)
	bwrap, _ := exec.LookPath("bwrap")
	echoArgs := map[string]any{"command": []string{"echo", "hi"}}
	run := func(argv ...string) time.Duration {
		t := time.Now()
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		d := time.Since(t)
		check(err)
		if string(out) != "hi\n" {
			check(fmt.Errorf("%s: %q", argv[0], out))
		}
		return d
	}
	bwrapEcho := func() time.Duration { return run(bwrap, "--unshare-all", "--ro-bind", "/", "/", echo, "hi") }
	settle := func() { time.Sleep(500 * time.Millisecond) } // pools refill between phases

	// Back to back, exec_command and bwrap in alternating blocks of 20, so load
	// from elsewhere falls on both alike.
	var execB2B, bwrapB2B, execPace, bwrapPace, cli, bare, jsB2B, jsPace []time.Duration
	settle()
	for i := 0; i < n; i += 20 {
		for range 20 {
			execB2B = append(execB2B, execEcho(ctx, cs, echoArgs))
		}
		if bwrap != "" {
			for range 20 {
				bwrapB2B = append(bwrapB2B, bwrapEcho())
			}
		}
	}
	settle()
	for range n / 4 {
		execPace = append(execPace, execEcho(ctx, cs, echoArgs))
		time.Sleep(100 * time.Millisecond)
		if bwrap != "" {
			bwrapPace = append(bwrapPace, bwrapEcho())
			time.Sleep(100 * time.Millisecond)
		}
	}
	for range n / 4 {
		cli = append(cli, run(bin, "exec", "--", "echo", "hi"))
		bare = append(bare, run(echo, "hi"))
	}
	settle()
	for range n {
		jsB2B = append(jsB2B, callJS(ctx, cs))
	}
	settle()
	for range n / 4 {
		jsPace = append(jsPace, callJS(ctx, cs))
		time.Sleep(100 * time.Millisecond)
	}

	eb := stats("floor: exec_command echo, back to back", execB2B, "")
	ep := stats("floor: exec_command echo, agent pace", execPace, "100 ms apart")
	c := stats("floor: autobox exec -- echo hi (process)", cli, "what scripts pay")
	b := stats("floor: bare echo (process)", bare, "baseline")
	jb := stats("floor: execute_js, back to back", jsB2B, "")
	jp := stats("floor: execute_js, agent pace", jsPace, "100 ms apart")
	rep.Cases = append(rep.Cases, eb, ep, c, b, jb, jp)
	rep.Numbers["floor: exec_command b2b p90 / its p50 (target <= 2)"] = eb.P90 / eb.P50
	rep.Numbers["floor: autobox exec process p50 / bare echo p50 (target <= 10)"] = c.P50 / b.P50
	rep.Numbers["floor: execute_js b2b p90 / its p50 (target <= 2)"] = jb.P90 / jb.P50
	rep.Numbers["floor: execute_js b2b p50 / agent-pace p50 (target <= 1.5)"] = jb.P50 / jp.P50
	if bwrap == "" {
		fmt.Fprintln(os.Stderr, "bench floor: bwrap is not on PATH; the ratios against bubblewrap are left out (apt-get install bubblewrap)")
		return
	}
	wb := stats("floor: bwrap --unshare-all echo, back to back", bwrapB2B, "peer")
	wp := stats("floor: bwrap --unshare-all echo, agent pace", bwrapPace, "peer, 100 ms apart")
	rep.Cases = append(rep.Cases, wb, wp)
	rep.Numbers["floor: exec_command b2b p50 / bwrap b2b p50 (target <= 1)"] = eb.P50 / wb.P50
	rep.Numbers["floor: exec_command agent-pace p50 / bwrap p50 (target <= 0.5)"] = ep.P50 / wp.P50
}

// callJS makes one small execute_js call, checks it succeeded and returns its wall time.
func callJS(ctx context.Context, cs *mcp.ClientSession) time.Duration {
	t := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_js", Arguments: map[string]any{"code": `JSON.parse('{"a":1}').a + 41`}})
	d := time.Since(t)
	check(err)
	var o struct {
		OK bool `json:"ok"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	check(json.Unmarshal(raw, &o))
	if !o.OK {
		check(fmt.Errorf("execute_js failed: %s", raw))
	}
	return d
}
