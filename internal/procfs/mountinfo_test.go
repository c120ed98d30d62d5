package procfs

import "testing"

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b\134c`: `/a b\c`, `/plain`: `/plain`, `/end\04`: `/end\04`} {
		if got := UnescapeMount(in); got != want {
			t.Errorf("UnescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
