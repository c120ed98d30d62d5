package cli

import (
	"fmt"

	"github.com/autobox-dev/autobox/supervisor"
)

const cacheHelp = `Usage: autobox cache clear [npm|pip|go|cargo]...
       autobox cache dir

The tool caches that exec_command's caches (autobox exec --cache) keep between calls:
one directory per tool under your data dir, yours alone (another user's autobox has
its own), mounted read-write into a command only when a call asks for it.

  clear  empty the named caches (all of them without a name)
  dir    print the directory that holds them

Examples:
  autobox exec --cache go --env 'PATH=/usr/local/go/bin:$PATH' --mount .:/mnt/src --cwd /mnt/src -- go test ./...
  autobox cache clear go
`

func (e *env) cache(args []string) int {
	fs := newFlags("cache")
	action, done, status := e.action("cache", cacheHelp, fs, args, "clear", "dir")
	if done {
		return status
	}
	pos, done, status := e.parse(fs, "cache", cacheHelp, args[1:])
	if done {
		return status
	}
	if action == "dir" {
		root, err := supervisor.CacheRoot()
		if err != nil {
			return e.fail("cache", err)
		}
		fmt.Fprintln(e.stdout, root)
		return ExitOK
	}
	freed, err := supervisor.ClearCaches(pos)
	if err != nil {
		return e.fail("cache clear", err)
	}
	fmt.Fprintf(e.stderr, "cleared (%s freed)\n", size(freed))
	return ExitOK
}

// cacheFlag is exec's --cache: a tool cache to keep between calls (repeatable).
type cacheFlag []string

func (f *cacheFlag) String() string     { return "" }
func (f *cacheFlag) Set(v string) error { *f = append(*f, v); return nil }
