package mcptest

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

type answer struct {
	Items []string `json:"items"`
	Level string   `json:"level"`
}

func TestCheckStructured(t *testing.T) {
	tool := mcp.NewTool("t", mcp.WithOutputSchema[answer]())
	if err := CheckStructured(tool, answer{Items: []string{}, Level: "stale"}); err != nil {
		t.Fatalf("a valid answer was refused: %v", err)
	}
	// A Go nil slice is JSON null: not the array the schema names. (The
	// tools answer [] for an empty list for this reason.)
	tool.OutputSchema.Properties["items"] = map[string]any{"type": "array"}
	if err := CheckStructured(tool, answer{Level: "stale"}); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("a null array passed: %v", err)
	}
	if err := CheckStructured(tool, map[string]any{"refused": "not_found", "message": "m"}); err == nil {
		t.Fatal("a refusal object passed as the answer: it lacks the required fields")
	}
	if err := CheckStructured(mcp.NewTool("bare"), map[string]any{"x": 1}); err != nil {
		t.Fatalf("a tool without an output schema: %v", err)
	}
}
