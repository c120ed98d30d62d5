package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/store"
)

// WorkspaceInput is the copy_then_sync argument object. The tags are the
// descriptions in the tool's input schema, which toolSchemas completes with enums and
// defaults.
type WorkspaceInput struct {
	Action      string   `json:"action" jsonschema:"create, status, sync, resolve, merge or discard"`
	HostPath    string   `json:"hostPath,omitempty" jsonschema:"create: absolute existing source directory"`
	SandboxPath string   `json:"sandboxPath,omitempty" jsonschema:"create: absolute sandbox path the workspace is mounted at, e.g. /mnt/project; not /"`
	StoragePath string   `json:"storagePath,omitempty" jsonschema:"create: absolute storage directory outside the source (default: the user's data dir)"`
	CopyMode    string   `json:"copyMode,omitempty" jsonschema:"create: auto (the default: copy-on-write where the filesystem has it, an ordinary copy elsewhere; copiedBy says which) or clone (copy-on-write only, refused where the filesystem lacks it)"`
	Excludes    []string `json:"excludes,omitempty" jsonschema:"create: exact relative paths or subtrees to leave out, e.g. node_modules"`
	WorkspaceID string   `json:"workspaceId,omitempty" jsonschema:"status, sync, resolve, merge, discard: the id returned by create"`
	Diff        bool     `json:"diff,omitempty" jsonschema:"status: add a unified diff of the changes (text hunks; binary and files over 1 MB summarised; at most 64 KB in all)"`
	Paths       []string `json:"paths,omitempty" jsonschema:"status, sync: only the changes at or beneath these paths (relative to the workspace root, as status lists them; the rest stays pending); resolve, merge: the conflicted paths"`
	// IncludeIgnored turns off the ignore rules for one status or sync.
	IncludeIgnored bool `json:"includeIgnored,omitempty" jsonschema:"status, sync: also list and sync the paths the source's ignore rules cover (its .gitignore files as git reads them, or a default list such as node_modules and __pycache__ where it has none); they are left out by default"`
}

// workspaceActions are copy_then_sync's actions, and the parameters each takes
// besides action (create's are checked by the store).
var workspaceActions = map[string][]string{
	"create":  {"hostPath", "sandboxPath", "storagePath", "copyMode", "excludes"},
	"status":  {"workspaceId", "diff", "paths", "includeIgnored"},
	"sync":    {"workspaceId", "paths", "includeIgnored"},
	"resolve": {"workspaceId", "paths"},
	"merge":   {"workspaceId", "paths"},
	"discard": {"workspaceId"},
}

const workspaceActionList = "create, status, sync, resolve, merge or discard"

// given lists the parameters in is set.
func (in *WorkspaceInput) given() map[string]bool {
	return map[string]bool{
		"hostPath": in.HostPath != "", "sandboxPath": in.SandboxPath != "", "storagePath": in.StoragePath != "",
		"copyMode": in.CopyMode != "", "excludes": in.Excludes != nil, "workspaceId": in.WorkspaceID != "",
		"diff": in.Diff, "paths": in.Paths != nil, "includeIgnored": in.IncludeIgnored,
	}
}

