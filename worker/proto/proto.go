// Package proto is the wire protocol between the supervisor and a JS worker process:
// length-prefixed frames (4-byte big-endian length, then one JSON Message) over a pair
// of pipes. It has no cgo and no V8, so the supervisor and tests use it freely.
//
// One worker serves exactly one call:
//
//	supervisor                                   worker (jailed)
//	    |  ------------------- init {preludeCache} ---->  |  sent as the worker starts
//	    |  <------------------ ready {preludeCache} ----  |  isolate + context made
//	    |  ------------------- run {code, limits} ----->  |
//	    |  <------------------ bridge {id, op, args} ---  |  zero or more host.* / fetch
//	    |  ------------------- reply {id, data|error} ->  |  (one reply per bridge)
//	    |  <------------------ log {line} --------------  |  with run.progress: each console line
//	    |  <------------------ result {ok, result, ...} -  |
//	    |                                                 |  exits
//
// host.* requests are synchronous: the worker sends one and waits for its reply.
// fetch requests are not: the worker may have up to MaxFetchesInFlight of them
// unanswered while it goes on running JS and sending other requests, and their
// replies come in the order the fetches finish, between other replies:
//
//	supervisor                                   worker
//	    |  <------------------ bridge {1, fetch} -------  |
//	    |  <------------------ bridge {2, fetch} -------  |
//	    |  <------------------ bridge {3, readFile} ----  |  waits for 3
//	    |  ------------------- reply {2} -------------->  |  kept for the event loop
//	    |  ------------------- reply {3} -------------->  |
//	    |  ------------------- reply {1} -------------->  |
//
// The prelude cache is V8's code cache of the worker's prelude script: the first
// worker makes it, before it has seen any code, and returns it in its ready frame;
// the supervisor hands it to later workers in their init frame, which then skip
// compiling the prelude.
//
// Instead of run, the supervisor may send probe {paths}: the worker tries to open
// each path and answers with a result whose logs hold one line per path, then exits.
//
// A worker that dies before "result" (heap limit, signal, kill after the timeout
// grace) fails only its own call; the supervisor reads the worker's stderr to tell a
// V8 heap exhaustion from other crashes.
package proto

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Message types.
const (
	TypeInit   = "init"
	TypeReady  = "ready"
	TypeRun    = "run"
	TypeBridge = "bridge"
	TypeReply  = "reply"
	TypeResult = "result"
	// TypeLog tells the supervisor a console line as it is logged, in a call
	// whose Run asked for Progress; it is answered by nothing.
	TypeLog = "log"
	// TypeProbe asks a ready worker, instead of a run, to try to open files (or, for
	// "syscall:N", to make system call N with zero arguments) and say what happened:
	// the tests use it to prove the jail holds and that what it refuses is reported.
	TypeProbe = "probe"
)

// MaxFrame bounds one frame: the largest bridge payload (50 MB of file data, JSON
// escaped) with room to spare. A longer length prefix is a protocol error.
const MaxFrame = 128 << 20

// ErrFrameTooLarge is returned for a frame whose length prefix exceeds MaxFrame.
var ErrFrameTooLarge = errors.New("frame exceeds the maximum size")

// Message is one frame. Exactly one of the pointer fields matches Type.
type Message struct {
	Type   string   `json:"type"`
	Init   *Init    `json:"init,omitempty"`
	Ready  *Ready   `json:"ready,omitempty"`
	Run    *Run     `json:"run,omitempty"`
	Bridge *Bridge  `json:"bridge,omitempty"`
	Reply  *Reply   `json:"reply,omitempty"`
	Result *Result  `json:"result,omitempty"`
	Probe  []string `json:"probe,omitempty"`
	Log    string   `json:"log,omitempty"`
}

// Init is the first frame a worker reads, before it makes its isolate.
type Init struct {
	// PreludeCache is a code cache of the prelude made by an earlier worker (or nil).
	PreludeCache []byte `json:"preludeCache,omitempty"`
	// NoWarmup skips the warm-up call that makes the first real call fast: batch
	// runs, where each worker's CPU time counts more than one call's latency.
	NoWarmup bool `json:"noWarmup,omitempty"`
}

// MaxFetchesInFlight bounds the fetch requests of one call that may be
// unanswered at once. The worker queues the ones past it; the supervisor, which
// runs them concurrently, refuses the ones past it (only a worker that ignores the
// protocol sends them).
const MaxFetchesInFlight = 8

// MaxPreludeCache bounds the code cache a worker may return.
const MaxPreludeCache = 1 << 20

// Ready says the worker's isolate and context are made.
type Ready struct {
	// PreludeCache is set when the worker compiled the prelude without a usable
	// cache: the code cache it made, for the next workers.
	PreludeCache []byte `json:"preludeCache,omitempty"`
	// V8 is the version of the V8 the worker links ("10.9.194.9-v8go"), which
	// `autobox doctor` reports.
	V8 string `json:"v8,omitempty"`
}

// Run asks the worker to run one call.
type Run struct {
	Code         string `json:"code"`
	TimeoutMs    int    `json:"timeoutMs"`
	MemoryMb     int    `json:"memoryMb"`
	AllowNetwork bool   `json:"allowNetwork"`
	// Progress has the worker send each console line as it is logged (TypeLog).
	Progress bool `json:"progress,omitempty"`
}

// Bridge is a request from JS code for something only the supervisor may do.
// Args is the JSON the JS side built ({path}, {path, content}, {url, init}).
type Bridge struct {
	ID   int             `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// Reply answers a Bridge with the same ID: Data (JSON) or Error.
type Reply struct {
	ID    int             `json:"id"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error string          `json:"error,omitempty"`
}

// Result is the outcome of the call, as the worker saw it.
type Result struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error,omitempty"`
	Logs   []string        `json:"logs"`
	// Timeout is set when the call ended by its time limit.
	Timeout bool `json:"timeout,omitempty"`
}

// Write sends one frame.
func Write(w io.Writer, m *Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s frame: %w", m.Type, err)
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("%s frame of %d bytes: %w", m.Type, len(body), ErrFrameTooLarge)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = w.Write(buf)
	return err
}

// Read receives one frame. io.EOF means the peer closed cleanly between frames.
func Read(r io.Reader) (*Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("frame of %d bytes: %w", n, ErrFrameTooLarge)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading frame body: %w", err)
	}
	m := new(Message)
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("decoding frame: %w", err)
	}
	if m.Type == "" {
		return nil, errors.New("decoding frame: no type")
	}
	return m, nil
}
