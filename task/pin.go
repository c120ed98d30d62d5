package task

import "fmt"

// pin makes the link files of rec immutable (setImmutable) for the length of a sandboxed
// run, so that host git run in the worktree meanwhile still finds the repository through
// them. It is best effort and reports whether every file was pinned: it needs autobox to
// run as root on a filesystem with the attribute, and where it cannot, the check after the
// run (secure) is what protects host git, and only once the run has ended.
func pin(rec record) bool {
	all := true
	for _, f := range rec.linkFiles() {
		if f.want != nil && setImmutable(f.path, true) != nil {
			all = false
		}
	}
	return all
}

// unpin clears the immutable attribute from the link files of rec: after the run, or after
// a run that was killed before it could. Files without it are left alone.
func unpin(rec record) error {
	for _, f := range rec.linkFiles() {
		if isImmutable(f.path) {
			if err := setImmutable(f.path, false); err != nil {
				return fmt.Errorf("task %s: %w", rec.ID, err)
			}
		}
	}
	return nil
}
