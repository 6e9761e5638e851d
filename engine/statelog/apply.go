package statelog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/ledger"
)

// maxBatch bounds the records one apply transaction takes.
const maxBatch = 512

// run is the applier: one goroutine per domain. It takes what has arrived
// (blocking for the first message, then whatever else is already there),
// applies it in one transaction and acknowledges only after the commit.
func (r *Replica) run(ctx context.Context, cp Checkpoint) {
	defer close(r.done)
	c := r.sub.C()
	progress := newReplay(cp.Seq, r.logEnd.Load(), r.cfg.ProgressEvery, time.Now())
	batch := make([]Delivery, 0, maxBatch)
	acks := &acker{every: r.cfg.AckEvery}
	defer acks.flush()
	var held heldBarriers
	for {
		batch = batch[:0]
		last, due := false, false
		select {
		case d := <-c:
			batch = append(batch, d)
		case <-acks.due():
			acks.flush()
			continue
		case <-r.sub.Done():
			last = true
		case <-held.due():
			// No other batch came to carry the held barriers' checkpoint.
			due = true
		case <-ctx.Done():
			return
		}
		batch = fill(batch, c)
		if !last && !due {
			batch = r.gather(ctx, batch, c)
		}
		if !last && !due && r.pass(cp, &held, batch) {
			continue
		}
		batch = held.withHeld(batch)
		// A batch is committed as one transaction or, where its records
		// write more than MaxTxRows rows, as several, each ending at the
		// record that reached the budget (a record is never split).
		began := time.Now()
		for start := 0; start < len(batch); {
			n, ok := r.applyWithRetry(ctx, &cp, batch[start:], start == 0, acks)
			if !ok {
				return
			}
			start += n
		}
		if len(batch) > 0 {
			r.cfg.Metrics.BatchApplied(time.Since(began))
			progress.after(r.log, r.stream, cp.Seq, time.Now())
		}
		if last && len(c) == 0 {
			return
		}
	}
}

// applyWithRetry applies one batch, retrying a failure in place: the run
// of failures is logged once when it starts, once more when it outlives the
// retry budget (reads then refuse stalled), and once when it ends. first
// says batch begins the applier's batch, which the counters then count.
func (r *Replica) applyWithRetry(ctx context.Context, cp *Checkpoint, batch []Delivery, first bool, acks *acker) (int, bool) {
	var started time.Time
	var lastErr error
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			r.cfg.Metrics.Retried()
		}
		t0 := time.Now()
		next, applied, used, rows, err := r.applyBatch(ctx, *cp, batch)
		if err == nil {
			r.committed(batch[:used], next, applied, rows, first, time.Since(t0), acks)
			*cp = next
			if attempt > 0 {
				r.faultMu.Lock()
				r.faulted, r.lastErr = false, nil
				r.faultMu.Unlock()
				r.log.Info(engine.EvApplyRecovered, "after", time.Since(started).String(), engine.LogErr, lastErr.Error(),
					engine.LogStream, r.stream, engine.LogPosition, r.Position(next.Seq).Token())
			}
			return used, true
		}
		var se *StopError
		if errors.As(err, &se) {
			r.stop(se, *cp)
			return 0, false
		}
		lastErr = err
		r.cfg.Metrics.TxAborted()
		if attempt == 0 {
			// The log holds what it delivered, whether or not it commits
			// here: a node whose apply fails reports its lag against it.
			for _, d := range batch {
				r.noteLogEnd(d.Seq + d.Pending)
			}
			started = time.Now()
			r.log.Warn(engine.EvApplyRetrying, engine.LogErr, err.Error(), engine.LogStream, r.stream,
				engine.LogPosition, r.Position(cp.Seq).Token())
		}
		r.faultMu.Lock()
		r.lastErr = err
		if !r.faulted && time.Since(started) >= r.cfg.RetryBudget {
			r.faulted = true
			r.log.Error(engine.EvApplyFaulted, engine.LogErr, err.Error(), engine.LogStream, r.stream,
				engine.LogPosition, r.Position(cp.Seq).Token(), "budget", r.cfg.RetryBudget.String())
		}
		r.faultMu.Unlock()
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// committed notes a committed transaction of batch, at next: the counters
// and the progress, then the ack.
func (r *Replica) committed(batch []Delivery, next Checkpoint, applied, rows int, first bool, took time.Duration, acks *acker) {
	r.drain.observe(applied, took)
	r.stats.observe(applied, rows, took)
	r.cfg.Metrics.TxApplied(took)
	// Counted before the progress is published: whoever waits for it
	// reads counters that include what it waited for.
	if first {
		r.batches.Add(1)
	}
	r.delivered.Add(uint64(len(batch)))
	r.applied.Add(uint64(applied))
	// The newest delivery, not the last: a redelivered older record can
	// come after newer ones in the same batch.
	newest := batch[0]
	for _, d := range batch {
		r.capacity.delivered(d.Seq, d.Subject, d.MsgID, len(d.Data))
		if d.Seq > newest.Seq {
			newest = d
		}
	}
	r.progress.set(next.Seq, next.AppliedThrough)
	if end := newest.Seq + newest.Pending; end > r.logEnd.Load() {
		r.logEnd.Store(end)
	}
	// Ack after the commit: the checkpoint, not the consumer, is what this
	// node resumes from, so a lost ack costs nothing. The policy is
	// ack-all, so acking the newest acknowledges the whole batch, all of it
	// at or below the checkpoint now (spaced: see acker).
	acks.note(newest.Ack)
}

