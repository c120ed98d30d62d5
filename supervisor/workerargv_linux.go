package supervisor

import (
	"debug/elf"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// workerLaunch says how JS workers start on Linux. The pool's spawner thread restricts
// itself once (no_new_privs, Landlock allowing only the autobox binary and the
// libraries it maps, seccomp) and forks every worker from that thread, so each worker
// is born confined, on every thread it will ever have, with a single exec. The worker
// then forbids exec on all its threads before it warms V8.
//
// On a host without a usable Landlock the workers run unjailed, said loudly.
func workerLaunch(exe string, log *slog.Logger) (argv []string, prepare func() error, err error) {
	st := jail.Probe()
	if st.LandlockABI < jail.MinLandlockABI || !st.Seccomp {
		log.Warn("this host cannot jail JS workers: they run WITHOUT the filesystem/network jail (V8 isolation only)", "host", st.String())
		return []string{exe, "worker", "js", "--unjailed"}, nil, nil
	}
	files, err := loadFiles(exe)
	if err != nil {
		return nil, nil, err
	}
	p := &policy.Sandbox{ReadOnly: append(files, "/etc/ld.so.cache"), AllowExec: true}
	return []string{exe, "worker", "js", "--jailed"}, func() error { return jail.RestrictThread(p) }, nil
}

// loadFiles lists what the dynamic loader opens to start exe: the interpreter and
// every DT_NEEDED library, transitively, found where the loader looks for them. It is
// read from the ELF headers, so it holds for any autobox binary, not only this one.
func loadFiles(exe string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(path string, top bool) error
	visit = func(path string, top bool) error {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		if seen[real] {
			return nil
		}
		seen[real] = true
		out = append(out, real)
		f, err := elf.Open(real)
		if err != nil {
			return fmt.Errorf("reading %s: %w", real, err)
		}
		defer f.Close()
		if top {
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					b := make([]byte, p.Filesz)
					if _, err := p.ReadAt(b, 0); err == nil {
						if err := visit(strings.TrimRight(string(b), "\x00"), false); err != nil {
							return err
						}
					}
				}
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("reading %s: %w", real, err)
		}
		for _, lib := range libs {
			found := false
			for _, dir := range libDirs {
				if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
					if err := visit(filepath.Join(dir, lib), false); err != nil {
						return err
					}
					found = true
					break
				}
			}
			if !found {
				return fmt.Errorf("%s needs %s, which is in none of %v", real, lib, libDirs)
			}
		}
		return nil
	}
	if err := visit(exe, true); err != nil {
		return nil, fmt.Errorf("finding what a JS worker loads: %w", err)
	}
	return out, nil
}

// libDirs are where the loader finds libraries on the Linux distributions we know.
var libDirs = func() []string {
	arch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	return []string{"/lib/" + arch, "/usr/lib/" + arch, "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}
}()
