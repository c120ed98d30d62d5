package seatbelt

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// parseSandboxExecArgs reads argv (without argv[0]) the way sandbox-exec's
// getopt(3) does for the options Args uses: -p PROFILE and -D NAME=VALUE,
// attached or separate, up to "--" or the first word not starting with "-".
func parseSandboxExecArgs(args []string) (profile string, params, argv []string, err error) {
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		value := a[2:]
		args = args[1:]
		if value == "" {
			if len(args) == 0 {
				return "", nil, nil, fmt.Errorf("option %s needs a value", a)
			}
			value, args = args[0], args[1:]
		}
		switch a[:2] {
		case "-p":
			profile = value
		case "-D":
			params = append(params, value)
		default:
			return "", nil, nil, fmt.Errorf("illegal option %s", a[:2])
		}
	}
	return profile, params, args, nil
}

func TestArgs(t *testing.T) {
	profile, params := ExecProfile(&execCases[2].p)
	argv := []string{"/bin/echo", "-n", "--", "hi"}
	got := Args(profile, params, argv)
	want := []string{SandboxExec, "-p", profile}
	for _, p := range params {
		want = append(want, "-D", p)
	}
	want = append(want, argv...)
	if !slices.Equal(got, want) {
		t.Fatalf("Args = %q\nwant %q", got, want)
	}
	// A command that looks like an option needs "--" (and gets it).
	dash := Args(profile, params, []string{"-weird", "x"})
	if i := slices.Index(dash, "-weird"); i < 1 || dash[i-1] != "--" {
		t.Errorf("Args with a dash command = %q, want -- before it", dash)
	}
}

func TestArgsRoundTrip(t *testing.T) {
	for _, argv := range [][]string{{"/bin/sh", "-c", "echo -D x"}, {"-dash", "-p"}, {"/x"}} {
		p := hostilePolicy()
		profile, params := ExecProfile(&p)
		gotProfile, gotParams, gotArgv, err := parseSandboxExecArgs(Args(profile, params, argv)[1:])
		if err != nil {
			t.Fatal(err)
		}
		if gotProfile != profile || !slices.Equal(gotParams, params) || !slices.Equal(gotArgv, argv) {
			t.Errorf("round trip of %q: argv %q, params equal %v, profile equal %v",
				argv, gotArgv, slices.Equal(gotParams, params), gotProfile == profile)
		}
		for _, p := range gotParams {
			if strings.Count(p, "=") < 1 {
				t.Errorf("param %q has no =", p)
			}
		}
	}
}