// Workspace runs one copy_then_sync action; the result is the store's result object
// (the seed's shapes). ok:false results (conflicts, an interrupted sync, a merge
// that left conflict markers) are results, not errors.
func (s *Server) Workspace(ctx context.Context, in *WorkspaceInput) (any, bool, error) {
	takes, ok := workspaceActions[in.Action]
	if in.Action == "" {
		return nil, false, fmt.Errorf("%w: action is required: %s", policy.ErrInvalid, workspaceActionList)
	}
	if !ok {
		return nil, false, fmt.Errorf("%w: action %q is not %s", policy.ErrInvalid, in.Action, workspaceActionList)
	}
	var extra []string
	for name, set := range in.given() {
		if set && !slices.Contains(takes, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		why := ""
		if in.Action != "create" && slices.ContainsFunc(extra, func(n string) bool { return slices.Contains(workspaceActions["create"], n) }) {
			why = "; hostPath, sandboxPath, storagePath, copyMode and excludes are fixed at create"
		}
		return nil, false, fmt.Errorf("%w: %s takes %s, not %s%s", policy.ErrInvalid, in.Action, strings.Join(takes, ", "), strings.Join(extra, ", "), why)
	}
	if in.Action == "create" {
		if in.HostPath == "" || in.SandboxPath == "" {
			return nil, false, fmt.Errorf("%w: create needs hostPath and sandboxPath", policy.ErrInvalid)
		}
		if err := s.admitCreate(ctx, in); err != nil {
			return nil, false, err
		}
		r, err := s.store.Create(ctx, store.CreateRequest{HostPath: in.HostPath, SandboxPath: in.SandboxPath, StoragePath: in.StoragePath, CopyMode: in.CopyMode, Excludes: in.Excludes})
		if err != nil {
			return nil, false, err
		}
		return r, r.OK, nil
	}
	if in.WorkspaceID == "" {
		return nil, false, fmt.Errorf("%w: %s needs workspaceId", policy.ErrInvalid, in.Action)
	}
	switch in.Action {
	case "status":
		r, err := s.store.StatusWith(ctx, in.WorkspaceID, &store.StatusOptions{Diff: in.Diff, Paths: in.Paths, IncludeIgnored: in.IncludeIgnored})
		return answered(r, r != nil && r.OK, err)
	case "sync":
		r, err := s.store.SyncWith(ctx, in.WorkspaceID, &store.SyncOptions{Paths: in.Paths, IncludeIgnored: in.IncludeIgnored})
		return answered(r, r != nil && r.OK, err)
	case "resolve":
		r, err := s.store.Resolve(ctx, in.WorkspaceID, in.Paths)
		return answered(r, r != nil && r.OK, err)
	case "merge":
		r, err := s.store.Merge(ctx, in.WorkspaceID, in.Paths)
		return answered(r, r != nil && r.OK, err)
	}
	r, err := s.store.Discard(ctx, in.WorkspaceID)
	return answered(r, r != nil && r.OK, err)
}

// answered is Workspace's answer: the store's result and whether it is ok, or its
// error.
func answered(res any, ok bool, err error) (any, bool, error) {
	if err != nil {
		return nil, false, err
	}
	return res, ok, nil
}

// WorkspaceOutput is every copy_then_sync result shape at once: which fields are set
// depends on the action and its outcome (the store's results, re-encoded).
type WorkspaceOutput struct {
	OK          bool   `json:"ok" jsonschema:"the action was done; false for conflicts, an interrupted sync or a refusal (see error)"`
	WorkspaceID string `json:"workspaceId,omitempty" jsonschema:"the workspace"`
	Mount       *struct {
		WorkspaceID string `json:"workspaceId" jsonschema:"the workspace"`
	} `json:"mount,omitempty" jsonschema:"create: the mount to pass to execute_js or exec_command"`
	SandboxPath string           `json:"sandboxPath,omitempty" jsonschema:"where the workspace is mounted"`
	ClonedFiles *int             `json:"clonedFiles,omitempty" jsonschema:"files copied by cloning (copy-on-write)"`
	CopiedFiles *int             `json:"copiedFiles,omitempty" jsonschema:"files copied byte by byte"`
	CopyMode    string           `json:"copyMode,omitempty" jsonschema:"create: the copyMode used (auto when none was given)"`
	CopiedBy    string           `json:"copiedBy,omitempty" jsonschema:"create: how the files were made: clone, copy, clone and copy (auto, where only some could be cloned) or none (no files)"`
	Changes     []store.Change   `json:"changes,omitempty" jsonschema:"status, sync: the workspace's changes against its baseline"`
	Conflicts   []store.Conflict `json:"conflicts,omitempty" jsonschema:"status, sync: paths changed on both sides, or changes the rules forbid; a sync with conflicts applies nothing"`
	Applied     []string         `json:"applied,omitempty" jsonschema:"sync: the changes applied, in order"`
	Pending     []store.Change   `json:"pending,omitempty" jsonschema:"status, sync with paths: the changes left out, still to sync"`
	Summarized  string           `json:"summarized,omitempty" jsonschema:"status, sync: which new directories are listed as one change (files, bytes, first entries) and how to list their entries"`
	Ignored     *store.Ignored   `json:"ignored,omitempty" jsonschema:"status, sync: the changes the ignore rules left out (count, the outermost paths, whose rules) and how to include them"`
	Diff        string           `json:"diff,omitempty" jsonschema:"status with diff: the changes as a unified diff"`
	DiffCut     bool             `json:"diffTruncated,omitempty" jsonschema:"status with diff: files were left out to keep the diff within 64 KB (ask with paths)"`
	Resolved    []string         `json:"resolved,omitempty" jsonschema:"resolve, merge: the paths whose baseline is now the host's current version"`
	Merged      []string         `json:"merged,omitempty" jsonschema:"merge: the paths merged cleanly (and resolved)"`
	Conflicted  []struct {
		Path  string `json:"path" jsonschema:"the file"`
		Lines []int  `json:"lines" jsonschema:"where each place with conflict markers starts"`
	} `json:"conflicted,omitempty" jsonschema:"merge: files now holding conflict markers to edit; resolve them afterwards"`
	Next     string `json:"next,omitempty" jsonschema:"resolve, merge: what to do now"`
	Error    string `json:"error,omitempty" jsonschema:"why the action failed: a refusal (invalid arguments, unknown workspace, lock busy) or where a sync stopped"`
	Recovery string `json:"recovery,omitempty" jsonschema:"an interrupted sync: what to do next"`

	raw json.RawMessage // the store's own encoding, sent as is
}

// MarshalJSON sends the store's result exactly as the store encoded it (empty lists
// included, as the seed shows them); the fields above describe it for the schema.
func (o WorkspaceOutput) MarshalJSON() ([]byte, error) {
	if o.raw != nil {
		return o.raw, nil
	}
	type plain WorkspaceOutput
	return json.Marshal(plain(o))
}

// workspaceTool adapts Workspace to MCP. Failures are tool errors; ok:false results
// (conflicts, interrupted syncs) are tool errors that carry the result object.
func (s *Server) workspaceTool(ctx context.Context, in *WorkspaceInput) (*WorkspaceOutput, bool, error) {
	res, ok, err := s.Workspace(ctx, in)
	if err != nil {
		return nil, false, err
	}
	// The store's result objects are the seed's shapes; WorkspaceOutput is their union,
	// for the declared schema.
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, false, err
	}
	out := &WorkspaceOutput{raw: raw}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, false, err
	}
	return out, !ok, nil
}

