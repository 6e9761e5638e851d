// Package mcptest checks tool results the way the official MCP SDK
// clients check them, for the tests of the tools and of the binary: a
// success's structured content must validate against the tool's output
// schema (the TypeScript SDK throws -32602 before its caller sees one
// that does not). It is for tests only.
package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CheckStructured validates structured against tool's output schema as
// tools/list publishes it. A tool without an output schema passes.
func CheckStructured(tool mcp.Tool, structured any) error {
	raw := tool.RawOutputSchema
	if len(raw) == 0 {
		if tool.OutputSchema.Type == "" {
			return nil
		}
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			return fmt.Errorf("output schema of %s: %w", tool.Name, err)
		}
		raw = b
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("output schema of %s: %w", tool.Name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem://" + tool.Name + ".json"
	if err := c.AddResource(url, schemaDoc); err != nil {
		return fmt.Errorf("output schema of %s: %w", tool.Name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("output schema of %s does not compile: %w", tool.Name, err)
	}
	b, err := json.Marshal(structured)
	if err != nil {
		return fmt.Errorf("structured content of %s: %w", tool.Name, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("structured content of %s: %w", tool.Name, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("structured content of %s does not match its output schema: %v\n%s", tool.Name, err, b)
	}
	return nil
}
