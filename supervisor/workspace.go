package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/store"
)

// WorkspaceInput is the copy_then_sync argument object. The tags are the
// descriptions in the tool's input schema, which toolSchemas completes with enums and
// defaults.
type WorkspaceInput struct {
	Action      string   `json:"action" jsonschema:"create, status, sync or discard"`
	HostPath    string   `json:"hostPath,omitempty" jsonschema:"create: absolute existing source directory"`
	SandboxPath string   `json:"sandboxPath,omitempty" jsonschema:"create: absolute sandbox path the workspace is mounted at, e.g. /mnt/project; not /"`
	StoragePath string   `json:"storagePath,omitempty" jsonschema:"create: absolute storage directory outside the source (default: the user's data dir)"`
	CopyMode    string   `json:"copyMode,omitempty" jsonschema:"create: clone (copy-on-write required) or auto (ordinary copy allowed)"`
	Excludes    []string `json:"excludes,omitempty" jsonschema:"create: exact relative paths or subtrees to leave out, e.g. node_modules"`
	WorkspaceID string   `json:"workspaceId,omitempty" jsonschema:"status, sync, discard: the id returned by create"`
}

// Workspace runs one copy_then_sync action; the result is the store's result object
// (the seed's shapes). ok:false results (conflicts, an interrupted sync) are results,
// not errors.
func (s *Server) Workspace(ctx context.Context, in *WorkspaceInput) (any, bool, error) {
	switch in.Action {
	case "create":
		if in.WorkspaceID != "" {
			return nil, false, fmt.Errorf("%w: create takes no workspaceId", policy.ErrInvalid)
		}
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
	case "status", "sync", "discard":
		var extra []string
		for name, set := range map[string]bool{"hostPath": in.HostPath != "", "sandboxPath": in.SandboxPath != "", "storagePath": in.StoragePath != "", "copyMode": in.CopyMode != "", "excludes": in.Excludes != nil} {
			if set {
				extra = append(extra, name)
			}
		}
		if len(extra) > 0 {
			return nil, false, fmt.Errorf("%w: %s accepts only workspaceId; %s are fixed at create", policy.ErrInvalid, in.Action, strings.Join(sorted(extra), ", "))
		}
		if in.WorkspaceID == "" {
			return nil, false, fmt.Errorf("%w: %s needs workspaceId", policy.ErrInvalid, in.Action)
		}
		switch in.Action {
		case "status":
			r, err := s.store.Status(ctx, in.WorkspaceID)
			if err != nil {
				return nil, false, err
			}
			return r, r.OK, nil
		case "sync":
			r, err := s.store.Sync(ctx, in.WorkspaceID)
			if err != nil {
				return nil, false, err
			}
			return r, r.OK, nil
		default:
			r, err := s.store.Discard(ctx, in.WorkspaceID)
			if err != nil {
				return nil, false, err
			}
			return r, r.OK, nil
		}
	case "":
		return nil, false, fmt.Errorf("%w: action is required: create, status, sync or discard", policy.ErrInvalid)
	}
	return nil, false, fmt.Errorf("%w: action %q is not create, status, sync or discard", policy.ErrInvalid, in.Action)
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
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
	Changes     []store.Change   `json:"changes,omitempty" jsonschema:"status, sync: the workspace's changes against its baseline"`
	Conflicts   []store.Conflict `json:"conflicts,omitempty" jsonschema:"status, sync: paths changed on both sides, or changes the rules forbid; a sync with conflicts applies nothing"`
	Applied     []string         `json:"applied,omitempty" jsonschema:"sync: the changes applied, in order"`
	Error       string           `json:"error,omitempty" jsonschema:"why the action failed: a refusal (invalid arguments, unknown workspace, lock busy) or where a sync stopped"`
	Recovery    string           `json:"recovery,omitempty" jsonschema:"an interrupted sync: what to do next"`

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

// lockWorkspaces holds the workspace operation lock while a call uses a workspace, so
// a sync cannot run under it (and another autobox process gets the busy error).
func (s *Server) lockWorkspaces(ctx context.Context, mounts []policy.Mount) (func(), error) {
	for _, m := range mounts {
		if m.WorkspaceID != "" {
			return s.store.Lock(ctx)
		}
	}
	return func() {}, nil
}

// enter begins a validated execution: it counts the call as in flight (Close waits for
// it) and holds the workspace lock if it mounts a workspace. leave undoes both.
//
// It also registers the call's read-write host mounts with the store for as long
// as the call (or session) lives, so that no workspace storage is created inside
// one, and re-checks them against storage created meanwhile (store/held.go).
func (s *Server) enter(ctx context.Context, mounts []policy.Mount) (leave func(), err error) {
	var rw []string
	for _, m := range mounts {
		if m.Writable && m.WorkspaceID == "" {
			rw = append(rw, m.Host)
		}
	}
	release, err := s.store.HoldWritable(rw)
	if err != nil {
		return nil, err
	}
	s.inflight.Add(1)
	unlock, err := s.lockWorkspaces(ctx, mounts)
	if err != nil {
		s.inflight.Done()
		release()
		return nil, err
	}
	return func() { unlock(); release(); s.inflight.Done() }, nil
}
