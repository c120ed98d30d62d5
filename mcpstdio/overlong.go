package mcpstdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An over-long line is refused without being read whole (MaxMessageBytes), but its
// error must carry the request's id: a client matches answers by id, and one that
// gets id null waits for its own timeout. JSON-RPC sets no order of members, and
// clients differ: the Go SDK writes the id second, the TypeScript SDK last, after the
// params that made the line long. So the line's first and last bytes are kept.
const (
	overlongHead = 64 << 10 // bytes kept from the start: {"jsonrpc":"2.0","id":7,...
	overlongTail = 1 << 10  // and from the end: ...,"jsonrpc":"2.0","id":7}
)

// overlong is what is kept of a line longer than MaxMessageBytes.
type overlong struct {
	head, tail []byte
}

func newOverlong(buf, chunk []byte) *overlong {
	o := &overlong{head: bytes.Clone(buf[:min(len(buf), overlongHead)])}
	if len(o.head) < overlongHead {
		o.head = append(o.head, chunk[:min(len(chunk), overlongHead-len(o.head))]...)
	}
	o.add(buf[max(0, len(buf)-overlongTail):])
	o.add(chunk)
	return o
}

// add keeps the last overlongTail bytes read.
func (o *overlong) add(chunk []byte) {
	if len(chunk) >= overlongTail {
		o.tail = append(o.tail[:0], chunk[len(chunk)-overlongTail:]...)
		return
	}
	if drop := len(o.tail) + len(chunk) - overlongTail; drop > 0 {
		o.tail = append(o.tail[:0], o.tail[drop:]...)
	}
	o.tail = append(o.tail, chunk...)
}

// id finds the request's id, a number or a string, among the members of the
// line's top-level object that the kept bytes hold whole; nil if none does.
func (o *overlong) id() json.RawMessage {
	if id := leadingID(o.head); id != nil {
		return id
	}
	return trailingID(bytes.TrimRight(o.tail, " \t\r\n"))
}

// leadingID reads the members at the start of an object, up to the first one that
// does not end within b.
func leadingID(b []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil
		}
		if key == "id" {
			return validID(v)
		}
	}
	return nil
}

// trailingID reads the last members of an object from the end of its text. A
// member's name opens with a quote that follows a comma outside any string (inside a
// string a quote is escaped), and "{" + the text from there is an object exactly when
// that member is a top-level one: the text then closes one level more than it opens.
func trailingID(b []byte) json.RawMessage {
	for i := len(b) - 1; i > 0; i-- {
		if b[i] != '"' || lastNonSpace(b[:i]) != ',' {
			continue
		}
		var members map[string]json.RawMessage
		dec := json.NewDecoder(io.MultiReader(bytes.NewReader([]byte("{")), bytes.NewReader(b[i:])))
		if dec.Decode(&members) != nil || dec.More() {
			continue
		}
		if _, err := dec.Token(); err != io.EOF {
			continue
		}
		if id, ok := members["id"]; ok {
			return validID(id)
		}
	}
	return nil
}

func lastNonSpace(b []byte) byte {
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[len(b)-1]
}

// validID returns v if it is an id a request may have: a number or a string.
func validID(v json.RawMessage) json.RawMessage {
	var id any
	if json.Unmarshal(v, &id) != nil {
		return nil
	}
	if rid, err := jsonrpc.MakeID(id); err != nil || !rid.IsValid() {
		return nil
	}
	return v
}

// readLine returns the next line without its newline. A line longer than
// MaxMessageBytes is consumed to its end and dropped, never held in memory: over is
// then set, with the line's first and last bytes, where its id is (overlong.id).
func readLine(r *bufio.Reader) (line []byte, over *overlong, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case over != nil:
			over.add(chunk)
		case len(buf)+len(chunk) > MaxMessageBytes+1:
			over = newOverlong(buf, chunk)
			buf = nil
		default:
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), over, err
	}
}

// writeError answers a line that could not be a message. The id is recovered when the
// line is JSON with an id, or an over-long, too deeply nested or cut-short line shows
// one, so the client can match the error to its request.
func (c *lineConn) writeError(line []byte, over *overlong, err error) {
	code := int64(-32700) // parse error
	id := json.RawMessage("null")
	if over != nil {
		code = -32600 // invalid request
		if found := over.id(); found != nil {
			id = found
		}
	} else {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		switch {
		case json.Unmarshal(line, &probe) == nil:
			code = -32600
			if len(probe.ID) > 0 {
				id = probe.ID
			}
		default:
			// Not JSON to encoding/json either: nested past its limit, or cut
			// short. Its id, where the line shows one whole at either end, is
			// found as in an over-long line's kept bytes (and at the same
			// bounded cost).
			if found := newOverlong(line, nil).id(); found != nil {
				id = found
			}
		}
	}
	c.writeErrorResponse(id, code, err.Error())
}

func (c *lineConn) writeErrorResponse(id json.RawMessage, code int64, msg string) {
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	c.writeLine(resp)
}
