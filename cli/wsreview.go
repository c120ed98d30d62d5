package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/autobox-dev/autobox/internal/lazyre"
	"github.com/autobox-dev/autobox/store"
)

// Reviewing and resolving from the command line: ws status --diff, ws sync with
// PATHs, ws resolve and ws merge print what the tool's results hold, and say the
// next step as a command to type.

var (
	// `copy_then_sync action "merge" with paths ["a", "b"]`, as the tool's texts say it.
	toolStep = lazyre.New(`(?:copy_then_sync )?action "(\w+)" with paths (\[[^\]]*\])`)
	// `action "sync" with paths`, without a list.
	toolStepAny = lazyre.New(`action "(\w+)" with paths\b`)
	statusDiff  = lazyre.New(`status \(diff: true\)`)
	// `copy_then_sync action "discard"`, an action without paths.
	toolAction = lazyre.New(`copy_then_sync action "(\w+)"`)
)

// wsSay rewrites the steps a workspace text names in the tool's parameters into
// commands of workspace id: `autobox ws merge ID a b`.
func wsSay(text, id string) string {
	text = toolStep().ReplaceAllStringFunc(text, func(m string) string {
		sub := toolStep().FindStringSubmatch(m)
		var paths []string
		if json.Unmarshal([]byte(sub[2]), &paths) != nil {
			return m
		}
		for i, p := range paths {
			paths[i] = shown(p)
		}
		return "autobox ws " + sub[1] + " " + id + " " + strings.Join(paths, " ")
	})
	text = toolStepAny().ReplaceAllString(text, "autobox ws $1 "+id+" PATH...")
	text = toolAction().ReplaceAllString(text, "autobox ws $1 "+id)
	return statusDiff().ReplaceAllString(text, "autobox ws status --diff "+id)
}

// workspaceSteps is wsSay for a text about one workspace, named in it
// ("workspace ID is being discarded: ... copy_then_sync action "discard""), as
// a call that mounts it (exec, js) reports.
func workspaceSteps(text string) string {
	if !toolAction().MatchString(text) {
		return text
	}
	if m := workspaceNamed().FindStringSubmatch(text); m != nil {
		return wsSay(text, m[1])
	}
	return text
}

// workspaceNamed finds "workspace ID" in a text, ID a workspace id.
var workspaceNamed = lazyre.New(`\bworkspace ([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12})\b`)

func printPending(w io.Writer, pending []store.Change) {
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(w, "\npending (not asked for; a later sync applies them): %d\n", len(pending))
	for _, c := range pending {
		fmt.Fprintf(w, "  %s  %s\n", c.Action, shown(c.Path))
	}
}

// printDiff prints a diff escaped as every text the command line prints for
// people: a changed file's content cannot move the cursor or hide a line.
func printDiff(w io.Writer, diff string) {
	if diff == "" {
		return
	}
	fmt.Fprintf(w, "\n%s", escapeText(diff))
}

func printResolved(w io.Writer, r *store.ResolveResult) {
	for _, p := range r.Merged {
		fmt.Fprintf(w, "merged    %s\n", shown(p))
	}
	for _, c := range r.Conflicted {
		fmt.Fprintf(w, "conflict  %s (markers at lines %s)\n", shown(c.Path), strings.Trim(fmt.Sprint(c.Lines), "[]"))
	}
	merged := map[string]bool{}
	for _, p := range r.Merged {
		merged[p] = true
	}
	for _, p := range r.Resolved {
		if !merged[p] {
			fmt.Fprintf(w, "resolved  %s\n", shown(p))
		}
	}
	fmt.Fprintln(w, escapeText(wsSay(r.Next, r.WorkspaceID)))
}

// wsError is a workspace error in the command line's words; it still matches what
// the original matches (for the exit status).
type wsError struct {
	err error
	msg string
}

func (e *wsError) Error() string { return e.msg }
func (e *wsError) Unwrap() error { return e.err }
