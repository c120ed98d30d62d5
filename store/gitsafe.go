package store

import (
	"slices"
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

// bareRisk is gitRisk for git directories not named .git. git run in a
// directory, or anywhere below it, takes the nearest directory on the way up
// that holds HEAD with objects and refs (or commondir) for a repository, a
// bare one, and reads its configuration: its core.pager runs as soon as git
// writes to a terminal there. A workspace that makes such a directory
// (src/HEAD, src/objects, src/refs, src/config beside the project's own
// files), or changes what git reads as configuration in one the source has,
// would choose what host git runs there. It returns why the workspace change at
// p may not be synced, or ""; isGit memoizes gitDirIn over the proposed tree.
func (pl *plan) bareRisk(p string, isGit map[string]bool) string {
	for d := parentOf(p); ; d = parentOf(d) {
		if !underDotGit(d) && pl.proposedGitDir(d, isGit) {
			rest := p
			if d != "" {
				rest = strings.TrimPrefix(p, d+"/")
			}
			first := strings.SplitN(rest, "/", 2)[0]
			if !gitDirIn(d, pl.base.get) {
				return "the workspace makes " + displayRoot(d) + " a git repository (HEAD with objects and refs): git run there or below on the host would use its configuration and hooks"
			}
			if rest != "info/exclude" && !gitDataNames[first] {
				return "the workspace changes " + p + " in the git repository " + displayRoot(d) + ", which git on the host reads as configuration or runs; undo it in the workspace, or copy it to the host by hand if you trust it"
			}
		}
		if d == "" {
			return ""
		}
	}
}

func (pl *plan) proposedGitDir(d string, isGit map[string]bool) bool {
	is, ok := isGit[d]
	if !ok {
		is = gitDirIn(d, pl.proposed)
		isGit[d] = is
	}
	return is
}

// gitDirIn reports whether directory d of a tree (entries by at) is what git
// takes for a git directory: HEAD, and objects and refs, or commondir. A link
// counts where git would follow it.
func gitDirIn(d string, at func(string) (entry, bool)) bool {
	has := func(name string, dir bool) bool {
		e, ok := at(joinRel(d, name))
		return ok && (e.typ == unix.S_IFLNK || e.isDir() == dir)
	}
	return has("HEAD", false) && (has("commondir", false) || has("objects", true) && has("refs", true))
}

// underDotGit reports whether d is a .git directory or inside one, which
// gitRisk judges.
func underDotGit(d string) bool {
	return slices.Contains(strings.Split(d, "/"), ".git")
}
