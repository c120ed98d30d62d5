package jspool

import (
	"context"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/testbin"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// testBin is the autobox binary of TestMain: workers are the real binary.
var testBin string

// testBinEnv names, for a run of this test binary, an autobox binary to use
// instead of building one.
const testBinEnv = "AUTOBOX_JSPOOL_TEST_BIN"

func TestMain(m *testing.M) { testbin.Main(m, testBinEnv, "../cmd/autobox", &testBin, nil) }

// newTestPool is a pool of size warm workers, jailed or not, closed with the test.
func newTestPool(t testing.TB, opts Options) *Pool {
	t.Helper()
	opts.Exe = testBin
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// runCode runs code with the default limits, no mounts and no network, and
// fails the test unless the worker answered.
func runCode(t *testing.T, p *Pool, code string) *proto.Result {
	t.Helper()
	req := &Request{Run: proto.Run{Code: code, TimeoutMs: policy.JSDefaultTimeoutMs, MemoryMb: policy.JSDefaultMemoryMb}}
	req.Deadline = time.Now().Add(time.Duration(req.Run.TimeoutMs) * time.Millisecond)
	res, err := p.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	if res.Err != nil {
		t.Fatalf("%s: %v", code, res.Err)
	}
	return res.Worker
}

// workerPids waits for the pool's warm worker and returns the pids of live workers.
func workerPids(t *testing.T, p *Pool) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		var pids []int
		for w := range p.live {
			pids = append(pids, w.proc.Pid)
		}
		p.mu.Unlock()
		if len(pids) > 0 && len(p.ready) > 0 {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no warm JS worker within 10s")
	return nil
}
