package xfstest

import "testing"

func TestReasons(t *testing.T) {
	for _, tc := range []struct {
		why  []string
		want string
	}{
		{[]string{"test filesystem unavailable: mkfs.xfs not found (install xfsprogs)", ""}, "test filesystem unavailable: mkfs.xfs not found (install xfsprogs)"},
		{[]string{"", "mounting needs root"}, "mounting needs root"},
		{[]string{"a", "b"}, "a; b"},
		{[]string{"", ""}, ""},
	} {
		if got := Reasons(tc.why...); got != tc.want {
			t.Errorf("Reasons(%q) = %q, want %q", tc.why, got, tc.want)
		}
	}
}
