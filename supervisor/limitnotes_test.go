package supervisor

import (
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/policy"
)

// TestNoteLimits: the bare errors of the system at a limit get the note that
// names the limit, its value and what to raise or mount, whichever program
// words them; output without them gets none.
func TestNoteLimits(t *testing.T) {
	c := &execCall{
		limits:    treeLimits{Limits: policy.Limits{WriteBytes: 1 << 20, OpenFiles: 64}},
		limitCaps: limitCaps{writeMb: 65536, openFiles: 65536},
		mounts: []policy.Mount{
			{Host: "/home/u/proj", Sandbox: "/mnt/proj", Writable: true},
			{Host: "/home/u/data", Sandbox: "/mnt/data"},
		},
	}
	const scratch = "/tmp/autobox-scratch-1-2"
	cases := []struct {
		stderr string
		want   []string // substrings of the notes; none: no note
	}{
		{"head: error writing 'standard output': File too large\n", []string{`"File too large" is maxWriteMb, 1 MB here`, "raise maxWriteMb (at most 65536)"}},
		{"Error: EFBIG: file too large, write\n", []string{"is maxWriteMb"}},
		{"OSError: [Errno 24] Too many open files\n", []string{`"Too many open files" is maxOpenFiles, 64 here`, "raise maxOpenFiles (at most 65536)"}},
		{"Error: EMFILE: too many open files, open '/mnt/proj/x'\n", []string{"is maxOpenFiles"}},
		{"cp: cannot create regular file '/home/u/out/a.txt': No such file or directory\n", []string{`/home/u/out/a.txt is not in this call's mounts`, "/home, /root, /tmp, /mnt, /media, /srv and /run/user", "this call's: /mnt/proj, /mnt/data", `"hostPath": "/home/u/out"`}},
		{"sh: 1: cannot create /srv/x/f: Directory nonexistent\n", []string{"/srv/x/f is not in this call's mounts", `"hostPath": "/srv/x/f"`}},
		{"FileNotFoundError: [Errno 2] No such file or directory: '/mnt/typo/a.csv'\n", []string{"/mnt/typo/a.csv is not in this call's mounts"}},
		{"touch: cannot touch '/home/u/data/x': Read-only file system\n", []string{`/home/u/data/x (mount /mnt/data) is in a read-only mount`}},
		// In a mount, in the scratch dir, or in the system's directories: the
		// file is just not there.
		{"cat: /home/u/proj/nope: No such file or directory\n", nil},
		{"cat: /mnt/proj/nope: No such file or directory\n", nil},
		{"cat: " + scratch + "/nope: No such file or directory\n", nil},
		{"ls: cannot access '/usr/lib/nope': No such file or directory\n", nil},
		// A path without an error, and an error without a path.
		{"reading /home/u/notes.txt\n", nil},
		{"open failed: No such file or directory\n", nil},
	}
	for _, tc := range cases {
		out := &ExecOutput{Stderr: tc.stderr}
		c.noteLimits(out, scratch, cmdrun.Reason{})
		note := strings.TrimPrefix(out.Stderr, tc.stderr)
		if len(tc.want) == 0 && note != "" {
			t.Errorf("%q: a note where none is due: %q", tc.stderr, note)
		}
		for _, w := range tc.want {
			if !strings.Contains(note, w) {
				t.Errorf("%q: note %q, want it to hold %q", tc.stderr, note, w)
			}
		}
	}
	// A kill at maxWriteMb says the limit itself.
	out := &ExecOutput{Stderr: "disk limit exceeded (2.0 MB written > maxWriteMb 2; watchdog)\nhead: error writing 'big': File too large\n"}
	if c.noteLimits(out, scratch, cmdrun.Reason{Kind: KilledDisk, Text: "disk limit exceeded (2.0 MB written > maxWriteMb 2; watchdog)"}); strings.Contains(out.Stderr, "[autobox:") {
		t.Errorf("a note beside the kill at maxWriteMb: %q", out.Stderr)
	}
	// At the most a limit may be, the note says so instead of raising it.
	c.limits.WriteBytes, c.limitCaps = 500<<20, limitCaps{writeMb: 500, openFiles: 64, writeCeilinged: true}
	out = &ExecOutput{Stderr: "File too large\nToo many open files\n"}
	c.noteLimits(out, scratch, cmdrun.Reason{})
	for _, w := range []string{"it is the most maxWriteMb may be (the user's ceiling)", "it is the most maxOpenFiles may be on this host"} {
		if !strings.Contains(out.Stderr, w) {
			t.Errorf("at the caps: %q, want %q", out.Stderr, w)
		}
	}
}
