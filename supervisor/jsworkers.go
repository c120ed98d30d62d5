package supervisor

import "runtime/debug"

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

// JSWorkers describes this server's JS workers.
func (s *Server) JSWorkers() JSWorkers {
	return JSWorkers{V8: s.pool.V8Version(), V8go: moduleVersion("rogchap.com/v8go"), Isolation: s.pool.Isolation(), Weaker: s.pool.Weaker()}
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
