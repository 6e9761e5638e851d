package estate_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
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
// standing the test sets and a handler that answers "<node>:<body>".
type dataNode struct {
	name  string
	srv   *estate.Server
	out   atomic.Pointer[engine.Refusal]
	calls atomic.Int64
	hang  chan struct{} // non-nil: calls wait on it
}

func startDataNode(t *testing.T, url, name string, hang chan struct{}) *dataNode {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token("estate-test-token"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	d := &dataNode{name: name, hang: hang}
	d.srv, err = estate.Serve(estate.ServerConfig{Conn: nc, Node: name,
		Standing: func() *engine.Refusal { return d.out.Load() },
		Handle: func(ctx context.Context, body []byte) []byte {
			d.calls.Add(1)
			if d.hang != nil {
				// Deaf to ctx: answering when the caller's budget ends
				// would race the caller's own deadline.
				<-d.hang
			}
			return []byte(name + ":" + string(body))
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

func call(t *testing.T, c *estate.Client, body string, exclude ...string) estate.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Call(ctx, []byte(body), exclude...)
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

	// The first is back in service; excluding the third sends it there.
	nodes[first].out.Store(nil)
	if got := call(t, c, "e", third).Node; got != first {
		t.Fatalf("excluding %s, the call went to %s, want %s", third, got, first)
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
	_, err := c.Call(ctx, []byte("f"))
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
// refused at once; a node that takes a call and does not answer in time
// is named, and the call is not sent anywhere else (it may have run).
func TestNoDataNodeAndNoAnswer(t *testing.T) {
	_, url := broker(t)
	var logs syncBuf
	c := join(t, url, &logs)
	start := time.Now()
	_, err := c.Call(context.Background(), []byte("x"))
	var none *estate.NoDataNode
	if !errors.As(err, &none) || len(none.OutOfService) != 0 {
		t.Fatalf("no data node: %v", err)
	}
	if time.Since(start) > estate.DefaultHelloWait {
		t.Logf("no responders was not reported at once (%v); the hello timed out instead", time.Since(start))
	}

	hang := make(chan struct{})
	defer close(hang)
	slow := startDataNode(t, url, "slow", hang)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = c.Call(ctx, []byte("y"))
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
