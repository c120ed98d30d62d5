package proxy

import (
	"sort"
	"sync"
)

// Record is what a call's connections did, for its result: the hosts reached
// (how many connections each) and the connections refused, each with why.
// Bounded: at most maxRecorded entries in each list; Omitted counts the
// distinct entries past that.
type Record struct {
	Allowed []Allowed `json:"allowed"`
	Denied  []Denial  `json:"denied"`
	Omitted int       `json:"omitted,omitempty"`
}

// Allowed is a host:port a call connected to, and how many times.
type Allowed struct {
	Host  string `json:"host"`
	Port  int    `json:"port"`
	Count int    `json:"count"`
}

const maxRecorded = 64

type recKey struct {
	host string
	port int
}

type recorder struct {
	mu      sync.Mutex
	allowed map[recKey]int
	denied  map[Denial]bool
	order   []Denial
	omitted int
}

func (r *recorder) init() {
	r.allowed = map[recKey]int{}
	r.denied = map[Denial]bool{}
}

func (r *recorder) allow(host string, port int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := recKey{host, port}
	if _, ok := r.allowed[k]; !ok && len(r.allowed) >= maxRecorded {
		r.omitted++
		return
	}
	r.allowed[k]++
}

func (r *recorder) deny(d Denial) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.denied[d] {
		return
	}
	if len(r.order) >= maxRecorded {
		r.omitted++
		return
	}
	r.denied[d] = true
	r.order = append(r.order, d)
}

// Deny records a denial made elsewhere (the launcher's refusal of a DNS query).
func (c *Call) Deny(d Denial) { c.rec.deny(d) }

func (r *recorder) record() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := Record{Allowed: []Allowed{}, Denied: append([]Denial{}, r.order...), Omitted: r.omitted}
	for k, n := range r.allowed {
		rec.Allowed = append(rec.Allowed, Allowed{Host: k.host, Port: k.port, Count: n})
	}
	sort.Slice(rec.Allowed, func(i, j int) bool {
		a, b := rec.Allowed[i], rec.Allowed[j]
		return a.Host < b.Host || a.Host == b.Host && a.Port < b.Port
	})
	return rec
}

// Empty reports whether nothing was recorded.
func (r Record) Empty() bool { return len(r.Allowed) == 0 && len(r.Denied) == 0 && r.Omitted == 0 }
