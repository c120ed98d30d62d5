package main

import (
	"flag"
	"io"

	"github.com/autobox-dev/autobox/supervisor"
)

func parseServeFlags(args []string) (supervisor.Options, error) {
	var o supervisor.Options
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.PoolSize, "pool", 2, "warm JS workers kept ready")
	fs.BoolVar(&o.Unsafe, "unsafe-no-sandbox", false, "run exec_command without an OS sandbox where none exists")
	return o, fs.Parse(args)
}
