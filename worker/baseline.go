//go:build cgo

package worker

import (
	"time"

	v8 "rogchap.com/v8go"
)

// Baseline measures, in this process, what one call costs V8 alone: a new isolate,
// a new context and one script run. `make bench` sets it beside the MCP numbers.
func Baseline(code string) (time.Duration, error) {
	start := time.Now()
	iso := v8.NewIsolate()
	defer iso.Dispose()
	ctx := v8.NewContext(iso)
	defer ctx.Close()
	if _, err := ctx.RunScript(code, "baseline.js"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
