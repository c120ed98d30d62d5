package policy

import "strings"

// RewriteArg replaces sandbox paths in one argument with host paths. A sandbox path is
// recognised where it starts a path: at the start of the argument, after '=' (as in
// --flag=/mnt/x) or after a character that cannot be part of a path word in shell text
// (space, quote, ':', ';', '(' ...), and only when it ends at a component boundary, so
// /mnt/ws2 is never taken for /mnt/ws. Everything else stays byte-exact.
func RewriteArg(mounts []Mount, arg string) string {
	if len(mounts) == 0 || !strings.Contains(arg, "/") {
		return arg
	}
	var b strings.Builder
	i := 0
	for i < len(arg) {
		if arg[i] == '/' && (i == 0 || isBoundaryBefore(arg[i-1])) {
			if m := matchAt(mounts, arg[i:]); m != nil {
				b.WriteString(m.Host)
				i += len(m.Sandbox)
				continue
			}
		}
		b.WriteByte(arg[i])
		i++
	}
	return b.String()
}

// matchAt returns the mount whose sandbox path prefixes s at a component boundary;
// the longest wins (mount paths never nest, but be exact anyway).
func matchAt(mounts []Mount, s string) *Mount {
	var best *Mount
	for i := range mounts {
		m := &mounts[i]
		if !strings.HasPrefix(s, m.Sandbox) {
			continue
		}
		if rest := s[len(m.Sandbox):]; rest != "" && !isBoundaryAfter(rest[0]) {
			continue
		}
		if best == nil || len(m.Sandbox) > len(best.Sandbox) {
			best = m
		}
	}
	return best
}

func isBoundaryBefore(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '=', '"', '\'', ':', ';', '(', ')', '<', '>', '|', '&', '`', ',', '{', '[', '$':
		return true
	}
	return false
}

func isBoundaryAfter(c byte) bool {
	switch c {
	case '/', ' ', '\t', '\n', '\r', '"', '\'', ':', ';', ')', '<', '>', '|', '&', '`', ',', '}', ']', '*', '?':
		return true
	}
	return false
}
