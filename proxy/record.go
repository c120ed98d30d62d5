package proxy

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/autobox-dev/autobox/internal/printable"
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

// LookupDenial is what a name a sandboxed command tried to resolve itself (the
// launcher refused the query: there is no DNS inside) is recorded as.
func LookupDenial(name string) Denial {
	return Denial{Host: name, Port: 53, Reason: "looked up by the command itself: there is no DNS inside the sandbox, names resolve at the proxy (HTTP_PROXY, or ALL_PROXY=socks5h://)"}
}

// DeniedBlock is what ends a failed command's stderr when the proxy denied it
// something, so that the model reading the output learns what to ask for; "" if
// nothing was denied.
func (rec Record) DeniedBlock() string {
	if len(rec.Denied) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n[autobox: network denied:")
	for i, d := range rec.Denied {
		if i == 5 {
			fmt.Fprintf(&b, "\n  and %d more (see the result's network.denied)", len(rec.Denied)-i+rec.Omitted)
			break
		}
		// A name is the command's choice: escaped, so that it cannot end the
		// block, forge a line of it or drive the terminal (the command line
		// prints this block as autobox's own text).
		fmt.Fprintf(&b, "\n  %s (%s)", printable.Name(d.Target()), printable.Line(d.Reason))
	}
	b.WriteString("]\n")
	return b.String()
}
