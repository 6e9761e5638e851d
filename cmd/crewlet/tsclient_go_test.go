//go:build integration

package main

// The mcp-go client's run of the SDK plans (tsclient_test.go): the same
// steps and checks as harness.mjs, with its settle-after-a-hint retries.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/internal/mcptest"
	"github.com/crewlet/crewlet/tools"
)

// runGo runs p with mcp-go's client c, checking what the harness checks;
// mcp-go's client does not validate structured content against the
// output schema itself, so mcptest does it as the TypeScript SDK would.
func runGo(t *testing.T, c *client.Client, p plan) report {
	t.Helper()
	rep := report{SDK: "go"}
	ctx, cancel := context.WithTimeout(context.Background(), harnessTimeout)
	defer cancel()
	listed, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		rep.Fatal = "tools/list: " + err.Error()
		return rep
	}
	defs := map[string]mcpgo.Tool{}
	for _, d := range listed.Tools {
		rep.Tools = append(rep.Tools, d.Name)
		defs[d.Name] = d
	}
	vars := map[string]any{}
	for k, v := range p.Vars {
		vars[k] = v
	}
	for i, st := range p.Steps {
		r := result{I: i, Tool: st.Tool, Expect: st.Expect}
		args, err := expand(st.Args, vars)
		if err != nil {
			r.Detail = err.Error()
			rep.Results = append(rep.Results, r)
			continue
		}
		req := mcpgo.CallToolRequest{}
		req.Params.Name = st.Tool
		req.Params.Arguments = args
		res, err := callSettled(ctx, c, defs[st.Tool], st, req)
		if err != nil {
			r.Detail = "threw: " + err.Error()
		} else {
			r.Detail = checkGoResult(defs[st.Tool], st, res, vars)
		}
		r.Pass = r.Detail == ""
		rep.Results = append(rep.Results, r)
	}
	return rep
}

// transientCodes are the refusals that say to come back after a while (a
// node catching up, a broker electing): harness.mjs's transient.
var transientCodes = map[string]bool{"behind": true, "no_quorum": true, "broker_unreachable": true}

// callSettled is harness.mjs's callSettled for mcp-go's client: a step
// that wants ok is called again after the hint while it is refused for a
// while, for up to a minute, as a client does: under load a node may be
// behind its own last write for longer than the read budget. A write comes
// back under the op_id its refusal named (where the tool takes one), so it
// is never written twice.
func callSettled(ctx context.Context, c *client.Client, def mcpgo.Tool, st step, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := c.CallTool(cctx, req)
		cancel()
		if err != nil || !res.IsError || st.Expect != expectOK || time.Now().After(deadline) || len(res.Content) == 0 {
			return res, err
		}
		tc, ok := mcpgo.AsTextContent(res.Content[0])
		if !ok {
			return res, nil
		}
		var r struct {
			Refused    string   `json:"refused"`
			RetryAfter *float64 `json:"retry_after_seconds"`
			OpID       string   `json:"op_id"`
		}
		if json.Unmarshal([]byte(tc.Text), &r) != nil || !transientCodes[r.Refused] || r.RetryAfter == nil {
			return res, nil
		}
		time.Sleep(time.Duration(max(*r.RetryAfter, 0.05) * float64(time.Second)))
		// The seat surface takes no op_id: the same call derives the same one.
		_, takesOpID := def.InputSchema.Properties["op_id"]
		if args, ok := req.Params.Arguments.(map[string]any); ok && takesOpID && r.OpID != "" && args["op_id"] == nil {
			again := maps.Clone(args)
			again["op_id"] = r.OpID
			req.Params.Arguments = again
		}
	}
}

// checkGoResult is harness.mjs's check for mcp-go's client: "" when res
// is what st expects, else why not.
func checkGoResult(def mcpgo.Tool, st step, res *mcpgo.CallToolResult, vars map[string]any) string {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			texts = append(texts, tc.Text)
		}
	}
	if st.Expect == expectOK {
		if res.IsError {
			return "refused: " + strings.Join(texts, " | ")
		}
		if res.StructuredContent == nil {
			return "a success without structured content"
		}
		if err := mcptest.CheckStructured(def, res.StructuredContent); err != nil {
			return err.Error()
		}
		if len(texts) != 1 {
			return fmt.Sprintf("a success with %d text contents, want 1", len(texts))
		}
		var fromText any
		if err := json.Unmarshal([]byte(texts[0]), &fromText); err != nil {
			return fmt.Sprintf("the text is not JSON (%v): %.200s", err, texts[0])
		}
		structured, _ := res.StructuredContent.(map[string]any)
		if !reflect.DeepEqual(fromText, res.StructuredContent) {
			return fmt.Sprintf("the text is not the structured content: %.300s vs %.300s", texts[0], mustJSON(res.StructuredContent))
		}
		if o, has := structured["outcome"]; has && o != "applied" && o != "pending" {
			return fmt.Sprintf("outcome %v: %.300s", o, texts[0])
		}
		for name, path := range st.Save {
			v := at(structured, path)
			if v == nil {
				return fmt.Sprintf("nothing at %s to save as %s: %.300s", path, name, texts[0])
			}
			vars[name] = v
		}
		return ""
	}
	if !res.IsError {
		return fmt.Sprintf("not refused (want %s): %.300s", st.Expect, strings.Join(texts, " | "))
	}
	if res.StructuredContent != nil {
		return "a refusal with structured content: " + mustJSON(res.StructuredContent)
	}
	if len(res.Content) != 1 || len(texts) != 1 {
		return fmt.Sprintf("a refusal with %d contents, want one text", len(res.Content))
	}
	obj, isRefusal := tools.RefusalOf(res)
	if !isRefusal {
		return fmt.Sprintf("the refusal's text is no refusal object: %.200s", texts[0])
	}
	if obj["refused"] != st.Expect {
		return fmt.Sprintf("refused %v, want %s: %.300s", obj["refused"], st.Expect, texts[0])
	}
	if msg, _ := obj["message"].(string); strings.TrimSpace(msg) == "" {
		return "a refusal without a message: " + texts[0]
	}
	return ""
}
