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
// worker imports it, not jail; jail/launcher is imported by cmd/autobox and
// cmd/autobox-launcher alone (jail never imports it); jail/wire, the format jail and its launcher share,
// imports nothing of ours but policy and internal helpers.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/autobox-dev/autobox/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
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
			if strings.HasPrefix(pkg, mod+"worker") && imp == mod+"jail" {
				t.Errorf("%s imports jail; the JS worker needs jail/restrict alone", pkg)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("go list listed no imports")
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
