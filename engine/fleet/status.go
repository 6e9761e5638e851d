package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/duty"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/turns"
)

// Answer is the retention answer: every data node in the register with
// its figures per domain, beside each log's own end. It is a replication
// answer, read at stale: the register is read from this node's broker,
// and each lag is measured against the log's end as this node reads it.
// When the log's end cannot be read the answer weakens to
// consistent_prefix and says so in Note.
type Answer struct {
	Level engine.ReadLevel `json:"level"`
	Note  string           `json:"note,omitempty"`
	// AskedAt is the instant the answer was built, on this node's clock.
	AskedAt time.Time     `json:"asked_at"`
	Node    string        `json:"node"`
	Logs    []LogFigures  `json:"logs"`
	Nodes   []NodeFigures `json:"nodes"`
	// Alarms are the alarms up on the answering node (statelog.Alarms):
	// records_gated, deferral, log_full_approaching, applier_faulted.
	Alarms []statelog.Alarm `json:"alarms"`
	// Duties are the fleet's duties and who holds each now (engine/duty:
	// a node that is empty holds nothing, the duty is vacant), read from
	// the leases' bucket; DutiesUnread says why they could not be.
	Duties       []duty.Holder `json:"duties"`
	DutiesUnread string        `json:"duties_unread,omitempty"`
	// Seats is where each seat is held and which nodes claim new seats
	// (Status.Seats fills it; absent where the node keeps no seats).
	Seats *turns.SeatsAnswer `json:"seats,omitempty"`
}

// LogFigures is a log's state as this node reads it.
type LogFigures struct {
	Domain     engine.Domain `json:"domain"`
	Stream     string        `json:"stream"`
	Generation uint64        `json:"generation"`
	FirstSeq   uint64        `json:"first_seq"`
	LastSeq    uint64        `json:"last_seq"`
	CreatedAt  time.Time     `json:"stream_created_at"`
	// Measured is false when the log's end could not be read.
	Measured bool `json:"measured"`
	// MaxBytes is the log's byte ceiling, Bytes what it holds, and
	// OrdinaryCeiling where its ordinary appends stop (a sixteenth short
	// on a log keeping the gate reserve): read with the end.
	MaxBytes        int64  `json:"max_bytes"`
	Bytes           uint64 `json:"bytes"`
	OrdinaryCeiling int64  `json:"ordinary_ceiling"`
	// Floor is the log's published trim floor with the term that holds
	// it: through 0 with no term while the trim has removed nothing, and
	// null only where it could not be read, when FloorUnread says why
	// (an unreadable floor is never guessed past). Both fields are always
	// in the JSON, so a script reads them without asking whether they are.
	Floor       *Floor `json:"floor"`
	FloorUnread string `json:"floor_unread"`
}

// NodeFigures is one data node's positions.
type NodeFigures struct {
	Node    string          `json:"node"`
	Domains []DomainFigures `json:"domains"`
}

// DomainFigures is a node's position in one domain, with its lag behind
// the log where it can be measured.
type DomainFigures struct {
	Position
	Lag *engine.Lag `json:"lag,omitempty"`
	// LeftGen is set when the position is in a generation the log has
	// left: its sequence compares with nothing the log holds, so no lag.
	LeftGen uint64 `json:"left_gen,omitempty"`
	// Reader is who leads the node's durable consumer on this log, absent
	// where it could not be read.
	Reader *ReaderLead `json:"reader,omitempty"`
}

// ReaderLead names the broker server leading a node's consumer and since
// when: a node receives nothing while its consumer has no leader (Leader
// empty, an election under way), and a consumer led by another node's
// server stops with that node — which is why each node claims its own.
type ReaderLead struct {
	Leader string     `json:"leader"`
	Since  *time.Time `json:"since,omitempty"`
}

// ReaderLeadFunc reads who leads node's consumer on domain's log.
type ReaderLeadFunc func(ctx context.Context, domain engine.Domain, node string) (leader string, since time.Time, err error)

// Status builds the retention answer on a node whose replicas are reps.
type Status struct {
	Node     string
	KV       jetstream.KeyValue
	Replicas []*statelog.Replica
	Logs     map[engine.Domain]statelog.Log
	// Floors is the trim floors' bucket (nil: no floor is reported).
	Floors *Floors
	Clock  engine.Clock
	// Known, when set, is the register as this node last read it: the
	// answer falls back on it when the register cannot be read now.
	Known func() ([]Position, time.Time)
	// ReaderLead, when set, names who leads each node's consumer.
	ReaderLead ReaderLeadFunc
	// Duties, when set, reads who holds each duty of the fleet.
	Duties func(ctx context.Context) ([]duty.Holder, error)
	// Seats, when set, answers the seats part from the answer built.
	Seats func(ctx context.Context, a Answer) *turns.SeatsAnswer
}

