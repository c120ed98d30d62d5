package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers a tool whose schemas are inferred from In and Out, like the SDK's
// generic mcp.AddTool, but without its per-call schema machinery (validating the
// arguments against the schema, then the output, then marshaling twice): a call's
// latency is a feature here. Arguments are decoded strictly instead — unknown fields
// and wrong types are tool errors that name the field — and the handlers validate
// values. The output is marshaled once; what the handler returns matches the declared
// schema by construction (both come from Out).
//
// handle returns the result, whether it is a tool error, and a Go error for calls
// that produced no result object (invalid arguments, refusals): those become tool
// errors carrying the message as text.
//
// The same call function is recorded in calls under the tool's name, for the stdio
// transport's direct path (see lineConn.directCall).
func addTool[In, Out any](srv *mcp.Server, calls map[string]toolCall, t *mcp.Tool, handle func(context.Context, *In) (*Out, bool, error)) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", t.Name, err))
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %s: %v", t.Name, err))
	}
	t.InputSchema, t.OutputSchema = in, out
	call := func(ctx context.Context, arguments json.RawMessage) *mcp.CallToolResult {
		args := new(In)
		if err := DecodeArgs(arguments, args); err != nil {
			return errorResult(err)
		}
		res, isErr, err := handle(ctx, args)
		if err != nil {
			return errorResult(err)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return errorResult(fmt.Errorf("encoding the result: %w", err))
		}
		return &mcp.CallToolResult{
			IsError:           isErr,
			StructuredContent: json.RawMessage(raw),
			Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		}
	}
	calls[t.Name] = call
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return call(ctx, req.Params.Arguments), nil
	})
}

// toolCall runs one call of a tool from its raw arguments; it always has a result.
type toolCall func(ctx context.Context, arguments json.RawMessage) *mcp.CallToolResult

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// DecodeArgs decodes a tool call's arguments strictly into v, with the errors the MCP
// tools give: the command line and batch runs use it so both say the same.
func DecodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %s", describeJSONError(err, reflect.TypeOf(v).Elem()))
	}
	if dec.More() {
		return errors.New("invalid arguments: trailing data after the arguments object")
	}
	return nil
}

// describeJSONError rewrites encoding/json's messages in the tool's own terms.
func describeJSONError(err error, t reflect.Type) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return fmt.Sprintf("the arguments must be an object, not %s", te.Value)
		}
		return fmt.Sprintf("%s: want %s, got %s", field, jsonKind(te.Type), te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("unknown field %s (%s takes %s)", f, t.Name(), fieldNames(t))
	}
	return strings.TrimPrefix(msg, "json: ")
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
