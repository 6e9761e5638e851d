package fleettest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
)

// The kinds of node a failover run kills.
const (
	// CaseStreamLeader is the tracker stream's leader.
	CaseStreamLeader = "stream_leader"
	// CaseReaderLeader is a node leading another node's consumer and not
	// the stream.
	CaseReaderLeader = "reader_leader"
	// CaseLeadsNothing leads neither the stream nor another's consumer.
	CaseLeadsNothing = "leads_nothing"
)

// ErrCaseAbsent is a case no running node is in, where the run was not
// asked to arrange one.
var ErrCaseAbsent = errors.New("no node is in this case")

// PickVictim picks the node to kill for kase from who leads what now;
// with arrange it moves leaders with preferred stepdowns to make one
// where none is (a consumer onto the victim, or off it).
func PickVictim(ctx context.Context, c *Cluster, kase string, arrange bool) (int, Roles, error) {
	r, err := ReadRoles(ctx, c)
	if err != nil {
		return -1, r, err
	}
	if r.Stream < 0 {
		return -1, r, fmt.Errorf("the stream has no leader: %s", r)
	}
	match := func(i int) bool {
		switch kase {
		case CaseStreamLeader:
			return i == r.Stream
		case CaseReaderLeader:
			return i != r.Stream && len(r.LeadsReaders(i)) > 0
		default:
			return i != r.Stream && len(r.LeadsReaders(i)) == 0
		}
	}
	for i := 0; i < c.Size(); i++ {
		if match(i) {
			return i, r, nil
		}
	}
	if !arrange {
		return -1, r, fmt.Errorf("%w: %s (%s)", ErrCaseAbsent, kase, r)
	}
	v := (r.Stream + 1) % c.Size()
	lg := c.Node(v).Log(engine.DomainTracker)
	for j := 0; j < c.Size(); j++ {
		switch {
		case j == v:
		case kase == CaseReaderLeader && j != r.Stream:
			err = lg.MoveReaderLead(ctx, c.Config(j).Name, c.Config(v).Name)
		case kase == CaseLeadsNothing && r.Readers[j] == v:
			err = lg.MoveReaderLead(ctx, c.Config(j).Name, c.Config(j).Name)
		}
		if errors.Is(err, broker.ErrReaderFixed) {
			// Readers that are one replica each on their own node's
			// server (broker's place.go) never lead another node's.
			return -1, r, fmt.Errorf("%w: %s: %v (%s)", ErrCaseAbsent, kase, err, r)
		}
		if err != nil {
			return -1, r, err
		}
	}
	if r, err = ReadRoles(ctx, c); err != nil {
		return -1, r, err
	}
	if !match(v) {
		return -1, r, fmt.Errorf("arranged n%d as %s and it is not: %s", v+1, kase, r)
	}
	return v, r, nil
}

// KillAndMeasure cuts node v off from its peers at once, as a SIGKILL
// would, then stops it, and measures what that cost the survivors under
// the load; it gives up waiting for their recovery after within.
func KillAndMeasure(c *Cluster, l *Load, v int, within time.Duration) (rec Recovery, err error) {
	t0 := time.Now()
	c.Isolate(v)
	stopped := make(chan struct{})
	go func() { c.Stop(v); close(stopped) }()
	defer func() { <-stopped; c.HealLinks() }()
	rec = Recovery{Victim: v, Counts: map[string]int{}}
	elected := watchElection(c, v, t0, within)
	defer func() { rec.Election = <-elected }()
	deadline := t0.Add(within)
	for {
		time.Sleep(50 * time.Millisecond)
		if tally, done := Tally(c.Size(), v, t0, l.Since(t0)); done {
			rec = tally // the deferred watch adds the election
			return rec, nil
		}
		if time.Now().After(deadline) {
			return rec, fmt.Errorf("the survivors of n%d's loss had not all recovered after %v", v+1, within)
		}
	}
}

// Tally is what the loss of node v at t0 cost the survivors, from the
// load's answers since t0; done once every survivor has recovered.
func Tally(size, v int, t0 time.Time, obs []Obs) (rec Recovery, done bool) {
	rec = Recovery{Victim: v, Counts: map[string]int{}}
	w, r, done := recovered(size, v, t0, obs)
	if !done {
		return rec, false
	}
	rec.Write, rec.Read = w.Sub(t0), r.Sub(t0)
	end := w
	if r.After(end) {
		end = r
	}
	for _, o := range obs {
		if o.Node == v || o.End.Before(t0) || o.End.After(end) {
			continue
		}
		rec.Counts[o.Outcome]++
		if o.Write && o.End.Sub(o.Start) > WriteBudget {
			rec.Stalled++
		}
	}
	return rec, true
}

// watchElection answers how long after t0 a survivor first named a
// stream leader other than the victim: the broker's own election, zero
// where the victim did not lead the stream.
func watchElection(c *Cluster, v int, t0 time.Time, within time.Duration) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	lg := c.Node((v + 1) % c.Size()).Log(engine.DomainTracker)
	victim := c.Config(v).Name
	go func() {
		for time.Since(t0) < within {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			lead, err := lg.StreamLead(ctx)
			cancel()
			if err == nil && lead.Leader != "" && lead.Leader != victim {
				if lead.Since.Before(t0) {
					out <- 0
				} else {
					out <- time.Since(t0)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		out <- within
	}()
	return out
}

// recovered finds, on every survivor, the first applied write and the
// first answered linearizable read started at or after t0, and answers
// the latest end of each; done once every survivor has both.
func recovered(size, victim int, t0 time.Time, obs []Obs) (write, read time.Time, done bool) {
	for i := 0; i < size; i++ {
		if i == victim {
			continue
		}
		var w, r time.Time
		for _, o := range obs {
			if o.Node != i || o.Start.Before(t0) {
				continue
			}
			if o.Write && o.Outcome == string(engine.Applied) && (w.IsZero() || o.End.Before(w)) {
				w = o.End
			}
			if !o.Write && o.Outcome == "ok" && (r.IsZero() || o.End.Before(r)) {
				r = o.End
			}
		}
		if w.IsZero() || r.IsZero() {
			return time.Time{}, time.Time{}, false
		}
		if w.After(write) {
			write = w
		}
		if r.After(read) {
			read = r
		}
	}
	return write, read, true
}

// Rejoin starts node v again on its data directory and waits until a
// linearizable read answers on every node.
func Rejoin(c *Cluster, v int) error {
	if err := c.Start(v); err != nil {
		// What the survivors' brokers say of the roles then: whether
		// anyone answers for the restarted node's reader.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, rerr := ReadRoles(ctx, c)
		return fmt.Errorf("restart n%d: %w (roles read from the survivors: %v, %v)", v+1, err, r, rerr)
	}
	return c.Settle(2 * time.Minute)
}