// applyBatch writes one batch in one transaction: the domain's rows, the
// ledger rows, the anchors and the checkpoint, committed together or not
// at all.
//
// used is how many deliveries of batch the transaction took: all of them,
// or fewer where the rows the domain wrote reached MaxTxRows, or the next
// record would take them past it (RowsAhead), so another writer of the
// database waits behind at most one such transaction.
func (r *Replica) applyBatch(ctx context.Context, cp Checkpoint, batch []Delivery) (_ Checkpoint, applied, used, rows int, _ error) {
	if r.cfg.Disabled != nil {
		if err := r.cfg.Disabled(); err != nil {
			return cp, 0, 0, 0, err
		}
	}
	// Nothing past a checkpoint that could not be compared with the log,
	// and nothing at all on a log that is not the rows' (wronglog.go).
	if err := r.verifiedBeforeApply(ctx, cp); err != nil {
		return cp, 0, 0, 0, err
	}
	if err := r.reloadIfDirty(ctx); err != nil {
		return cp, 0, 0, 0, err
	}
	tx, err := sqlite.BeginWrite(ctx, r.cfg.DB)
	if err != nil {
		return cp, 0, 0, 0, err
	}
	defer tx.Rollback()
	// A batch runs to its commit once begun: its statements are short,
	// and watching the applier's context for each of them cost two
	// goroutines a statement (sqlite.point).
	ctx = context.WithoutCancel(ctx)
	r.bound = sqlite.NewBound(tx)
	defer func() { r.bound = nil }()
	r.resetBatch()
	if err := r.ledger.ask(ctx, sqlite.Cached{Tx: tx, S: r.stmts, B: r.bound}, batch, cp.Seq); err != nil {
		return cp, 0, 0, 0, err
	}
	retained, unknown := 0, 0
	var gated []gatedLine
	ahead := decodeBatch(batch, r.format)
	defer ahead.end()
	for i, d := range batch {
		if rows >= MaxTxRows {
			break
		}
		var dec decoded
		if d.Seq > cp.Seq {
			// A record that would take the transaction past MaxTxRows
			// begins the next one (a record is never split).
			if dec = ahead.at(i, d, r.format); rows > 0 && rows+r.rowsAhead(dec) > MaxTxRows {
				break
			}
		}
		used++
		if d.Seq <= cp.Seq {
			continue // at or below the checkpoint: already in the rows
		}
		if d.Seq > cp.Seq+1 {
			// A gap: the consumer handed over a record past one it never
			// delivered here (after a consumer leader change it delivers
			// new records before it redelivers one lost in flight, and the
			// ack after this batch acknowledges everything below, so the
			// missing one would never come back). Read it from the log.
			n, held, heldUnknown, err := r.fillGap(ctx, tx, &cp, d.Seq, &rows, &gated)
			if err != nil {
				return cp, 0, 0, 0, err
			}
			applied, retained, unknown = applied+n, retained+held, unknown+heldUnknown
		}
		held, g, err := r.applyOne(ctx, tx, &cp, d, dec, &rows)
		if err != nil {
			return cp, 0, 0, 0, err
		}
		retained, unknown = held.count(retained, unknown)
		if g != nil {
			gated = append(gated, *g)
		}
		applied++
	}
	if applied == 0 {
		return cp, 0, used, 0, nil
	}
	if err := r.commitBatch(ctx, tx, cp, retained, unknown, gated); err != nil {
		return cp, 0, 0, 0, err
	}
	return cp, applied, used, rows, nil
}

