package main

import (
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/internal/flaghint"
)

// TestFlagHintsAreServeFlags (issue 35 item 7): every flag of `autobox serve`
// that a message names (package flaghint) is one serve takes; and the usage
// text lists each of serve's flags. Positive control: a flag serve lacks is
// refused by its parser.
func TestFlagHintsAreServeFlags(t *testing.T) {
	for _, name := range flaghint.All {
		if _, err := parseServeFlags([]string{"--" + name + "=" + sampleValue(name)}); err != nil {
			t.Errorf("messages name %s, which serve does not take: %v", flaghint.Serve(name), err)
		}
		if !strings.Contains(usage, "--"+name) {
			t.Errorf("autobox help does not list --%s", name)
		}
	}
	if _, err := parseServeFlags([]string{"--no-such-flag"}); err == nil {
		t.Error("serve took a flag it does not have")
	}
}

func sampleValue(name string) string {
	switch name {
	case flaghint.UnsafeNoSandbox:
		return "false"
	case flaghint.AllowHost:
		return "example.com"
	case flaghint.LiftNeverMount:
		return "~/.ssh"
	}
	return "1"
}
