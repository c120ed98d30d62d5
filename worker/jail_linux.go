//go:build cgo && linux

package worker

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// enterJail confines the process. Stage 1 (no flag) restricts the calling,
// locked main thread and re-execs, so that every thread of stage 2 is born confined.
// Stage 2 then forbids exec on all threads. UnjailedFlag skips both.
func enterJail(stage string) error {
	switch stage {
	case JailedFlag:
		return jail.ForbidExecAllThreads()
	case UnjailedFlag:
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding own executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("finding own executable: %w", err)
	}
	files, err := mappedFiles()
	if err != nil {
		return err
	}
	p := &policy.Sandbox{ReadOnly: append(files, exe, "/etc/ld.so.cache"), AllowExec: true}
	if err := jail.RestrictThread(p); err != nil {
		return err
	}
	err = syscall.Exec(exe, []string{os.Args[0], "worker", "js", JailedFlag}, []string{})
	return fmt.Errorf("re-exec after restricting: %w", err)
}

// mappedFiles lists the files this process has mapped (its binary, the dynamic loader
// and shared libraries): exactly what the re-exec'd image needs to read to start.
func mappedFiles() ([]string, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("reading own mappings: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		p := fields[5]
		if seen[p] {
			continue
		}
		seen[p] = true
		if real, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, real)
		}
	}
	return out, sc.Err()
}
