package node

import (
	"context"
	"errors"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/statelog"
)

// SetCapacity is crewlet retention set-capacity: it changes one state
// log's ceiling to maxBytes — a raise, or a reservation given back, never
// below the bytes the log holds. It runs in every mode (the logs are up
// in maintenance and seal too), and since a stream's configuration is
// the fleet's, one call on any node changes it for all. A raise the
// broker cannot reserve is refused insufficient_storage with the sentence
// a refused boot says. log names the domain (tracker) or its stream.
func (n *Node) SetCapacity(ctx context.Context, log string, maxBytes int64) (capacity.Change, error) {
	d := n.findLog(log)
	if d == nil {
		var names []string
		for _, x := range n.domains {
			names = append(names, string(x.spec.Name())+" ("+x.spec.Stream+")")
		}
		return capacity.Change{}, engine.Refuse(engine.CodeNotFound, "this node runs no state log named %q; name one of %s.", log, strings.Join(names, ", "))
	}
	sp := d.spec
	if maxBytes <= 0 {
		return capacity.Change{}, engine.Refuse(engine.CodeInvalidArgument, "max_bytes must be a positive number of bytes, such as 8GiB.")
	}
	ch := capacity.Change{Domain: string(sp.Name()), Stream: sp.Stream, MaxBytes: maxBytes}
	info, err := d.log.Info(ctx)
	if err != nil {
		return ch, engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not answer for %s (%v); nothing changed. Retry once it answers.", sp.Stream, err)
	}
	ch.Before, ch.Held = info.MaxBytes, info.Bytes
	if uint64(maxBytes) < info.Bytes {
		return ch, engine.Refuse(engine.CodeInvalidArgument, "%s holds %d bytes, so its ceiling cannot go below that; a reservation is given back only down to what the log holds. Ask for %d bytes or more.", sp.Stream, info.Bytes, info.Bytes)
	}
	before, held, err := d.log.SetMaxBytes(ctx, maxBytes)
	ch.Before, ch.Held = before, held
	if errors.Is(err, broker.ErrInsufficientStorage) {
		in, src, ierr := n.capacityInput(ctx, false)
		if ierr != nil {
			return ch, engine.Refuse(engine.CodeInsufficientStorage, "the broker refused to reserve %s's raise to %d bytes (%v); nothing changed.", sp.Stream, maxBytes, err)
		}
		re := &capacity.ReserveError{Log: capacity.Log{Name: string(sp.Name()), Stream: sp.Stream, Field: sp.CeilingKey, Exists: true, Held: before},
			Needed: maxBytes - before, Grant: in.Grant, Source: src, Logs: in.Logs}
		return ch, engine.Refuse(engine.CodeInsufficientStorage, "%s; nothing changed.", strings.TrimSuffix(re.Error(), "."))
	}
	if err != nil {
		return ch, engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not change %s's ceiling (%v); nothing changed. Retry once it answers.", sp.Stream, err)
	}
	ch.Changed = before != maxBytes
	ch.Ordinary = sp.Ordinary(maxBytes)
	if ch.Changed {
		n.log.Info("jetstream_stream_capacity_set", engine.LogStream, sp.Stream, "before", before, "max_bytes", maxBytes, "held", held)
		n.auditCapacity(ctx, d, &ch)
	}
	return ch, nil
}

// auditCapacity puts a ceiling change on the audit trail: a record on the
// log it resized, which every node's applier turns into the trail's row.
// The change itself stands either way (the broker made it); the answer
// says how the record ended, or why it was not written (a capacity window
// publishes nothing).
func (n *Node) auditCapacity(ctx context.Context, d *domain, ch *capacity.Change) {
	if d.replica == nil {
		return
	}
	op, err := statelog.OpFor(n.cfg.Clock.Now(), engine.WriteOptions{}, "set_capacity", string(d.spec.Name()))
	if err == nil {
		var w statelog.Written
		w, err = d.replica.RecordCapacity(ctx, op, ch.Before, ch.MaxBytes)
		ch.AuditOpID, ch.AuditOutcome, ch.AuditPosition = w.OpID, string(w.Outcome), w.Position
	}
	if ref, ok := engine.AsRefusal(err); ok {
		ch.AuditOutcome = "refused " + string(ref.Code)
	} else if err != nil {
		ch.AuditOutcome = "failed: " + err.Error()
	}
}

// findLog finds a domain by its name or its stream's.
func (n *Node) findLog(name string) *domain {
	for _, d := range n.domains {
		if string(d.spec.Name()) == name || strings.EqualFold(d.spec.Stream, name) {
			return d
		}
	}
	return nil
}
