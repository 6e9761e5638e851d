package statelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// The alarms a replica raises, by the names the seeds and the status
// answer use (and crewlet_alarm{name} carries).
const (
	// AlarmRecordsGated: a gate dropped a durable record recently; it
	// applies on no node and statelog_record_gated is its only witness.
	AlarmRecordsGated = "records_gated"
	// AlarmDeferral: a retained record has waited past the deferral grace.
	AlarmDeferral = "deferral"
	// AlarmLogFull: the log is within an eighth of the broker's ceiling
	// of the ordinary ceiling, past which writes and barriers refuse
	// log_full.
	AlarmLogFull = "log_full_approaching"
	// AlarmApplierFaulted: the applier is stuck past its retry budget or
	// stopped for good.
	AlarmApplierFaulted = "applier_faulted"
)

// AlarmNames is every alarm a replica can raise.
var AlarmNames = []string{AlarmRecordsGated, AlarmDeferral, AlarmLogFull, AlarmApplierFaulted}

// DefaultDeferralGrace is the seeds' deferral grace: a rolling upgrade
// should finish inside it.
const DefaultDeferralGrace = 30 * time.Minute

// RecordsGatedWindow is how long the records_gated alarm stays up after a
// gate dropped a record: long enough for an operator (or an alert rule's
// evaluation) to see it, after which the counter and the log line remain.
const RecordsGatedWindow = time.Hour

// Alarm is one condition an operator should look at.
type Alarm struct {
	Name   string        `json:"name"`
	Domain engine.Domain `json:"domain"`
	// Message says what is wrong and what to do.
	Message string `json:"message"`
	// Position is the record the alarm is about, where there is one.
	Position *engine.Position `json:"position,omitempty"`
	// Scope is a deferred record's declared scope.
	Scope []string `json:"scope,omitempty"`
	// Since is when the condition began, where known.
	Since time.Time `json:"since,omitzero"`
	// OutOfService says the condition takes the node out of service
	// (/readyz answers 503 while it lasts).
	OutOfService bool `json:"out_of_service"`
}

// alarmState is what the alarms read that no table keeps.
type alarmState struct {
	mu sync.Mutex
	// The records gates dropped since the node started, and the newest.
	gatedCount  int
	gatedAt     time.Time
	gatedPos    engine.Position
	gatedGate   string
	gatedWriter string
	// appended is each retained record's append time on the log.
	appended map[uint64]time.Time
}

func (a *alarmState) gated(p engine.Position, gate, writer string, now time.Time) {
	a.mu.Lock()
	a.gatedCount++
	a.gatedAt, a.gatedPos, a.gatedGate, a.gatedWriter = now, p, gate, writer
	a.mu.Unlock()
}

func (a *alarmState) retainedAt(seq uint64, t time.Time) {
	if t.IsZero() {
		return
	}
	a.mu.Lock()
	if a.appended == nil {
		a.appended = map[uint64]time.Time{}
	}
	if _, ok := a.appended[seq]; !ok {
		a.appended[seq] = t
	}
	a.mu.Unlock()
}

// Alarms is every alarm up on this replica now.
func (r *Replica) Alarms(ctx context.Context) []Alarm {
	var out []Alarm
	now := r.cfg.Clock.Now()
	if f := r.fault(); f != nil {
		p := r.Position(r.Applied())
		out = append(out, Alarm{Name: AlarmApplierFaulted, Domain: r.domain, Position: &p, OutOfService: r.OutOfService() != nil,
			Message: fmt.Sprintf("the %s applier is stuck at %s: %v. Its rows are frozen and its reads refuse stalled; a retried failure clears on its own when an attempt succeeds, a stopped applier needs what statelog_applier_stopped names.", r.stream, p.Token(), f)})
	}
	if a := r.gatedAlarm(now); a != nil {
		out = append(out, *a)
	}
	if a := r.logFullAlarm(); a != nil {
		out = append(out, *a)
	}
	if a, err := r.deferralAlarm(ctx, now); err != nil {
		r.log.Warn("statelog_alarm_unread", "alarm", AlarmDeferral, engine.LogErr, err.Error())
	} else if a != nil {
		out = append(out, *a)
	}
	return out
}

