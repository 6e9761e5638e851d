//go:build integration

package estate_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
)

// TestUnansweredCallMovesOnlyWhenResendable: node a takes every call and
// never answers; b is out of service until a has taken the call (so a is
// the one asked first, and b is sound by the time a's attempt times out).
// A call that is not resendable is answered NoAnswer naming a and never
// reaches b; a resendable one is offered to b, which answers it. With b
// out of service throughout, a resendable call that a took is answered
// NoAnswer (it may have run), not NoDataNode (which says it ran nowhere).
func TestUnansweredCallMovesOnlyWhenResendable(t *testing.T) {
	_, url := broker(t)
	hang := make(chan struct{})
	defer close(hang)
	b := &dataNode{name: "b"}
	var freeB atomic.Bool
	a := &dataNode{name: "a", hang: hang, taken: func() {
		if freeB.Load() {
			b.out.Store(nil)
		}
	}}
	out := engine.Refuse(engine.CodeStalled, "applier stuck")
	b.out.Store(out)
	startNode(t, url, a)
	startNode(t, url, b)
	var logs syncBuf
	c := join(t, url, &logs)
	// Far past how long a takes to start on a call, so b is sound before
	// a's attempt ends; the test asserts no duration.
	c.SetAttemptTimeout(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	freeB.Store(true)
	_, err := c.Call(ctx, estate.Call{Body: []byte("w")})
	var na *estate.NoAnswer
	if !errors.As(err, &na) || na.Node != "a" {
		t.Fatalf("not resendable: %v, want NoAnswer naming a", err)
	}
	if a.calls.Load() != 1 || b.calls.Load() != 0 {
		t.Fatalf("not resendable: a ran %d, b ran %d; want 1 and 0", a.calls.Load(), b.calls.Load())
	}
	if !strings.Contains(logs.String(), `"msg":"estate_call_unanswered"`) || !strings.Contains(logs.String(), `"data_node":"a"`) {
		t.Fatalf("no estate_call_unanswered naming a:\n%s", logs.String())
	}

	b.out.Store(out)
	r, err := c.Call(ctx, estate.Call{Body: []byte("r"), Resendable: true})
	if err != nil || r.Node != "b" || string(r.Body) != "b:r" {
		t.Fatalf("resendable: %q by %q, %v; want b's answer", r.Body, r.Node, err)
	}
	if a.calls.Load() != 2 || b.calls.Load() != 1 {
		t.Fatalf("resendable: a ran %d, b ran %d; want 2 and 1", a.calls.Load(), b.calls.Load())
	}

	// b out of service throughout: the one node that took the call may
	// have run it, and that is the answer.
	freeB.Store(false)
	b.out.Store(out)
	_, _, err = c.Forward(ctx, []byte("s"), true, nil)
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeBrokerUnreachable || !strings.Contains(ref.Message, "data node a ") ||
		!strings.Contains(ref.Message, "may have run") {
		t.Fatalf("resendable, no node left: %v, want the refusal saying a may have run it", err)
	}
	if a.calls.Load() != 3 || b.calls.Load() != 1 {
		t.Fatalf("no node left: a ran %d, b ran %d; want 3 and 1", a.calls.Load(), b.calls.Load())
	}
}
