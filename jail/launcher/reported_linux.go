package launcher

import "sync"

// reported keeps what a launcher reports in its exit frame (names a command
// looked up, unix sockets refused it): each once, in order, up to max; safe
// for concurrent use, and a nil *reported lists nothing.
type reported struct {
	mu    sync.Mutex
	max   int
	items []string
}

func (r *reported) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.items {
		if t == s {
			return
		}
	}
	if len(r.items) < r.max {
		r.items = append(r.items, s)
	}
}

func (r *reported) list() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.items...)
}
