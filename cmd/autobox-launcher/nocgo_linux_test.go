package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmallLauncherHasNoCgoPaths: built as the Makefile builds it (pure Go),
// the small launcher links none of the functions jail has in a cgo and a
// pure-Go version that differ in what they do (probing namespaces for JS
// workers, starting JS workers, the JS worker's SIGSYS reports): the code its
// roles run is the main binary's. (forkUserNSLauncher is linked, kept by the
// server side's probes that package jail's variables hold, and its two
// versions fork the same namespaces; a launcher never runs it.) With symbols,
// unlike the Makefile's, to read them.
func TestSmallLauncherHasNoCgoPaths(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	out := filepath.Join(t.TempDir(), "autobox-launcher")
	build := exec.Command(gobin, "build", "-tags", "netgo,osusergo", "-o", out, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	nm, err := exec.Command(gobin, "tool", "nm", out).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	syms := string(nm)
	if !strings.Contains(syms, "jail/launcher.Main") {
		t.Fatalf("control: no jail/launcher.Main in the symbols of %s", out)
	}
	for _, f := range []string{"jail.cloneProbe", "jail.vforkExec", "restrict.reportRefusals"} {
		if strings.Contains(syms, f) {
			t.Errorf("the small launcher links %s, which differs without cgo", f)
		}
	}
}
