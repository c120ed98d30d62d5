package cli

import "testing"

func TestShown(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"README.md", "README.md"},
		{"dir/naïve café.txt", "dir/naïve café.txt"},
		{"has space", "has space"},
		{"README.md\r\x1b[2Kmodify  x", `"README.md\r\x1b[2Kmodify  x"`},
		{"a\nb", `"a\nb"`},
		{"tab\there", `"tab\there"`},
		{"c1\u009bx", `"c1\u009bx"`},
		{"bidi\u202etxt.exe", `"bidi\u202etxt.exe"`},
		{"bad\xffbyte", `"bad\xffbyte"`},
		{"del\x7f", `"del\x7f"`},
		// A backslash or a quote would make a plain name look like a quoted one.
		{`a\x1b`, `"a\\x1b"`},
		{`"quoted"`, `"\"quoted\""`},
	} {
		if got := shown(c.in); got != c.want {
			t.Errorf("shown(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestEscapeText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text: /a/b\nsecond line\tindented", "plain text: /a/b\nsecond line\tindented"},
		{"x\x1b[31mred\r", `x\x1b[31mred\x0d`},
		{"c1\u009b bidi\u202e bad\xff", `c1\u009b bidi\u202e bad\xff`},
	} {
		if got := escapeText(c.in); got != c.want {
			t.Errorf("escapeText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
