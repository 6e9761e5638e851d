package capacity

import (
	"fmt"
	"strings"
)

// SourceKind is what sets the broker's storage limit.
type SourceKind uint8

const (
	// SourceVolume: an embedded broker without stream.store_max_bytes
	// takes three quarters of its volume's free space, counting what its
	// streams already hold there.
	SourceVolume SourceKind = iota
	// SourceStoreMaxBytes: stream.store_max_bytes is set.
	SourceStoreMaxBytes
	// SourceAccount: an external broker's account JetStream limit.
	SourceAccount
)

// Source says what sets the limit, for the sentences.
type Source struct {
	Kind SourceKind
	// StoreDir is stream.store_dir (SourceVolume).
	StoreDir string
}

// Check says whether the broker can honour the plan's creations in
// order: the first log whose ceiling is past what the broker has left to
// reserve is refused with a *ReserveError naming it. With no limit to
// read, nothing is refused here (the broker's own answer still is).
func Check(p Plan, in Input, src Source) error {
	if in.Grant.Limit <= 0 {
		return nil
	}
	g := in.Grant
	for _, s := range p.Logs {
		if s.Exists {
			continue
		}
		if s.Create > g.Left() {
			return &ReserveError{Log: s.Log, Needed: s.Create, Grant: g, Source: src, Logs: in.Logs, Boot: true}
		}
		g.Reserved += s.Create
	}
	return nil
}

// ReserveError is a ceiling the broker cannot reserve: at boot, a log's
// creation (Boot); on a running node, a raise by crewlet retention
// set-capacity. Its text names the stream, the bytes needed and left,
// what sets the limit, the Tier A field, and only the remedies that apply.
type ReserveError struct {
	Log Log
	// Needed is what the reservation needed: the whole ceiling at boot,
	// the raise on a running node.
	Needed int64
	Grant  Grant
	Source Source
	// Logs are every state log of the node (the existing ones are named).
	Logs []Log
	Boot bool
}

func (e *ReserveError) Error() string {
	var b strings.Builder
	l := e.Log
	if e.Boot {
		fmt.Fprintf(&b, "engine: the broker refused to reserve %s's ceiling: %s needed %d bytes", logName(l), l.Stream, e.Needed)
	} else {
		fmt.Fprintf(&b, "the broker refused to reserve the raise of %s's ceiling to %d bytes: %s needed %d more bytes", logName(l), l.Held+e.Needed, l.Stream, e.Needed)
	}
	fmt.Fprintf(&b, " and the broker had %d bytes left to reserve (%d of its %d-byte limit already reserved), and that limit is %s.",
		e.Grant.Left(), e.Grant.Reserved, e.Grant.Limit, e.limitIs())
	if e.Boot {
		b.WriteString(" " + e.fieldSays())
	}
	b.WriteString(" Give the broker more room: " + e.room() + ".")
	if e.Boot && e.Needed > Floor {
		fmt.Fprintf(&b, " Or set %s to a smaller ceiling: at most %d bytes fit.", l.Field, e.Grant.Left())
	}
	if e.Boot {
		if held := existing(e.Logs); held != "" {
			b.WriteString(" The state logs that already exist keep the ceilings they were created with, and no Tier A setting changes them: " + held +
				"; only crewlet retention set-capacity changes them, on a node whose state logs are up, which a node refused here is not.")
		}
	} else {
		b.WriteString(" Or give another log's reservation back first with crewlet retention set-capacity, down to what that log holds.")
	}
	return b.String()
}

// logName is "the pages log".
func logName(l Log) string {
	if l.Name == "" {
		return l.Stream
	}
	return "the " + l.Name + " log"
}

func (e *ReserveError) limitIs() string {
	switch e.Source.Kind {
	case SourceStoreMaxBytes:
		return "stream.store_max_bytes, which you set"
	case SourceAccount:
		return "the NATS account's JetStream storage limit on the servers of stream.urls"
	}
	return fmt.Sprintf("three quarters of the free space on the volume holding stream.store_dir (%s), counting what the broker's streams already hold there, since stream.store_max_bytes is unset", e.Source.StoreDir)
}

func (e *ReserveError) fieldSays() string {
	l := e.Log
	if l.Set > 0 {
		return fmt.Sprintf("%s is set to %d, and a ceiling you set is never scaled.", l.Field, l.Set)
	}
	return fmt.Sprintf("%s is unset, so the ceiling was derived and scaled into what the state logs that already exist leave of their share of the broker, and it goes no lower than %d bytes.", l.Field, Floor)
}

// room is the remedy that gives the broker more room, for what sets its
// limit.
func (e *ReserveError) room() string {
	switch e.Source.Kind {
	case SourceStoreMaxBytes:
		return "raise stream.store_max_bytes"
	case SourceAccount:
		return "ask the NATS operator to raise the account's JetStream storage limit"
	}
	floors := Floor * int64(len(e.Logs))
	first := floors / 3 * 4
	return fmt.Sprintf("free space on that volume (a first boot needs at least %d bytes (%.2f GiB) free there, three quarters of which is the %d floors of %d bytes), which the broker measures again when the node next starts",
		first, float64(first)/float64(GiB), len(e.Logs), Floor)
}

// existing names each existing log and the ceiling it holds.
func existing(logs []Log) string {
	var out []string
	for _, l := range logs {
		if l.Exists {
			out = append(out, fmt.Sprintf("%s holds %d bytes", l.Stream, l.Held))
		}
	}
	return strings.Join(out, ", ")
}
