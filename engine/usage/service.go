// Package usage is the usage domain's service: each node's own record of
// what its surfaces served (per seat and company day: tool calls by tool
// and outcome, refusals by code, turns seen, a duration histogram, and
// the spend callers report), the days it derives from that record and
// publishes on the compacted usage log (CREWLET_USAGE_LOG) — every 15 s
// while the day moves, each object's whole cumulative value, today and
// yesterday re-derived on every tick and every day the local record holds
// on every start — and the fleet's usage read back from every node's
// days, which every node applies (usageapply).
//
// The domain gates no seats and decides nothing about the node's
// standing (Spec.Estate is false): a gap is a coverage number on the
// answer, never a fault.
package usage

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/usage/usageapply"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// The domain's names, as its record contract has them.
const (
	Name   = usagerec.Domain
	Stream = usagerec.Stream
)

// LogCeiling is the usage log's capacity ask: a fixed 1 GiB, a count of
// node-days, which more disk does not grow.
const LogCeiling = 1 << 30

// Spec is the usage domain as a node runs it: a compacted stream (one
// message a subject, 181 days), a fixed 1 GiB ask, no gate reserve, and
// no say in whether the node serves the estate.
var Spec = statelog.Spec{
	Domain:     usageapply.Domain{},
	Stream:     Stream,
	Compacted:  true,
	MaxAge:     usagerec.MaxAge,
	CeilingKey: usagerec.CeilingKey,
	Ask:        capacity.Fixed(LogCeiling),
	Estate:     false,
	Service:    func(r statelog.DomainReplica, clock engine.Clock) any { return NewService(r, clock) },
}

// PublishEvery is how often a node publishes its days while they move.
const PublishEvery = 15 * time.Second

// flushEvery is how often calls recorded in memory reach the local
// record: a kill loses at most this much.
const flushEvery = time.Second

// maxPending bounds the calls held in memory between two flushes.
const maxPending = 100_000

// Call is one tool call as a surface served it.
type Call struct {
	// At is when it ended (zero: now, on the service's clock).
	At time.Time
	// Seat is usagerec.SeatOf(name) for a seat's call, usagerec.Operator
	// for the operator's surfaces.
	Seat string
	// Unit is the seat's unit of work (Crewlet-Unit), "" elsewhere.
	Unit string
	Tool string
	// Outcome is applied, pending or unknown for a write, answered for a
	// read, refused or error.
	Outcome string
	// Code is the refusal code of a refused call.
	Code  string
	Took  time.Duration
	Spend []usagerec.Spend
}

// Service is the usage domain's API: the recorder the surfaces feed, the
// publisher of this node's days, and the fleet's usage read back.
type Service struct {
	replica statelog.DomainReplica
	clock   engine.Clock

	mu      sync.Mutex
	pending []Call
	dropped int64
	host    engine.Host
	local   *sql.DB
	log     *slog.Logger
	// published is the digest of each object this node last published
	// or found applied, by subject.
	published map[string]string

	pubMu sync.Mutex // one publication at a time
	stop  chan struct{}
	done  chan struct{}
}

// NewService builds the usage service over its replica.
func NewService(r statelog.DomainReplica, clock engine.Clock) *Service {
	if clock == nil {
		clock = engine.SystemClock{}
	}
	return &Service{replica: r, clock: clock, published: map[string]string{}, log: slog.New(slog.DiscardHandler)}
}

var _ engine.Starter = (*Service)(nil)

