package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/store"
)

const policyUsage = `autobox policy [ceiling flags]: print the user's ceiling in force (the rules
that bound what calls may ask for) and where each rule comes from: the ceiling
file ($XDG_CONFIG_HOME/autobox/policy.json, or --policy FILE), a flag of autobox
serve (give the same flags here), the defaults, or nowhere (an open rule).

Example:
  autobox policy
  autobox policy --policy ./policy.json --ceiling-host registry.npmjs.org
`

// policyMain prints the ceiling that `autobox serve` with the same flags holds
// calls to.
func policyMain(args []string) int {
	var f ceiling.Flags
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Print(policyUsage)
			return 0
		}
		fmt.Fprintf(os.Stderr, "autobox policy: %v\n\n%s", err, policyUsage)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "autobox policy: unexpected argument %q\n\n%s", fs.Arg(0), policyUsage)
		return 2
	}
	if err := f.CheckNamed(); err != nil {
		fmt.Fprintf(os.Stderr, "autobox policy: %v\n", err)
		return 1
	}
	var own []string
	if st, err := store.Open(store.Options{}); err == nil {
		own = append(own, st.StateDir())
	}
	c, err := ceiling.Load(&f, own)
	if err != nil {
		path := f.File
		if path == "" {
			path = ceiling.DefaultFile()
		}
		ceiling.DescribeBroken(os.Stdout, path, err)
		return 1
	}
	c.Describe(os.Stdout)
	return 0
}
