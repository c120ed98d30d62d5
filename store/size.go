package store

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// diskUsage is the space the files under dir take on disk (allocated blocks,
// as du counts them; blocks a clone shares with its source count in full), and
// 0 for what cannot be read. Workspaces nobody discards pile up: list shows
// this so that they can be found and pruned.
func diskUsage(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += int64(st.Blocks) * 512
		} else {
			total += fi.Size()
		}
		return nil
	})
	return total
}
