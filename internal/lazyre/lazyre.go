// Package lazyre compiles a regular expression at its first use instead of at
// package initialization. Every autobox process (each JS worker and each
// launcher, one per call) runs the initialization of every package in the
// binary; a pattern compiled there costs each of them its time and the page
// faults of its allocations, though most never use it.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles pattern on its first call and returns
// the same *regexp.Regexp after. The pattern must compile (regexp.MustCompile).
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
