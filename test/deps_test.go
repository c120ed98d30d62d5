package test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportDirection keeps the package graph one-way: only worker imports v8go;
// nothing but cmd and cli imports supervisor; nothing imports cmd or cli; policy
// imports nothing of ours; mcpstdio imports nothing of ours but internal helpers;
// jspool (the JS worker pool and bridge) imports none of the server's packages;
// cmdrun (running one command tree) imports neither its users (the server, task)
// nor the transport or the command line; enforcement and storage never import
// the server; jail/restrict imports nothing of ours but jail/seccomp, and the JS
// worker imports no part of the jail but it; jail/launcher is imported by
// cmd/autobox and cmd/autobox-launcher alone (jail, the server's side, never
// imports it), and nothing it needs, directly or not, is the server's
// (TestLauncherImportsNoServer); jail/wire, the format jail and its launcher
// share, imports nothing of ours but policy and internal helpers; the rooms
// both sides share (jail/internal/...) import neither side.
func TestImportDirection(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/autobox-dev/autobox/...")
	const mod = "github.com/autobox-dev/autobox/"
	allowedImporters := map[string][]string{
		"rogchap.com/v8go":  {mod + "worker"},
		mod + "supervisor":  {mod + "cmd/autobox", mod + "cli", mod + "test/bench"},
		mod + "cli":         {mod + "cmd/autobox"},
		mod + "worker":      {mod + "cmd/autobox", mod + "test/bench"},
		mod + "test/probe":  {},
		mod + "proxy":       {mod + "supervisor", mod + "jspool", mod + "task", mod + "cmd/autobox"},
		mod + "cmd/autobox": {},
		// The child side's entry, and what the small launcher binary is built
		// from: only the two programs (and tests that play them).
		mod + "jail/launcher": {mod + "cmd/autobox", mod + "cmd/autobox-launcher"},
	}
	// serverSide are the packages of the server and its callers, which the JS
	// worker pool serves and must not reach back into.
	serverSide := []string{mod + "supervisor", mod + "mcpstdio", mod + "cli", mod + "task", mod + "cmd/autobox", mod + "store", mod + "session", mod + "ceiling"}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		for _, imp := range imports {
			allowed, restricted := allowedImporters[imp]
			if restricted && !contains(allowed, pkg) {
				t.Errorf("%s imports %s; only %v may", pkg, imp, allowed)
			}
			if pkg == mod+"policy" && strings.HasPrefix(imp, mod) {
				t.Errorf("policy imports %s; it must import nothing of ours", imp)
			}
			if pkg == mod+"mcpstdio" && strings.HasPrefix(imp, mod) && !strings.HasPrefix(imp, mod+"internal/") {
				t.Errorf("mcpstdio imports %s; it must import nothing of ours but internal helpers", imp)
			}
			if pkg == mod+"jspool" && contains(serverSide, imp) {
				t.Errorf("jspool imports %s; it must import none of %v", imp, serverSide)
			}
			if pkg == mod+"cmdrun" && slices.Contains([]string{mod + "supervisor", mod + "mcpstdio", mod + "cli", mod + "task"}, imp) {
				t.Errorf("cmdrun imports %s; it must not import the server, the transport, the command line or task", imp)
			}
			if pkg == mod+"jail/restrict" && strings.HasPrefix(imp, mod) && imp != mod+"jail/seccomp" {
				t.Errorf("jail/restrict imports %s; it must import nothing of ours but jail/seccomp", imp)
			}
			if pkg == mod+"jail/wire" && strings.HasPrefix(imp, mod) && imp != mod+"policy" && !strings.HasPrefix(imp, mod+"internal/") {
				t.Errorf("jail/wire imports %s; it must import nothing of ours but policy and internal helpers", imp)
			}
			if strings.HasPrefix(pkg, mod+"worker") && (imp == mod+"jail" || strings.HasPrefix(imp, mod+"jail/")) && imp != mod+"jail/restrict" {
				t.Errorf("%s imports %s; the JS worker needs jail/restrict alone", pkg, imp)
			}
			if pkg == mod+"jail" && imp == mod+"jail/launcher" {
				t.Errorf("jail imports jail/launcher; the server's side and the launcher are two processes that share jail/wire and jail/internal/...")
			}
			if strings.HasPrefix(pkg, mod+"jail/internal/") && (imp == mod+"jail" || imp == mod+"jail/launcher") {
				t.Errorf("%s imports %s; a room both sides share imports neither side", pkg, imp)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("go list listed no imports")
	}
}

// TestLauncherImportsNoServer: what jail/launcher needs, directly or through
// another package, holds nothing of the server (the small launcher binary is
// built from it): not jail's server side, not the server's packages, not the
// MCP SDK nor v8go.
func TestLauncherImportsNoServer(t *testing.T) {
	const mod = "github.com/autobox-dev/autobox/"
	out := goList(t, "-deps", mod+"jail/launcher")
	forbidden := []string{mod + "jail", mod + "supervisor", mod + "jspool", mod + "cmdrun", mod + "mcpstdio", mod + "session", mod + "store", mod + "task", mod + "cli", mod + "proxy", mod + "worker", mod + "seatbelt", mod + "ceiling", "rogchap.com/v8go", "github.com/modelcontextprotocol/go-sdk"}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") && !strings.HasPrefix(dep, mod+"jail/") {
				t.Errorf("jail/launcher needs %s; it must need nothing of the server (%s)", dep, f)
			}
		}
	}
	if !slices.Contains(deps, mod+"jail/wire") {
		t.Fatalf("go list -deps jail/launcher does not list jail/wire: %q", deps)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// goList runs go list with args and returns what it printed on stdout alone: go
// may say more on stderr (a module it downloads on a user's first run), which
// is not a package.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return out
}
