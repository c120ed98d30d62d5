package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/autobox-dev/autobox/store"
	"github.com/autobox-dev/autobox/supervisor"
)

const wsHelp = `Usage: autobox ws create [flags] HOST SANDBOX
       autobox ws status [--diff] [--include-ignored] [--json] ID [PATH...]
       autobox ws sync [--include-ignored] [--json] ID [PATH...]
       autobox ws resolve|merge [--json] ID PATH...
       autobox ws discard [--json] ID
       autobox ws list [--json]
       autobox ws prune --older-than D [--include-unsynced] [--dry-run]

Persistent writable copies of a host directory, exactly as the copy_then_sync tool
makes them. The host directory is unchanged until an explicit sync.

  create   copy HOST into a new workspace mounted at SANDBOX (e.g. /mnt/project);
           prints the workspace id on stdout (details on stderr)
  status   the changes sync would make, and the conflicts that would stop it;
           --diff adds a unified diff (binary and files over 1 MB summarised, 64 KB
           in all); PATHs (relative to the workspace root) narrow it to those;
           paths the source's ignore rules cover (.gitignore as git reads it, else
           a default list: node_modules, __pycache__, ...) are left out, and a new
           directory of more than 20 entries is one line: --include-ignored lists
           the ignored ones, a PATH naming a directory lists its entries
  sync     apply the workspace's changes to HOST; conflicts abort with nothing
           applied; with PATHs, only the changes at or beneath them (the rest stays
           pending, and conflicts elsewhere do not stop it)
  resolve  for conflicted PATHs whose host version the workspace has taken in:
           the host's current version becomes their baseline, so sync applies the
           workspace's
  merge    three-way merge of conflicted text files into the workspace; clean ones
           are resolved, overlapping edits get conflict markers to edit, then resolve
  discard  delete the workspace and its unsynced changes (never touches HOST)
  list     every workspace: id, source, sandbox path, age, size on disk, unsynced changes
  prune    discard the workspaces created more than D ago (e.g. 7d, 12h); those with
           unsynced changes are kept (and named) unless --include-unsynced

Edit a workspace with autobox js/exec --workspace ID (a session, exec --yield, may
hold it for its life: sync and discard are refused meanwhile), or any MCP client. Records live
in $AUTOBOX_STATE_DIR (default ~/.local/state/autobox); another autobox process
working on them at the same moment makes a call fail with status 75 (retry).

Exit status: 0 done, 1 not ok (conflicts, interrupted sync, a merge that wrote
conflict markers), 2 usage error, 75 workspace lock busy or in use by a running
session (retry once it ends), 125 refused (invalid arguments, unknown workspace, failure).

Examples:
  id=$(autobox ws create --exclude node_modules ~/src/app /mnt/app)
  autobox exec --workspace "$id" --cwd /mnt/app -- sh -c 'echo fix >> README'
  autobox ws status --diff "$id"
  autobox ws sync "$id" src/main.go docs   # only these; the rest stays pending
  autobox ws merge "$id" README.md         # after the host changed README.md too
  autobox ws sync "$id" && autobox ws discard "$id"
  autobox ws create --copy-mode auto --storage /data/ws /data/src /mnt/src --json
  autobox ws list --json | jq -r '.[] | select(.dirty) | .workspaceId'
  autobox ws prune --older-than 7d --dry-run
`

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func (e *env) ws(args []string) int {
	fs := newFlags("ws")
	jsonOut := fs.Bool("json", false, "print the result object as JSON")
	storage := fs.String("storage", "", "create: storage directory for the copy, outside HOST (default ~/.local/share/autobox-workspaces)")
	copyMode := fs.String("copy-mode", "", "create: auto (the default: copy-on-write where the filesystem has it, an ordinary copy elsewhere) or clone (copy-on-write only)")
	var excludes listFlag
	fs.Var(&excludes, "exclude", "create: a relative path or subtree to leave out, e.g. node_modules (repeatable)")
	olderThan := optDays()
	fs.Var(&olderThan, "older-than", "prune: age of the workspaces to discard: a duration such as 7d, 12h or 30m")
	includeUnsynced := fs.Bool("include-unsynced", false, "prune: discard workspaces with unsynced changes too")
	dryRun := fs.Bool("dry-run", false, "prune: say what would be discarded, and discard nothing")
	diff := fs.Bool("diff", false, "status: add a unified diff of the changes")
	includeIgnored := fs.Bool("include-ignored", false, "status, sync: also list and sync the paths the source's ignore rules cover (.gitignore, or the default list)")
	action, done, status := e.action("ws", wsHelp, fs, args, "create", "status", "sync", "resolve", "merge", "discard", "list", "prune")
	if done {
		return status
	}
	pos, done, status := e.parse(fs, "ws", wsHelp, args[1:])
	if done {
		return status
	}
	if action != "create" {
		for _, f := range []string{"storage", "copy-mode", "exclude"} {
			if given(fs, f) {
				return e.usage("ws", "--%s is for create only; a workspace keeps what it was created with", f)
			}
		}
	}
	if action != "prune" {
		for _, f := range []string{"older-than", "include-unsynced", "dry-run"} {
			if given(fs, f) {
				return e.usage("ws", "--%s is for prune only", f)
			}
		}
	}
	if action != "status" && *diff {
		return e.usage("ws", "--diff is for status only")
	}
	if action != "status" && action != "sync" && *includeIgnored {
		return e.usage("ws", "--include-ignored is for status and sync only")
	}
	in := &supervisor.WorkspaceInput{Action: action, Diff: *diff, IncludeIgnored: *includeIgnored}
	switch action {
	case "prune":
		if len(pos) != 0 {
			return e.usage("ws", "prune takes no arguments")
		}
		if olderThan.v == nil {
			return e.usage("ws", "prune needs --older-than, e.g. --older-than 7d")
		}
	case "list":
		if len(pos) != 0 {
			return e.usage("ws", "list takes no arguments")
		}
	case "create":
		if len(pos) != 2 {
			return e.usage("ws", "create needs HOST and SANDBOX, e.g. autobox ws create ./src /mnt/src")
		}
		host, err := absPath(pos[0])
		if err != nil {
			return e.usage("ws", "%v", err)
		}
		if in.StoragePath, err = absPath(*storage); err != nil {
			return e.usage("ws", "%v", err)
		}
		in.HostPath, in.SandboxPath, in.CopyMode = host, pos[1], *copyMode
		if len(excludes) > 0 {
			in.Excludes = excludes
		}
	case "status", "sync":
		if len(pos) == 0 {
			return e.usage("ws", "%s needs a workspace ID, then any PATHs to narrow it to", action)
		}
		in.WorkspaceID = pos[0]
		if len(pos) > 1 {
			in.Paths = pos[1:]
		}
	case "resolve", "merge":
		if len(pos) < 2 {
			return e.usage("ws", "%s needs a workspace ID and the conflicted PATHs, e.g. autobox ws %s ID README.md", action, action)
		}
		in.WorkspaceID, in.Paths = pos[0], pos[1:]
	default:
		if len(pos) != 1 {
			return e.usage("ws", "%s needs exactly one workspace ID", action)
		}
		in.WorkspaceID = pos[0]
	}

	s, err := e.server(-1) // no JS worker to warm
	if err != nil {
		return e.fail("ws "+action, err)
	}
	defer s.Close()
	if action == "prune" {
		return e.prune(s, *olderThan.v, *includeUnsynced, *dryRun, *jsonOut)
	}
	if action == "list" {
		sums, err := s.ListWorkspaces(e.ctx)
		if err != nil {
			return e.fail("ws list", err)
		}
		if *jsonOut {
			return e.printed("ws list", writeJSON(e.stdout, sums), ExitOK)
		}
		if len(sums) == 0 {
			fmt.Fprintf(e.stderr, "no workspaces (records in %s)\n", s.StateDir())
			return ExitOK
		}
		return e.printed("ws list", printList(e.stdout, sums, time.Now()), ExitOK)
	}
	res, ok, err := s.Workspace(e.ctx, in)
	if err != nil {
		return e.fail("ws "+action, &wsError{err, wsSay(err.Error(), in.WorkspaceID)})
	}
	code := ExitOK
	if !ok {
		code = ExitFailed
	}
	if *jsonOut {
		return e.printed("ws "+action, writeJSON(e.stdout, res), code)
	}
	return e.printed("ws "+action, e.printWorkspace(res), code)
}