// resetBatch forgets what an earlier try of the batch noted: it never
// committed.
func (r *Replica) resetBatch() {
	clear(r.anchors)
	r.ledger.reset()
	r.observers.reset()
	r.landed.reset()
	r.answers.reset()
	r.held = nil
	r.cover = nil
}

// rowsAhead is what the domain expects a decoded record to write (0 where
// it cannot say: RowsAhead).
func (r *Replica) rowsAhead(dec decoded) int {
	ra, ok := r.cfg.Domain.(RowsAhead)
	if !ok || dec.err != nil || dec.rec == nil {
		return 0
	}
	return ra.RowsAhead(dec.rec)
}

// commitBatch ends a batch's transaction: the ledger rows and anchors it
// kept for its end, the checkpoint, the commit, then what waits for the
// commit.
func (r *Replica) commitBatch(ctx context.Context, tx *sql.Tx, cp Checkpoint, retained, unknown int, gated []gatedLine) error {
	if r.held != nil {
		if err := r.held.Flush(ctx, tx, Applying{Seq: cp.Seq, Time: cp.CheckpointStoredAt, stmts: r.stmts, bound: r.bound}); err != nil {
			return err
		}
	}
	q := sqlite.Cached{Tx: tx, S: r.stmts, B: r.bound}
	if err := r.ledger.flush(ctx, q); err != nil {
		return err
	}
	if err := r.anchors.flush(ctx, q, string(r.domain)); err != nil {
		return err
	}
	if err := r.storeCheckpoint(ctx, tx, cp); err != nil {
		return err
	}
	// Counted before the commit, so no read can see the retained rows
	// without being told to look for them.
	r.retained.Add(int64(retained))
	r.scopeUnknown.Add(int64(unknown))
	if err := tx.Commit(); err != nil {
		r.retained.Add(-int64(retained))
		r.scopeUnknown.Add(-int64(unknown))
		return err
	}
	r.afterCommit(ctx, gated)
	r.observers.tell()
	return nil
}

// storeCheckpoint writes the batch's checkpoint in its transaction, then
// runs Config.BeforeCommit on that transaction: the checkpoint and the
// rows it covers are what the hook sees.
func (r *Replica) storeCheckpoint(ctx context.Context, tx *sql.Tx, cp Checkpoint) error {
	// Once a batch: prepared once per connection, not parsed every time.
	if _, err := (sqlite.Cached{Tx: tx, S: r.stmts, B: r.bound}).ExecContext(ctx, `UPDATE statelog_checkpoint SET seq = ?, applied_through = ?, checkpoint_stored_at = ? WHERE domain = ?`,
		cp.Seq, cp.AppliedThrough, cp.CheckpointStoredAt.UnixNano(), string(r.domain)); err != nil {
		return err
	}
	if r.cfg.BeforeCommit != nil {
		if err := r.cfg.BeforeCommit(tx, cp.Seq); err != nil {
			return err
		}
	}
	return nil
}

