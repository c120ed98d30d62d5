// Package jspool runs execute_js calls: each in a prefork `autobox worker js`
// process of its own, answering the worker's bridge of host operations (files
// of the call's mounts, fetch) while it runs. It knows nothing of MCP, tool
// schemas, validation, asking the user or sessions: the server (package
// supervisor) validates a call, decides its mounts, limits and network, and
// hands a Request to Pool.Run.
//
// The contract:
//
//   - One worker, one call (pool.go): a Pool keeps Size workers warm and starts
//     a replacement after each call, never during it (pace.AfterCall spaces the
//     replacement of spaced-out calls). A worker is never reused.
//   - Born confined (spawn.go, launch_*.go): each worker is forked from a thread
//     of its own that restricts itself first (Landlock, seccomp, no capabilities,
//     user and pid namespaces where the host has them; a seatbelt profile on
//     macOS) and then exits, so no thread of the server stays in a worker's
//     domain. A worker dies with the server by the end of file of the life pipe
//     (fd 5). A host that cannot jail workers runs them unjailed, said in the
//     log and by Pool.Isolation and Pool.Weaker.
//   - Bounded (run.go): a call ends by its time limit plus a grace, its memory
//     limit (V8's heap, and the worker's resident memory watched from outside),
//     a crash of its worker or its context, each with the error text execute_js
//     reports (Result.Err); the worker's own answer is Result.Worker.
//   - The bridge enforces everything (bridge*.go, fetch*.go, hostop*.go,
//     pseudofs_*.go): the worker is untrusted and sees only what the bridge
//     returns. Files are reached through the call's mounts only, with the
//     access of a command of the call (no capabilities), never blocking on a
//     FIFO, a device or a filesystem that does not answer, never serving the
//     kernel's pseudo-filesystems; fetches are http(s) only, bounded in size,
//     time and number in flight, and dialled through Request.Dial where the
//     server checks and records them. Nothing of a call (goroutine, connection,
//     open root) outlives it.
//
// The package imports no server package (supervisor, mcpstdio, cli, task):
// deps_test holds that.
package jspool
