package jail

import "github.com/autobox-dev/autobox/policy"

// Spec is one command to run in a sandbox through the launcher.
type Spec = policy.Command

// Result is how a command ended.
type Result = policy.Exit
