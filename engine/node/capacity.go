package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/capacity"
)

// sizeLogs sizes the state logs' ceilings together, once, before their
// streams are ensured (Replication › How the byte ceilings are sized):
// every existing log's ceiling read at once, what the broker can grant,
// the volume's free space, then capacity.Size. A log the broker cannot
// reserve refuses the boot with capacity's sentence.
func (n *Node) sizeLogs(ctx context.Context) (capacity.Plan, capacity.Input, error) {
	in, src, err := n.capacityInput(ctx, true)
	if err != nil {
		return capacity.Plan{}, in, err
	}
	plan := capacity.Size(in)
	return plan, in, capacity.Check(plan, in, src)
}

// capacityInput reads what the sizing needs: the logs as configured and
// as the broker holds them, the grant and the volume. boot logs every
// ceiling it could not read.
func (n *Node) capacityInput(ctx context.Context, boot bool) (capacity.Input, capacity.Source, error) {
	cfg := n.cfg
	names := make([]string, len(cfg.Domains))
	for i, sp := range cfg.Domains {
		names[i] = sp.Stream
	}
	read := broker.DefaultCeilingRead
	if cfg.Hooks.CeilingRead != nil {
		read = *cfg.Hooks.CeilingRead
	}
	held := broker.ReadCeilings(ctx, n.broker.JS, names, read)
	var in capacity.Input
	for _, sp := range cfg.Domains {
		c := held[sp.Stream]
		if c.Unread && boot {
			why := "no answer"
			if c.Err != nil {
				why = c.Err.Error()
			}
			cfg.Logger.Warn(engine.EvCeilingUnread, engine.LogComponent, engine.ComponentStatelog, engine.LogStream, sp.Stream, engine.LogErr, why)
		}
		in.Logs = append(in.Logs, capacity.Log{Name: string(sp.Name()), Stream: sp.Stream, Field: sp.CeilingKey,
			Set: cfg.Stream.LogMaxBytes[sp.CeilingKey], Ask: sp.Ask, Exists: c.Exists, Held: c.MaxBytes})
	}
	g, src, err := n.broker.Grant(ctx)
	if err != nil {
		// No limit to read: the share is half the volume's free space.
		cfg.Logger.Warn("jetstream_limit_unread", engine.LogComponent, engine.ComponentEngine, engine.LogErr, err.Error())
		g = capacity.Grant{}
	}
	in.Grant = g
	free, err := broker.VolumeFree(cfg.Stream.StoreDir)
	if err != nil && g.Limit <= 0 {
		return in, src, fmt.Errorf("engine: the broker states no storage limit and the free space on the volume holding stream.store_dir (%s) cannot be read (%v), so the state logs cannot be sized; set stream.store_max_bytes or the state logs' ceilings", cfg.Stream.StoreDir, err)
	}
	in.VolumeFree = free
	return in, src, nil
}

// reportShort logs statelog_ceiling_short_of_fit for each log created
// below its empty-broker fit, naming what each existing log holds.
func (n *Node) reportShort(plan capacity.Plan) {
	held := map[string]int64{}
	for _, s := range plan.Logs {
		if s.Exists {
			held[s.Stream] = s.Held
		}
	}
	for _, s := range plan.Logs {
		if s.Short() {
			n.cfg.Logger.Warn(engine.EvCeilingShortOfFit, engine.LogComponent, engine.ComponentStatelog, engine.LogStream, s.Stream,
				"created", s.Create, "fit", s.Fit, "held", held)
		}
	}
}

// reserveRefused turns the broker's refusal of a stream's reservation
// (which the sizing's own check did not foresee: a limit read otherwise
// than the broker enforces it, or another client reserving meanwhile)
// into capacity's sentence, with the grant read again.
func (n *Node) reserveRefused(ctx context.Context, err error, in capacity.Input, log capacity.Log, needed int64) error {
	if !errors.Is(err, broker.ErrInsufficientStorage) {
		return err
	}
	g, src, gerr := n.broker.Grant(ctx)
	if gerr != nil {
		return err
	}
	return &capacity.ReserveError{Log: log, Needed: needed, Grant: g, Source: src, Logs: in.Logs, Boot: true}
}
