package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/autobox-dev/autobox/internal/exactjson"
	"github.com/autobox-dev/autobox/supervisor"
)

const batchHelp = `Usage: autobox batch [--jobs N] [FILE | -]

Run many tool calls from JSON Lines (FILE, or stdin for - or no FILE), one call per
line:
  {"id": 1, "tool": "execute_js", "arguments": {"code": "2 + 2"}}
  {"id": "b", "tool": "exec_command", "arguments": {"command": ["ls", "/"]}}
  {"id": 3, "tool": "copy_then_sync", "arguments": {"action": "status", "workspaceId": "..."}}
The arguments are the MCP tools' arguments, validated the same way. Up to --jobs calls
run at once, each in its own worker process or sandbox: a call that crashes, hangs or
runs out of memory fails only its own line. Blank lines are skipped.

Writes one JSON line per input line, in input order, with the same id:
  {"id": 1, "ok": true, "result": {...the tool's result object...}}
  {"id": 2, "ok": false, "error": "why the call was refused, or the line is malformed"}
ok is the tool's ok for execute_js and copy_then_sync, and exit status 0 (not killed)
for exec_command. A progress bar is drawn on stderr when it is a terminal; the last
line on stderr is "N passed, M failed".

Exit status: 0 every line passed, 1 some line failed, 2 usage error, 125 autobox could
not start, 130 interrupted (lines not yet started are not run).

Examples:
  autobox batch calls.jsonl > results.jsonl
  jq -c '{id: .name, tool: "execute_js", arguments: {code: .src}}' cases.json | autobox batch --jobs 4
  autobox batch --jobs 1 - < calls.jsonl
`

// maxBatchLine bounds one input line: the largest code the tools accept, JSON-escaped,
// with room for the other arguments.
const maxBatchLine = 8 << 20

// maxJobs bounds --jobs: every job holds a worker process.
const maxJobs = 64

