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

func init() {
	register("fetch", benchFetch)
	register("batchexec", benchBatchExec)
}

// benchFetch measures execute_js of five fetches in Promise.all, each of which
// the loopback server answers after 500 ms: one after another that is 2.5 s,
// concurrently (issue 25's goal) at most 0.7 s.
func benchFetch(ctx context.Context, _ string, cs *mcp.ClientSession, n int, rep *report) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	code := fmt.Sprintf(`(await Promise.all([1,2,3,4,5].map(() => fetch(%q).then(r => r.text())))).join()`, srv.URL)
	var wall, server []time.Duration
	for i := 0; i < max(n/50, 10); i++ {
		t := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_js", Arguments: map[string]any{
			"code": code, "allowHosts": []string{strings.TrimPrefix(srv.URL, "http://")}, "timeoutMs": 5000}})
		check(err)
		wall = append(wall, time.Since(t))
		var o struct {
			Result     string  `json:"result"`
			DurationMs float64 `json:"durationMs"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		check(json.Unmarshal(raw, &o))
		if o.Result != "ok,ok,ok,ok,ok" {
			check(fmt.Errorf("five fetches: %s", raw))
		}
		server = append(server, time.Duration(o.DurationMs*float64(time.Millisecond)))
		time.Sleep(100 * time.Millisecond)
	}
	rep.Cases = append(rep.Cases, stats("execute_js 5 x 500 ms fetch, Promise.all", wall, "target <= 700 ms"))
	st := stats("", server, "")
	rep.Numbers["fetch: 5 x 500 ms in Promise.all, durationMs p50 (target <= 700)"] = st.P50
}

// benchBatchExec is benchBatch's measure for `echo hi` lines of exec_command.
func benchBatchExec(ctx context.Context, bin string, _ *mcp.ClientSession, _ int, rep *report) {
	runs := make([]batchRun, 3)
	for i := range runs {
		runs[i] = runBatch(ctx, bin, batchLine{"exec_command", `{"command":["echo","hi"]}`, `"ok":true,"result":{"stdout":"hi\n"`})
	}
	med, failed := medianBatch(runs)
	rep.Numbers["batch exec_command failed lines (of 1000, most in a run)"] = float64(failed)
	rep.Numbers["batch exec_command calls/s (1000 lines, --jobs 2; target >= 150; median of 3)"] = med.perSecond
	rep.Numbers["batch exec_command CPU ms per call (batch + workers, median run)"] = med.cpuPerCall
}
