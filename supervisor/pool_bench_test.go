package supervisor

import (
	"context"
	"testing"
)

// BenchmarkWorkerStart measures one JS worker from fork to "ready" (jailed, V8 warm),
// killed afterwards: the cost every execute_js call pays in the background.
func BenchmarkWorkerStart(b *testing.B) {
	s, err := New(Options{Exe: testBin, PoolSize: 1, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for b.Loop() {
		w, err := s.pool.spawnReady(ctx)
		if err != nil {
			b.Fatal(err)
		}
		w.kill()
	}
}
