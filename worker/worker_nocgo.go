//go:build !cgo

package worker

import (
	"fmt"
	"os"
)

// Main is the body of `autobox worker js`. Without cgo there is no V8.
func Main(args []string) {
	fmt.Fprintln(os.Stderr, "autobox worker js: this build has no V8 (built without cgo)")
	os.Exit(70)
}
