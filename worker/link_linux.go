//go:build cgo

// libstdc++ and libgcc are linked into the binary instead of loaded at start-up: the
// dynamic loader's relocation of libstdc++ was about a tenth of a JS worker's start
// (each execute_js call starts a fresh worker process).
//
// The constructor below runs before the Go runtime starts any thread, so that every
// thread of the process inherits the timer slack that AUTOBOX_TIMER_SLACK_NS asks for
// (see supervisor's workerTimerSlack; the supervisor sets it for batch workers only).

package worker

/*
#cgo linux LDFLAGS: -static-libstdc++ -static-libgcc
#include <stdlib.h>
#include <sys/prctl.h>

__attribute__((constructor)) static void autobox_timer_slack(void) {
	const char *s = getenv("AUTOBOX_TIMER_SLACK_NS");
	if (s != NULL) {
		unsigned long ns = strtoul(s, NULL, 10);
		if (ns > 0 && ns <= 100000000) {
			prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0);
		}
	}
}
*/
import "C"
