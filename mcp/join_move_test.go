package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
	"github.com/crewlet/crewlet/tools"
)

// scriptedEstate answers each call from the first of its nodes not
// excluded, with that node's scripted tool result.
type scriptedEstate struct {
	order   []string
	answers map[string]*mcpgo.CallToolResult
	asked   []string
	bodies  [][]byte
}

func (e *scriptedEstate) Call(_ context.Context, body []byte, exclude ...string) (estate.Reply, error) {
	e.bodies = append(e.bodies, body)
	for _, n := range e.order {
		if slices.Contains(exclude, n) {
			continue
		}
		e.asked = append(e.asked, n)
		res, err := json.Marshal(e.answers[n])
		if err != nil {
			return estate.Reply{}, err
		}
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": json.RawMessage(res)})
		return estate.Reply{Node: n, Body: body}, err
	}
	return estate.Reply{}, &estate.NoDataNode{}
}

// TestJoinedCallMovesOnlyOnRefusalsAboutTheNode: the joined forwarder
// reads a data node's refusal off the wire (tools.RefusalOf) and offers
// the call to the next node only for a refusal about the answering node
// (stalled, behind, ...); a refusal about the call (not_found), and an
// eviction refusal naming a position, are the answer.
func TestJoinedCallMovesOnlyOnRefusalsAboutTheNode(t *testing.T) {
	ok := tools.Answer(map[string]any{"projects": []any{}, "level": "linearizable"})
	evictedAt := engine.Refuse(engine.CodeEvicted, "evicted before the append.")
	evictedAt.Position = &engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: 9}
	cases := []struct {
		name      string
		first     *mcpgo.CallToolResult
		wantAsked []string
		wantNode  string
		wantCode  string
	}{
		{"stalled moves", tools.Refused(engine.Refuse(engine.CodeStalled, "this copy is stalled.")), []string{"n1", "n2"}, "n2", ""},
		{"behind moves", tools.Refused(engine.Refuse(engine.CodeBehind, "behind.")), []string{"n1", "n2"}, "n2", ""},
		{"not_found stays", tools.Refused(engine.Refuse(engine.CodeNotFound, "no such item.")), []string{"n1"}, "n1", "not_found"},
		{"evicted at a position stays", tools.Refused(evictedAt), []string{"n1"}, "n1", "evicted"},
		{"a success stays", ok, []string{"n1"}, "n1", ""},
	}
	var tool mcpgo.Tool
	for _, d := range tools.Definitions(tools.Operator) {
		if d.Name == tools.NameListProjects {
			tool = d
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := &scriptedEstate{order: []string{"n1", "n2"}, answers: map[string]*mcpgo.CallToolResult{"n1": c.first, "n2": ok}}
			h := joinForward(es, tool, JoinOptions{AttemptTimeout: DefaultAttemptTimeout}, testLogger(t))
			var req mcpgo.CallToolRequest
			req.Params.Name = tools.NameListProjects
			res, err := h(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(es.asked, c.wantAsked) {
				t.Errorf("asked %v, want %v", es.asked, c.wantAsked)
			}
			if n := dataNodeOf(t, res); n != c.wantNode {
				t.Errorf("answered by %s, want %s", n, c.wantNode)
			}
			m := object(t, res)
			if code, _ := m["refused"].(string); code != c.wantCode {
				t.Errorf("refused %q, want %q: %s", code, c.wantCode, textOf(res))
			}
		})
	}
}

// TestJoinedCallForwardsTheBytesItGot: the joined forwarder sends the
// arguments' bytes as the caller sent them (text that is not UTF-8 and a
// lone surrogate escape reach the data node's check, not U+FFFD), adding
// an op_id it mints where the caller brought none, or null.
func TestJoinedCallForwardsTheBytesItGot(t *testing.T) {
	var tool mcpgo.Tool
	for _, d := range tools.Definitions(tools.Operator) {
		if d.Name == tools.NameCreateProject {
			tool = d
		}
	}
	for _, raw := range []string{
		`{"key":"ENG","name":"a` + "\xff" + `b\ud800c"}`,
		`{"key":"ENG","name":"a` + "\xff" + `b\ud800c","op_id":null}`,
	} {
		es := &scriptedEstate{order: []string{"n1"}, answers: map[string]*mcpgo.CallToolResult{"n1": tools.Answer(map[string]any{"outcome": "applied"})}}
		h := joinForward(es, tool, JoinOptions{AttemptTimeout: DefaultAttemptTimeout}, testLogger(t))
		var req mcpgo.CallToolRequest
		req.Params.Name = tools.NameCreateProject
		req.Params.RawArguments = json.RawMessage(raw)
		if _, err := h(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if len(es.bodies) != 1 {
			t.Fatalf("%d calls sent", len(es.bodies))
		}
		body := string(es.bodies[0])
		if !strings.Contains(body, `"name":"a`+"\xff"+`b\ud800c"`) {
			t.Errorf("the name's bytes changed on the way: %q", body)
		}
		var sent struct {
			Params struct {
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(es.bodies[0], &sent); err != nil {
			t.Fatal(err)
		}
		if id, _ := sent.Params.Arguments["op_id"].(string); id == "" {
			t.Errorf("no op_id minted: %q", body)
		}
	}
}
