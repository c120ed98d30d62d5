package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/autobox-dev/autobox/policy"
)

// user is an Asker that answers as told and counts its questions; gate, if
// set, holds each question until it is closed.
type user struct {
	allow bool
	gate  chan struct{}
	first chan struct{} // closed at the first question, if set
	once  sync.Once
	asked atomic.Int32
	mu    sync.Mutex
	about []string
}

func (u *user) ask(ctx context.Context, host string, port int) error {
	u.asked.Add(1)
	if u.first != nil {
		u.once.Do(func() { close(u.first) })
	}
	u.mu.Lock()
	u.about = append(u.about, net.JoinHostPort(host, strconv.Itoa(port)))
	u.mu.Unlock()
	if u.gate != nil {
		select {
		case <-u.gate:
		case <-ctx.Done():
			return errors.New("the call ended")
		}
	}
	if !u.allow {
		return errors.New("the user answered no")
	}
	return nil
}

func (f *fixture) askingCall(u *user, entries ...string) *Call {
	f.t.Helper()
	allow, err := policy.ParseAllowHosts("allowHosts", entries)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := f.p.Register(context.Background(), allow, u.ask)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

// TestAskMidCall: a target the list does not allow is asked about, once per
// call, with the connection held; the answer is kept for the call.
func TestAskMidCall(t *testing.T) {
	f := newFixture(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("other")) }))
	defer other.Close()
	otherHP := strings.TrimPrefix(other.URL, "http://")

	// Allowed: through, and later connections are not asked again.
	u := &user{allow: true}
	c := f.askingCall(u, f.webHP)
	cl := f.client(c)
	for i := 0; i < 2; i++ {
		if code, body, _ := get(t, cl, other.URL); code != 200 || body != "other" {
			t.Errorf("allowed by the user: %d %q", code, body)
		}
	}
	if n := u.asked.Load(); n != 1 || u.about[0] != otherHP {
		t.Errorf("asked %d times about %v, want once about %s", n, u.about, otherHP)
	}
	// Positive control of "not asked": a listed target is not asked about.
	if code, _, _ := get(t, cl, f.web.URL); code != 200 || u.asked.Load() != 1 {
		t.Errorf("listed: %d, asked %d", code, u.asked.Load())
	}

	// Refused: the denial says so, and is not asked again.
	no := &user{}
	c2 := f.askingCall(no, f.webHP)
	cl2 := f.client(c2)
	for i := 0; i < 2; i++ {
		code, body, h := get(t, cl2, other.URL)
		if code != 403 || !strings.Contains(h.Get("X-Proxy-Error"), "the user answered no") || !strings.Contains(body, "allowHosts needs") {
			t.Errorf("refused by the user: %d %q %v", code, body, h)
		}
	}
	if no.asked.Load() != 1 {
		t.Errorf("a refused target asked %d times, want 1", no.asked.Load())
	}
	if rec := c2.Record(); len(rec.Denied) != 1 || !strings.Contains(rec.Denied[0].Reason, "the user answered no") {
		t.Errorf("record: %+v", rec)
	}
}

// TestAskOneAtATime: connections to one target while its question is open
// wait for its answer; no second question.
func TestAskOneAtATime(t *testing.T) {
	f := newFixture(t)
	u := &user{allow: true, gate: make(chan struct{}), first: make(chan struct{})}
	_, port, _ := net.SplitHostPort(f.webHP)
	c := f.askingCall(u, "127.0.0.1:1")
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := c.DialContext(context.Background(), "tcp", "127.0.0.1:"+port)
			if err == nil {
				conn.Close()
			}
			errs <- err
		}()
	}
	<-u.first
	close(u.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a connection waiting for the answer: %v", err)
		}
	}
	if n := u.asked.Load(); n != 1 {
		t.Errorf("asked %d times, want 1", n)
	}
}

// TestAskCap: past MaxQuestions, a call's targets are denied unasked.
func TestAskCap(t *testing.T) {
	f := newFixture(t)
	u := &user{}
	c := f.askingCall(u, "127.0.0.1:1")
	for i := 0; i < MaxQuestions+2; i++ {
		_, err := c.DialContext(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(2+i))
		var d *Denial
		if !errors.As(err, &d) {
			t.Fatalf("target %d: %v, want a denial", i, err)
		}
		want := "the user answered no"
		if i >= MaxQuestions {
			want = "the user was not asked: this call already asked 4 questions"
		}
		if !strings.Contains(d.Reason, want) {
			t.Errorf("target %d: %q, want %q", i, d.Reason, want)
		}
	}
	if n := u.asked.Load(); n != MaxQuestions {
		t.Errorf("asked %d times, want %d", n, MaxQuestions)
	}
	// Without an asker, denied at once as before.
	c2 := f.call("127.0.0.1:1")
	if _, err := c2.DialContext(context.Background(), "tcp", "127.0.0.1:2"); err == nil || err.Error() != "127.0.0.1:2: port 2 not allowed" {
		t.Errorf("no asker: %v", err)
	}
}

// TestAskOnlyExact (issue 35 item 1): a host that reads as a range or a
// wildcard is never asked about, whichever way it comes: the transparent
// path's resolver gives it no synthetic address, and a connection that names
// it (a SOCKS5 or CONNECT target) is denied unasked, without using up the
// call's questions. A plain name and an address, the controls, are asked.
func TestAskOnlyExact(t *testing.T) {
	f := newFixture(t)
	u := &user{}
	c := f.askingCall(u, "127.0.0.1:1")
	for _, name := range []string{"127.0.0.0/8.", "169.254.0.0/16.", "*.com.", "*.test."} {
		if code, a := answer(t, c.answerDNS(query(t, name, dnsmessage.TypeA))); code != dnsmessage.RCodeRefused || a.IsValid() {
			t.Errorf("lookup of %s: %v %v, want refused", name, code, a)
		}
	}
	for _, target := range []string{"127.0.0.0/8:8001", "10.0.0.0/8:80", "*.com:443", "*.test:8001", "[::/0]:80"} {
		_, err := c.DialContext(context.Background(), "tcp", target)
		var d *Denial
		if !errors.As(err, &d) || !strings.Contains(d.Reason, "the user was not asked") || !strings.Contains(d.Reason, "not a plain host name or address") {
			t.Errorf("%s: %v, want a denial, unasked", target, err)
		}
	}
	if n := u.asked.Load(); n != 0 {
		t.Fatalf("asked %d times about ranges and wildcards: %v", n, u.about)
	}
	// Controls: a plain name's lookup gets a synthetic address; it and an
	// address are asked about, as the one host and port.
	if code, a := answer(t, c.answerDNS(query(t, "plain.test.", dnsmessage.TypeA))); code != dnsmessage.RCodeSuccess || !fakeRange.Contains(a) {
		t.Errorf("lookup of plain.test: %v %v", code, a)
	}
	c.DialContext(context.Background(), "tcp", "plain.test:8001")
	c.DialContext(context.Background(), "tcp", "127.0.0.1:8001")
	if n := u.asked.Load(); n != 2 || u.about[0] != "plain.test:8001" || u.about[1] != "127.0.0.1:8001" {
		t.Errorf("asked %d times: %v", n, u.about)
	}
}
