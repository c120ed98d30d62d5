// Package treegen writes deterministic file trees for store benchmarks and tests: the
// same arguments always produce the same paths and bytes.
package treegen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

const perDir = 32 // entries per directory level

// Generate writes files regular files totalling totalBytes under dir, two directory
// levels deep with up to 32 entries each, sizes varying around the mean, content from a
// fixed-seed generator. dir is created if needed. The written data is flushed to disk
// before it returns.
func Generate(dir string, files int, totalBytes int64) error {
	if files <= 0 || totalBytes < 0 {
		return fmt.Errorf("treegen: need files > 0 and totalBytes >= 0, got %d and %d", files, totalBytes)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	weights := make([]int64, files)
	var sum int64
	for i := range weights {
		weights[i] = 1 + rng.Int64N(100)
		sum += weights[i]
	}
	content := rand.NewChaCha8([32]byte{'a', 'u', 't', 'o', 'b', 'o', 'x'})
	buf := make([]byte, 1<<20)
	var written int64
	for i := range files {
		size := totalBytes * weights[i] / sum
		if i == files-1 {
			size = totalBytes - written // rounding remainder, so the total is exact
		}
		written += size
		d := i / perDir
		rel := filepath.Join(fmt.Sprintf("d%03d", d/perDir), fmt.Sprintf("d%03d", d%perDir), fmt.Sprintf("f%06d.dat", i))
		if err := writeFile(filepath.Join(dir, rel), size, content, buf); err != nil {
			return fmt.Errorf("treegen: %w", err)
		}
	}
	// Flushed, so whatever is measured next on the tree does not pay for writing it.
	unix.Sync()
	return nil
}

func writeFile(path string, size int64, content *rand.ChaCha8, buf []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	for size > 0 {
		n := min(size, int64(len(buf)))
		content.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		size -= n
	}
	return f.Close()
}
