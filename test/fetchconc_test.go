package test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Concurrent fetches of one execute_js call (issue 25): a call's requests are in
// flight together, never more than fetchBound of them, each checked and recorded
// as before, and none outlives its call. The server below counts what it sees:
// requests in flight (and the most at once) and connections open.

// fetchBound is the README's bound on one call's fetches in flight.
const fetchBound = 8

// slowServer answers /gate?n=N once N requests are in flight together (or after
// gateWait, whichever is first) and then holds each for hold more, so that a
// request past a bound would be seen in flight; /hang answers only when the client
// goes away; / answers at once.
type slowServer struct {
	*httptest.Server
	mu       sync.Mutex
	inflight int
	most     int
	gate     chan struct{}
	conns    map[net.Conn]bool
	hanging  int // /hang requests that came
	hung     int // /hang requests whose client went away
}

const (
	gateWait = 3 * time.Second
	gateHold = 300 * time.Millisecond
)

func newSlowServer(t *testing.T) *slowServer {
	f := &slowServer{gate: make(chan struct{}), conns: map[net.Conn]bool{}}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.Config.ConnState = func(c net.Conn, st http.ConnState) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch st {
		case http.StateNew:
			f.conns[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(f.conns, c)
		}
	}
	f.Start()
	t.Cleanup(f.Close)
	return f
}

func (f *slowServer) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/gate":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		f.mu.Lock()
		f.inflight++
		f.most = max(f.most, f.inflight)
		gate := f.gate
		if f.inflight >= n {
			close(f.gate)
			f.gate = make(chan struct{})
		}
		f.mu.Unlock()
		select {
		case <-gate:
		case <-time.After(gateWait):
		}
		time.Sleep(gateHold)
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
		fmt.Fprint(w, "slow")
	case "/hang":
		f.mu.Lock()
		f.hanging++
		f.mu.Unlock()
		<-r.Context().Done()
		f.mu.Lock()
		f.hung++
		f.mu.Unlock()
	default:
		fmt.Fprint(w, "fast")
	}
}

// mostInFlight returns the most requests seen in flight at once, and starts
// counting anew.
func (f *slowServer) mostInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.most
	f.most = 0
	return m
}

