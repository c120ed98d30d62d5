package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTools returns the server's tools/list result as plain JSON values, as a client
// that is not written in Go sees it.
func listTools(t *testing.T, cs *mcp.ClientSession) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	raw, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var tools []map[string]any
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	return tools
}

// outputSchemas resolves every tool's output schema, for checkResult.
func outputSchemas(t *testing.T, cs *mcp.ClientSession) map[string]*jsonschema.Resolved {
	t.Helper()
	out := map[string]*jsonschema.Resolved{}
	for _, tool := range listTools(t, cs) {
		name, _ := tool["name"].(string)
		rs, err := resolve(tool["outputSchema"], nil)
		if err != nil {
			t.Fatalf("output schema of %s: %v", name, err)
		}
		out[name] = rs
	}
	return out
}

func resolve(schema any, opts *jsonschema.ResolveOptions) (*jsonschema.Resolved, error) {
	if schema == nil {
		return nil, errors.New("missing")
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(opts)
}

// checkResult holds a tool's result to what the strictest clients require: every
// result of a tool with an output schema, tool errors included, carries structured
// content that validates against it, and its text is the same JSON (the spec's
// advice for clients that read only text).
func checkResult(schemas map[string]*jsonschema.Resolved, tool string, res *mcp.CallToolResult) error {
	rs := schemas[tool]
	if rs == nil {
		return fmt.Errorf("tools/list gave no output schema for %s", tool)
	}
	if res.StructuredContent == nil {
		return fmt.Errorf("a result without structured content (isError %v): %s", res.IsError, textOf(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if err := rs.Validate(v); err != nil {
		return fmt.Errorf("structured content %s does not validate against the output schema: %v", raw, err)
	}
	if err := checkKilledBy(v); err != nil {
		return fmt.Errorf("%v in %s", err, raw)
	}
	var text any
	if err := json.Unmarshal([]byte(textOf(res)), &text); err != nil || !reflect.DeepEqual(text, v) {
		return fmt.Errorf("text content %q is not the structured content %s", textOf(res), raw)
	}
	return nil
}

// errorOf is the error field of a result's structured content: every tool's result
// object says in error why a call failed.
func errorOf(res *mcp.CallToolResult) string {
	var o struct {
		Error *string `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &o) != nil || o.Error == nil {
		return ""
	}
	return *o.Error
}

// eachSchema calls visit for every schema in a JSON Schema document: the document
// itself and, below it, each value of a keyword that takes schemas, with its path and
// that keyword ("" for the document).
func eachSchema(schema any, path, keyword string, visit func(path, keyword string, schema any)) {
	visit(path, keyword, schema)
	v, ok := schema.(map[string]any)
	if !ok {
		return
	}
	for _, kw := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
		m, _ := v[kw].(map[string]any)
		for name, s := range m {
			eachSchema(s, path+"/"+kw+"/"+name, kw, visit)
		}
	}
	for _, kw := range []string{"items", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalProperties", "contentSchema"} {
		s, ok := v[kw]
		if list, isList := s.([]any); isList && kw == "items" {
			for i, s := range list {
				eachSchema(s, fmt.Sprintf("%s/items/%d", path, i), kw, visit)
			}
		} else if ok {
			eachSchema(s, path+"/"+kw, kw, visit)
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		list, _ := v[kw].([]any)
		for i, s := range list {
			eachSchema(s, fmt.Sprintf("%s/%s/%d", path, kw, i), kw, visit)
		}
	}
}

// booleanSchemas lists the places in a JSON Schema document that hold a boolean
// schema (true or false where a schema goes). `additionalProperties: false`, the
// usual way to close an object, is the one exception: every client takes it.
func booleanSchemas(schema any) []string {
	var found []string
	eachSchema(schema, "", "", func(path, keyword string, s any) {
		if b, isBool := s.(bool); isBool && (keyword != "additionalProperties" || b) {
			found = append(found, path)
		}
	})
	return found
}

// typeLists lists the places in a JSON Schema document whose type is a list of types,
// which clients that map schemas onto a dialect of single types (the Inspector's
// --strict warns of them) refuse; a branch per type (anyOf) says the same.
func typeLists(schema any) []string {
	var found []string
	eachSchema(schema, "", "", func(path, _ string, s any) {
		if m, ok := s.(map[string]any); ok {
			if _, isList := m["type"].([]any); isList {
				found = append(found, path)
			}
		}
	})
	return found
}

// TestToolSchemas checks the tools/list the server sends: no boolean schemas (the
// TypeScript SDK's client refuses the whole list over one), no lists of types, objects
// at the top, and
// input schemas a form can be built from: every property described and typed, every
// object closed, integers bounded, defaults stated and valid, enums for choices.
func TestToolSchemas(t *testing.T) {
	s := start(t)
	tools := listTools(t, s.cs)
	var names []string
	for _, tool := range tools {
		name := tool["name"].(string)
		names = append(names, name)
		for _, which := range []string{"inputSchema", "outputSchema"} {
			schema, _ := tool[which].(map[string]any)
			if schema == nil {
				t.Errorf("%s: no %s", name, which)
				continue
			}
			if schema["type"] != "object" {
				t.Errorf("%s %s: type %v at the top, want object", name, which, schema["type"])
			}
			if found := booleanSchemas(schema); len(found) > 0 {
				t.Errorf("%s %s: boolean schemas at %v", name, which, found)
			}
			if found := typeLists(schema); len(found) > 0 {
				t.Errorf("%s %s: lists of types at %v", name, which, found)
			}
		}
		in, _ := tool["inputSchema"].(map[string]any)
		checkInputSchema(t, name, in, true)
		if _, err := resolve(in, &jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			t.Errorf("%s inputSchema: %v", name, err)
		}
	}
	slices.Sort(names)
	if want := []string{"copy_then_sync", "exec_command", "exec_session", "execute_js"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	// The choices a client offers.
	enums := map[string][]any{
		"copy_then_sync/action":          {"create", "status", "sync", "resolve", "merge", "discard"},
		"copy_then_sync/copyMode":        {"auto", "clone"},
		"execute_js/mounts/items/mode":   {"ro", "rw"},
		"exec_command/mounts/items/mode": {"ro", "rw"},
		"exec_session/action":            {"poll", "write", "signal", "close", "list"},
		"exec_session/signal":            {"INT", "TERM", "KILL"},
	}
	for path, want := range enums {
		if got := schemaAt(tools, path)["enum"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: enum %v, want %v", path, got, want)
		}
	}
	// Bounds and defaults as the README states them.
	for path, want := range map[string][3]float64{
		"execute_js/timeoutMs":      {800, 1, 10000},
		"execute_js/memoryMb":       {32, 8, 512},
		"execute_js/maxReadBytes":   {1000000, 0, 50000000},
		"execute_js/maxWriteBytes":  {1000000, 0, 50000000},
		"exec_command/timeoutMs":    {30000, 1, 3600000}, // 600000 but in a session
		"exec_command/memoryMb":     {256, 16, 2048},
		"exec_command/maxProcesses": {256, 1, 4096},
		"exec_command/maxWriteMb":   {1024, 0, 65536},
		"exec_command/cpuMs":        {0, 0, 1000000},
		"exec_command/maxOpenFiles": {1024, 64, 65536},
		"exec_command/rows":         {24, 1, 500},
		"exec_command/cols":         {80, 1, 1000},
		"exec_session/yieldMs":      {1000, 0, 30000},
	} {
		p := schemaAt(tools, path)
		if got := [3]any{p["default"], p["minimum"], p["maximum"]}; got != [3]any{want[0], want[1], want[2]} {
			t.Errorf("%s: default, minimum, maximum = %v, want %v", path, got, want)
		}
	}
}

// checkInputSchema checks one object schema of a tool's input and the schemas below.
func checkInputSchema(t *testing.T, where string, s map[string]any, top bool) {
	t.Helper()
	if s["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties %v, want false", where, s["additionalProperties"])
	}
	props, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	for name, v := range props {
		p, _ := v.(map[string]any)
		at := where + "/" + name
		if d, _ := p["description"].(string); d == "" {
			t.Errorf("%s: no description", at)
		}
		typ, ok := p["type"].(string)
		if !ok {
			t.Errorf("%s: type %v, want one type", at, p["type"])
		}
		optional := !slices.Contains(required, any(name))
		switch typ {
		case "integer":
			if p["minimum"] == nil || p["maximum"] == nil {
				t.Errorf("%s: an integer without minimum and maximum", at)
			}
			// Unless its absence means something of its own, which it says.
			if d, _ := p["description"].(string); optional && p["default"] == nil && !strings.Contains(d, "Absent: ") {
				t.Errorf("%s: an optional integer without a default", at)
			}
		case "boolean":
			if optional && p["default"] == nil {
				t.Errorf("%s: an optional boolean without a default", at)
			}
		case "array":
			if items, _ := p["items"].(map[string]any); items["type"] == "object" {
				checkInputSchema(t, at+"/items", items, false)
			}
		}
	}
	if top && len(props) == 0 {
		t.Errorf("%s: no properties", where)
	}
}

// schemaAt finds a property schema by tool/name[/items/name].
func schemaAt(tools []map[string]any, path string) map[string]any {
	var s map[string]any
	for i, part := range strings.Split(path, "/") {
		if i == 0 {
			for _, tool := range tools {
				if tool["name"] == part {
					s, _ = tool["inputSchema"].(map[string]any)
				}
			}
			continue
		}
		if part == "items" {
			s, _ = s["items"].(map[string]any)
		} else {
			props, _ := s["properties"].(map[string]any)
			s, _ = props[part].(map[string]any)
		}
	}
	return s
}

// TestSchemaValidatorIsStrict shows that the validator checkResult uses refuses what
// ajv (the TypeScript client's validator) refuses, on the server's own schemas: the
// check of every result would otherwise prove little.
func TestSchemaValidatorIsStrict(t *testing.T) {
	s := start(t)
	exec, js := s.schemas["exec_command"], s.schemas["execute_js"]
	usage := `"usage":{"cpuMs":1.5,"maxRssMb":2,"processes":1,"writtenMb":0}`
	ok := `{"stdout":"","stderr":"","exitCode":0,"killed":false,"durationMs":1.5,` + usage + `}`
	for _, c := range []struct {
		rs    *jsonschema.Resolved
		doc   string
		valid bool
	}{
		{exec, ok, true},
		{exec, `{"stdout":"","stderr":"","exitCode":null,"killed":false,"durationMs":0,"error":"no",` + usage + `}`, true},
		{exec, `{"stdout":"","stderr":"","exitCode":0,"killed":false,"durationMs":1.5}`, false},
		{exec, `{"stdout":"","stderr":"","exitCode":0,"killed":false,"durationMs":1.5,"usage":{"cpuMs":1}}`, false},
		{exec, `{"stdout":"","stderr":"","exitCode":0,"killed":false,"durationMs":1,"extra":1}`, false},
		{exec, `{"stdout":"","stderr":"","exitCode":0,"durationMs":1}`, false},
		{exec, `{"stdout":"","stderr":"","exitCode":1.5,"killed":false,"durationMs":1}`, false},
		{exec, `{"stdout":"","stderr":"","exitCode":"0","killed":false,"durationMs":1}`, false},
		{exec, `{"stdout":"","stderr":"","exitCode":0,"killed":null,"durationMs":1}`, false},
		{exec, `[]`, false},
		{js, `{"ok":true,"result":{"a":[1,"x",null]},"error":null,"logs":[],"durationMs":1,"readBytes":0,"writeBytes":0}`, true},
		{js, `{"ok":true,"result":"s","error":null,"logs":[],"durationMs":1,"readBytes":0,"writeBytes":0}`, true},
		{js, `{"ok":false,"result":null,"error":"x","logs":[],"durationMs":1,"readBytes":0,"writeBytes":0}`, true},
		{js, `{"ok":false,"result":null,"error":"x","logs":[1],"durationMs":1,"readBytes":0,"writeBytes":0}`, false},
		{js, `{"ok":false,"error":"x","logs":[],"durationMs":1,"readBytes":0,"writeBytes":0}`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.doc), &v); err != nil {
			t.Fatal(err)
		}
		if err := c.rs.Validate(v); (err == nil) != c.valid {
			t.Errorf("%s: valid=%v, want %v (%v)", c.doc, err == nil, c.valid, err)
		}
	}
}

// TestToolErrorsCarryTheirObject: whatever the mistake (a wrong type, an unknown
// field, a value out of range, a refusal), a tool error carries the tool's result
// object, which callRaw checks against the output schema, with the reason in its
// error field, in the tool's words: its name and parameter names, never Go's.
func TestToolErrorsCarryTheirObject(t *testing.T) {
	s := start(t)
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"execute_js", map[string]any{"code": 5}, "invalid arguments: code: want a string, got number"},
		{"execute_js", map[string]any{"code": "1", "timeoutMs": 0}, "invalid argument: timeoutMs must be between 1 and 10000, got 0"},
		{"execute_js", map[string]any{"code": "1", "colour": "red"}, `invalid arguments: unknown field "colour" (execute_js takes code, timeoutMs, memoryMb, allowNetwork, allowHosts, mounts, maxReadBytes, maxWriteBytes)`},
		{"execute_js", map[string]any{"code": "1", "mounts": []any{map[string]any{"hostPath": "/tmp", "sandboxPath": "/mnt/t", "rw": true}}}, `invalid arguments: mounts[0]: unknown field "rw" (the fields are hostPath, sandboxPath, mode, workspaceId)`},
		{"execute_js", map[string]any{"code": "1", "mounts": []any{map[string]any{"hostPath": "/tmp"}, map[string]any{"sandboxPath": 5}}}, "invalid arguments: mounts[1].sandboxPath: want a string, got number"},
		{"execute_js", []any{"1"}, "invalid arguments: the arguments must be an object, not array"},
		{"exec_command", map[string]any{"command": "ls"}, "invalid arguments: command: want an array, got string"},
		{"exec_command", map[string]any{"command": []string{"ls"}, "verbose": true}, `invalid arguments: unknown field "verbose" (exec_command takes command, timeoutMs, memoryMb, allowNetwork, allowHosts, mounts, cwd, maxProcesses, maxWriteMb, cpuMs, maxOpenFiles, yieldMs, tty, rows, cols, caches, expose, env)`},
		{"exec_command", map[string]any{"command": []string{"true"}, "memoryMb": 1}, "invalid argument: memoryMb must be between 16 and 2048, got 1"},
		{"exec_command", map[string]any{"command": []string{"true"}, "timeoutMs": 2.5}, "invalid arguments: timeoutMs: want an integer, got number 2.5"},
		{"copy_then_sync", map[string]any{"action": 1}, "invalid arguments: action: want a string, got number"},
		{"copy_then_sync", map[string]any{"action": "status", "id": "x"}, `invalid arguments: unknown field "id" (copy_then_sync takes action, hostPath, sandboxPath, storagePath, copyMode, excludes, workspaceId, diff, paths, includeIgnored)`},
		{"copy_then_sync", map[string]any{"action": "explode"}, `invalid argument: action "explode" is not create, status, sync, resolve, merge or discard`},
	} {
		res := s.callRaw(c.tool, c.args)
		if got := errorOf(res); !res.IsError || got != c.want {
			t.Errorf("%s %v: isError %v, error %q; want a tool error %q", c.tool, c.args, res.IsError, got, c.want)
		}
		var o struct {
			OK       *bool   `json:"ok"`
			ExitCode *int    `json:"exitCode"`
			Stderr   *string `json:"stderr"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(raw, &o)
		switch {
		case c.tool == "exec_command" && (o.ExitCode != nil || o.Stderr == nil || *o.Stderr != c.want):
			t.Errorf("%s %v: want exitCode null and the reason in stderr: %s", c.tool, c.args, raw)
		case c.tool != "exec_command" && (o.OK == nil || *o.OK):
			t.Errorf("%s %v: want ok false: %s", c.tool, c.args, raw)
		}
	}
}

// killStarts is the head of stderr for each killedBy of a command's result.
var killStarts = map[string][]string{
	"timeout":   {"killed: timeout after "},
	"cancelled": {"killed: call cancelled"},
	"memory":    {"memory limit exceeded ("},
	"processes": {"process limit exceeded ("},
	"disk":      {"disk limit exceeded ("},
	"cpu":       {"cpu limit exceeded ("},
	"session":   {"killed: session closed", "killed: session idle for ", "killed: the server is shutting down"},
}

// checkKilledBy holds every command result to one rule: killedBy is set
// exactly when killed is, and names the reason stderr starts with.
func checkKilledBy(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	killed, _ := m["killed"].(bool)
	by, hasBy := m["killedBy"].(string)
	stderr, _ := m["stderr"].(string)
	switch {
	case !killed && hasBy:
		return fmt.Errorf("killedBy %q on a result that was not killed", by)
	case killed && !hasBy:
		return fmt.Errorf("killed with no killedBy (stderr %.80q)", stderr)
	case killed:
		starts, known := killStarts[by]
		if !known {
			return fmt.Errorf("killedBy %q is none of the documented reasons", by)
		}
		for _, p := range starts {
			if strings.HasPrefix(stderr, p) {
				return nil
			}
		}
		return fmt.Errorf("killedBy %q but stderr starts %.80q", by, stderr)
	}
	return nil
}
