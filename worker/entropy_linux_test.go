//go:build cgo

package worker

import (
	"testing"

	v8 "rogchap.com/v8go"
)

// TestV8EntropySource: V8 seeds its generators from the source this package gives
// it (getrandom), not from /dev/urandom, which a jailed worker cannot open, nor from
// the clock.
func TestV8EntropySource(t *testing.T) {
	iso := v8.NewIsolate()
	defer iso.Dispose()
	ctx := v8.NewContext(iso)
	defer ctx.Close()
	if _, err := ctx.RunScript("Math.random()", "seed.js"); err != nil {
		t.Fatal(err)
	}
	if n := entropyUsed(); n == 0 {
		t.Fatal("V8 made its random number generators without asking for entropy")
	} else {
		t.Logf("V8 asked for a seed %d times", n)
	}
}
