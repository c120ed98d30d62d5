package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("limits", benchLimits) }

// withoutBin, if set, is the binary the calls without limits go to (a build from
// before issue 14, say) instead of this tree built with the tag
// autobox_bench_nolimits (noLimitsBin).
var withoutBin = flag.String("without", "", "limits group: serve the calls without limits from this autobox binary")

// benchLimits sets exec_command of `echo hi` with the limits of issue 14 (the
// defaults: rlimits, a pids and a cpu cgroup per command, the watchdog reading
// writes and CPU; and with cpuMs too) beside the same call on a server that runs
// commands without them (a build with the tag autobox_bench_nolimits: memory alone, as before; the
// cgroups are still made and joined while launchers wait, so -without BIN compares
// with a build from before the limits), alternating, so both see the same machine.
func benchLimits(ctx context.Context, bin string, cs *mcp.ClientSession, n int, rep *report) {
	var cmd *exec.Cmd
	note := "a build with the tag autobox_bench_nolimits, beside"
	if *withoutBin != "" {
		cmd = exec.Command(*withoutBin)
		note = *withoutBin + ", beside"
	} else {
		nl, remove := noLimitsBin()
		defer remove()
		cmd = exec.Command(nl)
	}
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "autobox-bench", Version: "1"}, nil)
	bare, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	check(err)
	defer bare.Close()
	call := func(s *mcp.ClientSession, args map[string]any) time.Duration {
		d := execEcho(ctx, s, args)
		time.Sleep(100 * time.Millisecond) // agent speed: the launcher pools have refilled
		return d
	}
	echo := map[string]any{"command": []string{"echo", "hi"}}
	all := map[string]any{"command": []string{"echo", "hi"}, "maxProcesses": 64, "maxWriteMb": 100, "cpuMs": 5000, "maxOpenFiles": 256}
	var with, withCPU, without []time.Duration
	call(cs, echo) // both servers make their launcher pools
	call(bare, echo)
	for i := 0; i < n; i++ {
		with = append(with, call(cs, echo))
		without = append(without, call(bare, echo))
		if i%2 == 0 {
			withCPU = append(withCPU, call(cs, all))
		}
	}
	w := stats("exec_command echo hi, with its limits", with, "defaults: processes, writes, open files")
	a := stats("exec_command echo hi, every limit given", withCPU, "and cpuMs")
	b := stats("exec_command echo hi, without limits", without, note)
	rep.Cases = append(rep.Cases, w, a, b)
	rep.Numbers["limits cost p50 ms (with - without)"] = w.P50 - b.P50
	rep.Numbers["limits cost p90 ms (with - without)"] = w.P90 - b.P90
}

// noLimitsBin builds this tree's autobox with the tag autobox_bench_nolimits
// (commands run with their memory limit alone; no switch of the shipped binary
// does that) into a temporary directory, static where it can be, as the
// Makefile builds the shipped one. The bench runs from the tree's top.
func noLimitsBin() (string, func()) {
	dir, err := os.MkdirTemp("", "autobox-bench-nolimits-")
	check(err)
	out := filepath.Join(dir, "autobox")
	build := func(args ...string) error {
		c := exec.Command("go", append([]string{"build"}, args...)...)
		c.Stderr = os.Stderr
		return c.Run()
	}
	if build("-tags", "netgo,osusergo,autobox_bench_nolimits", "-ldflags", "-extldflags=-static", "-o", out, "./cmd/autobox") != nil {
		check(build("-tags", "autobox_bench_nolimits", "-o", out, "./cmd/autobox"))
	}
	return out, func() { os.RemoveAll(dir) }
}
