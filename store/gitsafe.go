package store

import (
	"strings"

	"golang.org/x/sys/unix"
)

// A workspace is written by sandboxed code, and sync puts what it wrote on the
// host, where git later runs in the source directory as the user. What git
// reads as configuration and runs (config's core.fsmonitor, core.pager,
// aliases, include paths; hooks; a .git file or a nested repository pointing
// it at another git directory) must not reach the host that way: a change to
// it is a conflict, listed with why, and nothing is applied until it is undone
// in the workspace (or copied to the host by hand by someone who trusts it).
// What git keeps as data (objects, refs, logs, the index, HEAD and the other
// *_HEAD files, packed-refs, info/exclude, the description) syncs as any file.

// gitDataNames are the entries of a git directory that git reads as data only.
var gitDataNames = map[string]bool{
	"objects": true, "refs": true, "logs": true, "index": true, "packed-refs": true,
	"HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "CHERRY_PICK_HEAD": true,
	"REVERT_HEAD": true, "AUTO_MERGE": true, "COMMIT_EDITMSG": true, "MERGE_MSG": true,
	"description": true, "shallow": true, "lost-found": true,
}

// gitRisk says why a workspace change at path p (typ: the workspace entry's
// type there, 0 for a removal) would let the workspace decide what host git
// runs, or "" if it would not.
func gitRisk(p string, typ uint32) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if part != ".git" {
			continue
		}
		rest := parts[i+1:]
		switch {
		case len(rest) == 0 && i > 0:
			return "the workspace makes " + p + ", a git repository inside the source: git run there on the host would use its configuration and hooks"
		case len(rest) == 0 && typ != 0 && typ != unix.S_IFDIR:
			return "the workspace makes .git a file or link, which points git on the host at another git directory"
		case len(rest) == 0:
			continue // the top repository's directory itself
		case rest[0] == "info" && len(rest) == 2 && rest[1] == "exclude":
		case gitDataNames[rest[0]]:
		default:
			return "the workspace changes " + p + ", which git on the host reads as configuration or runs (config, hooks and the like); undo it in the workspace, or copy it to the host by hand if you trust it"
		}
		return ""
	}
	return ""
}
