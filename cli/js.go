package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/supervisor"
)

const jsHelp = `Usage: autobox js [flags] [FILE | - | -e CODE]

Run JavaScript in a fresh V8 isolate, exactly as the execute_js tool does: a bare
expression or statements with return; await is allowed. No Node APIs; host.readFile,
host.writeFile and host.listDir reach --mount and --workspace directories only; fetch
exists only with --network. The code comes from FILE, from stdin (- or no FILE when
stdin is not a terminal), or from -e.

Prints the result value as JSON on stdout and console output on stderr. With --json
it prints the whole result object {ok, result, error, logs, durationMs, readBytes,
writeBytes, isolation} on stdout instead (isolation: the jail the worker ran in).

` + exitCodesHelp + `
Examples:
  autobox js -e '2 + 2'
  echo 'return [1, 2, 3].map(x => x * 2)' | autobox js
  autobox js --mount ./data:/mnt/data:ro -e 'JSON.parse(await host.readFile("/mnt/data/x.json")).items.length'
  autobox js --timeout 2s --memory 64 --json script.js
  autobox js --raw -e '"plain text, no quotes"'
`

func (e *env) js(args []string) int {
	fs := newFlags("js")
	var l limitFlags
	l.register(fs, policy.JSDefaultTimeoutMs, policy.JSMaxTimeoutMs, policy.JSDefaultMemoryMb, policy.JSMinMemoryMb, policy.JSMaxMemoryMb)
	maxRead, maxWrite := optInt64(), optInt64()
	fs.Var(&maxRead, "max-read", fmt.Sprintf("bytes the code may read through host.readFile (default %d, max %d)", policy.DefaultMaxBridgeBytes, policy.MaxBridgeBytes))
	fs.Var(&maxWrite, "max-write", fmt.Sprintf("bytes the code may write through host.writeFile (default %d, max %d)", policy.DefaultMaxBridgeBytes, policy.MaxBridgeBytes))
	code := fs.String("e", "", "the code to run (instead of FILE)")
	raw := fs.Bool("raw", false, "print a string result without JSON quotes")
	pos, done, status := e.parse(fs, "js", jsHelp, args)
	if done {
		return status
	}
	eGiven := given(fs, "e")
	if len(pos) > 1 || (eGiven && len(pos) > 0) {
		return e.usage("js", "give one of FILE, - or -e CODE")
	}
	in := &supervisor.JSInput{Code: *code, TimeoutMs: l.timeout.v, MemoryMb: l.memory.v, AllowNetwork: l.network, AllowHosts: l.hosts, Mounts: l.mounts, MaxReadBytes: maxRead.v, MaxWriteBytes: maxWrite.v}
	if !eGiven {
		src := "-"
		if len(pos) == 1 {
			src = pos[0]
		} else if isTerminal(e.stdin) {
			return e.usage("js", "no code: give FILE, - (stdin) or -e CODE")
		}
		c, err := e.readCode(src)
		if err != nil {
			return e.usage("js", "%v", err)
		}
		in.Code = c
	}

	s, err := e.server(1)
	if err != nil {
		return e.fail("js", err)
	}
	defer s.Close()
	ctx, drawn := e.withCallProgress(e.ctx, "js")
	out, err := s.ExecuteJS(ctx, in)
	drawn()
	if err != nil {
		return e.fail("js", err)
	}
	if l.json {
		return e.printed("js", writeJSON(e.stdout, out), e.jsStatus(out))
	}
	for _, line := range out.Logs {
		fmt.Fprintln(e.stderr, line)
	}
	if out.Isolation == "unjailed" { // a weakening, said in every result
		fmt.Fprintf(e.stderr, "autobox js: the JS worker ran without its jail (%s): the code had V8's isolation alone\n", s.JSWorkers().Weaker)
	}
	if !out.OK {
		msg := "the call failed"
		if out.Error != nil {
			msg = *out.Error
		}
		fmt.Fprintf(e.stderr, "autobox js: %s\n", escapeText(wordsOf("js").say(msg)))
		return e.jsStatus(out)
	}
	if str, ok := stringResult(out.Result); ok && *raw {
		_, err = fmt.Fprintln(e.stdout, str)
	} else {
		err = writeJSON(e.stdout, out.Result)
	}
	if err != nil {
		return e.fail("js", err)
	}
	return ExitOK
}

// stringResult returns the result as a Go string if it is a JSON string. The result
// arrives as the worker's JSON text (json.RawMessage) or, in principle, decoded.
func stringResult(v any) (string, bool) {
	switch r := v.(type) {
	case string:
		return r, true
	case json.RawMessage:
		var s string
		if json.Unmarshal(r, &s) == nil {
			return s, true
		}
	}
	return "", false
}

// readCode reads the code from a file or stdin ("-"). It reads one byte past the
// tool's limit so that the tool itself rejects oversized code, with its own message.
func (e *env) readCode(src string) (string, error) {
	r := e.stdin
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, supervisor.MaxCodeBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the code: %w", err)
	}
	return string(b), nil
}

// jsStatus is the exit status of a finished execute_js call: the limit it
// ended at is the result's EndedAt (never its error text, which a script's own
// thrown error can imitate).
func (e *env) jsStatus(out *supervisor.JSOutput) int {
	if out.OK {
		return ExitOK
	}
	switch out.EndedAt {
	case supervisor.JSTimeout:
		return ExitTimeout
	case supervisor.JSMemory:
		return ExitMemory
	}
	if e.ctx.Err() != nil {
		return ExitInterrupted
	}
	return ExitFailed
}

// writeJSON writes v as one line of JSON, without escaping <, > and &, which only
// matters for HTML.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	return nil
}
