// Command autobox is one binary with several roles: the MCP stdio server (no
// arguments), a command line for scripts, and its own internal workers
// (`autobox worker js`, `autobox worker exec`). main decides the role before anything
// else; worker roles never return.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/autobox-dev/autobox/cli"
	"github.com/autobox-dev/autobox/internal/launcherbin"
	"github.com/autobox-dev/autobox/jail/launcher"
	"github.com/autobox-dev/autobox/mcpstdio"
	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/seatbelt"
	"github.com/autobox-dev/autobox/supervisor"
	"github.com/autobox-dev/autobox/task"
	"github.com/autobox-dev/autobox/worker"
)

func init() {
	// A worker restricts the thread it runs on and then execs or forks from it; the
	// main goroutine must own the main thread from the start so no other goroutine
	// ever runs on a restricted thread (launcher.Main refuses to run a role without).
	launcher.LockMainThread(os.Args)
	launcher.Register("js", func(args []string) int { worker.Main(args); return 2 })
	launcher.Register(seatbelt.LimitsRole, func(args []string) int { seatbelt.LimitsMain(args); return 2 }) // macOS: a command's rlimits, then sandbox-exec
	launcher.Register("connect", proxy.ConnectMain)
}

const usage = `autobox: a sandboxed place for AI agents to run code and shell commands.

Usage:
  autobox                 serve MCP on stdin/stdout (what MCP clients run)
  autobox serve [flags]   the same, with flags
  autobox js [FILE|-e CODE]       run JavaScript once (the execute_js tool)
  autobox exec -- ARGV...         run a command in the sandbox (exec_command)
  autobox exec --yield 2s -- ARGV...   start it as a session (prints its id)
  autobox session poll|write|signal|close|list   drive sessions (exec_session)
  autobox ws create|status|sync|discard|list   workspaces (copy_then_sync)
  autobox batch [--jobs N] [FILE] run JSON Lines of tool calls, crash-isolated
  autobox doctor          what this host enforces
  autobox policy [flags]  the ceiling in force and where each rule comes from
  autobox cache clear|dir tool caches that calls opt into (exec --cache)
  autobox task workspace|wrap|run|endpoint|stop|cleanup|list   per-task sandboxes for agent harnesses
  autobox version         print the version
  autobox help            this text

Serve flags:
  --pool N                warm JS workers kept ready (default 2)
  --unsafe-no-sandbox     run exec_command WITHOUT an OS sandbox where none exists (loud)
  --max-sessions N        exec_command sessions (yieldMs) running at once (default 16)
  --session-idle D        end a session no call has named for D (default 10m)
  --allow-host H          every call's network is these hosts (repeatable): the default
                          and the ceiling of a call's allowHosts
  --cpuprofile FILE       write a CPU profile of the server (development)

Ceiling flags (the user's ceiling on what calls may ask for; each replaces the
rule of the same name in $XDG_CONFIG_HOME/autobox/policy.json; see autobox policy):
  --policy FILE           the ceiling file
  --mountable PATH[:ro|:rw]   calls may mount PATH or below, at most so (repeatable)
  --never-mount PATH      no call may mount PATH, below it or a directory holding it
  --lift-never-mount P    let calls mount a default never-mountable path (~/.ssh, …; *)
  --ceiling-host H        the hosts a call's allowHosts may name (repeatable)
  --no-open-network       refuse allowNetwork
  --max-timeout-ms N, --max-memory-mb N, --max-processes N, --max-write-mb N
                          upper limits of calls
  --ask-timeout D         how long the user has to answer a question (default 45s)
  --max-questions N       questions to the user in any minute, all calls together
                          (default 6; 10 times that in any hour)

Diagnostics go to stderr; stdout carries only the MCP protocol.
Every command takes --help (with examples).
`

// tuneGC collects garbage less often than Go's default (GOGC=100) unless GOGC says
// otherwise: workspace operations build and drop maps of every file in a tree, and at
// the default the collector ran through them (status 15%, sync 20% slower here). The
// live heap of a server is a few MB; the soft memory limit makes the collector work
// harder if a huge tree ever brings it near.
func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(400)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}

func main() {
	args := os.Args[1:]
	if launcher.IsChild(os.Args) {
		launcher.Main(os.Args) // never returns
	}
	tuneGC()
	if len(args) == 0 {
		os.Exit(serve(nil))
	}
	switch args[0] {
	case "serve":
		os.Exit(serve(args[1:]))
	case "policy":
		os.Exit(policyMain(args[1:]))
	case "js", "exec", "ws", "batch", "doctor", "session", "cache":
		os.Exit(cli.Main(args, os.Stdin, os.Stdout, os.Stderr))
	case "task":
		os.Exit(task.Main(args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "version", "--version":
		fmt.Println("autobox", supervisor.Version)
	case "help", "--help", "-h":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "autobox: unknown command %q\n\n%s", args[0], usage)
		os.Exit(2)
	}
}

func serve(args []string) int {
	f, err := parseServeFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Print(usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "autobox serve: %v\n\n%s", err, usage)
		return 2
	}
	if err := f.ceiling.CheckNamed(); err != nil {
		fmt.Fprintf(os.Stderr, "autobox serve: %v\n", err)
		return 2
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "autobox: %v\n", err)
			return 1
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintf(os.Stderr, "autobox: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	opts := f.Options
	opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	launcherbin.SetLog(func(msg string) { opts.Log.Info(msg) }) // which launcher, once
	s, err := supervisor.New(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "autobox: %v\n", err)
		return 1
	}
	defer s.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reportOnSIGUSR1()
	err = s.Serve(ctx, &mcpstdio.Transport{In: os.Stdin, Out: os.Stdout, Name: "autobox"})
	if err != nil && err != io.EOF && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "autobox: %v\n", err)
		return 1
	}
	return 0
}

// reportOnSIGUSR1 writes the server's goroutine count to stderr on SIGUSR1: the leak
// tests compare it before and after many calls. It asks for the signal before it
// returns, so before the server answers its first request (a signal sent earlier
// than that, by a client that got an answer, would be lost).
func reportOnSIGUSR1() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	go func() {
		for range c {
			fmt.Fprintf(os.Stderr, "autobox: goroutines=%d\n", runtime.NumGoroutine())
		}
	}()
}