// afterCommit does what waits for a batch's commit: the node gates are
// read again where the batch changed them, and each record a gate dropped
// gets its log line.
func (r *Replica) afterCommit(ctx context.Context, gated []gatedLine) {
	// Before the checkpoint is told to the waiting writes.
	r.landed.commit()
	r.answers.commit()
	if r.gateChanged.Swap(false) {
		if err := r.loadEvicted(ctx); err != nil {
			r.log.Warn("statelog_node_gate_unread", engine.LogErr, err.Error())
		}
	}
	// The drop's only witness, written once, when the transaction that
	// drops the record commits.
	for _, g := range gated {
		r.cfg.Metrics.Gated(g.gate)
		r.alarms.gated(r.Position(g.seq), g.gate, g.writer, r.cfg.Clock.Now())
		r.log.Warn(engine.EvRecordGated, engine.LogPosition, r.Position(g.seq).Token(), "kind", g.kind,
			engine.LogWriter, g.writer, engine.LogGate, g.gate, engine.LogOpID, g.opID)
	}
}

// fillGap applies, inside the batch's transaction, every record between
// the checkpoint and upTo (exclusive) read directly from the log. On a
// compacted stream a sequence the log no longer holds is an old value the
// broker replaced, and is skipped as the consumer itself would; on a log
// it is never skipped (a hole counted as applied would leave this node's
// rows missing a record for good): missing judges it.
func (r *Replica) fillGap(ctx context.Context, tx *sql.Tx, cp *Checkpoint, upTo uint64, rows *int, gated *[]gatedLine) (n, retained, unknown int, err error) {
	for seq := cp.Seq + 1; seq < upTo; seq++ {
		m, err := r.cfg.Log.Get(ctx, seq)
		if errors.Is(err, ErrNoMessage) && r.cfg.Compacted {
			cp.Seq = seq
			if cp.AppliedThrough == seq-1 {
				cp.AppliedThrough = seq
			}
			continue
		}
		if errors.Is(err, ErrNoMessage) {
			return 0, 0, 0, r.missing(ctx, seq)
		}
		if err != nil {
			return 0, 0, 0, fmt.Errorf("statelog: record %d was never delivered and cannot be read from the log: %w", seq, err)
		}
		held, g, err := r.applyOne(ctx, tx, cp, Delivery{StoredMsg: m}, decode(m.Data, r.format), rows)
		if err != nil {
			return 0, 0, 0, err
		}
		retained, unknown = held.count(retained, unknown)
		if g != nil {
			*gated = append(*gated, *g)
		}
		n++
	}
	return n, retained, unknown, nil
}

type gatedLine struct {
	seq                      uint64
	kind, writer, gate, opID string
}

// applyOne applies one record; held says whether it was retained
// instead (undecoded, of a kind this build does not know, or covered by
// a retained record's scope) and whether its scope is known; gated names
// the gate that dropped it.
func (r *Replica) applyOne(ctx context.Context, tx *sql.Tx, cp *Checkpoint, d Delivery, dec decoded, rows *int) (held retainedAs, gated *gatedLine, err error) {
	// A retained record holds everything after it back from applied_through.
	contiguous := cp.AppliedThrough == cp.Seq
	cp.Seq = d.Seq
	cp.CheckpointStoredAt = d.Time
	rec, err := dec.rec, dec.err
	if err == nil && rec.Kind == record.KindBarrier {
		if contiguous {
			cp.AppliedThrough = d.Seq
		}
		return notRetained, nil, nil
	}
	if held, err := r.retainIfHeld(ctx, tx, d, rec, err); held != notRetained || err != nil {
		return held, nil, err
	}
	if contiguous {
		cp.AppliedThrough = d.Seq
	}
	// The anchor moves whatever the record then does: it is what the
	// broker arbitrates the next write on this subject against. Written
	// with the batch's checkpoint (movedAnchors).
	r.anchors.move(d.Subject, d.Seq)
	g, err := r.applyDecoded(ctx, tx, d, rec, rows)
	return notRetained, g, err
}

