//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// sessionList asks the command line's session server at addr (a path, or
// "@name" for an abstract socket) for its list of sessions, as `autobox
// session list` does. A connection refused and a reply that is an error are
// both denials; a list is "ok".
func sessionList(addr string) error {
	c, err := net.DialTimeout("unix", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(`{"tool":"exec_session","arguments":{"action":"list"}}` + "\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("no reply: %w", err)
	}
	var reply struct {
		Error  string          `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return fmt.Errorf("a malformed reply %q", line)
	}
	if reply.Error != "" {
		return fmt.Errorf("the server refused: %s", reply.Error)
	}
	fmt.Printf("ok %s\n", reply.Result)
	return nil
}