func (r *Replica) gatedAlarm(now time.Time) *Alarm {
	a := &r.alarms
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gatedCount == 0 || now.Sub(a.gatedAt) >= RecordsGatedWindow {
		return nil
	}
	p := a.gatedPos
	return &Alarm{Name: AlarmRecordsGated, Domain: r.domain, Position: &p, Since: a.gatedAt,
		Message: fmt.Sprintf("%d durable record(s) of %s were dropped by a gate since this node started, the newest at %s under the %s gate (writer %q): they apply on no node. Each is logged statelog_record_gated; check that an eviction or a purge explains it.",
			a.gatedCount, r.stream, p.Token(), a.gatedGate, a.gatedWriter)}
}

// Fill is the log's fill as this replica last learnt it: the bytes it
// holds (the broker's last answer plus what was delivered since), its
// ceiling and the ordinary ceiling (0 where there is none).
func (r *Replica) Fill() (bytes, ceiling, ordinary int64) {
	c := &r.capacity
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(c.bytes + c.since), c.max, OrdinaryCeiling(r.cfg.GateReserve, c.max)
}

func (r *Replica) logFullAlarm() *Alarm {
	bytes, ceiling, ordinary := r.Fill()
	if ordinary <= 0 || bytes < ordinary-ceiling/8 {
		return nil
	}
	return &Alarm{Name: AlarmLogFull, Domain: r.domain,
		Message: fmt.Sprintf("%s holds %d bytes against an ordinary ceiling of %d (of %d): past it writes and linearizable reads refuse log_full. Raise the ceiling with crewlet retention set-capacity, or unblock the trim (crewlet retention status names the term).",
			r.stream, bytes, ordinary, ceiling)}
}

// deferralAlarm names the oldest retained record appended longer ago
// than the deferral grace, with its scope. A record whose append time
// this process has not seen is asked of the log once; one the log no
// longer holds counts from when this process first looked.
func (r *Replica) deferralAlarm(ctx context.Context, now time.Time) (*Alarm, error) {
	if r.retained.Load() == 0 {
		return nil, nil
	}
	rows, err := r.cfg.DB.QueryContext(ctx, `SELECT seq, scope, scope_known FROM statelog_retained WHERE domain = ? ORDER BY seq`, string(r.domain))
	if err != nil {
		return nil, err
	}
	type held struct {
		seq   uint64
		scope string
		known bool
	}
	var all []held
	for rows.Next() {
		var h held
		if err := rows.Scan(&h.seq, &h.scope, &h.known); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	over := 0
	var oldest *held
	var since time.Time
	for i := range all {
		t := r.appendedAt(ctx, all[i].seq, now)
		if now.Sub(t) < r.cfg.DeferralGrace {
			continue
		}
		over++
		if oldest == nil {
			oldest, since = &all[i], t
		}
	}
	if oldest == nil {
		return nil, nil
	}
	p := r.Position(oldest.seq)
	var scope []string
	_ = json.Unmarshal([]byte(oldest.scope), &scope)
	what := fmt.Sprintf("scope %v", scope)
	if !oldest.known {
		what = "a scope this build cannot read, so it blocks every read of the domain"
	}
	return &Alarm{Name: AlarmDeferral, Domain: r.domain, Position: &p, Scope: scope, Since: since,
		Message: fmt.Sprintf("%d record(s) this build cannot decode have been retained past the %v deferral grace; the oldest is at %s, %s, and reads and writes about it refuse deferred. Finish the rolling upgrade: a build that reads it applies it at its next boot.",
			over, r.cfg.DeferralGrace, p.Token(), what)}, nil
}

func (r *Replica) appendedAt(ctx context.Context, seq uint64, now time.Time) time.Time {
	a := &r.alarms
	a.mu.Lock()
	t, ok := a.appended[seq]
	a.mu.Unlock()
	if ok {
		return t
	}
	gctx, cancel := context.WithTimeout(ctx, replicationProbe)
	m, err := r.cfg.Log.Get(gctx, seq)
	cancel()
	switch {
	case err == nil && !m.Time.IsZero():
		t = m.Time
	case err == nil || errors.Is(err, ErrNoMessage):
		t = now // gone from the log: counted from this first look
	default:
		return now // the broker did not answer: ask again next time
	}
	r.alarms.retainedAt(seq, t)
	return t
}
