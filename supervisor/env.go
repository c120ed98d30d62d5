package supervisor

// A call's own environment variables (exec_command's env, the command line's
// --env): validated, then laid over the environment every command gets. The
// variables through which the sandbox does its work (HOME and TMPDIR, the
// per-call scratch dir; the proxy variables of a call with allowHosts) cannot
// be set by a call: a command could not escape through them, but it would
// silently lose the scratch dir or the proxy, and the result would not say why.

import (
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
)

// Bounds of a call's env.
const (
	maxEnvVars  = 256
	maxEnvBytes = 128 << 10
)

// defaultPath is the PATH every command gets; "$PATH" in a call's PATH stands for it.
const defaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

// reservedEnv are the names a call may not set, and why.
func reservedEnv(name string) (why string, reserved bool) {
	switch name {
	case "HOME", "TMPDIR":
		return "it is the call's scratch dir, the only place besides rw mounts a command may write", true
	}
	if strings.HasPrefix(strings.ToUpper(name), "AUTOBOX_") {
		return "names starting with AUTOBOX_ are autobox's own", true
	}
	if proxyEnvNames()[name] {
		return "it points the command at autobox's network proxy (set by allowHosts)", true
	}
	return "", false
}

// proxyEnvNames are the names proxy.Env sets.
func proxyEnvNames() map[string]bool {
	names := map[string]bool{}
	for _, kv := range proxy.Env("autobox", "http://127.0.0.1:1", "socks5h://127.0.0.1:1") {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	return names
}

// validName is a portable shell variable name: a letter or _, then letters, digits, _.
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// validateEnv checks a call's env (NAME=VALUE entries) and returns it with
// sandbox paths in values rewritten to host paths (as in command) and "$PATH"
// in PATH replaced by the default PATH. A name given twice keeps its last value.
func validateEnv(env []string, mounts []policy.Mount) ([]string, error) {
	if len(env) == 0 {
		return nil, nil
	}
	if len(env) > maxEnvVars {
		return nil, fmt.Errorf("%w: env has %d entries, at most %d allowed", policy.ErrInvalid, len(env), maxEnvVars)
	}
	total := 0
	at := map[string]int{}
	out := make([]string, 0, len(env))
	for i, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%w: env[%d] is %q: each entry is NAME=VALUE, e.g. CI=1", policy.ErrInvalid, i, kv)
		}
		if !validName(k) {
			return nil, fmt.Errorf("%w: env[%d]: %q is not a variable name (letters, digits and _, not starting with a digit)", policy.ErrInvalid, i, k)
		}
		if why, ok := reservedEnv(k); ok {
			return nil, fmt.Errorf("%w: env[%d]: %s cannot be set: %s", policy.ErrInvalid, i, k, why)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("%w: env[%d]: the value of %s contains a NUL byte", policy.ErrInvalid, i, k)
		}
		v = policy.RewriteArg(mounts, v)
		if k == "PATH" {
			v = strings.ReplaceAll(v, "$PATH", defaultPath)
		}
		total += len(k) + 1 + len(v)
		if j, seen := at[k]; seen {
			out[j] = k + "=" + v
			continue
		}
		at[k] = len(out)
		out = append(out, k+"="+v)
	}
	if total > maxEnvBytes {
		return nil, fmt.Errorf("%w: env is %d bytes, at most %d allowed", policy.ErrInvalid, total, maxEnvBytes)
	}
	return out, nil
}

// overlayEnv returns base with each of over's entries in place of the entry of
// the same name, or added: a name appears once, so that every reader of the
// environment sees the call's value.
func overlayEnv(base, over []string) []string {
	if len(over) == 0 {
		return base
	}
	set := make(map[string]bool, len(over))
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}
