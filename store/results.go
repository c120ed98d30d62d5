package store

import "encoding/json"

// The result objects of create and sync, in the seed's shapes (status's, resolve's
// and discard's are beside their operations).

// MountRef is the mount entry a caller passes to execute_js / exec_command.
type MountRef struct {
	WorkspaceID string `json:"workspaceId"`
}

// CreateResult is the create response. The counts are source files cloned or copied
// into the private baseline.
type CreateResult struct {
	OK          bool     `json:"ok"`
	WorkspaceID string   `json:"workspaceId"`
	Mount       MountRef `json:"mount"`
	SandboxPath string   `json:"sandboxPath"`
	ClonedFiles int      `json:"clonedFiles"`
	CopiedFiles int      `json:"copiedFiles"`
	// CopyMode is the mode asked for (auto when none was); CopiedBy is how the files
	// were made: "clone", "copy", "clone and copy" (auto, where only some files could
	// be cloned) or "none" (a source without files).
	CopyMode string `json:"copyMode"`
	CopiedBy string `json:"copiedBy"`
}

// copiedBy names how create made its files, from its counts.
func copiedBy(cloned, copied int) string {
	switch {
	case cloned > 0 && copied > 0:
		return "clone and copy"
	case cloned > 0:
		return "clone"
	case copied > 0:
		return "copy"
	}
	return "none"
}

// SyncResult is the sync response. It has three JSON shapes, as in the seed:
//
//	synced:      {ok: true, workspaceId, changes, applied, clonedFiles, copiedFiles}
//	conflicted:  {ok: false, workspaceId, changes, conflicts, applied: []}
//	interrupted: {ok: false, workspaceId, error, applied, recovery}
//
// With paths, each shape also has pending: the changes not asked for.
//
// The counts are host replacement files staged by clone or by copy.
type SyncResult struct {
	OK          bool
	WorkspaceID string
	Changes     []Change
	Conflicts   []Conflict
	Applied     []string // listed changes fully applied, in order
	ClonedFiles int
	CopiedFiles int
	Error       string // set when the sync stopped part-way
	Recovery    string
	Pending     []Change // with SyncOptions.Paths: the changes left for a later sync
	Ignored     *Ignored // the changes the ignore rules left out (ignore.go)
}

// MarshalJSON emits the seed's shape for the result's state.
func (r SyncResult) MarshalJSON() ([]byte, error) {
	applied := r.Applied
	if applied == nil {
		applied = []string{}
	}
	changes := r.Changes
	if changes == nil {
		changes = []Change{}
	}
	switch {
	case r.OK:
		return json.Marshal(struct {
			OK          bool     `json:"ok"`
			WorkspaceID string   `json:"workspaceId"`
			Changes     []Change `json:"changes"`
			Applied     []string `json:"applied"`
			ClonedFiles int      `json:"clonedFiles"`
			CopiedFiles int      `json:"copiedFiles"`
			Pending     []Change `json:"pending,omitempty"`
			Summarized  string   `json:"summarized,omitempty"`
			Ignored     *Ignored `json:"ignored,omitempty"`
		}{true, r.WorkspaceID, changes, applied, r.ClonedFiles, r.CopiedFiles, r.Pending, summarized(changes), r.Ignored})
	case r.Error != "":
		return json.Marshal(struct {
			OK          bool     `json:"ok"`
			WorkspaceID string   `json:"workspaceId"`
			Error       string   `json:"error"`
			Applied     []string `json:"applied"`
			Recovery    string   `json:"recovery"`
			Pending     []Change `json:"pending,omitempty"`
		}{false, r.WorkspaceID, r.Error, applied, r.Recovery, r.Pending})
	}
	conflicts := r.Conflicts
	if conflicts == nil {
		conflicts = []Conflict{}
	}
	return json.Marshal(struct {
		OK          bool       `json:"ok"`
		WorkspaceID string     `json:"workspaceId"`
		Changes     []Change   `json:"changes"`
		Conflicts   []Conflict `json:"conflicts"`
		Applied     []string   `json:"applied"`
		Pending     []Change   `json:"pending,omitempty"`
		Summarized  string     `json:"summarized,omitempty"`
		Ignored     *Ignored   `json:"ignored,omitempty"`
	}{false, r.WorkspaceID, changes, conflicts, applied, r.Pending, summarized(changes), r.Ignored})
}
