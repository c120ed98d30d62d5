package jspool

import (
	"context"
	"testing"
)

// BenchmarkWorkerStart measures one JS worker from fork to "ready" (jailed, V8 warm),
// killed afterwards: the cost every execute_js call pays in the background.
func BenchmarkWorkerStart(b *testing.B) {
	p := newTestPool(b, Options{Size: 1})
	ctx := context.Background()
	for b.Loop() {
		w, err := p.spawnReady(ctx)
		if err != nil {
			b.Fatal(err)
		}
		w.kill()
	}
}
