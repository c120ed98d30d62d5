package jail

import (
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// Probe reports what this host can enforce. The result is computed once.
func Probe() Status { return confine.Probe() }

// RestrictThread drops every capability, then applies no_new_privs, a Landlock
// ruleset and a seccomp filter built from p to the calling OS thread only;
// processes it starts afterwards inherit all three (see
// confine.RestrictThread, which it is).
func RestrictThread(p *policy.Sandbox) error { return confine.RestrictThread(p) }
