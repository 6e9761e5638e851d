// Package turns keeps what a seat's turns need across nodes, in the
// coordination store (a JetStream KV bucket), and what one node keeps for
// its seats in memory:
//
//   - units of work (Units): the instant each unit began, which a later
//     attempt at the same unit inherits unless it is older than MaxAge,
//     the order in which the unit's distinct calls to each tool were first
//     made, and its turns (attempts), each started and ended with an
//     outcome. A seat's op ids derive from the instant and the order, so a
//     re-run that repeats the same calls, on any node, writes nothing
//     twice;
//   - seat placement (Units.Claim, Units.Placement): which node holds
//     each seat, claimed at a turn's start; a node that is not level
//     keeps the seats it holds and claims no new ones;
//   - the node's read-your-writes floors (Floors): one table per node,
//     raised by every write the node makes and by the trigger position a
//     turn starts from, carried by every seat read.
package turns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// Bucket is the coordination bucket units and seats are kept in.
const Bucket = "CREWLET_UNITS"

// MaxAge is how old a unit's start may be and still be inherited: past
// it, an id minted at that start is one no ledger can vouch for any more
// (the ledger keeps 30 days), so the attempt mints at its own instant.
const MaxAge = 29 * 24 * time.Hour

// keptTurns bounds the turns a unit's record keeps: the newest.
const keptTurns = 16

// Units is the units-of-work register.
type Units struct {
	kv    jetstream.KeyValue
	clock engine.Clock
	log   *slog.Logger
}

// Open creates the bucket when missing.
func Open(ctx context.Context, js jetstream.JetStream, replicas int, clock engine.Clock, log *slog.Logger) (*Units, error) {
	if replicas == 0 {
		replicas = 1
	}
	if clock == nil {
		clock = engine.SystemClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket, History: 1, Storage: jetstream.FileStorage, Replicas: replicas})
	if err != nil {
		return nil, fmt.Errorf("turns: coordination bucket %s: %w", Bucket, err)
	}
	return &Units{kv: kv, clock: clock, log: log.With(engine.LogComponent, engine.ComponentEngine)}, nil
}

type unitRecord struct {
	Start time.Time `json:"start"`
	// Restarted is set when an attempt found the start older than MaxAge
	// and minted at its own instant instead.
	Restarted bool                `json:"restarted,omitempty"`
	Calls     map[string][]string `json:"calls"`
	// Attempts counts the turns ever started; Turns keeps the newest.
	Attempts int    `json:"attempts,omitempty"`
	Turns    []Turn `json:"turns,omitempty"`
}

// Turn is one attempt at a unit of work: started on a node, by a seat,
// optionally from a wake's trigger position, and ended with an outcome.
type Turn struct {
	Unit      string    `json:"unit"`
	Seat      string    `json:"seat"`
	Attempt   int       `json:"attempt"`
	Node      string    `json:"node"`
	StartedAt time.Time `json:"started_at"`
	// Trigger is the wake's trigger position token, empty for a turn no
	// change to this engine's logs woke.
	Trigger string     `json:"trigger_position,omitempty"`
	EndedAt *time.Time `json:"ended_at,omitempty"`
	Outcome string     `json:"outcome,omitempty"`
	Summary string     `json:"summary,omitempty"`
}

