package supervisor

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
// The one request of its own that the server sends and a call waits on is a question
// to the user (elicitation, ask.go); a call that waits for one gives its slot back
// while it waits (lineConn.lend), so the answer is read however full the window, and
// a full window always drains once the client reads.

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
