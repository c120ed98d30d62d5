package supervisor

import (
	"os"
	"strings"
)

// hostTimeZone names the time zone a JS worker's V8 uses for dates (ICU reads it
// from TZ): the server's TZ when that names a zone, else the zone /etc/localtime
// links to, else UTC. A worker cannot find it itself: ICU would readlink
// /etc/localtime, which the worker's seccomp filter refuses, as it refuses opening
// the zone files glibc reads.
func hostTimeZone() string {
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); zoneName(tz) {
		return tz
	}
	if l, err := os.Readlink("/etc/localtime"); err == nil {
		if _, zone, ok := strings.Cut(l, "zoneinfo/"); ok && zoneName(zone) {
			return zone
		}
	}
	return "UTC"
}

// zoneName reports whether ICU takes s from TZ as a zone name without looking
// further (its isValidOlsonID): no digits but in the four US zones that have them,
// and no path or POSIX rule. A zone with digits (Etc/GMT+5) becomes UTC.
func zoneName(s string) bool {
	switch s {
	case "PST8PDT", "MST7MDT", "CST6CDT", "EST5EDT":
		return true
	}
	if s == "" || len(s) > 64 || strings.HasPrefix(s, "/") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("/_+-", r)) {
			return false
		}
	}
	return true
}