// Outcomes a turn ends with.
const (
	OutcomeDone      = "done"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// Outcomes are the outcomes End takes.
var Outcomes = []string{OutcomeDone, OutcomeFailed, OutcomeCancelled}

// Started is what Start answers: the turn, and the unit's start instant
// its calls' op ids derive from.
type Started struct {
	Turn
	UnitStart time.Time `json:"unit_started_at"`
	// Restarted: an attempt found the unit's start older than MaxAge and
	// minted at its own instant, UnitStart (calls made before then derived
	// other ids).
	Restarted bool `json:"restarted"`
	// Previous is the attempt before this one, if any (a run that crashed
	// left it without an outcome).
	Previous *Turn `json:"previous,omitempty"`
}

// ErrNoTurn is End's answer for a unit no turn was started in.
var ErrNoTurn = errors.New("turns: no turn was started in this unit")

// EndedError is End's answer for a turn that ended already with another
// outcome.
type EndedError struct{ Turn Turn }

func (e *EndedError) Error() string {
	return fmt.Sprintf("turns: attempt %d of unit %q ended already as %s", e.Turn.Attempt, e.Turn.Unit, e.Turn.Outcome)
}

// Call returns what a seat's call derives its op id from: the unit's start
// instant (recorded by the unit's first call, inherited by every later
// attempt) and the call's place among the unit's distinct calls to the
// same tool, in the order they were first made.
func (u *Units) Call(ctx context.Context, unit, tool, digest string) (time.Time, int, error) {
	var start time.Time
	var n int
	err := u.update(ctx, unit, func(rec *unitRecord, now time.Time) bool {
		changed := u.inherit(unit, rec, now)
		n = slices.Index(rec.Calls[tool], digest)
		if n < 0 {
			rec.Calls[tool] = append(rec.Calls[tool], digest)
			n = len(rec.Calls[tool]) - 1
			changed = true
		}
		start = rec.Start
		return changed
	})
	return start, n, err
}

// Start begins a turn (a new attempt) in unit on node: the unit's start
// is inherited, or recorded now for a new unit or one older than MaxAge.
func (u *Units) Start(ctx context.Context, unit, seat, node string, trigger *engine.Position) (Started, error) {
	var out Started
	err := u.update(ctx, unit, func(rec *unitRecord, now time.Time) bool {
		out = Started{}
		u.inherit(unit, rec, now)
		if len(rec.Turns) > 0 {
			prev := rec.Turns[len(rec.Turns)-1]
			out.Previous = &prev
		}
		rec.Attempts++
		t := Turn{Unit: unit, Seat: seat, Attempt: rec.Attempts, Node: node, StartedAt: now.UTC()}
		if trigger != nil {
			t.Trigger = trigger.Token()
		}
		rec.Turns = append(rec.Turns, t)
		if len(rec.Turns) > keptTurns {
			rec.Turns = rec.Turns[len(rec.Turns)-keptTurns:]
		}
		out.Turn, out.UnitStart, out.Restarted = t, rec.Start, rec.Restarted
		return true
	})
	return out, err
}

// End ends the unit's newest turn with outcome. Ending it again with the
// same outcome answers the same turn; with another, *EndedError.
func (u *Units) End(ctx context.Context, unit, outcome, summary string) (Turn, error) {
	if !slices.Contains(Outcomes, outcome) {
		return Turn{}, fmt.Errorf("turns: outcome %q is not one of %v", outcome, Outcomes)
	}
	var out Turn
	var refused error
	err := u.update(ctx, unit, func(rec *unitRecord, now time.Time) bool {
		refused = nil
		if len(rec.Turns) == 0 {
			refused = ErrNoTurn
			return false
		}
		t := &rec.Turns[len(rec.Turns)-1]
		if t.EndedAt != nil {
			out = *t
			if t.Outcome != outcome || t.Summary != summary {
				refused = &EndedError{Turn: *t}
			}
			return false
		}
		at := now.UTC()
		t.EndedAt, t.Outcome, t.Summary = &at, outcome, summary
		out = *t
		return true
	})
	if err == nil {
		err = refused
	}
	return out, err
}

// Turns is the unit's newest turns, oldest first (none for a unit
// never started).
func (u *Units) Turns(ctx context.Context, unit string) ([]Turn, error) {
	rec, _, err := u.read(ctx, keyOf(unit))
	return rec.Turns, err
}

// inherit applies the 29-day rule to a unit's record at now: a start
// older than MaxAge is replaced by now (the attempt mints at its own
// instant and records it, so a later attempt inherits that one), and the
// calls counted under the old start are forgotten, since every id they
// derived is one no ledger vouches for any more. It reports a change.
func (u *Units) inherit(unit string, rec *unitRecord, now time.Time) bool {
	if rec.Start.IsZero() {
		rec.Start = now
		return true
	}
	if now.Sub(rec.Start) <= MaxAge {
		return false
	}
	u.log.Info("turns_unit_restarted", "unit", unit, "started", rec.Start, "now", now)
	rec.Start, rec.Restarted, rec.Calls = now, true, map[string][]string{}
	return true
}

// update runs fn on the unit's record and stores it when fn reports a
// change, compare-and-set on the record's revision: another call of the
// same unit landing in between makes it read and run fn again.
func (u *Units) update(ctx context.Context, unit string, fn func(rec *unitRecord, now time.Time) bool) error {
	key := keyOf(unit)
	for attempt := 0; attempt < 16; attempt++ {
		now := u.clock.Now()
		rec, rev, err := u.read(ctx, key)
		if err != nil {
			return fmt.Errorf("turns: unit %q: %w", unit, err)
		}
		if !fn(&rec, now) {
			return nil
		}
		data, _ := json.Marshal(rec)
		if rev == 0 {
			_, err = u.kv.Create(ctx, key, data)
		} else {
			_, err = u.kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
		// Another call of the same unit won the race: read it again.
	}
	return fmt.Errorf("turns: unit %q: too many concurrent calls", unit)
}

// read is a unit's record and its revision (0: none yet).
func (u *Units) read(ctx context.Context, key string) (unitRecord, uint64, error) {
	rec := unitRecord{Calls: map[string][]string{}}
	entry, err := u.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return rec, 0, nil
	case err != nil:
		return rec, 0, err
	}
	if err := json.Unmarshal(entry.Value(), &rec); err != nil {
		return rec, 0, err
	}
	if rec.Calls == nil {
		rec.Calls = map[string][]string{}
	}
	return rec, entry.Revision(), nil
}

// keyOf maps a unit id onto a KV key (the id may hold any character).
func keyOf(unit string) string { return "unit." + hashOf(unit) }

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}
