package supervisor

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/policy"
)

// Notes for the limits a command meets as a bare error of the system, not as a
// kill (issue 30): the kernel's RLIMIT_FSIZE fails one write with EFBIG ("File
// too large"), RLIMIT_NOFILE fails an open with EMFILE ("Too many open files"),
// and a path that is not mounted is simply not there ("No such file or
// directory") or not allowed ("Permission denied"), though the model may see
// it on the host. The kills say which limit, its value and what to raise; so
// does each of these, appended to stderr when the command's stderr shows the
// error. Programs word them alike: strerror's text (C, the shells, Python,
// Go), Node's code and lower-case text ("EFBIG: file too large").

// limitCaps are the most a call could ask for, for the notes: maxWriteMb
// after the user's ceiling, maxOpenFiles after the host's hard limit.
type limitCaps struct {
	writeMb, openFiles int
	writeCeilinged     bool
}

// limitCaps are this server's caps now.
func (s *Server) limitCaps() limitCaps {
	l := limitCaps{writeMb: int(execMaxWriteMb.max), openFiles: int(execMaxOpenFiles.max)}
	if max := s.Ceiling().Limit("maxWriteMb", &s.grants); max > 0 && max < l.writeMb {
		l.writeMb, l.writeCeilinged = max, true
	}
	if hard, ok := cmdrun.HardOpenFiles(); ok && hard < uint64(l.openFiles) {
		l.openFiles = int(hard)
	}
	return l
}

// noteLimits appends to out.Stderr the notes above that its stderr calls for;
// scratch is the command's scratch dir (host path), "" for none; killedBy as
// ended has it (a kill at maxWriteMb says the limit itself).
func (c *execCall) noteLimits(out *ExecOutput, scratch string, killedBy cmdrun.Reason) {
	text := strings.ToLower(out.Stderr)
	if (strings.Contains(text, "file too large") || strings.Contains(out.Stderr, "EFBIG")) && killedBy.Kind != KilledDisk {
		writeMb := int(c.limits.WriteBytes >> 20)
		raise := fmt.Sprintf("raise maxWriteMb (at most %d)", c.limitCaps.writeMb)
		if writeMb >= c.limitCaps.writeMb {
			raise = "it is the most maxWriteMb may be"
			if c.limitCaps.writeCeilinged {
				raise += " (the user's ceiling)"
			}
		}
		out.Stderr += fmt.Sprintf("[autobox: \"File too large\" is maxWriteMb, %d MB here: no one file of the command may be larger (RLIMIT_FSIZE; the write failed, the command was not killed); %s]\n", writeMb, raise)
	}
	if strings.Contains(text, "too many open files") || strings.Contains(out.Stderr, "EMFILE") {
		raise := fmt.Sprintf("raise maxOpenFiles (at most %d)", c.limitCaps.openFiles)
		if c.limits.OpenFiles >= c.limitCaps.openFiles {
			raise = "it is the most maxOpenFiles may be on this host (its hard limit, ulimit -Hn)"
		}
		out.Stderr += fmt.Sprintf("[autobox: \"Too many open files\" is maxOpenFiles, %d here: no process of the command may have more open at once (RLIMIT_NOFILE); %s]\n", c.limits.OpenFiles, raise)
	}
	out.Stderr += c.pathNotes(out.Stderr, scratch, out.MountPaths == mountsBound)
}

// pathFailure finds, on one line of stderr, a path and an error of the system
// that says it was not there or not allowed: "cp: cannot create regular file
// '/home/u/out': No such file or directory", "[Errno 2] No such file or
// directory: '/srv/data'", "ENOENT: no such file or directory, open
// '/home/u/x'", "sh: 1: cannot create /home/u/f: Directory nonexistent".
var (
	pathFailure = regexp.MustCompile(`(?i)no such file or directory|directory nonexistent|ENOENT|permission denied|EACCES|read-only file system|EROFS`)
	pathToken   = regexp.MustCompile(`/[^\s'"` + "`" + `:,;()\[\]]+`)
)

