package cli

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/autobox-dev/autobox/internal/lazyre"
)

// The commands call the tools' own code, whose messages name the tools' parameters as
// an MCP client writes them: `timeoutMs must be between 1 and 10000`, `pass copyMode
// "auto"`. On the command line those are flags and arguments, and a message should
// say them so: `--timeout must be …`, `pass --copy-mode auto`.

// words maps the tools' parameter names to what the command line calls them. Only
// names that cannot be ordinary words of a sentence are listed.
type words map[string]string

var commandWords = map[string]words{
	"js": {
		"timeoutMs": "--timeout", "memoryMb": "--memory", "allowNetwork": "--network",
		"maxReadBytes": "--max-read", "maxWriteBytes": "--max-write",
		"hostPath": "HOST", "sandboxPath": "SANDBOX", "workspaceId": "--workspace",
	},
	"exec": {
		"timeoutMs": "--timeout", "memoryMb": "--memory", "allowNetwork": "--network", "allowHosts": "--allow-host", "cwd": "--cwd", "caches": "--cache",
		"hostPath": "HOST", "sandboxPath": "SANDBOX", "workspaceId": "--workspace",
		"maxProcesses": "--max-processes", "maxWriteMb": "--max-write-mb", "cpuMs": "--cpu", "maxOpenFiles": "--max-open-files",
		"yieldMs": "--yield", "tty": "--tty", "rows": "--rows", "cols": "--cols", "exec_session": "autobox session",
		"expose": "--expose",
	},
	"session": {
		"sessionId": "ID", "yieldMs": "--yield", "closeStdin": "--close-stdin", "exec_session": "autobox session",
		"exec_command": "autobox exec",
	},
	"ws": {
		"copyMode": "--copy-mode", "storagePath": "--storage", "hostPath": "HOST", "sandboxPath": "SANDBOX",
		"workspaceId": "ID", "exec_session": "autobox session",
	},
}

// wordsOf returns the words of a command ("ws create" is a ws command).
func wordsOf(cmd string) words {
	name, _, _ := strings.Cut(cmd, " ")
	return commandWords[name]
}

var (
	mountIndex = lazyre.New(`\bmounts\[([0-9]+)\]`)
	envIndex   = lazyre.New(`\benv\[([0-9]+)\]`)
	pathIndex  = lazyre.New(`\bpaths\[([0-9]+)\]`)
	identifier = lazyre.New(`[A-Za-z_][A-Za-z0-9_]*`)
	plainValue = lazyre.New(`^"[A-Za-z0-9._/-]+"`)
)

// say rewrites msg in the command line's words. Text in double quotes (Go's %q, as
// the tools quote paths, values and code) is left as it is, except that a plain
// value right after a flag loses its quotes: `copyMode "auto"` becomes
// `--copy-mode auto`, as one would type it.
func (w words) say(msg string) string {
	if len(w) == 0 {
		return msg
	}
	var out strings.Builder
	for len(msg) > 0 {
		if msg[0] == '"' {
			q, err := strconv.QuotedPrefix(msg)
			if err != nil {
				q = msg // an unpaired quote: leave the rest alone
			}
			out.WriteString(q)
			msg = msg[len(q):]
			continue
		}
		end := strings.IndexByte(msg, '"')
		if end < 0 {
			end = len(msg)
		}
		text := mountIndex().ReplaceAllStringFunc(msg[:end], func(m string) string {
			n, _ := strconv.Atoi(mountIndex().FindStringSubmatch(m)[1])
			return fmt.Sprintf("--mount/--workspace #%d", n+1)
		})
		text = envIndex().ReplaceAllStringFunc(text, func(m string) string {
			n, _ := strconv.Atoi(envIndex().FindStringSubmatch(m)[1])
			return fmt.Sprintf("--env #%d", n+1)
		})
		text = pathIndex().ReplaceAllStringFunc(text, func(m string) string {
			n, _ := strconv.Atoi(pathIndex().FindStringSubmatch(m)[1])
			return fmt.Sprintf("PATH #%d", n+1)
		})
		text = identifier().ReplaceAllStringFunc(text, func(id string) string {
			if to, ok := w[id]; ok {
				return to
			}
			return id
		})
		msg = msg[end:]
		if strings.HasSuffix(text, " ") && strings.HasPrefix(lastWord(text), "--") {
			if v := plainValue().FindString(msg); v != "" {
				text += v[1 : len(v)-1]
				msg = msg[len(v):]
			}
		}
		out.WriteString(text)
	}
	return out.String()
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// flagError puts the flag package's messages, which spell every flag with one dash
// (`flag provided but not defined: -foo`), in this command line's spelling: two
// dashes, except for one-letter flags such as -e and -j.
var flagName = lazyre.New(`(^|: |for flag |for )-([A-Za-z0-9][A-Za-z0-9_-]+)`)

func flagError(err error) string {
	return flagName().ReplaceAllString(err.Error(), "$1--$2")
}

// printFlags prints a command's flags as the flag package would, with each name
// spelt as flagError spells it.
func printFlags(fs *flag.FlagSet) []byte {
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "  -"); ok {
			name, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
			if len(name) > 1 {
				lines[i] = "  --" + rest
			}
		}
	}
	return []byte(strings.Join(lines, ""))
}
