package worker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// How a call's code is run. The code is tried in these forms, in order, and the
// first that compiles runs:
//
//  1. a bare expression (trailing semicolons dropped) awaited in an async arrow;
//  2. the code as a plain script, whose value is that of its last expression
//     statement (so `const a = 1; a + 1` is 2);
//  3. for code with top-level `await` or `return`, an async function body, with
//     `return` put before its last statement when that is an expression statement,
//     so `const r = await f(); [r.a, r.b]` has a value as (2) would;
//  4. the same body as written.
//
// A syntax error is reported in the user's terms: the position in their code, and
// never a token of the wrappers (see syntaxError).

const (
	bodyPrefix = "(async () => {\n"
	bodySuffix = "\n})()"
)

// wrapCode gives forms 1, 2 and 4.
func wrapCode(code string) (expr, script, body string) {
	t := strings.TrimRight(code, " \t\r\n;")
	return "(async () => (\n" + t + "\n))()", code, bodyPrefix + code + bodySuffix
}

// returnLast gives form 3: the body with `return ` inserted where its last statement
// starts, when that statement is an expression. ok is false when there is none, or
// when the statement finder (a JavaScript parser in Go, which lags V8 on the newest
// syntax, such as `for await` and `using`) cannot read the code; the caller then
// runs form 4.
func returnLast(code string) (string, bool) {
	src := bodyPrefix + code + "\n})"
	prg, err := parser.ParseFile(nil, "", src, 0)
	if err != nil || len(prg.Body) != 1 {
		return "", false
	}
	es, ok := prg.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return "", false
	}
	arrow, ok := es.Expression.(*ast.ArrowFunctionLiteral)
	if !ok {
		return "", false
	}
	block, ok := arrow.Body.(*ast.BlockStatement)
	if !ok {
		return "", false
	}
	list := block.List
	for len(list) > 0 {
		if _, empty := list[len(list)-1].(*ast.EmptyStatement); !empty {
			break
		}
		list = list[:len(list)-1]
	}
	if len(list) == 0 {
		return "", false
	}
	last, ok := list[len(list)-1].(*ast.ExpressionStatement)
	if !ok {
		return "", false
	}
	// The parser's offsets are 1-based, and leave out the parentheses around an
	// expression: `({a: 1})` starts at its `{`, `(a); b` ends before its `)`. The
	// statement starts at the first token after the one before it, past closing
	// parentheses, semicolons, white space and comments.
	from := 0
	if len(list) > 1 {
		from = int(list[len(list)-2].Idx1()) - 1 - len(bodyPrefix)
	}
	at := skipBetween(code, from)
	parsed := int(last.Idx0()) - 1 - len(bodyPrefix)
	if from < 0 || at > parsed || parsed > len(code) || strings.Trim(code[at:parsed], "( \t\r\n") != "" {
		return "", false
	}
	return bodyPrefix + code[:at] + "return " + code[at:] + bodySuffix, true
}

// skipBetween returns the offset of the first token at or after i that can start a
// statement: closing parentheses and semicolons of the statement before, white space
// and comments are skipped.
func skipBetween(code string, i int) int {
	for i < len(code) {
		switch {
		case strings.HasPrefix(code[i:], "//"):
			for i < len(code) && code[i] != '\n' {
				i++
			}
		case strings.HasPrefix(code[i:], "/*"):
			end := strings.Index(code[i+2:], "*/")
			if end < 0 {
				return len(code)
			}
			i += 2 + end + 2
		case strings.IndexByte(" \t\r\n);", code[i]) >= 0:
			i++
		default:
			return i
		}
	}
	return i
}

// syntaxError words a syntax error of code for its author. bodyMsg and bodyLoc are
// V8's error and its location ("code.js:LINE:COLUMN") for the body form, scriptMsg
// and scriptLoc those for the code as a plain script. An error inside the user's
// lines is theirs, moved to their line numbers. One at the wrappers' closing tokens
// means the code ended early (`1+`) or closed more than it opened (`1 }`): the
// plain script then says which, unless all it objects to is `await` or `return`,
// which a body allows; that code just ended too soon.
func syntaxError(code, bodyMsg, bodyLoc, scriptMsg, scriptLoc string) string {
	lines := strings.Split(code, "\n")
	if line, col, ok := parseLocation(bodyLoc); ok && line >= 2 && line <= len(lines)+1 {
		return fmt.Sprintf("%s (line %d, column %d)", bodyMsg, line-1, col)
	}
	if line, col, ok := parseLocation(scriptLoc); ok && line >= 1 && line <= len(lines) && !contextOnly(lines[line-1], col) {
		return fmt.Sprintf("%s (line %d, column %d)", scriptMsg, line, col)
	}
	last := len(lines)
	for last > 1 && strings.TrimSpace(lines[last-1]) == "" {
		last--
	}
	return fmt.Sprintf("SyntaxError: Unexpected end of input (line %d, column %d)", last, len(strings.TrimRight(lines[last-1], " \t\r"))+1)
}

// contextOnly reports whether the token at column col (1-based) of line is one a
// script refuses only for where it stands: `await` or `return` outside a function.
func contextOnly(line string, col int) bool {
	if col < 1 || col > len(line)+1 {
		return false
	}
	rest := line[col-1:]
	return strings.HasPrefix(rest, "await") || strings.HasPrefix(rest, "return") || strings.HasPrefix(rest, "for await")
}

// parseLocation splits v8go's "name:line:column".
func parseLocation(loc string) (line, col int, ok bool) {
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 0, 0, false
	}
	line, err1 := strconv.Atoi(parts[len(parts)-2])
	col, err2 := strconv.Atoi(parts[len(parts)-1])
	return line, col, err1 == nil && err2 == nil
}