// applyDecoded runs a decoded record through the gates, the ledger and its
// apply inside tx: the applier's path for a record it consumes, and the
// release's for one it retained before (retain.go).
func (r *Replica) applyDecoded(ctx context.Context, tx *sql.Tx, d Delivery, rec *record.Record, rows *int) (*gatedLine, error) {
	if err := r.checkGeneration(rec, d.Seq); err != nil {
		return nil, err
	}
	// The statements below run for every record: prepared once.
	q := sqlite.Cached{Tx: tx, S: r.stmts, B: r.bound}
	for _, g := range r.gates {
		holds, err := g.Holds(ctx, q, rec, d.Seq)
		if err != nil {
			return nil, err
		}
		if holds {
			if _, err := tx.ExecContext(ctx, `INSERT INTO statelog_gated(domain, seq, op_id, subject, kind, writer, gate) VALUES(?,?,?,?,?,?,?)
				ON CONFLICT DO NOTHING`, string(r.domain), d.Seq, rec.OpID, rec.Subject, rec.Kind, rec.Writer, g.Name()); err != nil {
				return nil, err
			}
			return &gatedLine{seq: d.Seq, kind: rec.Kind, writer: rec.Writer, gate: g.Name(), opID: rec.OpID}, nil
		}
	}
	if rec.OpID != "" {
		// A second copy of an operation (appended after the duplicate
		// window) applies nothing: the first copy's effects are the op's.
		first, err := r.ledger.first(ctx, q, ledger.Entry{OpID: rec.OpID, Domain: string(r.domain), Subject: rec.Subject,
			Object: objectOf(rec.OpID), Generation: rec.Generation, Seq: d.Seq, Digest: rec.Digest, AppliedAt: r.cfg.Clock.Now()})
		if err != nil || !first {
			return nil, err
		}
	}
	*rows++ // the record's own rows, at the least
	at := Applying{Seq: d.Seq, Time: d.Time, rows: rows, stmts: r.stmts, bound: r.bound, held: &r.held}
	if apply, ok := frameworkApply[rec.Kind]; ok {
		if err := apply(r, ctx, tx, rec, d.Seq); err != nil {
			return nil, err
		}
	} else if err := r.cfg.Domain.Apply(ctx, tx, rec, at); err != nil {
		return nil, err
	}
	if err := r.audit(ctx, tx, rec, d.Seq, d.Time); err != nil {
		return nil, err
	}
	if rec.OpID != "" {
		r.landed.note(d.Seq, rec.OpID)
		r.readAnswer(ctx, tx, rec, at)
	}
	if !isFramework(rec.Kind) {
		r.observers.note(d.Seq, rec.Kind, rec.Subject, rec.Scope)
	}
	return nil, nil
}

// readAnswer reads, for a write of this node waiting on rec, its answer
// (Answerer), kept for it once the transaction commits.
func (r *Replica) readAnswer(ctx context.Context, tx *sql.Tx, rec *record.Record, at Applying) {
	if r.answerer == nil || !r.answers.awaited(rec.OpID) {
		return
	}
	if v, err := r.answerer.Answer(ctx, tx, rec, at); err == nil && v != nil {
		r.answers.note(rec.OpID, at.Seq, v)
	}
}

// GatedAt returns the gate that dropped the record at seq, if one did.
func (r *Replica) GatedAt(ctx context.Context, seq uint64) (gate, writer string, ok bool, err error) {
	err = r.cfg.DB.QueryRowContext(ctx, `SELECT gate, writer FROM statelog_gated WHERE domain = ? AND seq = ?`, string(r.domain), seq).Scan(&gate, &writer)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	return gate, writer, err == nil, err
}

// objectOf is the <verb>-<object> name of an operation id, which the
// ledger keeps so an id sent with another write can be told apart.
func objectOf(opID string) string {
	if i := strings.IndexByte(opID, '.'); i >= 0 {
		return opID[i+1:]
	}
	return opID
}

// Anchor reads the arbitration anchor of subject inside tx: the sequence
// of the last record this node consumed on it, 0 when none.
func Anchor(ctx context.Context, q ledger.Querier, domain engine.Domain, subject string) (uint64, error) {
	var seq uint64
	err := q.QueryRowContext(ctx, `SELECT seq FROM statelog_anchor WHERE domain = ? AND subject = ?`, string(domain), subject).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}
