package supervisor

import (
	"runtime/debug"
	"sync"

	"github.com/autobox-dev/autobox/jspool"
)

// JSWorkers describes the JS workers of a server, for `autobox doctor`.
type JSWorkers struct {
	// V8 is the version of the V8 the workers link, as the first worker to be
	// ready said it ("" before one was).
	V8 string
	// V8go is the version of the v8go module this binary was built with.
	V8go string
	// Isolation is the jail workers run in (see JSOutput.Isolation).
	Isolation string
	// Weaker says, where the jail is weaker than the best this platform has, why
	// and what would make it whole; "" otherwise.
	Weaker string
}

// JSWorkers describes this server's JS workers; empty but for V8go where
// they cannot be had.
func (s *Server) JSWorkers() JSWorkers {
	w := JSWorkers{V8go: moduleVersion("rogchap.com/v8go")}
	if p, err := s.js.get(); err == nil {
		w.V8, w.Isolation, w.Weaker = p.V8Version(), p.Isolation(), p.Weaker()
	}
	return w
}

// jsPool is a server's pool of JS workers, made once: by New for a server
// that keeps workers warm, by the first execute_js call for one that keeps
// none (a command line: `autobox exec` never makes one).
type jsPool struct {
	opts jspool.Options

	mu     sync.Mutex
	pool   *jspool.Pool
	err    error
	closed bool
}

func onceJSPool(opts jspool.Options) *jsPool { return &jsPool{opts: opts} }

// get returns the pool, made on the first call; its error stays.
func (j *jsPool) get() (*jspool.Pool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errShuttingDown
	}
	if j.pool == nil && j.err == nil {
		j.pool, j.err = jspool.New(j.opts)
	}
	return j.pool, j.err
}

// close closes the pool if it was made; get fails after it.
func (j *jsPool) close() {
	j.mu.Lock()
	j.closed = true
	p := j.pool
	j.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// moduleVersion is the version of module path this binary was built with, or "".
func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range info.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}