// Record keeps one call for the local record; it never blocks on the
// store. Past maxPending unflushed calls it drops the call and counts it.
func (s *Service) Record(c Call) {
	if c.At.IsZero() {
		c.At = s.clock.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= maxPending {
		s.dropped++
		return
	}
	s.pending = append(s.pending, c)
}

// Start opens the node's local record and starts publishing its days:
// at once every day the local record holds, then every PublishEvery.
func (s *Service) Start(ctx context.Context, h engine.Host) error {
	if h.Company == nil {
		h.Company = time.UTC
	}
	if h.Clock != nil {
		s.clock = h.Clock
	}
	db, err := openLocal(h.DataDir, 5)
	if err != nil {
		return err
	}
	lg := h.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	s.mu.Lock()
	s.host, s.local, s.log = h, db, lg.With(engine.LogComponent, "usage", engine.LogDomain, string(Name))
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.mu.Unlock()
	go s.loop()
	return nil
}

// Stop flushes what is recorded, stops publishing and closes the local
// record.
func (s *Service) Stop() {
	s.mu.Lock()
	stop, done, db := s.stop, s.done, s.local
	s.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	if err := s.flush(context.Background()); err != nil {
		s.log.Warn("usage_flush_failed", engine.LogErr, err.Error())
	}
	s.mu.Lock()
	s.local = nil
	s.mu.Unlock()
	db.Close()
}

// loop flushes every flushEvery and publishes every PublishEvery: every
// day the local record holds on the first pass, today and yesterday after.
func (s *Service) loop() {
	defer close(s.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	var last time.Time
	all := true
	for {
		ctx, cancel := context.WithTimeout(context.Background(), PublishEvery)
		if err := s.flush(ctx); err != nil {
			s.log.Warn("usage_flush_failed", engine.LogErr, err.Error())
		}
		if time.Since(last) >= PublishEvery {
			last = time.Now()
			if _, err := s.publish(ctx, all); err != nil {
				s.log.Warn("usage_publish_failed", engine.LogErr, err.Error())
			} else {
				all = false
			}
		}
		cancel()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// today is the company day of now, and the day before it.
func (s *Service) today() (string, string) {
	now := s.clock.Now().In(s.location())
	return now.Format(usagerec.DateLayout), now.AddDate(0, 0, -1).Format(usagerec.DateLayout)
}

func (s *Service) location() *time.Location {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host.Company == nil {
		return time.UTC
	}
	return s.host.Company
}

// flush writes the calls recorded in memory to the local record, each on
// its company day, and marks today as a day this node ran.
func (s *Service) flush(ctx context.Context) error {
	s.mu.Lock()
	calls, db, dropped := s.pending, s.local, s.dropped
	s.pending, s.dropped = nil, 0
	s.mu.Unlock()
	if db == nil {
		return nil
	}
	if dropped > 0 {
		s.log.Warn("usage_calls_dropped", "calls", dropped, "why", "more calls than the recorder holds between two flushes")
	}
	loc := s.location()
	cs := make([]counted, len(calls))
	for i, c := range calls {
		cs[i] = counted{Call: c, day: c.At.In(loc).Format(usagerec.DateLayout)}
	}
	today, _ := s.today()
	t, _ := usagerec.ParseDay(today)
	keepFrom := t.AddDate(0, 0, -(LocalKeepDays - 1)).Format(usagerec.DateLayout)
	if err := writeLocal(ctx, db, cs, []string{today}, keepFrom); err != nil {
		s.mu.Lock()
		s.pending = append(calls, s.pending...)
		s.mu.Unlock()
		return err
	}
	return nil
}

// Flush writes the calls recorded so far to the local record at once
// (the loop does every second).
func (s *Service) Flush(ctx context.Context) error { return s.flush(ctx) }

// PublishNow flushes and publishes at once: today and yesterday, or with
// all every day the local record holds. It answers how many objects it
// published (those whose value changed).
func (s *Service) PublishNow(ctx context.Context, all bool) (int, error) {
	if err := s.flush(ctx); err != nil {
		return 0, err
	}
	return s.publish(ctx, all)
}

// publish derives each day's objects and publishes those whose value
// differs from what this node's rows hold (or last published).
func (s *Service) publish(ctx context.Context, all bool) (int, error) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.mu.Lock()
	db, node := s.local, s.host.Node
	s.mu.Unlock()
	if db == nil {
		return 0, errors.New("usage: the service is not started")
	}
	today, yesterday := s.today()
	days := []string{yesterday, today}
	if all {
		held, err := localDays(ctx, db)
		if err != nil {
			return 0, err
		}
		days = mergeDays(held, days)
	}
	n := 0
	var errs []error
	for _, day := range days {
		objs, err := derive(ctx, db, node, day)
		if err != nil {
			return n, err
		}
		if day == yesterday && len(objs) == 1 && !s.ran(ctx, db, day) {
			continue // a day this node did not run: no object, a gap
		}
		for _, o := range objs {
			done, err := s.publishOne(ctx, o)
			if err != nil {
				errs = append(errs, err)
			} else if done {
				n++
			}
		}
	}
	return n, errors.Join(errs...)
}

// ran says whether the local record marks day as one this node ran.
func (s *Service) ran(ctx context.Context, db *sql.DB, day string) bool {
	var n int
	_ = db.QueryRowContext(ctx, `SELECT count(*) FROM local_days WHERE day = ?`, day).Scan(&n)
	return n > 0
}

func mergeDays(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range append(append([]string{}, a...), b...) {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
