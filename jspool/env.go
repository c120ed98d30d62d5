package jspool

import (
	"os"
	"strings"

	"github.com/autobox-dev/autobox/internal/goenv"
)

// workerEnv is the whole environment of a JS worker: nothing of the server's but its
// time zone (see hostTimeZone), and Go runtime settings for a process that lives for
// one call (see goenv.Child). The memory limit leaves room for bridge replies, which
// can be large.
func workerEnv() []string {
	return append(goenv.Child("48MiB"), "TZ="+hostTimeZone())
}

// workerTimerSlack is the timer slack of batch workers (pool.throughput), set before
// the Go runtime starts (worker/link_linux.go). A worker lives for ~10 ms, and the
// Go runtime's monitor thread polls every 20 µs (plus the kernel's default 50 µs of
// slack) for the first milliseconds of a process: ~90 wake-ups per worker, half the
// context switches of a batch run. With 2 ms of slack a batch run switched 40% less
// and was ~12% faster. Sleeps get up to 2 ms longer, JS timers included; blocking
// reads, which is how a worker waits for its call, are not affected.
const workerTimerSlack = "AUTOBOX_TIMER_SLACK_NS=2000000"

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
