package xfstest

import "strings"

// Reasons joins the reasons a test cannot have its filesystems, for its t.Skip: the
// empty ones (a filesystem that was made) are left out, so there is no stray separator.
func Reasons(why ...string) string {
	var given []string
	for _, w := range why {
		if w != "" {
			given = append(given, w)
		}
	}
	return strings.Join(given, "; ")
}
