package supervisor

import "github.com/autobox-dev/autobox/internal/watchdog"

// watchRSS watches the resident memory of root and all its descendants and calls
// breach once when it passes limit (see package watchdog). The returned func stops
// the watchdog; once it has returned, breach is not running and will not be called.
func watchRSS(root int, limit int64, breach func(rss int64)) (stop func()) {
	w := watchdog.Start(root, watchdog.Limits{Memory: limit, Written: -1}, watchdog.Options{MemoryOnly: true}, func(b watchdog.Breach) { breach(b.Value) })
	return func() { w.Stop() }
}
