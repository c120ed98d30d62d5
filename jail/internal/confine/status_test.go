package confine

import (
	"errors"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

func TestCheck(t *testing.T) {
	good := Status{LandlockABI: 6, Seccomp: true, SeccompArch: "x86_64", NoNewPrivs: true, Platform: "linux/amd64"}
	p := &policy.Sandbox{ReadOnly: []string{"/usr"}, ReadWrite: []string{"/work"}, DenyWrite: []string{"/src"}}
	if err := good.Check(p); err != nil {
		t.Errorf("good host: %v", err)
	}
	for _, tc := range []struct {
		name string
		s    Status
		p    *policy.Sandbox
		want error
		text string
	}{
		{"no landlock", Status{Seccomp: true, SeccompArch: "x86_64", NoNewPrivs: true, Landlock: "disabled"}, p, ErrUnsupported, "Landlock is not available (disabled)"},
		{"old abi", Status{LandlockABI: 2, Seccomp: true, SeccompArch: "x86_64", NoNewPrivs: true}, p, ErrUnsupported, "Landlock ABI 2 < 3"},
		{"no seccomp", Status{LandlockABI: 6, SeccompArch: "x86_64", NoNewPrivs: true}, p, ErrUnsupported, "seccomp"},
		{"unknown arch", Status{LandlockABI: 6, Seccomp: true, NoNewPrivs: true, Platform: "linux/riscv64"}, p, ErrUnsupported, "linux/riscv64"},
		{"nothing", Status{Platform: "darwin/arm64", Landlock: "not Linux"}, p, ErrUnsupported, "not Linux"},
		{"deny inside rw", good, &policy.Sandbox{ReadWrite: []string{"/work"}, DenyWrite: []string{"/work/src"}}, ErrPolicy, "/work/src"},
		{"deny is rw", good, &policy.Sandbox{ReadWrite: []string{"/work"}, DenyWrite: []string{"/work"}}, ErrPolicy, "/work"},
		{"rw is root", good, &policy.Sandbox{ReadWrite: []string{"/"}, DenyWrite: []string{"/src"}}, ErrPolicy, "/src"},
		{"relative", good, &policy.Sandbox{ReadOnly: []string{"usr"}}, ErrPolicy, "usr"},
		{"nil", good, nil, ErrPolicy, "nil"},
	} {
		err := tc.s.Check(tc.p)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
	}
	// Whole path components only: /work2 is not inside /work.
	if err := good.Check(&policy.Sandbox{ReadWrite: []string{"/work"}, DenyWrite: []string{"/work2"}}); err != nil {
		t.Errorf("sibling prefix: %v", err)
	}
	// Old ABIs without TCP rules or scoping are accepted: seccomp still
	// refuses non-unix sockets.
	old := good
	old.LandlockABI = 3
	if err := old.Check(p); err != nil || old.TCPDenied() || old.Scoped() {
		t.Errorf("ABI 3: %v, tcp %v, scoped %v", err, old.TCPDenied(), old.Scoped())
	}
}
