package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/autobox-dev/autobox/supervisor"
)

// ws prune: workspaces nobody discards pile up (each a copy of its source);
// prune discards those older than a given age. One with unsynced changes is
// work not yet applied to its source: it is kept, and named, unless asked.

// pruned is prune's answer, per workspace.
type pruned struct {
	ID        string `json:"workspaceId"`
	Source    string `json:"hostPath"`
	Age       string `json:"age"`
	SizeBytes int64  `json:"sizeBytes"`
	Discarded bool   `json:"discarded"`
	Kept      string `json:"kept,omitempty"` // why it was kept
}

func (e *env) prune(s *supervisor.Server, olderThan time.Duration, includeUnsynced, dryRun, asJSON bool) int {
	sums, err := s.ListWorkspaces(e.ctx)
	if err != nil {
		return e.fail("ws prune", err)
	}
	now := time.Now()
	out := []pruned{}
	status := ExitOK
	for _, w := range sums {
		if now.Sub(w.Created) < olderThan {
			continue
		}
		p := pruned{ID: w.ID, Source: w.Source, Age: age(now.Sub(w.Created)), SizeBytes: w.SizeBytes}
		switch {
		case w.Discarding: // its discard was asked for already: finish it
		case w.Error != "" && !includeUnsynced:
			p.Kept = "whether it has unsynced changes is unknown (" + w.Error + "); --include-unsynced discards it"
		case w.Dirty && !includeUnsynced:
			p.Kept = "it has unsynced changes (autobox ws status " + w.ID + "); --include-unsynced discards it"
		}
		switch {
		case p.Kept != "":
		case dryRun:
			p.Kept = "--dry-run"
		default:
			if _, _, err := s.Workspace(e.ctx, &supervisor.WorkspaceInput{Action: "discard", WorkspaceID: w.ID}); err != nil {
				p.Kept = err.Error()
				status = ExitFailed
			} else {
				p.Discarded = true
			}
		}
		out = append(out, p)
	}
	if asJSON {
		return e.printed("ws prune", writeJSON(e.stdout, out), status)
	}
	var freed int64
	for _, p := range out {
		if p.Discarded {
			freed += p.SizeBytes
			fmt.Fprintf(e.stdout, "discarded %s (%s, %s old, %s)\n", p.ID, p.Source, p.Age, size(p.SizeBytes))
		} else {
			fmt.Fprintf(e.stdout, "kept %s (%s, %s old, %s): %s\n", p.ID, p.Source, p.Age, size(p.SizeBytes), p.Kept)
		}
	}
	if len(out) == 0 {
		fmt.Fprintf(e.stderr, "no workspace is older than %s\n", olderThan)
	} else if freed > 0 {
		fmt.Fprintf(e.stderr, "%s freed\n", size(freed))
	}
	return status
}

// size is a short human size: 512 B, 3.4 MB, 1.2 GB.
func size(b int64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%d B", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(b)/(1<<10))
	case b < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f GB", float64(b)/(1<<30))
}

// optDays is a duration flag that also takes days: 7d, 1.5d, 12h, 30m.
func optDays() opt[time.Duration] { return opt[time.Duration]{parse: parseDays} }

func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days < 0 {
			return 0, errors.New("want a duration such as 7d, 12h or 30m")
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("want a duration such as 7d, 12h or 30m")
	}
	return d, nil
}
