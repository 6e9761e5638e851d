package estate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
)

// broker starts a real nats-server on a loopback port with a client token.
func broker(t *testing.T) (*server.Server, string) {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, Authorization: "estate-test-token"})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns, ns.ClientURL()
}

// dataNode is one data node's estate server on its own connection, with a
// standing the test sets and a handler that answers "<node>:<body>", or
// what answer says where it is set.
type dataNode struct {
	name   string
	srv    *estate.Server
	out    atomic.Pointer[engine.Refusal]
	calls  atomic.Int64
	hang   chan struct{}            // non-nil: calls wait on it
	taken  func()                   // non-nil: runs as a call is taken, before it hangs
	answer func(body []byte) []byte // non-nil: the answer
}

func startDataNode(t *testing.T, url, name string, hang chan struct{}) *dataNode {
	t.Helper()
	return startNode(t, url, &dataNode{name: name, hang: hang})
}

func startNode(t *testing.T, url string, d *dataNode) *dataNode {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token("estate-test-token"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	d.srv, err = estate.Serve(estate.ServerConfig{Conn: nc, Node: d.name,
		Standing: func() *engine.Refusal { return d.out.Load() },
		Handle: func(ctx context.Context, body []byte) []byte {
			d.calls.Add(1)
			if d.taken != nil {
				d.taken()
			}
			if d.hang != nil {
				// Deaf to ctx: answering when the caller's budget ends
				// would race the caller's own deadline.
				<-d.hang
			}
			if d.answer != nil {
				return d.answer(body)
			}
			return []byte(d.name + ":" + string(body))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.srv.Close)
	return d
}

// syncBuf is a log sink the test reads while servers write.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func join(t *testing.T, url string, logs *syncBuf) *estate.Client {
	t.Helper()
	c, err := estate.Dial(estate.DialOptions{URLs: []string{url}, Token: "estate-test-token", Name: "joined",
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func call(t *testing.T, c *estate.Client, body string) estate.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Call(ctx, estate.Call{Body: []byte(body)})
	if err != nil {
		t.Fatalf("call %q: %v", body, err)
	}
	if want := r.Node + ":" + body; string(r.Body) != want {
		t.Fatalf("call %q answered %q by %s, want %q", body, r.Body, r.Node, want)
	}
	return r
}

// TestCallsMoveOffAnOutOfServiceNode: the first sound node to answer
// takes every call; when its copy goes out of service the next call moves
// to another, and the moved node is named in estate_call_moved; a node
// that stops altogether is left the same way; with every copy out of
// service the call is refused naming each node's refusal, having run
// nowhere.
func TestCallsMoveOffAnOutOfServiceNode(t *testing.T) {
	_, url := broker(t)
	nodes := map[string]*dataNode{}
	for _, n := range []string{"n1", "n2", "n3"} {
		nodes[n] = startDataNode(t, url, n, nil)
	}
	var logs syncBuf
	c := join(t, url, &logs)

	first := call(t, c, "a").Node
	for i := 0; i < 5; i++ {
		if got := call(t, c, "b").Node; got != first {
			t.Fatalf("call %d went to %s, not the node that first answered (%s)", i, got, first)
		}
	}

	nodes[first].out.Store(engine.Refuse(engine.CodeStalled, "applier stuck"))
	before := nodes[first].calls.Load()
	second := call(t, c, "c").Node
	if second == first {
		t.Fatalf("the call stayed on out-of-service %s", first)
	}
	if nodes[first].calls.Load() != before {
		t.Fatalf("out-of-service %s ran the call", first)
	}
	if !strings.Contains(logs.String(), `"msg":"estate_call_moved"`) || !strings.Contains(logs.String(), `"from":"`+first+`"`) ||
		!strings.Contains(logs.String(), `"reason":"stalled"`) {
		t.Fatalf("no estate_call_moved naming %s stalled:\n%s", first, logs.String())
	}

	// The second node stops altogether: its subscription goes with it.
	nodes[second].srv.Close()
	third := call(t, c, "d").Node
	if third == first || third == second {
		t.Fatalf("the call went to %s", third)
	}

	// The first is back in service and the third goes out: the call
	// moves back to the first.
	nodes[first].out.Store(nil)
	nodes[third].out.Store(engine.Refuse(engine.CodeBelowFloor, "records gone"))
	if got := call(t, c, "e").Node; got != first {
		t.Fatalf("with %s out of service, the call went to %s, want %s", third, got, first)
	}

	// Every copy out of service: refused, run nowhere, each one named.
	for _, n := range nodes {
		n.out.Store(engine.Refuse(engine.CodeEvicted, "evicted"))
	}
	var total int64
	for _, n := range nodes {
		total += n.calls.Load()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Call(ctx, estate.Call{Body: []byte("f"), Resendable: true})
	var none *estate.NoDataNode
	if !errors.As(err, &none) {
		t.Fatalf("all out of service: %v, want NoDataNode", err)
	}
	if len(none.OutOfService) != 2 || none.OutOfService[first]["refused"] != "evicted" {
		t.Fatalf("refusal names %v, want the two nodes still running, evicted", none.OutOfService)
	}
	var after int64
	for _, n := range nodes {
		after += n.calls.Load()
	}
	if after != total {
		t.Fatal("a call refused by every node ran somewhere")
	}
}

// TestNoDataNodeAndNoAnswer: with no data node listening a call is
// refused at once; a node that takes a call and does not answer before
// the caller's own deadline is named, and the call is not sent anywhere
// else, resendable or not (it may have run, and nobody waits any more).
func TestNoDataNodeAndNoAnswer(t *testing.T) {
	_, url := broker(t)
	var logs syncBuf
	c := join(t, url, &logs)
	start := time.Now()
	_, err := c.Call(context.Background(), estate.Call{Body: []byte("x"), Resendable: true})
	var none *estate.NoDataNode
	if !errors.As(err, &none) || len(none.OutOfService) != 0 {
		t.Fatalf("no data node: %v", err)
	}
	if time.Since(start) > estate.DefaultHelloWait {
		t.Logf("no responders was not reported at once (%v); the hello timed out instead", time.Since(start))
	}
	// Forwarded, the same is a refusal worth coming back for.
	_, _, err = c.Forward(context.Background(), []byte("x"), true, nil)
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeNoDataNode || ref.RetryAfter <= 0 {
		t.Fatalf("forwarded to no data node: %v", err)
	}

	hang := make(chan struct{})
	defer close(hang)
	slow := startDataNode(t, url, "slow", hang)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = c.Call(ctx, estate.Call{Body: []byte("y"), Resendable: true})
	var na *estate.NoAnswer
	if !errors.As(err, &na) || na.Node != "slow" {
		t.Fatalf("hanging node: %v, want NoAnswer naming slow", err)
	}
	if slow.calls.Load() != 1 {
		t.Fatalf("the hanging node ran %d calls, want 1", slow.calls.Load())
	}
}

// TestServerLogsItsService: a data node logs estate_withdrawn when its
// copy goes out of service and estate_restored when it is back.
func TestServerLogsItsService(t *testing.T) {
	_, url := broker(t)
	nc, err := nats.Connect(url, nats.Token("estate-test-token"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var logs syncBuf
	var out atomic.Pointer[engine.Refusal]
	s, err := estate.Serve(estate.ServerConfig{Conn: nc, Node: "n1", Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Standing: func() *engine.Refusal { return out.Load() },
		Handle:   func(context.Context, []byte) []byte { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out.Store(engine.Refuse(engine.CodeStalled, "disk full"))
	waitLog(t, &logs, `"msg":"estate_withdrawn"`)
	if !strings.Contains(logs.String(), `"refused":"stalled"`) || !strings.Contains(logs.String(), `"component":"estate"`) {
		t.Fatalf("estate_withdrawn lacks its fields:\n%s", logs.String())
	}
	out.Store(nil)
	waitLog(t, &logs, `"msg":"estate_restored"`)
}

func waitLog(t *testing.T, logs *syncBuf, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in:\n%s", want, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refusalOf reads the test nodes' refusals: the refusal object as JSON.
func refusalOf(answer []byte) *engine.Refusal {
	var r engine.Refusal
	if json.Unmarshal(answer, &r) != nil || r.Code == "" {
		return nil
	}
	return &r
}

func refusalJSON(t *testing.T, r *engine.Refusal) []byte {
	t.Helper()
	b, err := json.Marshal(r.Object())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCallsMoveOnRefusalsThatProveNothingRan: the first node to take a
// call answers it with a refusal and every other node answers "ok". A
// refusal the code table marks as proving the call ran nowhere there
// (stalled, behind, an eviction naming no position) moves the call and
// the next node's answer is the call's; one about the call or the fleet
// (not_found, maintenance) or an eviction naming the position its record
// landed at is the answer, and no other node is asked. When every node
// refuses so, the last refusal is the answer, each node asked once.
func TestCallsMoveOnRefusalsThatProveNothingRan(t *testing.T) {
	_, url := broker(t)
	script := &refusalScript{}
	for _, n := range []string{"n1", "n2", "n3"} {
		startNode(t, url, &dataNode{name: n, answer: script.answerAs(n)})
	}
	var logs syncBuf
	c := join(t, url, &logs)

	evictedAt := engine.Refuse(engine.CodeEvicted, "appended, then gated.")
	evictedAt.Position = &engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: 9}
	cases := []struct {
		name  string
		first []byte
		moves bool
	}{
		{"stalled moves", refusalJSON(t, engine.Refuse(engine.CodeStalled, "this copy is stalled.")), true},
		{"behind moves", refusalJSON(t, engine.Refuse(engine.CodeBehind, "behind.")), true},
		{"evicted before appending moves", refusalJSON(t, engine.Refuse(engine.CodeEvicted, "nothing was written.")), true},
		{"not_found stays", refusalJSON(t, engine.Refuse(engine.CodeNotFound, "no such item.")), false},
		{"maintenance stays", refusalJSON(t, engine.Refuse(engine.CodeMaintenance, "a capacity window.")), false},
		{"evicted at a position stays", refusalJSON(t, evictedAt), false},
		{"a success stays", []byte("fine"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script.set(tc.first, false)
			r := callRefusable(t, c)
			asked := script.askedNodes()
			want, wantNode := string(tc.first), asked[0]
			if tc.moves {
				want = "ok"
				if len(asked) != 2 || asked[1] == asked[0] {
					t.Fatalf("asked %v, want two nodes", asked)
				}
				wantNode = asked[1]
			} else if len(asked) != 1 {
				t.Fatalf("asked %v, want the first only", asked)
			}
			if string(r.Body) != want || r.Node != wantNode {
				t.Fatalf("answered %q by %s, want %q by %s", r.Body, r.Node, want, wantNode)
			}
		})
	}
	if !strings.Contains(logs.String(), `"msg":"estate_refusal_moved"`) || !strings.Contains(logs.String(), `"refused":"stalled"`) ||
		!strings.Contains(logs.String(), `"component":"estate"`) {
		t.Fatalf("no estate_refusal_moved naming stalled:\n%s", logs.String())
	}

	// Every node refuses stalled: the last refusal is the answer.
	script.set(refusalJSON(t, engine.Refuse(engine.CodeStalled, "stalled.")), true)
	r := callRefusable(t, c)
	asked := script.askedNodes()
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"n1", "n2", "n3"}) {
		t.Fatalf("asked %v, want each node once", asked)
	}
	if ref := refusalOf(r.Body); ref == nil || ref.Code != engine.CodeStalled || r.Node == "" {
		t.Fatalf("every node stalled: answered %q by %q, want a stalled refusal naming its node", r.Body, r.Node)
	}
}

// refusalScript is what the nodes of TestCallsMoveOnRefusalsThatProveNothingRan
// answer: the first node asked (or, with every, each) answers first, the
// others "ok"; asked is the nodes in the order they were asked.
type refusalScript struct {
	sync.Mutex
	first []byte // what the first node asked answers
	every bool   // every node answers it
	asked []string
}

// answerAs is node n's answer under the script.
func (s *refusalScript) answerAs(n string) func([]byte) []byte {
	return func([]byte) []byte {
		s.Lock()
		defer s.Unlock()
		s.asked = append(s.asked, n)
		if len(s.asked) == 1 || s.every {
			return s.first
		}
		return []byte("ok")
	}
}

// set starts a call's script afresh: nobody asked yet.
func (s *refusalScript) set(first []byte, every bool) {
	s.Lock()
	s.first, s.every, s.asked = first, every, nil
	s.Unlock()
}

func (s *refusalScript) askedNodes() []string {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.asked)
}

// callRefusable makes one call "q" through c, within ten seconds, whose
// answers refusalOf reads as refusals.
func callRefusable(t *testing.T, c *estate.Client) estate.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Call(ctx, estate.Call{Body: []byte("q"), Refusal: refusalOf})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
