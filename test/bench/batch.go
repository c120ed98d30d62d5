package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("batch", benchBatch) }

// benchBatch measures `autobox batch` throughput: 1,000 trivial execute_js lines with
// --jobs 2, a fresh worker per call, from process start to exit. The CPU time is the
// batch process and every worker it reaped (wait4 reports children it waited for).
// It is CPU-bound, and on a shared machine one run moves by 15% or more, so it runs
// batchRuns times and reports the median run (by calls per second) and the range.
func benchBatch(ctx context.Context, bin string, _ *mcp.ClientSession, _ int, rep *report) {
	const batchRuns = 3
	runs := make([]batchRun, batchRuns)
	for i := range runs {
		runs[i] = runBatch(ctx, bin, batchJS)
	}
	med, failed := medianBatch(runs)
	rep.Numbers["batch execute_js failed lines (of 1000, most in a run)"] = float64(failed)
	rep.Numbers["batch execute_js calls/s (1000 lines, --jobs 2; target >= 250; median of 3)"] = med.perSecond
	rep.Numbers["batch execute_js calls/s, slowest of 3"] = runs[0].perSecond
	rep.Numbers["batch execute_js calls/s, fastest of 3"] = runs[len(runs)-1].perSecond
	rep.Numbers["batch execute_js CPU ms per call (batch + workers, median run)"] = med.cpuPerCall
}

type batchRun struct {
	perSecond, cpuPerCall float64
	failed                int
}

// batchLine is what each line of a batch run asks for, and the start of the
// result of a line that passed.
type batchLine struct {
	tool, arguments, want string
}

var batchJS = batchLine{"execute_js", `{"code":"JSON.parse('{\"a\":1}').a + 41"}`, `"ok":true,"result":{"ok":true,"result":42`}

// medianBatch sorts runs by calls per second and returns the median run and
// the most lines that failed in a run.
func medianBatch(runs []batchRun) (batchRun, int) {
	slices.SortFunc(runs, func(a, b batchRun) int { return cmp.Compare(a.perSecond, b.perSecond) })
	failed := 0
	for _, r := range runs {
		failed = max(failed, r.failed)
	}
	return runs[len(runs)/2], failed
}

func runBatch(ctx context.Context, bin string, line batchLine) batchRun {
	const lines, jobs = 1000, 2
	var in bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&in, `{"id":%d,"tool":%q,"arguments":%s}`+"\n", i, line.tool, line.arguments)
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
	passed := strings.Count(stdout.String(), line.want)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return batchRun{
		perSecond:  lines / wall.Seconds(),
		cpuPerCall: float64(cpu.Microseconds()) / 1000 / lines,
		failed:     lines - passed,
	}
}
