//go:build !cgo

package worker

import (
	"errors"
	"time"
)

// Baseline needs V8, which needs cgo.
func Baseline(code string) (time.Duration, error) {
	return 0, errors.New("built without cgo: no V8")
}