// batchCall is one input line.
type batchCall struct {
	ID        json.RawMessage `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// batchResult is one output line. A nil ID is written as null.
type batchResult struct {
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result any             `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// batchJob is a line on its way through the pipeline; seq orders the output.
type batchJob struct {
	seq    int
	lineNo int
	line   []byte
	err    error // the line could not be read whole
	res    batchResult
}

func (e *env) batch(args []string) int {
	fs := newFlags("batch")
	jobs := fs.Int("jobs", runtime.NumCPU(), fmt.Sprintf("calls run at once, 1-%d; the default is the number of CPUs", maxJobs))
	fs.IntVar(jobs, "j", runtime.NumCPU(), "short for --jobs")
	pos, done, status := e.parse(fs, "batch", batchHelp, args)
	if done {
		return status
	}
	if *jobs < 1 || *jobs > maxJobs {
		return e.usage("batch", "--jobs must be between 1 and %d, got %d", maxJobs, *jobs)
	}
	if len(pos) > 1 {
		return e.usage("batch", "give one input: FILE or - (stdin)")
	}
	in := e.stdin
	if len(pos) == 1 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return e.usage("batch", "%v", err)
		}
		defer f.Close()
		in = f
	}
	prog := newProgress(e.stderr, isTerminal(e.stderr))
	if prog.enabled {
		prog.total = countLines(in)
	}

	s, err := e.server(2 * *jobs) // two warm workers per job: one starts while the other runs
	if err != nil {
		return e.fail("batch", err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	r := &batchRun{s: s, ctx: ctx, cancel: cancel}
	passed, failed, werr := r.run(in, e.stdout, *jobs, prog)
	prog.finish()
	if werr != nil {
		fmt.Fprintf(e.stderr, "autobox batch: %v\n", werr)
	}
	if e.ctx.Err() != nil {
		fmt.Fprintln(e.stderr, "autobox batch: interrupted; lines not yet started were not run")
	}
	fmt.Fprintf(e.stderr, "%d passed, %d failed\n", passed, failed)
	switch {
	case e.ctx.Err() != nil:
		return ExitInterrupted
	case failed > 0 || werr != nil:
		return ExitFailed
	}
	return ExitOK
}

type batchRun struct {
	s      *supervisor.Server
	ctx    context.Context
	cancel context.CancelFunc
}

// run reads lines, runs up to jobs calls at once and writes the results in input
// order, each as soon as it and every line before it are done. At most a window of
// lines is read ahead of the output, so memory stays bounded on endless input.
func (r *batchRun) run(in io.Reader, out io.Writer, jobs int, prog *progress) (passed, failed int, err error) {
	window := make(chan struct{}, jobs*32)
	todo := make(chan *batchJob)
	results := make(chan *batchJob, jobs)
	go r.dispatch(in, todo, window)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range todo {
				j.res = r.call(j)
				results <- j
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	w := bufio.NewWriter(out)
	pending := map[int]*batchJob{}
	next := 0
	for j := range results {
		pending[j.seq] = j
		for {
			j, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-window
			if j.res.OK {
				passed++
			} else {
				failed++
			}
			if err == nil {
				if err = writeJSON(w, j.res); err != nil {
					r.cancel() // nobody reads the results: stop the batch
				}
			}
			prog.update(passed+failed, failed)
		}
		if err == nil && len(results) == 0 {
			if ferr := w.Flush(); ferr != nil {
				err = fmt.Errorf("writing the results: %w", ferr)
				r.cancel() // nobody reads the results: stop the batch
			}
		}
	}
	if err == nil {
		if ferr := w.Flush(); ferr != nil {
			err = fmt.Errorf("writing the results: %w", ferr)
		}
	}
	return passed, failed, err
}

// dispatch numbers the lines and hands them to the workers until the input ends or the
// batch is cancelled. Reading happens in its own goroutine so that a cancelled batch
// does not wait for a line that never comes (stdin from a terminal or a pipe).
func (r *batchRun) dispatch(in io.Reader, todo chan<- *batchJob, window chan struct{}) {
	defer close(todo)
	lines := make(chan *batchJob)
	go readLines(r.ctx, in, lines)
	seq := 0
	for {
		select {
		case window <- struct{}{}:
		case <-r.ctx.Done():
			return
		}
		var j *batchJob
		var ok bool
		select {
		case j, ok = <-lines:
		case <-r.ctx.Done():
			return
		}
		if !ok {
			<-window
			return
		}
		j.seq = seq
		seq++
		select {
		case todo <- j:
		case <-r.ctx.Done():
			return
		}
	}
}

// readLines sends every non-blank line of in, numbered from 1. A line longer than
// maxBatchLine is sent with an error instead of its text; a read error ends the input
// with a job that reports it.
func readLines(ctx context.Context, in io.Reader, lines chan<- *batchJob) {
	defer close(lines)
	send := func(j *batchJob) bool {
		select {
		case lines <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	br := bufio.NewReaderSize(in, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			j := &batchJob{lineNo: n, line: line}
			if tooLong {
				j.err = fmt.Errorf("longer than %d bytes", maxBatchLine)
			}
			if !send(j) {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				send(&batchJob{lineNo: n, err: fmt.Errorf("reading the input: %w", err)})
			}
			return
		}
	}
}

// readLine reads up to the next newline. Past maxBatchLine it discards the rest of the
// line and reports tooLong.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxBatchLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// call runs one line. Whatever goes wrong fails only this line: a malformed line, an
// invalid call, a worker that crashed, even a panic in autobox's own handling of it.
func (r *batchRun) call(j *batchJob) (res batchResult) {
	res.ID = lenientID(j.line)
	defer func() {
		if p := recover(); p != nil {
			res = batchResult{ID: res.ID, Error: fmt.Sprintf("line %d: autobox failed on this call: %v", j.lineNo, p)}
		}
	}()
	if j.err != nil {
		return batchResult{ID: res.ID, Error: fmt.Sprintf("line %d: %v", j.lineNo, j.err)}
	}
	var c batchCall
	if err := exactjson.Decode(j.line, &c); err != nil {
		return batchResult{ID: res.ID, Error: fmt.Sprintf("line %d: not a call object {\"id\", \"tool\", \"arguments\"}: %v", j.lineNo, err)}
	}
	args := c.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}") // no arguments: the tool says what is missing
	}
	result, ok, err := r.dispatchTool(c.Tool, args)
	if err != nil {
		return batchResult{ID: c.ID, Error: err.Error()}
	}
	return batchResult{ID: c.ID, OK: ok, Result: result}
}

// dispatchTool decodes the arguments as the named tool's input and calls the same
// supervisor method as the MCP tool. Unknown argument names are rejected, as the
// tools' schemas do.
func (r *batchRun) dispatchTool(tool string, args json.RawMessage) (any, bool, error) {
	switch tool {
	case "execute_js":
		return callTool(r.ctx, tool, args, r.s.ExecuteJS, func(o *supervisor.JSOutput) bool { return o.OK })
	case "exec_command":
		return callTool(r.ctx, tool, args, r.s.ExecCommand, func(o *supervisor.ExecOutput) bool {
			return o.ExitCode != nil && *o.ExitCode == 0 && !o.Killed
		})
	case "copy_then_sync":
		var in supervisor.WorkspaceInput
		if err := supervisor.DecodeArgs(tool, args, &in); err != nil {
			return nil, false, fmt.Errorf("%s: %w", tool, err)
		}
		return r.s.Workspace(r.ctx, &in)
	case "":
		return nil, false, errors.New("tool is required: execute_js, exec_command or copy_then_sync")
	}
	return nil, false, fmt.Errorf("unknown tool %q: execute_js, exec_command or copy_then_sync", tool)
}

// callTool decodes the arguments as I and makes the call; passed says whether its
// result counts as passed.
func callTool[I, O any](ctx context.Context, tool string, args json.RawMessage, call func(context.Context, *I) (O, error), passed func(O) bool) (any, bool, error) {
	var in I
	if err := supervisor.DecodeArgs(tool, args, &in); err != nil {
		return nil, false, fmt.Errorf("%s: %w", tool, err)
	}
	out, err := call(ctx, &in)
	if err != nil {
		return nil, false, err
	}
	return out, passed(out), nil
}

// lenientID picks the id out of a line that may be malformed otherwise, so even an
// error line carries it.
func lenientID(line []byte) json.RawMessage {
	var c map[string]json.RawMessage // exactly "id", as the call's own decoding takes it
	if json.Unmarshal(line, &c) != nil {
		return nil
	}
	return c["id"]
}

// countLines counts the non-blank lines of a regular file, for the progress bar, and
// rewinds it; a pipe cannot be counted ahead (-1).
func countLines(in io.Reader) int {
	f, ok := in.(*os.File)
	if !ok {
		return -1
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	n := 0
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			n++
		}
		if err != nil {
			break
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return -1
	}
	return n
}
