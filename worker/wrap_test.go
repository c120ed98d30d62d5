package worker

import (
	"strings"
	"testing"
)

func TestReturnLast(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{"const r = await f(); [r.a, r.b]", "const r = await f(); return [r.a, r.b]"},
		{"await 1; (2)", "await 1; return (2)"},
		{"await 1; ((2)) // c", "await 1; return ((2)) // c"},
		{"await 1; ( {a: 1} );", "await 1; return ( {a: 1} );"},
		{"await 1;\n`t${1}`", "await 1;\nreturn `t${1}`"},
		{"await 1; -1", "await 1; return -1"},
		{"await 1; (1, 2);;", "await 1; return (1, 2);;"},
		{"await 1\n[1, 2]", "return await 1\n[1, 2]"},
		{"f() // (\n2", "f() // (\nreturn 2"}, // a paren in a comment is not the statement's
		{"(f()) /* ) ( */ ;\n((2))", "(f()) /* ) ( */ ;\nreturn ((2))"},
		{"(a)\n(b)", "return (a)\n(b)"},
		{"await 1;;", "return await 1;;"},
		{"\u00e9 = await 1; \u00e9", "\u00e9 = await 1; return \u00e9"},
	} {
		got, ok := returnLast(c.code)
		if want := bodyPrefix + c.want + bodySuffix; !ok || got != want {
			t.Errorf("returnLast(%q) = %q, %v; want %q", c.code, got, ok, want)
		}
	}
	for _, code := range []string{"await 1; return 2", "await 1; const a = 2", "await 1; if (a) { 2 }", "await 1; {a: 1}", "for await (const x of y) {}; 1"} {
		if got, ok := returnLast(code); ok {
			t.Errorf("returnLast(%q) = %q; want none", code, got)
		}
	}
}

func TestSyntaxError(t *testing.T) {
	for _, c := range []struct{ code, bodyMsg, bodyLoc, scriptMsg, scriptLoc, want string }{
		// Inside the user's lines: theirs, one line up.
		{"a;\nlet b = )", "SyntaxError: Unexpected token ')'", "code.js:3:9", "SyntaxError: Unexpected token ')'", "code.js:2:9", "SyntaxError: Unexpected token ')' (line 2, column 9)"},
		// At the wrapper: the script's error, or the end of the user's input.
		{"1+", "SyntaxError: Unexpected token '}'", "code.js:3:1", "SyntaxError: Unexpected end of input", "code.js:1:3", "SyntaxError: Unexpected end of input (line 1, column 3)"},
		{"1 }", "SyntaxError: Unexpected token '}'", "code.js:3:1", "SyntaxError: Unexpected token '}'", "code.js:1:3", "SyntaxError: Unexpected token '}' (line 1, column 3)"},
		{"await 1 +\n\n", "SyntaxError: Unexpected token '}'", "code.js:5:1", "SyntaxError: await is only valid in async functions and the top level bodies of modules", "code.js:1:1", "SyntaxError: Unexpected end of input (line 1, column 10)"},
		{"x;\nreturn (", "SyntaxError: Unexpected token '}'", "code.js:4:1", "SyntaxError: Illegal return statement", "code.js:2:1", "SyntaxError: Unexpected end of input (line 2, column 9)"},
	} {
		if got := syntaxError(c.code, c.bodyMsg, c.bodyLoc, c.scriptMsg, c.scriptLoc); got != c.want {
			t.Errorf("syntaxError(%q) = %q; want %q", c.code, got, c.want)
		}
		if strings.Contains(c.want, "'}'") && !strings.Contains(c.code, "}") {
			t.Errorf("%q: the wanted error names a token the code does not have", c.code)
		}
	}
}