// printed returns code, or reports a failure to write the output.
func (e *env) printed(cmd string, err error, code int) int {
	if err != nil {
		return e.fail(cmd, err)
	}
	return code
}

// printWorkspace prints a copy_then_sync result for people.
func (e *env) printWorkspace(res any) error {
	w := &errWriter{w: e.stdout}
	switch r := res.(type) {
	case *store.CreateResult:
		fmt.Fprintln(w, r.WorkspaceID)
		fmt.Fprintf(e.stderr, "created workspace %s for %s (--copy-mode %s: %s): %d files cloned, %d copied; edit it with --workspace %s\n",
			r.WorkspaceID, shown(r.SandboxPath), r.CopyMode, r.CopiedBy, r.ClonedFiles, r.CopiedFiles, r.WorkspaceID)
	case *store.StatusResult:
		fmt.Fprintf(w, "workspace %s at %s\n", r.WorkspaceID, shown(r.SandboxPath))
		printChanges(w, r.Changes)
		printConflicts(w, r.WorkspaceID, r.Conflicts)
		printPending(w, r.Pending)
		printLeftOut(w, r.Summarized, r.Ignored)
		printDiff(w, r.Diff)
	case *store.ResolveResult:
		printResolved(w, r)
	case *store.SyncResult:
		switch {
		case r.OK:
			fmt.Fprintf(w, "synced %d of %d changes (%d files cloned, %d copied)\n", len(r.Applied), len(r.Changes), r.ClonedFiles, r.CopiedFiles)
			printChanges(w, r.Changes)
			printPending(w, r.Pending)
			printLeftOut(w, "", r.Ignored)
		case r.Error != "":
			fmt.Fprintf(w, "sync stopped part-way: %s\n", escapeText(r.Error))
			fmt.Fprintf(w, "applied (%d):\n", len(r.Applied))
			for _, p := range r.Applied {
				fmt.Fprintf(w, "  %s\n", shown(p))
			}
			fmt.Fprintln(w, escapeText(r.Recovery))
		default:
			fmt.Fprintln(w, "sync refused: conflicts; nothing was applied")
			printChanges(w, r.Changes)
			printConflicts(w, r.WorkspaceID, r.Conflicts)
			printPending(w, r.Pending)
		}
	case *store.DiscardResult:
		fmt.Fprintf(w, "discarded %s\n", r.WorkspaceID)
	default: // a result type this command does not know yet: JSON is always right
		return writeJSON(e.stdout, res)
	}
	return w.err
}

