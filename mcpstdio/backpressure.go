package mcpstdio

// Backpressure on the stdio transport.
//
// A client that sends requests and stops reading the answers must not make the server
// grow without bound. The transport reads at most MaxInFlight requests ahead of the
// answers it has written: a request (a message with an id) takes a slot when it is
// read and gives it back once its answer has been written to stdout (or failed to be).
// With every slot taken, the reader stops reading stdin, so the client's writes block
// in the pipe instead of calls piling up in the server; reading resumes as soon as one
// answer gets out. Notifications (cancellations among them) take no slot, but are
// not read either while the reader waits.
//
// A request of the server's own that a call waits on (a question to the user, with
// elicitation/create) is answered by a line the reader must still read: a call that
// waits for one gives its slot back while it waits (Transport.Lend), so the answer is
// read however full the window, and a full window always drains once the client
// reads.

// MaxInFlight bounds the requests read and not yet answered (running, or with their
// answers waiting for the client to read them). A variable for tests.
var MaxInFlight = 256

// window holds the slots of requests in flight.
type window chan struct{}

func newWindow(n int) window { return make(window, n) }

// acquire takes a slot, waiting while all are taken; false when the session closes
// first.
func (w window) acquire(closed <-chan struct{}) bool {
	select {
	case w <- struct{}{}:
		return true
	case <-closed:
		return false
	}
}

// release gives a slot back.
func (w window) release() {
	select {
	case <-w:
	default:
	}
}

// Lend gives the slot of a request in flight back to the window while its
// answer waits for the client (for the answer to a request of the server's own);
// reclaim takes a slot again, waiting while all are taken, and returns at once
// when the session has closed. The server calls reclaim before the request is
// answered (writing the answer gives the slot back), and lends each slot at most
// once at a time. Lend is for a connected transport (after Connect).
func (t *Transport) Lend() (reclaim func()) {
	c := t.conn
	c.window.release()
	return func() { c.window.acquire(c.closed) }
}

// InFlight is how many requests hold a slot of the window: read and not yet
// answered, less those lent back. 0 before Connect.
func (t *Transport) InFlight() int {
	if t.conn == nil {
		return 0
	}
	return len(t.conn.window)
}
