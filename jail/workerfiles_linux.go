package jail

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// workerFiles lists what the dynamic loader opens to start exe: the interpreter and
// every DT_NEEDED library, transitively, found where the loader looks for them. It is
// read from the ELF headers, so it holds for any autobox binary, not only this one.
func workerFiles(exe string) ([]string, error) {
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
