package printable

import "testing"

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"does not resolve: no such host": "does not resolve: no such host",
		"a\nb\tc\r\x1b[2K\u202e\xff":     `a\x0ab\x09c\x0d\x1b[2K\u202e\xff`,
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}
