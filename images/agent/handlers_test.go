package agent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"napilab/internal/wire"
)

// TestEveryOpHasAHandler reads the Op constants of the wire package and
// checks that the agent handles each, and nothing else.
func TestEveryOpHasAHandler(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../internal/wire/wire.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		v, ok := n.(*ast.ValueSpec)
		if !ok || len(v.Names) != 1 || len(v.Values) != 1 || !strings.HasPrefix(v.Names[0].Name, "Op") {
			return true
		}
		if lit, ok := v.Values[0].(*ast.BasicLit); ok {
			op, _ := strconv.Unquote(lit.Value)
			ops[op] = true
		}
		return true
	})
	if len(ops) < 20 {
		t.Fatalf("found %d ops in wire.go, want them all", len(ops))
	}
	for op := range ops {
		if handlers[op] == nil {
			t.Errorf("op %q has no handler", op)
		}
	}
	for op := range handlers {
		if !ops[op] {
			t.Errorf("handler for %q, which wire does not declare", op)
		}
	}
	if _, err := newAgent().dispatch(&wire.Message{Op: "nosuch"}); err == nil || err.Error() != `unknown op "nosuch"` {
		t.Errorf("unknown op: %v", err)
	}
}
