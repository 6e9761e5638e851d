// Package turns records units of work in the coordination store (a
// JetStream KV bucket): the instant each unit began, which a later attempt
// at the same unit inherits, and the order in which the unit's distinct
// calls to each tool were first made. A seat's op ids derive from both, so
// a re-run that repeats the same calls, on any node, writes nothing twice.
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

// Bucket is the coordination bucket units are kept in.
const Bucket = "CREWLET_UNITS"

// MaxAge is how old a unit's start may be and still be inherited: past
// it, an id minted at that start is one no ledger can vouch for any more
// (the ledger keeps 30 days), so the attempt mints at its own instant.
const MaxAge = 29 * 24 * time.Hour

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
}

// Call returns what a seat's call derives its op id from: the unit's start
// instant (recorded by the unit's first call, inherited by every later
// attempt) and the call's place among the unit's distinct calls to the
// same tool, in the order they were first made.
func (u *Units) Call(ctx context.Context, unit, tool, digest string) (time.Time, int, error) {
	key := keyOf(unit)
	for attempt := 0; attempt < 16; attempt++ {
		now := u.clock.Now()
		entry, err := u.kv.Get(ctx, key)
		var rec unitRecord
		var rev uint64
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			rec = unitRecord{Start: now, Calls: map[string][]string{}}
		case err != nil:
			return time.Time{}, 0, err
		default:
			if err := json.Unmarshal(entry.Value(), &rec); err != nil {
				return time.Time{}, 0, fmt.Errorf("turns: unit %q: %w", unit, err)
			}
			rev = entry.Revision()
			if rec.Calls == nil {
				rec.Calls = map[string][]string{}
			}
		}
		changed := rev == 0
		if now.Sub(rec.Start) > MaxAge {
			u.log.Info("turns_unit_restarted", "unit", unit, "started", rec.Start, "now", now)
			rec.Start, rec.Restarted, rec.Calls = now, true, map[string][]string{}
			changed = true
		}
		n := slices.Index(rec.Calls[tool], digest)
		if n < 0 {
			rec.Calls[tool] = append(rec.Calls[tool], digest)
			n = len(rec.Calls[tool]) - 1
			changed = true
		}
		if !changed {
			return rec.Start, n, nil
		}
		data, _ := json.Marshal(rec)
		if rev == 0 {
			_, err = u.kv.Create(ctx, key, data)
		} else {
			_, err = u.kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return rec.Start, n, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return time.Time{}, 0, err
		}
		// Another call of the same unit won the race: read it again.
	}
	return time.Time{}, 0, fmt.Errorf("turns: unit %q: too many concurrent calls", unit)
}

// keyOf maps a unit id onto a KV key (the id may hold any character).
func keyOf(unit string) string {
	h := sha256.Sum256([]byte(unit))
	return "unit." + hex.EncodeToString(h[:16])
}
