package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers a tool whose schemas are inferred from In and Out (see
// toolSchemas), like the SDK's generic mcp.AddTool, but without its per-call schema
// machinery (validating the arguments against the schema, then the output, then
// marshaling twice): a call's latency is a feature here. Arguments are decoded
// strictly instead — unknown fields and wrong types are tool errors that name the
// field — and the handlers validate values. The output is marshaled once; what the
// handler returns matches the declared schema by construction (both come from Out),
// which the end-to-end tests check on every result they see.
//
// handle returns the result, whether it is a tool error, and a Go error for calls
// that produced no result object (invalid arguments, refusals). fail turns such an
// error into the tool's result object, so every tool error carries structured content
// that validates against the output schema, whatever the mistake.
//
// The same call function is recorded in calls under the tool's name, for the stdio
// transport's direct path (see directCalls). Both paths run it through
// s.serveCall, which gives it the way to ask the user that its client takes.
func addTool[In, Out any](s *Server, srv *mcp.Server, calls map[string]toolCall, t *mcp.Tool, handle func(context.Context, *In) (*Out, bool, error), fail func(error) *Out) {
	t.InputSchema, t.OutputSchema = toolSchemas[In, Out](t.Name)
	result := func(out *Out, isErr bool) *mcp.CallToolResult {
		raw, err := json.Marshal(out)
		if err != nil {
			if raw, err = json.Marshal(fail(fmt.Errorf("encoding the result: %w", err))); err != nil {
				panic(err) // fail's objects are made of strings and numbers
			}
			isErr = true
		}
		return &mcp.CallToolResult{
			IsError:           isErr,
			StructuredContent: json.RawMessage(raw),
			Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		}
	}
	call := func(ctx context.Context, arguments json.RawMessage) *mcp.CallToolResult {
		args := new(In)
		if err := DecodeArgs(t.Name, arguments, args); err != nil {
			return result(fail(err), true)
		}
		res, isErr, err := handle(ctx, args)
		if err != nil {
			return result(fail(err), true)
		}
		return result(res, isErr)
	}
	calls[t.Name] = call
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := req.Params
		ctx = WithProgress(ctx, mcpProgress(req.Session, p.GetProgressToken()))
		return s.serveCall(ctx, callParams{session: req.Session, caps: req.ClientCapabilities(), name: t.Name, args: p.Arguments, state: p.RequestState, responses: p.InputResponses}, call)
	})
}

// toolCall runs one call of a tool from its raw arguments; it always has a result.
type toolCall func(ctx context.Context, arguments json.RawMessage) *mcp.CallToolResult

// DecodeArgs decodes the arguments of a call of tool strictly into v, with the errors
// the MCP tools give, in the tool's terms (its name and parameter names): batch runs
// use it so both say the same.
func DecodeArgs(tool string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	if msg := keyMistake(tool, raw, reflect.TypeOf(v)); msg != "" {
		return fmt.Errorf("invalid arguments: %s", msg)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t := reflect.TypeOf(v).Elem()
		if msg := findMistake(raw, t, tool, ""); msg != "" {
			return fmt.Errorf("invalid arguments: %s", msg)
		}
		return fmt.Errorf("invalid arguments: %s", describeJSONError(err))
	}
	if dec.More() {
		return errors.New("invalid arguments: trailing data after the arguments object")
	}
	return nil
}

// findMistake walks arguments the decoder refused alongside their Go type and says
// what is wrong where, with the path the client wrote (mounts[1].mode): the decoder's
// own errors name Go types, or leave out where an unknown field was. "" means
// nothing found here; the decoder's error (describeJSONError) tells the rest, such
// as a fraction where an integer belongs.
func findMistake(raw json.RawMessage, t reflect.Type, tool, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "" // null leaves the field as it was: never the mistake
	}
	got := jsonValueKind(raw)
	// A parameter that takes more than one form (EnvList) judges itself.
	if u, ok := reflect.New(t).Interface().(json.Unmarshaler); ok {
		if err := u.UnmarshalJSON(raw); err != nil {
			return fmt.Sprintf("%s: %v", path, err)
		}
		return ""
	}
	wrong := func() string {
		if path == "" {
			return fmt.Sprintf("the arguments must be an object, not %s", got)
		}
		return fmt.Sprintf("%s: want %s, got %s", path, jsonKind(t), got)
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if got != "object" || json.Unmarshal(raw, &members) != nil {
			return wrong()
		}
		for _, key := range slices.Sorted(maps.Keys(members)) {
			f, ok := fieldByJSONName(t, key)
			if !ok {
				if path == "" {
					return fmt.Sprintf("unknown field %q (%s takes %s)", key, tool, fieldNames(t))
				}
				return fmt.Sprintf("%s: unknown field %q (the fields are %s)", path, key, fieldNames(t))
			}
			if msg := findMistake(members[key], f.Type, tool, joinPath(path, key)); msg != "" {
				return msg
			}
		}
	case reflect.Slice:
		var elems []json.RawMessage
		if got != "array" || json.Unmarshal(raw, &elems) != nil {
			return wrong()
		}
		for i, e := range elems {
			if msg := findMistake(e, t.Elem(), tool, fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return msg
			}
		}
	case reflect.String:
		if got != "string" {
			return wrong()
		}
	case reflect.Bool:
		if got != "bool" {
			return wrong()
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if got != "number" {
			return wrong()
		}
	}
	return ""
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldByJSONName finds the field a JSON member decodes into: by its exact name
// (keyMistake refused the names encoding/json would fold).
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n != "" && n != "-" && n == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// jsonValueKind names the kind of a JSON value as encoding/json's errors do.
func jsonValueKind(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// describeJSONError rewrites what encoding/json says of arguments findMistake found
// nothing wrong with.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: want %s, got %s", te.Field, jsonKind(te.Type), te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

func fieldNames(t reflect.Type) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}