// Answer reads the register and the logs' ends. It refuses
// broker_unreachable when the register itself cannot be read.
func (s *Status) Answer(ctx context.Context) (Answer, error) {
	clock := s.Clock
	if clock == nil {
		clock = engine.SystemClock{}
	}
	a := Answer{Level: engine.Stale, AskedAt: clock.Now().UTC(), Node: s.Node, Logs: []LogFigures{}, Nodes: []NodeFigures{}, Alarms: []statelog.Alarm{}, Duties: []duty.Holder{}}
	// The broker's reads are each bounded, and made at once: one after
	// another, a node cut off from its broker waited out every bound in
	// turn (half a minute), past what crewlet retention status waits for
	// its answer, and printed no answer (and so no sentence) at all.
	var (
		wg       sync.WaitGroup
		logs     map[engine.Domain]LogFigures
		lastTime map[engine.Domain]time.Time
		read     []Position
		readErr  error
	)
	wg.Add(3)
	go func() { defer wg.Done(); s.readDuties(ctx, &a) }()
	go func() { defer wg.Done(); logs, lastTime = s.readLogs(ctx, &a) }()
	go func() { defer wg.Done(); read, readErr = ReadAll(ctx, s.KV) }()
	wg.Wait()
	for _, r := range s.Replicas {
		a.Alarms = append(a.Alarms, r.Alarms(ctx)...)
	}
	positions, err := s.readPositions(&a, read, readErr)
	if err != nil {
		return a, err
	}
	byNode := map[string]*NodeFigures{}
	for _, p := range positions {
		nf := byNode[p.Node]
		if nf == nil {
			nf = &NodeFigures{Node: p.Node}
			byNode[p.Node] = nf
		}
		nf.Domains = append(nf.Domains, domainFigures(p, logs, lastTime, a.AskedAt))
	}
	for _, nf := range byNode {
		sort.Slice(nf.Domains, func(i, j int) bool { return nf.Domains[i].Domain < nf.Domains[j].Domain })
		a.Nodes = append(a.Nodes, *nf)
	}
	sort.Slice(a.Nodes, func(i, j int) bool { return a.Nodes[i].Node < a.Nodes[j].Node })
	// The seats part reads the figures, not the readers filled in beside
	// it: it reads a copy of its own.
	var seats *turns.SeatsAnswer
	if s.Seats != nil {
		figures := withOwnNodes(a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			seats = s.Seats(ctx, figures)
		}()
	}
	s.readReaders(ctx, a.Nodes)
	wg.Wait()
	a.Seats = seats
	return a, nil
}

// withOwnNodes is a with its nodes' figures copied, so what fills in a's
// does not write under a reader of the copy.
func withOwnNodes(a Answer) Answer {
	nodes := make([]NodeFigures, len(a.Nodes))
	for i, nf := range a.Nodes {
		nf.Domains = append([]DomainFigures(nil), nf.Domains...)
		nodes[i] = nf
	}
	a.Nodes = nodes
	return a
}

// readDuties adds who holds each duty, or why that could not be read.
func (s *Status) readDuties(ctx context.Context, a *Answer) {
	if s.Duties == nil {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hs, err := s.Duties(dctx)
	if err != nil {
		a.DutiesUnread = err.Error()
		return
	}
	a.Duties = hs
}

// readReaders fills in who leads each node's consumer, all at once and
// each bounded: a consumer whose group is electing answers nothing.
func (s *Status) readReaders(ctx context.Context, nodes []NodeFigures) {
	if s.ReaderLead == nil {
		return
	}
	var wg sync.WaitGroup
	for i := range nodes {
		for j := range nodes[i].Domains {
			df := &nodes[i].Domains[j]
			wg.Add(1)
			go func(node string) {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				leader, since, err := s.ReaderLead(rctx, df.Domain, node)
				if err != nil {
					return
				}
				df.Reader = &ReaderLead{Leader: leader}
				if !since.IsZero() {
					at := since.UTC()
					df.Reader.Since = &at
				}
			}(nodes[i].Node)
		}
	}
	wg.Wait()
}

// readLogs reads each domain's log end, and the time of its last record,
// into a's Logs, every log at once. A log whose end cannot be read is not
// measured: the answer weakens to consistent_prefix and its note names
// those logs.
func (s *Status) readLogs(ctx context.Context, a *Answer) (map[engine.Domain]LogFigures, map[engine.Domain]time.Time) {
	figs := make([]LogFigures, len(s.Replicas))
	times := make([]time.Time, len(s.Replicas))
	var wg sync.WaitGroup
	for i, rep := range s.Replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			figs[i], times[i] = s.readLog(ctx, rep)
		}()
	}
	wg.Wait()
	logs := map[engine.Domain]LogFigures{}
	lastTime := map[engine.Domain]time.Time{}
	var unmeasured []string
	for i, lf := range figs {
		if !lf.Measured {
			unmeasured = append(unmeasured, string(lf.Domain))
		}
		if !times[i].IsZero() {
			lastTime[lf.Domain] = times[i]
		}
		logs[lf.Domain] = lf
		a.Logs = append(a.Logs, lf)
	}
	if len(unmeasured) > 0 {
		a.Level = engine.ConsistentPrefix
		what := strings.Join(unmeasured, " and ") + " log"
		if len(unmeasured) > 1 {
			what += "s"
		}
		a.Note = fmt.Sprintf("This node cannot read the end of the %s from its broker (unanswered, or answered by a member with no leader), so no lag is measured there: the positions are as the nodes last published them, with no bound on how far behind the log they are.", what)
	}
	return logs, lastTime
}

