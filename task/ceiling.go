package task

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/autobox-dev/autobox/ceiling"
)

// A native harness takes the permissions exec_command does (extra paths, the
// network, hosts, process and write limits), so `task run --kind native` is held
// to the user's ceiling too (package ceiling; the default ceiling file, with no
// flags): beyond it, the run is refused before anything starts, naming the rule
// and the file. There is nobody to ask on a command line. The task's own
// worktree is autobox's to make, and is not held to the mounts rule.

// checkCeiling refuses a native run beyond the ceiling.
func checkCeiling(c *cli) error {
	ceil, err := ceiling.Load(nil, nil)
	if err != nil {
		return err
	}
	req := ceiling.Request{AllowHosts: c.allowHosts, AllowNetwork: !c.noNetwork && len(c.allowHosts) == 0}
	for _, p := range c.ro {
		req.Mounts = append(req.Mounts, ceiling.MountAsk{Param: "--ro " + p, Path: ceiling.Canonical(abs(p)), Mode: ceiling.ReadOnly})
	}
	for _, p := range c.rw {
		req.Mounts = append(req.Mounts, ceiling.MountAsk{Param: "--rw " + p, Path: ceiling.Canonical(abs(p)), Mode: ceiling.ReadWrite})
	}
	req.Limits.MaxProcesses = c.limits.Processes
	if req.Limits.MaxProcesses <= 0 {
		req.Limits.MaxProcesses = math.MaxInt32 // no limit: beyond any ceiling
	}
	req.Limits.MaxWriteMb = int(c.limits.WriteBytes >> 20)
	if c.limits.WriteBytes < 0 {
		req.Limits.MaxWriteMb = math.MaxInt32
	}
	es := ceil.Check(req, nil)
	if len(es) == 0 {
		return nil
	}
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	msg := strings.Join(msgs, "; ")
	for from, to := range map[string]string{"allowNetwork:": "the harness's network (on unless --no-network):", "maxProcesses ": "--max-processes ", "maxWriteMb ": "--max-write-mb ", "allowHosts[": "--allow-host["} {
		msg = strings.ReplaceAll(msg, from, to)
	}
	return fmt.Errorf("%w: %s", ceiling.ErrBeyond, msg)
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
