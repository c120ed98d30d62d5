package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("batch", benchBatch) }

// benchBatch measures `autobox batch` throughput: 1,000 trivial execute_js lines with
// --jobs 2, a fresh worker per call, from process start to exit. The CPU time is the
// batch process and every worker it reaped (wait4 reports children it waited for).
func benchBatch(ctx context.Context, bin string, _ *mcp.ClientSession, _ int, rep *report) {
	const lines, jobs = 1000, 2
	var in bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&in, `{"id":%d,"tool":"execute_js","arguments":{"code":"JSON.parse('{\"a\":1}').a + 41"}}`+"\n", i)
	}
	cmd := exec.CommandContext(ctx, bin, "batch", "--jobs", fmt.Sprint(jobs), "-")
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	// Exit status 1 means some lines failed (on a loaded machine a trivial call can
	// reach its 800 ms limit): a number to report, not a reason to stop.
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		check(fmt.Errorf("autobox batch: %w\n%s", err, stderr.String()))
	}
	passed := strings.Count(stdout.String(), `"ok":true,"result":{"ok":true,"result":42`)
	rep.Numbers["batch execute_js failed lines (of 1000)"] = float64(lines - passed)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	rep.Numbers["batch execute_js calls/s (1000 lines, --jobs 2; target >= 150)"] = lines / wall.Seconds()
	rep.Numbers["batch execute_js CPU ms per call (batch + workers)"] = float64(cpu.Microseconds()) / 1000 / lines
}
