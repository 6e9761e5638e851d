package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// dataNodeOf names the data node that answered a call of a node without
// data.
func dataNodeOf(t *testing.T, res *mcpgo.CallToolResult) string {
	t.Helper()
	if res.Meta == nil {
		t.Fatalf("no _meta naming the data node: %s", textOf(res))
	}
	n, _ := res.Meta.GetMetaField(MetaDataNode).(string)
	if n == "" {
		t.Fatalf("_meta names no data node: %+v", res.Meta.AdditionalFields)
	}
	return n
}

// rpcAnswer is res as a data node's estate answer: a JSON-RPC response.
func rpcAnswer(t *testing.T, res *mcpgo.CallToolResult) []byte {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": json.RawMessage(b)})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// natsURL starts a bare nats-server on a loopback port.
func natsURL(t *testing.T) string {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

func natsConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestJoinedCallMovesOnlyOnRefusalsAboutTheNode: two data nodes serve the
// estate; the first to take a call answers it with a scripted tool result
// and the other answers a success. The joined server reads the refusal
// off the wire (the MCP result, through tools.RefusalOf) and the estate
// client offers the call to the next node only for a refusal about the
// answering node (stalled, behind, ...); a refusal about the call
// (not_found), and an eviction refusal naming a position, are the answer,
// named in _meta by the node that gave it.
func TestJoinedCallMovesOnlyOnRefusalsAboutTheNode(t *testing.T) {
	url := natsURL(t)
	ok := tools.Answer(map[string]any{"projects": []any{}, "level": "linearizable"})
	okBody := rpcAnswer(t, ok)
	var script struct {
		sync.Mutex
		first []byte
		asked []string
	}
	for _, n := range []string{"n1", "n2"} {
		n := n
		s, err := estate.Serve(estate.ServerConfig{Conn: natsConn(t, url), Node: n,
			Standing: func() *engine.Refusal { return nil },
			Handle: func(context.Context, []byte) []byte {
				script.Lock()
				defer script.Unlock()
				script.asked = append(script.asked, n)
				if len(script.asked) == 1 {
					return script.first
				}
				return okBody
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
	}
	cl := inProcess(t, NewJoinedServer(estate.NewClient(natsConn(t, url), testLogger(t)), definitions(), "test", testLogger(t)))

	evictedAt := engine.Refuse(engine.CodeEvicted, "evicted before the append.")
	evictedAt.Position = &engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: 9}
	cases := []struct {
		name     string
		first    *mcpgo.CallToolResult
		moves    bool
		wantCode string
	}{
		{"stalled moves", tools.Refused(engine.Refuse(engine.CodeStalled, "this copy is stalled.")), true, ""},
		{"behind moves", tools.Refused(engine.Refuse(engine.CodeBehind, "behind.")), true, ""},
		{"not_found stays", tools.Refused(engine.Refuse(engine.CodeNotFound, "no such item.")), false, "not_found"},
		{"evicted at a position stays", tools.Refused(evictedAt), false, "evicted"},
		{"a success stays", ok, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			script.Lock()
			script.first, script.asked = rpcAnswer(t, c.first), nil
			script.Unlock()
			res := callTool(t, cl, trackertools.NameListProjects, map[string]any{})
			script.Lock()
			asked := slices.Clone(script.asked)
			script.Unlock()
			want := asked[0]
			if c.moves {
				if len(asked) != 2 || asked[1] == asked[0] {
					t.Fatalf("asked %v, want both nodes", asked)
				}
				want = asked[1]
			} else if len(asked) != 1 {
				t.Fatalf("asked %v, want the first only", asked)
			}
			if n := dataNodeOf(t, res); n != want {
				t.Errorf("answered by %s, want %s", n, want)
			}
			m := object(t, res)
			if code, _ := m["refused"].(string); code != c.wantCode {
				t.Errorf("refused %q, want %q: %s", code, c.wantCode, textOf(res))
			}
		})
	}
}

// TestAnswerRefusal: a data node's answer is read as the refusal it
// carries, with a position wherever the answer names one (even one that
// is not a position object: its presence alone keeps a call where it
// is); a success, a JSON-RPC error and bytes that are no answer carry
// none.
func TestAnswerRefusal(t *testing.T) {
	at := engine.Refuse(engine.CodeEvicted, "gated.")
	at.Position = &engine.Position{Stream: engine.StreamTracker, Generation: 2, Seq: 9}
	r := answerRefusal(rpcAnswer(t, tools.Refused(at)))
	if r == nil || r.Code != engine.CodeEvicted || r.Message != "gated." || r.Position == nil || *r.Position != *at.Position {
		t.Fatalf("evicted at a position read as %+v", r)
	}
	if engine.TryElsewhere(r) {
		t.Fatal("an eviction naming its position moves")
	}
	r = answerRefusal(rpcAnswer(t, tools.Refused(engine.Refuse(engine.CodeStalled, "stalled."))))
	if r == nil || r.Code != engine.CodeStalled || r.Position != nil || !engine.TryElsewhere(r) {
		t.Fatalf("stalled read as %+v", r)
	}
	odd := rpcAnswer(t, &mcpgo.CallToolResult{IsError: true, Content: []mcpgo.Content{mcpgo.NewTextContent(`{"refused":"evicted","message":"m","position":"CREWLET_TRACKER_LOG@1:9"}`)}})
	if r := answerRefusal(odd); r == nil || r.Position == nil {
		t.Fatalf("an eviction naming a position as a token read as %+v", r)
	}
	for name, b := range map[string][]byte{
		"a success":        rpcAnswer(t, tools.Answer(map[string]any{"projects": []any{}})),
		"a JSON-RPC error": []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`),
		"no answer":        []byte("not json"),
		"empty":            nil,
	} {
		if r := answerRefusal(b); r != nil {
			t.Errorf("%s read as refusal %+v", name, r)
		}
	}
}

// recordingForwarder records what the joined server forwards and answers
// it from n1 with answer.
type recordingForwarder struct {
	answer     []byte
	bodies     [][]byte
	resendable []bool
}

func (f *recordingForwarder) Forward(_ context.Context, body []byte, resendable bool, _ func([]byte) *engine.Refusal) (string, []byte, error) {
	f.bodies = append(f.bodies, body)
	f.resendable = append(f.resendable, resendable)
	return "n1", f.answer, nil
}

// TestJoinedCallForwardsTheBytesItGot: the joined forwarder sends the
// arguments' bytes as the caller sent them (text that is not UTF-8 and a
// lone surrogate escape reach the data node's check, not U+FFFD), adding
// an op_id it mints where the caller brought none, or null; a write under
// an op_id is resendable.
func TestJoinedCallForwardsTheBytesItGot(t *testing.T) {
	var tool mcpgo.Tool
	for _, d := range definitions().Definitions(tools.Operator, tools.Filter{}) {
		if d.Name == trackertools.NameCreateProject {
			tool = d
		}
	}
	for _, raw := range []string{
		`{"key":"ENG","name":"a` + "\xff" + `b\ud800c"}`,
		`{"key":"ENG","name":"a` + "\xff" + `b\ud800c","op_id":null}`,
	} {
		fw := &recordingForwarder{answer: rpcAnswer(t, tools.Answer(map[string]any{"outcome": "applied"}))}
		h := joinForward(fw, tool, testLogger(t))
		var req mcpgo.CallToolRequest
		req.Params.Name = trackertools.NameCreateProject
		req.Params.RawArguments = json.RawMessage(raw)
		res, err := h(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if dataNodeOf(t, res) != "n1" {
			t.Errorf("answered by %s, want n1", dataNodeOf(t, res))
		}
		if len(fw.bodies) != 1 || !fw.resendable[0] {
			t.Fatalf("%d calls sent, resendable %v", len(fw.bodies), fw.resendable)
		}
		body := string(fw.bodies[0])
		if !strings.Contains(body, `"name":"a`+"\xff"+`b\ud800c"`) {
			t.Errorf("the name's bytes changed on the way: %q", body)
		}
		var sent struct {
			Params struct {
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(fw.bodies[0], &sent); err != nil {
			t.Fatal(err)
		}
		if id, _ := sent.Params.Arguments["op_id"].(string); id == "" {
			t.Errorf("no op_id minted: %q", body)
		}
	}
}

// refusingForwarder answers every call with its error.
type refusingForwarder struct{ err error }

func (f refusingForwarder) Forward(context.Context, []byte, bool, func([]byte) *engine.Refusal) (string, []byte, error) {
	return "", nil, f.err
}

// TestJoinedCallRendersTheForwardersRefusal: a refusal from the forwarder
// (no data node took the call) is the tool's refusal, as it is; an error
// that is not a refusal is answered internal, never its text.
func TestJoinedCallRendersTheForwardersRefusal(t *testing.T) {
	var tool mcpgo.Tool
	for _, d := range definitions().Definitions(tools.Operator, tools.Filter{}) {
		if d.Name == trackertools.NameListProjects {
			tool = d
		}
	}
	var req mcpgo.CallToolRequest
	req.Params.Name = trackertools.NameListProjects
	ref := engine.Refuse(engine.CodeNoDataNode, "nobody took it.").With("out_of_service", map[string]any{"n1": map[string]any{"refused": "stalled"}})
	res, err := joinForward(refusingForwarder{ref}, tool, testLogger(t))(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if m := object(t, res); !res.IsError || m["refused"] != string(engine.CodeNoDataNode) || m["retry_after_seconds"] == nil || m["out_of_service"] == nil {
		t.Fatalf("no data node: %s", textOf(res))
	}
	res, err = joinForward(refusingForwarder{context.DeadlineExceeded}, tool, testLogger(t))(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if m := object(t, res); !res.IsError || m["refused"] != string(engine.CodeInternal) || strings.Contains(textOf(res), "deadline") {
		t.Fatalf("a bare error: %s", textOf(res))
	}
}
