package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("net", benchNet) }

// benchNet sets network by host beside the open network: exec_command of curl to a
// loopback server through the proxy (allowHosts) and directly (allowNetwork), and
// `echo hi` with and without an allowHosts list it does not use. The cases are
// interleaved so that a slow spell of the machine hits them all alike.
func benchNet(ctx context.Context, _ string, cs *mcp.ClientSession, n int, rep *report) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	curl := []string{"curl", "-sS", srv.URL + "/"}
	cases := []struct {
		name string
		args map[string]any
		want string
		d    []time.Duration
	}{
		{name: "curl to loopback, allowNetwork", args: map[string]any{"command": curl, "allowNetwork": true}, want: "ok"},
		{name: "curl to loopback through the proxy", args: map[string]any{"command": curl, "allowHosts": []string{hp}}, want: "ok"},
		{name: "echo hi, no network", args: map[string]any{"command": []string{"echo", "hi"}}, want: "hi\n"},
		{name: "echo hi, allowHosts unused", args: map[string]any{"command": []string{"echo", "hi"}, "allowHosts": []string{hp}}, want: "hi\n"},
	}
	n = max(n/5, 20)
	for i := 0; i < n; i++ {
		for j := range cases {
			c := &cases[j]
			t := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: c.args})
			check(err)
			c.d = append(c.d, time.Since(t))
			var o struct {
				Stdout string `json:"stdout"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			check(json.Unmarshal(raw, &o))
			if o.Stdout != c.want {
				check(fmt.Errorf("%s: %s", c.name, raw))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var st []Stats
	for _, c := range cases {
		st = append(st, stats("exec_command "+c.name, c.d, "network by host"))
	}
	rep.Cases = append(rep.Cases, st...)
	rep.Numbers["proxy: curl p50 through the proxy - with allowNetwork (ms)"] = st[1].P50 - st[0].P50
	rep.Numbers["proxy: echo p50 with unused allowHosts - without (ms)"] = st[3].P50 - st[2].P50
}
