package mcp

import (
	"context"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// TestResourceReadRefusals: a resource that does not exist, or a URI of
// no template, answers an error whose text is the refusal's object.
func TestResourceReadRefusals(t *testing.T) {
	n := realNode(t)
	c := inProcess(t, New(Options{Version: "test", Logger: testLogger(t)}, catalogueOf(n.Tracker(), n.Pages())))
	for uri, code := range map[string]string{
		"crewlet://work-items/ENG-9": string(engine.CodeNotFound),
		"crewlet://projects/NOPE":    string(engine.CodeNotFound),
		"crewlet://work-items/eng":   string(engine.CodeInvalidArgument),
	} {
		req := mcpgo.ReadResourceRequest{}
		req.Params.URI = uri
		_, err := c.ReadResource(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), `"refused":"`+code+`"`) {
			t.Errorf("read %s: %v, want a %s refusal", uri, err, code)
		}
	}
}
