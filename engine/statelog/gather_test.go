package statelog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// The gather tests pin when a small apply batch waits for more records
// and what ends the wait. The wait is set to an hour, so a case that
// returns at all returned for its reason, not for the timer.

const gatherDomain engine.Domain = "kv"

func gatherRecord(seq uint64) Delivery {
	return Delivery{StoredMsg: StoredMsg{Seq: seq, Subject: SubjectPrefix(gatherDomain) + fmt.Sprintf("item.%d", seq)}}
}

func gatherBarrier(seq uint64) Delivery {
	return Delivery{StoredMsg: StoredMsg{Seq: seq, Subject: BarrierSubject(gatherDomain)}}
}

// gatherReplica is a replica with underWay appends of its own under way.
func gatherReplica(underWay int) *Replica {
	r := &Replica{domain: gatherDomain, appends: newAppendsUnderWay()}
	r.gatherer.wait = time.Hour
	for range underWay {
		r.appends.begin()
	}
	return r
}

// gatherAsync runs gather on its own goroutine, as the applier would.
func gatherAsync(r *Replica, batch []Delivery, c chan Delivery) <-chan []Delivery {
	out := make(chan []Delivery, 1)
	go func() { out <- r.gather(context.Background(), batch, c) }()
	return out
}

// taken is what gather returned.
func taken(t *testing.T, out <-chan []Delivery) []Delivery {
	t.Helper()
	select {
	case got := <-out:
		return got
	case <-time.After(time.Minute): // a hang, against the hour's wait
		t.Fatal("gather is still waiting: what should have ended its wait did not")
		return nil
	}
}

func TestApplierGatherNeedsOwnAppendsUnderWay(t *testing.T) {
	t.Run("no append under way", func(t *testing.T) {
		r := gatherReplica(0)
		c := make(chan Delivery, 4)
		c <- gatherRecord(2)
		if got := taken(t, gatherAsync(r, []Delivery{gatherRecord(1)}, c)); len(got) != 1 || r.Stats().GatheredBatches != 0 {
			t.Fatalf("took %d records after %d waits; want the batch as it came, without a wait", len(got), r.Stats().GatheredBatches)
		}
	})
	t.Run("a batch holding a barrier", func(t *testing.T) {
		r := gatherReplica(3)
		got := taken(t, gatherAsync(r, []Delivery{gatherRecord(1), gatherBarrier(2)}, make(chan Delivery)))
		if len(got) != 2 || r.Stats().GatheredBatches != 0 {
			t.Fatalf("took %d records after %d waits; want no wait: a linearizable read waits on the barrier", len(got), r.Stats().GatheredBatches)
		}
	})
	t.Run("a full batch", func(t *testing.T) {
		r := gatherReplica(3)
		batch := make([]Delivery, 0, gatherBelow)
		for i := range gatherBelow {
			batch = append(batch, gatherRecord(uint64(i+1)))
		}
		if got := taken(t, gatherAsync(r, batch, make(chan Delivery))); len(got) != gatherBelow || r.Stats().GatheredBatches != 0 {
			t.Fatalf("took %d records after %d waits; want %d without a wait", len(got), r.Stats().GatheredBatches, gatherBelow)
		}
	})
}

func TestApplierGatherEnds(t *testing.T) {
	t.Run("when the batch is full", func(t *testing.T) {
		r := gatherReplica(3)
		c := make(chan Delivery)
		out := gatherAsync(r, []Delivery{gatherRecord(1)}, c)
		for i := 2; i <= gatherBelow; i++ {
			c <- gatherRecord(uint64(i)) // unbuffered: each is taken by the wait
		}
		if got := taken(t, out); len(got) != gatherBelow || r.Stats().GatheredBatches != 1 {
			t.Fatalf("took %d records after %d waits; want %d after one", len(got), r.Stats().GatheredBatches, gatherBelow)
		}
	})
	t.Run("when a barrier arrives", func(t *testing.T) {
		c := make(chan Delivery)
		out := gatherAsync(gatherReplica(3), []Delivery{gatherRecord(1)}, c)
		c <- gatherRecord(2)
		c <- gatherBarrier(3)
		if got := taken(t, out); len(got) != 3 || got[2].Seq != 3 {
			t.Fatalf("took %v; want records 1 and 2 and the barrier", got)
		}
	})
	t.Run("when the last append under way is answered", func(t *testing.T) {
		r := gatherReplica(2)
		c := make(chan Delivery)
		out := gatherAsync(r, []Delivery{gatherRecord(1)}, c)
		c <- gatherRecord(2)
		r.appends.end()
		select {
		case got := <-out:
			t.Fatalf("took %d records with an append still under way", len(got))
		case <-time.After(50 * time.Millisecond):
		}
		r.appends.end()
		if got := taken(t, out); len(got) != 2 {
			t.Fatalf("took %d records; want 2", len(got))
		}
	})
	t.Run("at gatherFor", func(t *testing.T) {
		r := gatherReplica(1)
		r.gatherer.wait = time.Millisecond
		c := make(chan Delivery, 1)
		if got := taken(t, gatherAsync(r, []Delivery{gatherRecord(1)}, c)); len(got) != 1 || r.Stats().GatheredBatches != 1 {
			t.Fatalf("took %d records after %d waits; want 1 after one", len(got), r.Stats().GatheredBatches)
		}
		// The timer is used again for the next wait.
		c <- gatherRecord(2)
		if got := taken(t, gatherAsync(r, []Delivery{gatherRecord(1)}, c)); len(got) != 2 || r.Stats().GatheredBatches != 2 {
			t.Fatalf("took %d records after %d waits; want 2 after two", len(got), r.Stats().GatheredBatches)
		}
	})
}
