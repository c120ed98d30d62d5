package main

import (
	"flag"
	"io"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/session"
	"github.com/autobox-dev/autobox/supervisor"
)

type serveFlags struct {
	supervisor.Options
	ceiling    ceiling.Flags
	cpuProfile string
}

func parseServeFlags(args []string) (serveFlags, error) {
	var f serveFlags
	o := &f.Options
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the server to this file (for make bench)")
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.PoolSize, "pool", 2, "warm JS workers kept ready")
	fs.BoolVar(&o.Unsafe, "unsafe-no-sandbox", false, "run exec_command without an OS sandbox where none exists")
	fs.IntVar(&o.MaxSessions, "max-sessions", session.DefaultMax, "exec_command sessions (yieldMs) running at once, at most")
	fs.DurationVar(&o.SessionIdle, "session-idle", session.DefaultIdle, "end a session that no call has named for this long")
	fs.Func("allow-host", "a host every call may reach through the proxy, by default and at most (repeatable)", func(v string) error {
		o.AllowHosts = append(o.AllowHosts, v)
		return nil
	})
	fs.DurationVar(&o.AskTimeout, "ask-timeout", supervisor.DefaultAskTimeout, "how long the user has to answer a question about a call beyond the ceiling")
	fs.IntVar(&o.MaxQuestions, "max-questions", supervisor.DefaultMaxQuestions, "questions the server puts to the user in any minute, at most (and 10 times that in any hour)")
	f.ceiling.Register(fs)
	err := fs.Parse(args)
	o.Ceiling = &f.ceiling
	return f, err
}
