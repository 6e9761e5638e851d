package tools

import (
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// PromptArg is a prompt's required argument, checked as the tools check
// it (check names the argument in its refusal).
func PromptArg(req mcp.GetPromptRequest, name string, check func(string, string) *engine.Refusal) (string, error) {
	v := strings.TrimSpace(req.Params.Arguments[name])
	if v == "" {
		return "", ResourceError(engine.Refuse(engine.CodeInvalidArgument, "the prompt %s takes the argument %s; send it (completion/complete suggests values).", req.Params.Name, name))
	}
	if r := check(name, v); r != nil {
		return "", ResourceError(r)
	}
	return v, nil
}

// PromptResult is a prompt's answer: one user message of text.
func PromptResult(desc, text string) *mcp.GetPromptResult {
	return mcp.NewGetPromptResult(desc, []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text))})
}
