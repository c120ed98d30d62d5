// Command bench measures autobox end to end (`make bench`): it starts the built binary
// as an MCP server, drives it with the Go SDK client over stdio, and prints and writes
// (as JSON) latency percentiles beside the baselines they should be compared with.
// Benchmarks are not tests: nothing here passes or fails on a number.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/worker"
)

// Stats are percentiles of one measured case, in milliseconds.
type Stats struct {
	Name string  `json:"name"`
	N    int     `json:"n"`
	P50  float64 `json:"p50Ms"`
	P90  float64 `json:"p90Ms"`
	P99  float64 `json:"p99Ms"`
	Mean float64 `json:"meanMs"`
	Note string  `json:"note,omitempty"`
}

type report struct {
	When    string             `json:"when"`
	Host    string             `json:"host"`
	Cases   []Stats            `json:"cases"`
	Numbers map[string]float64 `json:"numbers"`
}

func stats(name string, d []time.Duration, note string) Stats {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) float64 {
		i := int(float64(len(d)-1) * p)
		return float64(d[i].Microseconds()) / 1000
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	mean := float64(sum.Microseconds()) / 1000 / float64(max(len(d), 1))
	return Stats{Name: name, N: len(d), P50: pct(0.5), P90: pct(0.9), P99: pct(0.99), Mean: mean, Note: note}
}

func main() {
	binPath := flag.String("bin", "bin/autobox", "autobox binary")
	out := flag.String("out", "bench/results.json", "where to write the results as JSON")
	n := flag.Int("n", 500, "iterations per case")
	only := flag.String("only", "", "comma-separated groups to run (js,exec,store,batch); empty = all")
	cpuProfile := flag.String("cpuprofile", "", "have the server write a CPU profile here")
	flag.Parse()
	bin, err := filepath.Abs(*binPath)
	check(err)
	rep := &report{When: time.Now().UTC().Format(time.RFC3339), Host: hostLine(), Numbers: map[string]float64{}}
	want := func(g string) bool { return *only == "" || strings.Contains(","+*only+",", ","+g+",") }

	ctx := context.Background()
	cs, cmd := connect(ctx, bin, *cpuProfile)
	defer cs.Close()

	if want("js") {
		benchJS(ctx, cs, cmd, *n, rep)
	}
	for _, g := range groups {
		if want(g.name) {
			g.run(ctx, bin, cs, *n, rep)
		}
	}

	fmt.Printf("%-44s %6s %9s %9s %9s %9s\n", "case", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms")
	for _, c := range rep.Cases {
		fmt.Printf("%-44s %6d %9.3f %9.3f %9.3f %9.3f  %s\n", c.Name, c.N, c.P50, c.P90, c.P99, c.Mean, c.Note)
	}
	keys := make([]string, 0, len(rep.Numbers))
	for k := range rep.Numbers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%-66s %.2f\n", k, rep.Numbers[k])
	}
	check(os.MkdirAll(filepath.Dir(*out), 0o755))
	b, _ := json.MarshalIndent(rep, "", "  ")
	check(os.WriteFile(*out, append(b, '\n'), 0o644))
	fmt.Println("results written to", *out)
}

// A group is a set of benchmarks another file adds with register (exec, store, batch).
type group struct {
	name string
	run  func(ctx context.Context, bin string, cs *mcp.ClientSession, n int, rep *report)
}

var groups []group

func register(name string, run func(ctx context.Context, bin string, cs *mcp.ClientSession, n int, rep *report)) {
	groups = append(groups, group{name, run})
}

func connect(ctx context.Context, bin, cpuProfile string) (*mcp.ClientSession, *exec.Cmd) {
	cmd := exec.Command(bin)
	if cpuProfile != "" {
		cmd = exec.Command(bin, "serve", "--cpuprofile", cpuProfile)
	}
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "autobox-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	check(err)
	return cs, cmd
}

func benchJS(ctx context.Context, cs *mcp.ClientSession, cmd *exec.Cmd, n int, rep *report) {
	// Let the pool warm up, then measure the idle footprint.
	time.Sleep(1500 * time.Millisecond)
	rep.Numbers["idle server + pool RSS MB"] = treeRSSMB(cmd.Process.Pid)

	var ping []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		check(cs.Ping(ctx, nil))
		ping = append(ping, time.Since(t))
	}
	rep.Cases = append(rep.Cases, stats("MCP ping round trip", ping, "framing floor"))

	code := `JSON.parse('{"a":1}').a + 41`
	var wall, server []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_js", Arguments: map[string]any{"code": code}})
		check(err)
		wall = append(wall, time.Since(t))
		var o struct {
			OK         bool    `json:"ok"`
			DurationMs float64 `json:"durationMs"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		check(json.Unmarshal(raw, &o))
		if !o.OK {
			check(fmt.Errorf("execute_js failed: %s", raw))
		}
		server = append(server, time.Duration(o.DurationMs*float64(time.Millisecond)))
		// Calls arrive at agent speed, not in a tight loop: give the pool time to refill.
		time.Sleep(100 * time.Millisecond)
	}
	rep.Cases = append(rep.Cases, stats("execute_js wall through MCP", wall, code))
	rep.Cases = append(rep.Cases, stats("execute_js server-side (durationMs)", server, ""))

	var base []time.Duration
	for i := 0; i < n; i++ {
		d, err := worker.Baseline(code)
		check(err)
		base = append(base, d)
	}
	rep.Cases = append(rep.Cases, stats("in-process v8go isolate+context+run", base, "baseline"))
}

// treeRSSMB is the resident memory of pid and all its descendants.
func treeRSSMB(pid int) float64 {
	total := 0.0
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p)); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "VmRSS:") {
					f := strings.Fields(l)
					kb, _ := strconv.ParseFloat(f[1], 64)
					total += kb / 1024
				}
			}
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, w := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(w); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return total
}

func hostLine() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
			break
		}
	}
	k, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%s, kernel %s", model, strings.TrimSpace(string(k)))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
