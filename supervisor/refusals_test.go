package supervisor

import "testing"

func TestSaysForkFailed(t *testing.T) {
	for out, want := range map[string]bool{
		"sh: 0: Cannot fork\n":                                  true,
		"bash: fork: retry: Resource temporarily unavailable\n": true,
		"bash: fork: Resource temporarily unavailable\n":        true,
		"runtime: failed to create new OS thread (have 3 already; errno=11)\nResource temporarily unavailable (thread)": true,
		"read: Resource temporarily unavailable\n": false,
		"hello\n": false,
		"":        false,
	} {
		if got := saysForkFailed(out); got != want {
			t.Errorf("saysForkFailed(%q) = %v, want %v", out, got, want)
		}
	}
}