func printChanges(w io.Writer, changes []store.Change) {
	if len(changes) == 0 {
		fmt.Fprintln(w, "no changes")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tPATH")
	for _, c := range changes {
		if c.First != nil {
			first := make([]string, len(c.First))
			for i, f := range c.First {
				first[i] = shown(f)
			}
			fmt.Fprintf(tw, "%s\t%s/ (%d files, %d bytes: %s, ...)\n", c.Action, shown(c.Path), c.Files, c.Bytes, strings.Join(first, " "))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\n", c.Action, shown(c.Path))
	}
	tw.Flush()
}

// printLeftOut says which new directories are one line each, and what the ignore
// rules left out.
func printLeftOut(w io.Writer, summarized string, ign *store.Ignored) {
	if summarized != "" {
		fmt.Fprintf(w, "\nnew directories of more than 20 entries are one line each; name one as a PATH to list its entries\n")
	}
	if ign == nil {
		return
	}
	shownPaths := make([]string, len(ign.Paths))
	for i, p := range ign.Paths {
		shownPaths[i] = shown(p)
	}
	more := ""
	if ign.Count > len(ign.Paths) {
		more = ", ..."
	}
	fmt.Fprintf(w, "\nignored: %d changed paths left out (%s%s) by %s; --include-ignored lists and syncs them\n",
		ign.Count, strings.Join(shownPaths, " "), more, escapeText(ign.Rules))
}

func printConflicts(w io.Writer, id string, conflicts []store.Conflict) {
	if len(conflicts) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nCONFLICT\tWORKSPACE\tHOST\tREASON\n")
	for _, c := range conflicts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", shown(c.Path), orDash(string(c.Workspace)), orDash(string(c.Host)), escapeText(wsSay(c.Reason, id)))
	}
	tw.Flush()
}

func printList(w io.Writer, sums []store.Summary, now time.Time) error {
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSOURCE\tSANDBOX\tAGE\tSIZE\tUNSYNCED")
	for _, s := range sums {
		unsynced := "no"
		switch {
		case s.Discarding:
			unsynced = "being discarded (an earlier discard stopped part-way): autobox ws discard " + s.ID + " finishes it"
		case s.Error != "":
			unsynced = "unknown: " + escapeText(s.Error)
		case s.Dirty:
			unsynced = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, shown(s.Source), shown(s.SandboxPath), age(now.Sub(s.Created)), size(s.SizeBytes), unsynced)
	}
	tw.Flush()
	return ew.err
}

// age is a short human duration: 45s, 12m, 5h, 3d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errWriter keeps the first write error, so a run of Fprintf calls is checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = fmt.Errorf("writing the result: %w", err)
	}
	return n, err
}