// workspaceFailed is the result of a copy_then_sync call that was refused or failed
// without a result of the store's: ok false and the reason in error.
func workspaceFailed(err error) *WorkspaceOutput {
	return &WorkspaceOutput{Error: err.Error()}
}

// ListWorkspaces lists every workspace with its source, age and whether it has
// unsynced changes.
func (s *Server) ListWorkspaces(ctx context.Context) ([]store.Summary, error) {
	return s.store.List(ctx)
}

// StateDir is where workspace records and the operation lock live.
func (s *Server) StateDir() string { return s.store.StateDir() }

// DefaultStorage is where a workspace goes without storagePath.
func (s *Server) DefaultStorage() string { return s.store.DefaultStorage() }

// resolveMounts validates a call's mounts; {workspaceId} mounts resolve through the
// store, and raw host mounts may not overlap the store's own directories.
func (s *Server) resolveMounts(specs []policy.MountSpec) ([]policy.Mount, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	lookup := func(id string) (*policy.Workspace, error) {
		ws, err := s.store.Lookup(id)
		if err != nil {
			return nil, err
		}
		return &policy.Workspace{Work: ws.Work, SandboxPath: ws.SandboxPath, Source: ws.Source}, nil
	}
	return policy.ResolveMounts(specs, lookup, s.store.ManagedPaths())
}

// useWorkspaces marks the workspaces a call mounts as used by it (who), so that no
// sync, resolve or discard changes them under it: those wait for a call, and are
// refused, naming it, while a session holds one (store/wslock.go).
func (s *Server) useWorkspaces(ctx context.Context, mounts []policy.Mount, who store.User) (func(), error) {
	var ids []string
	for _, m := range mounts {
		if m.WorkspaceID != "" {
			ids = append(ids, m.WorkspaceID)
		}
	}
	return s.store.Use(ctx, ids, who)
}

// enter begins a validated execution: it counts the call as in flight (Close waits for
// it) and marks the workspaces it mounts as used by who. leave undoes both.
//
// It also registers the call's read-write host mounts with the store for as long
// as the call (or session) lives, so that no workspace storage is created inside
// one, and re-checks them against storage created meanwhile (store/held.go).
func (s *Server) enter(ctx context.Context, mounts []policy.Mount, who store.User) (leave func(), err error) {
	var rw []string
	for _, m := range mounts {
		if m.Writable && m.WorkspaceID == "" {
			rw = append(rw, m.Host)
		}
	}
	release, err := s.store.HoldWritable(rw, who.Session)
	if err != nil {
		return nil, err
	}
	s.inflight.Add(1)
	unuse, err := s.useWorkspaces(ctx, mounts, who)
	if err != nil {
		s.inflight.Done()
		release()
		return nil, err
	}
	return func() { unuse(); release(); s.inflight.Done() }, nil
}
