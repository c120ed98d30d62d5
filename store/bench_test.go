package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/autobox-dev/autobox/internal/treegen"
)

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkWorkspace times create, status with nothing changed, and sync of 10 changed
// files over a generated tree of AUTOBOX_BENCH_FILES files totalling AUTOBOX_BENCH_BYTES
// (default 5000 files, 100 MiB), on the reflink XFS when there is one.
func BenchmarkWorkspace(b *testing.B) {
	files, size := envInt("AUTOBOX_BENCH_FILES", 5000), envInt("AUTOBOX_BENCH_BYTES", 100<<20)
	fsDir, mode := xfsDir, CopyModeClone
	if fsDir == "" {
		fsDir, mode = b.TempDir(), CopyModeAuto
	}
	e := newEnvOn(b, fsDir, mode)
	if err := treegen.Generate(e.src, int(files), size); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := CreateRequest{HostPath: e.src, SandboxPath: "/mnt/bench", StoragePath: e.storage, CopyMode: mode}
	b.Logf("%d files, %d bytes, copyMode %s on %s", files, size, mode, fsDir)

	b.Run("create", func(b *testing.B) {
		for b.Loop() {
			res, err := e.s.Create(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			e.s.Discard(ctx, res.WorkspaceID)
			b.StartTimer()
		}
	})
	res, err := e.s.Create(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	id := res.WorkspaceID
	b.Run("status-clean", func(b *testing.B) {
		for b.Loop() {
			if st, err := e.s.Status(ctx, id); err != nil || len(st.Changes) != 0 {
				b.Fatalf("status: %+v, %v", st, err)
			}
		}
	})
	b.Run("sync-10-changed", func(b *testing.B) {
		round := 0
		for b.Loop() {
			b.StopTimer()
			round++
			for i := range 10 {
				rel := fmt.Sprintf("d000/d000/f%06d.dat", i)
				if err := os.WriteFile(filepath.Join(e.work(id), rel), fmt.Appendf(nil, "round %d file %d", round, i), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if sr, err := e.s.Sync(ctx, id); err != nil || !sr.OK || len(sr.Applied) != 10 {
				b.Fatalf("sync: %+v, %v", sr, err)
			}
		}
	})
}
