package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("transparent", benchTransparent) }

// benchTransparent sets a connection through the transparent path (curl
// --noproxy '*': the sandbox's resolver, the redirect, the proxy) beside the
// same through the proxy variables and directly (allowNetwork), per
// connection: one call makes connsPerCall connections (curl, one per URL, the
// server closing each), timed by curl from its start to the end of the
// response. Its own server, where the test server's name resolves for the
// proxy (AUTOBOX_PROXY_RESOLVE); the cases are interleaved.
func benchTransparent(ctx context.Context, bin string, _ *mcp.ClientSession, n int, rep *report) {
	const connsPerCall = 50
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusNoContent) // no body: curl's output is its timings alone
	}))
	defer srv.Close()
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AUTOBOX_PROXY_RESOLVE=bench.test=127.0.0.1")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "autobox-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	check(err)
	defer cs.Close()

	curl := func(host string, noProxy bool) []string {
		argv := []string{"curl", "-s", "-w", `%{time_total}\n`, "-H", "Connection: close"}
		if noProxy {
			argv = append(argv, "--noproxy", "*")
		}
		for i := 0; i < connsPerCall; i++ {
			argv = append(argv, "http://"+host+":"+port+"/")
		}
		return argv
	}
	hosts := []string{"bench.test:" + port, "127.0.0.1:" + port}
	cases := []struct {
		name string
		args map[string]any
		d    []time.Duration
	}{
		{name: "direct (allowNetwork)", args: map[string]any{"command": curl("127.0.0.1", true), "allowNetwork": true}},
		{name: "through the proxy variables", args: map[string]any{"command": curl("bench.test", false), "allowHosts": hosts}},
		{name: "transparent (--noproxy '*')", args: map[string]any{"command": curl("bench.test", true), "allowHosts": hosts}},
	}
	rounds := max(n/connsPerCall, 10)
	for i := 0; i < rounds; i++ {
		for j := range cases {
			c := &cases[j]
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: c.args})
			check(err)
			var o struct {
				Stdout string `json:"stdout"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			check(json.Unmarshal(raw, &o))
			lines := strings.Fields(o.Stdout)
			if len(lines) != connsPerCall {
				check(fmt.Errorf("%s: %s", c.name, raw))
			}
			for _, l := range lines {
				s, err := strconv.ParseFloat(l, 64)
				check(err)
				c.d = append(c.d, time.Duration(s*float64(time.Second)))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var st []Stats
	for _, c := range cases {
		st = append(st, stats("one connection (curl), "+c.name, c.d, "network by host, every program"))
	}
	rep.Cases = append(rep.Cases, st...)
	rep.Numbers["transparent: connection p50, transparent - proxy variables (ms)"] = st[2].P50 - st[1].P50
	rep.Numbers["transparent: connection p50, transparent - direct (ms)"] = st[2].P50 - st[0].P50
}