// settle waits (not a timing assertion: for the kernel to deliver closes) until
// the server holds no connection and cond holds, and reports whether they did.
func (f *slowServer) settle(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f.mu.Lock()
		ok := len(f.conns) == 0 && (cond == nil || cond())
		f.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// netRecord is the network record of a result (allowHosts).
type netRecord struct {
	Allowed []struct {
		Host  string
		Port  int
		Count int
	}
	Denied []struct {
		Host   string
		Port   int
		Reason string
	}
}

type fetchNetOut struct {
	jsOut
	Network *netRecord `json:"network"`
}

func TestJSFetchConcurrent(t *testing.T) {
	f := newSlowServer(t)
	s := start(t)
	hostPort := strings.TrimPrefix(f.URL, "http://")
	for _, net := range []struct {
		name string
		args map[string]any
	}{
		{"allowNetwork", map[string]any{"allowNetwork": true}},
		{"allowHosts", map[string]any{"allowHosts": []string{hostPort}}},
	} {
		call := func(code string) fetchNetOut {
			t.Helper()
			args := map[string]any{"code": code, "timeoutMs": 10000}
			for k, v := range net.args {
				args[k] = v
			}
			var o fetchNetOut
			s.call("execute_js", args, &o)
			return o
		}
		t.Run(net.name, func(t *testing.T) {
			// Five fetches in Promise.all: all five are at the server at once
			// (one at a time, the first would wait out gateWait alone).
			o := call(fmt.Sprintf(`const rs = await Promise.all([1,2,3,4,5].map(() => fetch(%q)));
				await Promise.all(rs.map(r => r.text()))`, f.URL+"/gate?n=5"))
			if !o.OK || string(o.Result) != `["slow","slow","slow","slow","slow"]` {
				t.Errorf("five fetches: %+v %q %s", o.jsOut, o.err(), o.Result)
			}
			if m := f.mostInFlight(); m != 5 {
				t.Errorf("five fetches in Promise.all: at most %d in flight at once, want 5", m)
			}
			// More than the bound: fetchBound at once, and never more.
			o = call(fmt.Sprintf(`const rs = await Promise.all(Array.from({length: %d}, () => fetch(%q)));
				rs.filter(r => r.status === 200).length`, 2*fetchBound, f.URL+fmt.Sprintf("/gate?n=%d", fetchBound)))
			if !o.OK || string(o.Result) != strconv.Itoa(2*fetchBound) {
				t.Errorf("%d fetches: %+v %q %s", 2*fetchBound, o.jsOut, o.err(), o.Result)
			}
			if m := f.mostInFlight(); m != fetchBound {
				t.Errorf("%d fetches: at most %d in flight at once, want the bound, %d", 2*fetchBound, m, fetchBound)
			}
			// The call's own connections are closed with it.
			if !f.settle(nil) {
				t.Errorf("connections of ended calls still open at the server: %d", len(f.conns))
			}
		})
	}

	// A denied host in the middle of Promise.all is refused, recorded, and the
	// others succeed; timers and a file read go on while fetches are in flight.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "file")
	var o fetchNetOut
	s.call("execute_js", map[string]any{"allowHosts": []string{hostPort}, "timeoutMs": 10000,
		"mounts": []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d"}},
		"code": fmt.Sprintf(`const one = (u) => fetch(u).then(r => r.text(), e => String(e));
			const all = Promise.all([one(%[1]q), one(%[1]q), one("http://not-listed.test/"), one(%[1]q),
				new Promise(r => setTimeout(() => r("timer"), 10))]);
			const file = host.readFile("/mnt/d/f.txt");
			[file, await all]`, f.URL+"/gate?n=3")}, &o)
	var res []any
	_ = json.Unmarshal(o.Result, &res)
	if !o.OK || len(res) != 2 || fmt.Sprint(res[0]) != "file" {
		t.Fatalf("denied host among fetches: %+v %q %s", o.jsOut, o.err(), o.Result)
	}
	got := res[1].([]any)
	for i, want := range []string{"slow", "slow", "not in allowHosts", "slow", "timer"} {
		if !strings.Contains(fmt.Sprint(got[i]), want) {
			t.Errorf("denied host among fetches: [%d] = %v, want %q", i, got[i], want)
		}
	}
	if m := f.mostInFlight(); m != 3 {
		t.Errorf("denied host among fetches: at most %d in flight, want 3", m)
	}
	if o.Network == nil || len(o.Network.Denied) != 1 || o.Network.Denied[0].Host != "not-listed.test" || len(o.Network.Allowed) != 1 {
		t.Errorf("network record: %+v", o.Network)
	}
}

// TestJSFetchEndsWithCall: fetches still running when their call ends, by its
// value or by its time limit, are cancelled with it: the server sees each request
// given up and each connection closed, and the server's goroutines come back to
// where they were.
func TestJSFetchEndsWithCall(t *testing.T) {
	f := newSlowServer(t)
	s := start(t)
	hang, hostPort := f.URL+"/hang", strings.TrimPrefix(f.URL, "http://")
	// Positive controls, which also start what the server keeps (its proxy).
	for _, net := range []map[string]any{{"allowNetwork": true}, {"allowHosts": []string{hostPort}}} {
		net["code"] = fmt.Sprintf(`(await fetch(%q)).text()`, f.URL)
		if o := s.mustJS(net); string(o.Result) != `"fast"` {
			t.Errorf("fetch: %s", o.Result)
		}
	}
	if !f.settle(nil) {
		t.Errorf("connections of ended calls still open at the server: %d", len(f.conns))
	}
	before := s.goroutines()
	// The value comes while three fetches are in flight.
	o := s.mustJS(map[string]any{"allowNetwork": true, "code": fmt.Sprintf(`[1,2,3].forEach(() => fetch(%q).catch(() => {})); "done"`, hang)})
	if string(o.Result) != `"done"` {
		t.Errorf("value with fetches in flight: %s", o.Result)
	}
	// The time limit ends the call while three more wait.
	o, _ = s.js(map[string]any{"allowHosts": []string{hostPort}, "timeoutMs": 1000,
		"code": fmt.Sprintf(`await Promise.all([1,2,3].map(() => fetch(%q)))`, hang)})
	if o.OK || !(strings.Contains(o.err(), "TimeoutError") || strings.Contains(o.err(), "timed out")) {
		t.Errorf("fetches past the time limit: %+v %q", o, o.err())
	}
	// Those of the first call may be cancelled before they reach the server;
	// those of the second reach it (they had a second).
	if !f.settle(func() bool { return f.hung == f.hanging && f.hung >= 3 }) {
		t.Errorf("after the calls: %d of %d hanging requests given up, %d connections open", f.hung, f.hanging, len(f.conns))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n := s.goroutines()
		if n <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("server goroutines: %d before the calls, %d after", before, n)
			break
		}
	}
}
