package jspool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// Fetch limits: responses larger than this fail the fetch; every fetch ends by the
// call's deadline or fetchMaxTime, whichever is first.
const (
	fetchMaxBody      = 10 << 20
	fetchMaxTime      = 30 * time.Second
	fetchMaxRedirects = 10
	fetchMaxReqBody   = 10 << 20
)

type fetcher interface {
	Do(*http.Request) (*http.Response, error)
	CloseIdleConnections()
}

type fetchArgs struct {
	URL  string `json:"url"`
	Init struct {
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
		Body    *string           `json:"body"`
	} `json:"init"`
}

type fetchResult struct {
	Status     int               `json:"status"`
	StatusText string            `json:"statusText"`
	URL        string            `json:"url"`
	Redirected bool              `json:"redirected"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
}

// checkFetchURL allows http and https only.
func checkFetchURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("fetch: only http and https URLs are allowed, not %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("fetch: URL has no host")
	}
	return nil
}

// checkFetchRedirect follows at most fetchMaxRedirects redirects, each checked
// again as a URL of its own (and, for a proxied call, dialled through the proxy's
// checks).
func checkFetchRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= fetchMaxRedirects {
		return fmt.Errorf("fetch: more than %d redirects", fetchMaxRedirects)
	}
	return checkFetchURL(req.URL)
}

// newFetchClient is the fetch client of one call (dial nil: the open network).
// It is the call's own, so that bridge.close can close its idle connections: no
// connection outlives its call.
func newFetchClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // the server's proxy settings are not the sandbox's
			DialContext:         dial,
			MaxIdleConnsPerHost: proto.MaxFetchesInFlight,
			MaxIdleConns:        proto.MaxFetchesInFlight,
		},
		CheckRedirect: checkFetchRedirect,
	}
}

func (b *bridge) fetch(ctx context.Context, raw json.RawMessage) (*fetchResult, error) {
	var a fetchArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, errors.New("fetch: bad arguments")
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, fmt.Errorf("fetch: invalid URL: %v", err)
	}
	if err := checkFetchURL(u); err != nil {
		return nil, err
	}
	method := strings.ToUpper(a.Init.Method)
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if a.Init.Body != nil {
		if len(*a.Init.Body) > fetchMaxReqBody {
			return nil, fmt.Errorf("fetch: request body over %d bytes", fetchMaxReqBody)
		}
		body = strings.NewReader(*a.Init.Body)
	}
	deadline := b.deadline
	if d := time.Now().Add(fetchMaxTime); d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("fetch: %v", err)
	}
	for k, v := range a.Init.Headers {
		req.Header.Set(k, v)
	}
	resp, err := b.fetchClient.Do(req)
	if err != nil {
		var d *proxy.Denial
		if errors.As(err, &d) {
			return nil, fmt.Errorf("fetch: %s", d.Advice())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("fetch: %s: timed out", u.Redacted())
		}
		return nil, fmt.Errorf("fetch: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, fetchMaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("fetch: reading body: %v", err)
	}
	if len(data) > fetchMaxBody {
		return nil, fmt.Errorf("fetch: response body over %d bytes", fetchMaxBody)
	}
	h := make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		h[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	final := resp.Request.URL.String()
	return &fetchResult{
		Status: resp.StatusCode, StatusText: strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode))),
		URL: final, Redirected: final != u.String(), Headers: h, Body: string(data),
	}, nil
}