// hiddenRoots are the host's directories a command sees only where a mount
// puts them (the policy's allowlist has none of them; its /tmp is its scratch
// dir).
var hiddenRoots = []string{"/home", "/root", "/tmp", "/mnt", "/media", "/srv", "/run/user"}

// maxPathNotes bounds the paths the notes name.
const maxPathNotes = 3

// pathNotes is the note for the paths stderr shows failing that are outside
// every mount of the call, in a directory a command sees only through mounts;
// for writes refused in a read-only mount; and, where mounts were bound at
// their sandboxPath (placed), for a mount's host path, which the command does
// not see.
func (c *execCall) pathNotes(stderr, scratch string, placed bool) string {
	var outside, readOnly, hostPaths []string
	seen := map[string]bool{}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "[autobox:") || !pathFailure.MatchString(line) {
			continue
		}
		roLine := strings.Contains(strings.ToLower(line), "read-only file system") || strings.Contains(line, "EROFS")
		for _, p := range pathToken.FindAllString(line, -1) {
			p = filepath.Clean(p)
			if seen[p] || len(outside)+len(readOnly)+len(hostPaths) >= maxPathNotes {
				continue
			}
			seen[p] = true
			m := c.mountOf(p)
			switch {
			case m != nil && placed && !under(p, m.Sandbox) && under(p, m.Host):
				hostPaths = append(hostPaths, fmt.Sprintf("%s is at %s", p, filepath.Join(m.Sandbox, strings.TrimPrefix(p, m.Host))))
			case m != nil && !m.Writable && roLine:
				readOnly = append(readOnly, fmt.Sprintf("%s (mount %s)", p, m.Sandbox))
			case m == nil && underAny(p, hiddenRoots) && (scratch == "" || !under(p, scratch)):
				outside = append(outside, p)
			}
		}
	}
	var b strings.Builder
	if len(outside) > 0 {
		fmt.Fprintf(&b, "[autobox: %s %s not in this call's mounts, and a command sees %s only where a mount puts them (%s): mount the directory it needs, e.g. mounts: [{\"hostPath\": %q, \"sandboxPath\": \"/mnt/data\", \"mode\": \"rw\"}]; its /tmp is a scratch dir of its own]\n",
			strings.Join(outside, ", "), isAre(len(outside)), strings.Join(hiddenRoots[:len(hiddenRoots)-1], ", ")+" and "+hiddenRoots[len(hiddenRoots)-1], c.mountsSaid(), mountSuggestion(outside[0]))
	}
	if len(hostPaths) > 0 {
		fmt.Fprintf(&b, "[autobox: the command sees each mount at its sandboxPath only, not at its hostPath: %s; use those paths]\n", strings.Join(hostPaths, ", "))
	}
	if len(readOnly) > 0 {
		fmt.Fprintf(&b, "[autobox: %s %s in a read-only mount (mode \"ro\"): mount it with mode \"rw\" to write there]\n", strings.Join(readOnly, ", "), isAre(len(readOnly)))
	}
	return b.String()
}

// mountOf is the mount of the call that p is in, by its sandbox or its host
// path; nil for none.
func (c *execCall) mountOf(p string) *policy.Mount {
	for i := range c.mounts {
		m := &c.mounts[i]
		if under(p, m.Sandbox) || under(p, m.Host) {
			return m
		}
	}
	return nil
}

// mountsSaid names the call's mounts.
func (c *execCall) mountsSaid() string {
	if len(c.mounts) == 0 {
		return "this call has none"
	}
	var parts []string
	for _, m := range c.mounts {
		parts = append(parts, m.Sandbox)
	}
	return "this call's: " + strings.Join(parts, ", ")
}

// mountSuggestion is the directory to mount for path p: p's parent where p
// looks like a file (a name with a dot), else p.
func mountSuggestion(p string) string {
	if strings.Contains(filepath.Base(p), ".") {
		return filepath.Dir(p)
	}
	return p
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