// readLog reads one replica's log end, the time of its last record (zero
// where unread) and its trim floor.
func (s *Status) readLog(ctx context.Context, rep *statelog.Replica) (LogFigures, time.Time) {
	d := rep.Domain()
	lf := LogFigures{Domain: d, Stream: rep.Stream(), Generation: rep.Generation()}
	var last time.Time
	if l := s.Logs[d]; l != nil {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := l.Info(ictx)
		// A member answering with no leader answers from its own copy,
		// behind wherever it was cut off: its end is not the log's, so
		// no lag is measured against it (the answer weakens).
		if err == nil && !info.Leaderless {
			lf.FirstSeq, lf.LastSeq, lf.CreatedAt, lf.Measured = info.FirstSeq, info.LastSeq, info.Created.UTC(), true
			lf.MaxBytes, lf.Bytes, lf.OrdinaryCeiling = info.MaxBytes, info.Bytes, rep.OrdinaryCeiling(info.MaxBytes)
			if info.LastSeq > 0 {
				if m, err := l.Get(ictx, info.LastSeq); err == nil {
					last = m.Time
				}
			}
		}
		cancel()
	}
	s.readFloor(ctx, &lf)
	return lf, last
}

// readFloor adds the log's published trim floor to lf, or why it could
// not be read.
func (s *Status) readFloor(ctx context.Context, lf *LogFigures) {
	if s.Floors == nil {
		return
	}
	f, _, ok, err := s.Floors.Read(ctx, lf.Domain)
	switch {
	case err != nil:
		lf.FloorUnread = err.Error()
	case ok && f.Stream == lf.Stream && f.Generation == lf.Generation:
		lf.Floor = &f
	default:
		// Nothing trimmed on this log in this generation: the floor is 0.
		lf.Floor = &Floor{Domain: lf.Domain, Stream: lf.Stream, Generation: lf.Generation, Terms: []Term{}}
	}
}

// readPositions takes the register as read (positions, or err why it
// could not be); when it could not be read it falls back on the register
// as this node last read it (Known), weakening a to consistent_prefix and
// saying when that was, and with nothing to fall back on refuses
// broker_unreachable.
func (s *Status) readPositions(a *Answer, positions []Position, err error) ([]Position, error) {
	if err != nil && s.Known != nil {
		if known, at := s.Known(); len(known) > 0 {
			positions, err = known, nil
			a.Level = engine.ConsistentPrefix
			a.Note = strings.TrimSpace(a.Note + fmt.Sprintf(" The positions register cannot be read from this node's broker now; these are the positions as this node last read them, at %s.", at.Format(time.RFC3339)))
		}
	}
	if err != nil {
		return nil, engine.Refuse(engine.CodeBrokerUnreachable, "the positions register (%s) cannot be read from this node's broker: %v. Retry once the broker answers, or ask another node.", Bucket, err)
	}
	return positions, nil
}

// domainFigures is one position with its lag behind its log, where the
// log's end was measured: in records, and in seconds where the log's last
// record has a time (from the checkpoint's storing where the node stored
// one before that record, else from that record to the asking). A
// position in a generation the log has left gets no lag, only LeftGen.
func domainFigures(p Position, logs map[engine.Domain]LogFigures, lastTime map[engine.Domain]time.Time, askedAt time.Time) DomainFigures {
	df := DomainFigures{Position: p}
	lf, ok := logs[p.Domain]
	if !ok || !lf.Measured {
		return df
	}
	if p.Generation != 0 && p.Generation < lf.Generation {
		df.LeftGen = p.Generation
		return df
	}
	lag := &engine.Lag{}
	if lf.LastSeq > p.Seq {
		lag.Seq = lf.LastSeq - p.Seq
	}
	if t, ok := lastTime[p.Domain]; ok {
		secs := 0.0
		if lag.Seq > 0 && !p.CheckpointStoredAt.IsZero() && t.After(p.CheckpointStoredAt) {
			secs = t.Sub(p.CheckpointStoredAt).Seconds()
		} else if lag.Seq > 0 {
			secs = askedAt.Sub(t).Seconds()
		}
		lag.Seconds = &secs
	}
	df.Lag = lag
	return df
}

// ReadAll reads every position in the register.
func ReadAll(ctx context.Context, kv jetstream.KeyValue) ([]Position, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	lister, err := kv.ListKeys(rctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	var out []Position
	for _, k := range keys {
		e, err := kv.Get(rctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var p Position
		if err := json.Unmarshal(e.Value(), &p); err != nil {
			return nil, fmt.Errorf("register key %s: %w", k, err)
		}
		out = append(out, p)
	}
	if err := rctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
