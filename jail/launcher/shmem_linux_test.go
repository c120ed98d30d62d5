package launcher

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/autobox-dev/autobox/jail/wire"
)

// TestReadShmem: the launcher reads its memory cgroup's tmpfs bytes from the
// memory.stat the supervisor passed (plus one, so that 0 says "not read"),
// and reports nothing without one.
func TestReadShmem(t *testing.T) {
	stat := filepath.Join(t.TempDir(), "memory.stat")
	if err := os.WriteFile(stat, []byte("cache 8192\nrss 4096\nshmem 12288\nmapped_file 0\ntotal_shmem 40960\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(stat)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv(wire.MemStatEnv, strconv.Itoa(int(f.Fd())))
	if got := readShmem(); got != 12288+1 {
		t.Errorf("readShmem = %d, want 12289 (shmem 12288, plus one)", got)
	}
	t.Setenv(wire.MemStatEnv, "")
	if got := readShmem(); got != 0 {
		t.Errorf("readShmem without a memory.stat = %d, want 0", got)
	}
}
