package cli

import (
	"errors"
	"testing"
)

func TestWordsSay(t *testing.T) {
	for _, tc := range []struct{ cmd, in, want string }{
		{"ws create", `clone "a": no; put the source and storagePath on such a filesystem, or pass copyMode "auto" to allow ordinary copying`, `clone "a": no; put the source and --storage on such a filesystem, or pass --copy-mode auto to allow ordinary copying`},
		{"ws create", `hostPath "/x/timeoutMs copyMode" does not exist`, `HOST "/x/timeoutMs copyMode" does not exist`},
		{"ws create", `copyMode "a b": use "clone" (default) or "auto"`, `--copy-mode "a b": use "clone" (default) or "auto"`},
		{"js", `mounts[2]: sandboxPath: invalid argument: "x" is not absolute`, `--mount/--workspace #3: SANDBOX: invalid argument: "x" is not absolute`},
		{"js", `invalid argument: timeoutMs must be between 1 and 10000, got 0`, `invalid argument: --timeout must be between 1 and 10000, got 0`},
		{"js", `Error: timeoutMsx and xtimeoutMs are not names`, `Error: timeoutMsx and xtimeoutMs are not names`},
		{"js", `an unpaired "quote timeoutMs`, `an unpaired "quote timeoutMs`},
		{"exec", `cwd: invalid argument: /nope does not exist`, `--cwd: invalid argument: /nope does not exist`},
		{"batch", `exec_command: unknown field "x" (exec_command takes command, timeoutMs)`, `exec_command: unknown field "x" (exec_command takes command, timeoutMs)`},
	} {
		if got := wordsOf(tc.cmd).say(tc.in); got != tc.want {
			t.Errorf("%s: say(%q)\n got %q\nwant %q", tc.cmd, tc.in, got, tc.want)
		}
	}
}

func TestFlagError(t *testing.T) {
	for in, want := range map[string]string{
		"flag provided but not defined: -foo":                      "flag provided but not defined: --foo",
		`invalid value "x" for flag -max-read: not an integer`:     `invalid value "x" for flag --max-read: not an integer`,
		`invalid boolean value "x" for -json: parse error`:         `invalid boolean value "x" for --json: parse error`,
		"flag needs an argument: -e":                               "flag needs an argument: -e",
		`invalid value "-5" for flag -j: must be between 1 and 64`: `invalid value "-5" for flag -j: must be between 1 and 64`,
	} {
		if got := flagError(errors.New(in)); got != want {
			t.Errorf("flagError(%q) = %q, want %q", in, got, want)
		}
	}
}
