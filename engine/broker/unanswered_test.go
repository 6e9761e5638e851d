//go:build integration

package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// lossyLog is a log of its own (a 1 MiB ceiling) holding n records on a
// real embedded broker whose connection runs through a proxy that loses
// answers, and a caller's context of a minute: far longer than a round.
func lossyLog(t *testing.T, name string, n int) (*broker.Log, *enginetest.AckDropper, context.Context) {
	b, proxy := startDriftBroker(t)
	r := newDriftRig(t, b, proxy, name)
	r.publish(n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return r.log("n1", enginetest.NewRecorder()), proxy, ctx
}

// TestUnansweredInfoEndsWithItsRound: a stream info request whose answer
// never comes (as one sent while the stream elects a leader gets none)
// ends with its own round of broker.RequestWait, not with the caller's
// far longer context, so the caller can ask again; asked again, it is
// answered. The answer is lost for real, by a proxy on the connection.
func TestUnansweredInfoEndsWithItsRound(t *testing.T) {
	l, proxy, ctx := lossyLog(t, "INFO", 2)
	proxy.DropAPIOf("stream_info_response", 1)
	if _, err := l.Info(ctx); err == nil {
		t.Fatal("an info request whose answer was lost answered")
	}
	if ctx.Err() != nil {
		t.Fatal("the unanswered info request held the caller's whole context")
	}
	info, err := l.Info(ctx)
	if err != nil || info.LastSeq != 2 {
		t.Fatalf("asked again: %+v %v, want the log ending at 2", info, err)
	}
}

// TestPurgeAskedAgain: a purge whose answer is lost (it landed) is asked
// again within the caller's context and answers success, the second
// purge removing nothing more: the log starts just past the floor.
func TestPurgeAskedAgain(t *testing.T) {
	l, proxy, ctx := lossyLog(t, "PURGE", 5)
	proxy.DropAPIOf("stream_purge_response", 1)
	if err := l.PurgeThrough(ctx, 3); err != nil {
		t.Fatalf("purge through 3 with its first answer lost: %v", err)
	}
	info, err := l.Info(ctx)
	if err != nil || info.FirstSeq != 4 || info.LastSeq != 5 {
		t.Fatalf("after the purge: %+v %v, want the log holding 4 and 5", info, err)
	}
}

// TestCeilingChangeSettledFromTheStream: a ceiling change whose answer is
// lost (it landed) is read back rather than reported failed: SetMaxBytes
// answers success with the ceiling before, and the stream holds the new
// one.
func TestCeilingChangeSettledFromTheStream(t *testing.T) {
	l, proxy, ctx := lossyLog(t, "CEILING", 0)
	proxy.DropAPIOf("stream_update_response", 1)
	before, _, err := l.SetMaxBytes(ctx, 2<<20)
	if err != nil || before != 1<<20 {
		t.Fatalf("raise to 2 MiB with its answer lost: before %d, %v; want success from 1 MiB", before, err)
	}
	info, err := l.Info(ctx)
	if err != nil || info.MaxBytes != 2<<20 {
		t.Fatalf("after the raise: %+v %v, want a ceiling of 2 MiB", info, err)
	}
}
