// Package mcpstdio is an MCP transport over a program's stdin and stdout:
// newline-delimited JSON-RPC, as the SDK's stdio transport, with four more
// promises a server that runs other people's requests needs. It knows JSON-RPC
// lines and MCP's tools/call, nothing of any server's tools.
//
//   - One bad line costs one error reply, never the session (transport.go,
//     overlong.go): a line that is not JSON-RPC is answered with a JSON-RPC error
//     carrying the request's id wherever the line shows it (else null), and a
//     line longer than MaxMessageBytes is read to its end without being held in
//     memory and refused the same way. A request reusing the id of one in
//     progress is refused with id null.
//   - Backpressure (backpressure.go): at most MaxInFlight requests are read ahead
//     of the answers written; with all taken, stdin is not read. A server whose
//     call waits for the client's answer to a request of its own lends the
//     call's slot back meanwhile (Transport.Lend).
//   - A client that closes its end of stdout ends the session as a closed stdin
//     does, with a line on stderr, instead of the silent SIGPIPE death Go gives
//     a program by default (brokenpipe.go). After stdin closes, the answers of
//     the requests in flight get a short grace to be written (eofGrace).
//   - The direct path (direct.go, plain.go): a server implementing Direct answers
//     plain tools/call requests on the goroutine that read them, skipping the
//     SDK's dispatch, with exactly the bytes the SDK would write. The transport
//     decides what is plain as far as the protocol goes (the envelope, the
//     params' members, MCP 2026-07-28 per-request metadata), Direct.Takes the
//     rest; everything else goes to the SDK. notifications/cancelled cancels a
//     direct call's context, and reading goes on while a direct call runs.
//
// The package imports the MCP SDK and small leaf helpers only (deps_test holds
// that), so a server is one user of it among possible others.
package mcpstdio
