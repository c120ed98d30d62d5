module github.com/autobox-dev/autobox

go 1.26.0

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/shirou/gopsutil/v4 v4.26.10 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	rogchap.com/v8go v0.9.0 // indirect
)
