package statelog

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// The cases of a reanchor (crewlet retention reanchor), each a way the
// log changed under this node's rows.
const (
	// ReanchorRecreated follows a stream deleted and created again from
	// its first surviving record.
	ReanchorRecreated = "recreated"
	// ReanchorRestored follows a broker restored from an older copy from
	// the log's end; records written to the restored log after the
	// restore were decided against the copy's rows and apply on no node
	// (the operator says so with discard).
	ReanchorRestored = "restored"
	// ReanchorAbandoned follows this node's own checkpoint with the
	// records of a generation only an evicted peer held void.
	ReanchorAbandoned = "abandoned"
)

// Log lines of a reanchor (component statelog, WARN).
const (
	EvReanchorStarted = "statelog_reanchor_started"
	EvReanchored      = "statelog_reanchored"
)

// Reanchored is a reanchor's answer: the generation it opened and the
// checkpoint it created, with what it left behind.
type Reanchored struct {
	Domain          engine.Domain `json:"domain"`
	Stream          string        `json:"stream"`
	Case            string        `json:"case"`
	Generation      uint64        `json:"generation"`
	FromGeneration  uint64        `json:"from_generation"`
	StreamCreatedAt time.Time     `json:"stream_created_at"`
	// KeyedTo is the creation instant the rows were keyed to before;
	// Position the checkpoint before; LastSeq where the log ended.
	KeyedTo  time.Time `json:"keyed_to"`
	Position string    `json:"position"`
	LastSeq  uint64    `json:"last_seq"`
	// Cursor is the checkpoint the reanchor created.
	Cursor string `json:"cursor"`
	// PrevLastSeqSeen is the stream's high-water mark as this node knew
	// it before; Discarded the newest record written after a restore that
	// applies on no node (0: none).
	PrevLastSeqSeen uint64 `json:"prev_last_seq_seen"`
	Discarded       uint64 `json:"discarded"`
	// Record is where the generation record announcing it landed.
	Record engine.WriteResult `json:"record"`
}

// Reanchor moves this domain onto a log that changed under its rows, in
// place and with no restart: a new generation, a checkpoint the case
// decides, the applier resumed from it, and a generation record on the
// log saying so. It refuses, changing nothing, where the case is not the
// one this node found (a recreated stream, a restored broker, a
// generation only an evicted peer held).
//
// peersSeq is the highest checkpoint any peer published for this log: the
// new generation's log starts past it too, so every peer finds itself
// below the new floor and adopts a snapshot from the new generation
// rather than apply it over rows from another history.
func (r *Replica) Reanchor(ctx context.Context, op Op, kase string, discard bool, peersSeq uint64) (Reanchored, error) {
	r.life.Lock()
	defer r.life.Unlock()
	plan, err := r.planReanchor(ctx, kase, discard, peersSeq)
	if err != nil {
		return Reanchored{Domain: r.domain, Stream: r.stream, Case: kase}, err
	}
	out := plan.out
	started := []any{engine.LogDomain, string(r.domain), engine.LogStream, r.stream, "generation", out.Generation,
		"stream_created_at", out.StreamCreatedAt, "case", kase, "cursor", out.Cursor, "keyed_to", out.KeyedTo,
		engine.LogPosition, out.Position, "last_seq", out.LastSeq, "from_generation", out.FromGeneration}
	if kase == ReanchorRestored && discard {
		started = append(started, "discarding", out.Discarded)
	}
	r.log.Warn(EvReanchorStarted, started...)
	r.stopApplier()
	if !plan.keep {
		// The new generation numbers its records past every sequence this
		// node's rows were keyed by (rows named by their record's
		// sequence must not meet a namesake), so the log it follows starts
		// after them: what it held below is in the rows already, barriers,
		// or voided records.
		if err := r.cfg.Log.(purger).PurgeThrough(ctx, plan.cursor); err != nil {
			return out, engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not move %s's first sequence past %d (%v); the rows are unchanged. Retry the reanchor.", r.stream, plan.cursor, err)
		}
	}
	cp, err := r.moveCheckpoint(ctx, plan)
	if err != nil {
		return out, err
	}
	if err := r.rederiveNow(ctx); err != nil {
		return out, err
	}
	if err := r.start(ctx, cp); err != nil {
		return out, err
	}
	w, err := r.Write(ctx, op, func(context.Context, *sql.Tx) (*Proposal, error) {
		return &Proposal{Kind: KindGeneration, Subject: GenerationSubject(r.domain), Scope: []string{generationScope}, Payload: plan.gen}, nil
	})
	out.Record = w.WriteResult
	if err != nil {
		return out, err
	}
	done := []any{engine.LogDomain, string(r.domain), engine.LogStream, r.stream, "generation", out.Generation,
		"stream_created_at", out.StreamCreatedAt, "case", kase, "cursor", out.Cursor, "prev_last_seq_seen", out.PrevLastSeqSeen}
	if kase == ReanchorRestored && discard {
		done = append(done, "discarded", out.Discarded)
	}
	r.log.Warn(EvReanchored, done...)
	return out, nil
}

// reanchorPlan is what a reanchor will do, decided before anything moves.
type reanchorPlan struct {
	out    Reanchored
	gen    Generation
	cursor uint64
	// keep says the checkpoint's sequence stays (abandoned).
	keep bool
}

// planReanchor decides the case's generation and checkpoint, or refuses.
func (r *Replica) planReanchor(ctx context.Context, kase string, discard bool, peersSeq uint64) (reanchorPlan, error) {
	info, err := r.cfg.Log.Info(ctx)
	if err != nil {
		return reanchorPlan{}, engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not answer for %s (%v); nothing changed. Retry once it answers.", r.stream, err)
	}
	if info.Leaderless {
		return reanchorPlan{}, engine.Refuse(engine.CodeNoQuorum, "%s has no leader, so its end and creation instant cannot be vouched for; nothing changed. Retry once a majority of the cluster is up.", r.stream)
	}
	cp, err := r.Checkpoint(ctx)
	if err != nil {
		return reanchorPlan{}, err
	}
	cur, _ := r.gens.get()
	cur = max(cur, cp.Generation, 1)
	p := reanchorPlan{out: Reanchored{Domain: r.domain, Stream: r.stream, Case: kase, FromGeneration: cur, KeyedTo: cp.StreamCreatedAt,
		Position: r.Position(cp.Seq).Token(), LastSeq: info.LastSeq, PrevLastSeqSeen: r.logEnd.Load(), StreamCreatedAt: info.Created}}
	v := r.WrongLog()
	newGen := cur + 1
	switch kase {
	case ReanchorRecreated:
		if v == nil || v.Case != WrongLogRecreated {
			return p, r.notTheCase(kase, v)
		}
		if seq, err := r.firstWrite(ctx, info); err != nil || seq > 0 {
			if err != nil {
				return p, err
			}
			return p, engine.Refuse(engine.CodeInvalidArgument, "the recreated %s already holds records other than barriers (the first at %d): their sequences overlap this node's history. Replace this node's rows with a snapshot from a node keyed to the new stream; nothing changed.", r.stream, seq)
		}
		p.cursor = max(cp.Seq, info.LastSeq, peersSeq) + 1
	case ReanchorRestored:
		if v == nil || (v.Case != WrongLogRestored && v.Case != WrongLogDiverged) {
			return p, r.notTheCase(kase, v)
		}
		p.cursor = max(cp.Seq, info.LastSeq, peersSeq) + 1
		if after := r.writtenAfterRestore(ctx, cp, info); after > 0 {
			if !discard {
				return p, engine.Refuse(engine.CodeInvalidArgument, "records were written to the restored %s after the restore, through %d: they were decided against the restored copy's rows and no node applied them. Run again with -discard to void them (they then apply on no node), or replace this node's rows with a snapshot taken after the restore; nothing changed.", r.stream, after)
			}
			p.out.Discarded = after
		}
	case ReanchorAbandoned:
		strange := r.strangeGeneration()
		if strange == nil && v != nil && v.Case == WrongLogGenerationPassed {
			// The heartbeat found the peer's generation before the applier
			// met a record of it.
			strange = &strangeRecord{generation: v.FleetGeneration, writer: v.Peer}
		}
		if strange == nil {
			return p, engine.Refuse(engine.CodeInvalidArgument, "this node's %s applier is not stopped at a record of a generation it never entered, so there is no generation to abandon; nothing changed.", r.stream)
		}
		evicted, err := r.EvictedNodes(ctx)
		if err != nil {
			return p, err
		}
		if !slices.Contains(evicted, strange.writer) {
			return p, engine.Refuse(engine.CodeInvalidArgument, "generation %d of %s was opened by %s, which is not evicted: adopt a snapshot from it instead, or evict it first; only a generation an evicted peer alone held is abandoned. Nothing changed.", strange.generation, r.stream, strange.writer)
		}
		newGen = max(newGen, strange.generation+1)
		p.cursor, p.keep = cp.Seq, true
		p.out.StreamCreatedAt = cp.StreamCreatedAt
	default:
		return p, engine.Refuse(engine.CodeInvalidArgument, "case %q is not one of recreated, restored, abandoned.", kase)
	}
	if _, ok := r.cfg.Log.(purger); !ok && !p.keep {
		return p, engine.Refuse(engine.CodeInvalidArgument, "%s's log cannot move its first sequence, which a %s reanchor needs; nothing changed.", r.stream, kase)
	}
	p.out.Generation = newGen
	p.out.Cursor = engine.Position{Stream: r.stream, Generation: newGen, Seq: p.cursor}.Token()
	p.gen = Generation{Generation: newGen, FromGeneration: cur, Case: kase, Cursor: p.cursor, StreamCreatedAt: p.out.StreamCreatedAt}
	return p, nil
}

// notTheCase refuses a reanchor whose case is not what this node found.
func (r *Replica) notTheCase(kase string, v *WrongLog) error {
	found := "that its log is the one its rows are keyed to"
	if v != nil {
		found = "the " + v.Case + " case: " + v.Why
	}
	return engine.Refuse(engine.CodeInvalidArgument, "a %s reanchor of %s needs the log found %s, and this node found %s; nothing changed. Check crewlet retention status and the statelog lines for what happened to the log.",
		kase, r.stream, map[string]string{ReanchorRecreated: "recreated", ReanchorRestored: "restored or diverged"}[kase], found)
}

// writtenAfterRestore is the newest record of the restored log that was
// stored after this node's checkpoint record: written after the restore,
// against the restored copy's rows (0 when none is).
func (r *Replica) writtenAfterRestore(ctx context.Context, cp Checkpoint, info LogInfo) uint64 {
	if info.LastSeq == 0 || cp.CheckpointStoredAt.IsZero() {
		return 0
	}
	m, err := r.cfg.Log.Get(ctx, info.LastSeq)
	if err != nil || !m.Time.After(cp.CheckpointStoredAt) {
		return 0
	}
	return info.LastSeq
}

// purger is a log that can remove its records through a sequence, moving
// its first sequence past them (engine/broker's Log).
type purger interface {
	PurgeThrough(ctx context.Context, seq uint64) error
}

// maxFirstWriteScan bounds how many records of a recreated stream a
// reanchor reads looking for one that is not a barrier.
const maxFirstWriteScan = 10000

// firstWrite is the first record of the log that is not a barrier, 0
// when it holds none (or nothing at all).
func (r *Replica) firstWrite(ctx context.Context, info LogInfo) (uint64, error) {
	if info.LastSeq == 0 {
		return 0, nil
	}
	if info.LastSeq-max(info.FirstSeq, 1) >= maxFirstWriteScan {
		return max(info.FirstSeq, 1), nil
	}
	for seq := max(info.FirstSeq, 1); seq <= info.LastSeq; seq++ {
		m, err := r.cfg.Log.Get(ctx, seq)
		if errors.Is(err, ErrNoMessage) {
			continue
		}
		if err != nil {
			return 0, engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not answer for record %d of %s (%v); nothing changed. Retry the reanchor.", seq, r.stream, err)
		}
		if !barrierOnly(r.domain, m.Subject) {
			return seq, nil
		}
	}
	return 0, nil
}

// stopApplier stops the reader and waits for the applier to finish what
// it was handed.
func (r *Replica) stopApplier() {
	if r.sub == nil {
		return
	}
	r.sub.Stop()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
	r.cancel()
	<-r.done
}

// moveCheckpoint writes the reanchor's checkpoint and generation in one
// transaction, clears the anchors of the history left behind (the log
// now starts past them: every subject is empty to a write), and sets the
// replica's memory to match.
func (r *Replica) moveCheckpoint(ctx context.Context, p reanchorPlan) (Checkpoint, error) {
	tx, err := sqlite.BeginWrite(ctx, r.cfg.DB)
	if err != nil {
		return Checkpoint{}, err
	}
	defer tx.Rollback()
	if p.keep {
		_, err = tx.ExecContext(ctx, `UPDATE statelog_checkpoint SET generation = ? WHERE domain = ?`, p.gen.Generation, string(r.domain))
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE statelog_checkpoint SET generation = ?, seq = ?, applied_through = ?, stream_created_at = ?, checkpoint_stored_at = 0 WHERE domain = ?`,
			p.gen.Generation, p.cursor, p.cursor, p.gen.StreamCreatedAt.UnixNano(), string(r.domain))
		if err == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM statelog_anchor WHERE domain = ?`, string(r.domain))
		}
	}
	if err != nil {
		return Checkpoint{}, err
	}
	if err := insertGeneration(ctx, tx, r.domain, p.gen); err != nil {
		return Checkpoint{}, err
	}
	cp, _, err := readCheckpoint(ctx, tx, r.domain)
	if err != nil {
		return Checkpoint{}, err
	}
	if err := tx.Commit(); err != nil {
		return Checkpoint{}, err
	}
	if err := r.loadGenerations(ctx, r.cfg.DB); err != nil {
		return Checkpoint{}, err
	}
	r.wrong.mu.Lock()
	r.wrong.verdict, r.wrong.unverified = nil, false
	r.wrong.mu.Unlock()
	r.faultMu.Lock()
	r.stopped, r.faulted, r.lastErr = nil, false, nil
	r.faultMu.Unlock()
	r.strange.Store(nil)
	r.progress.set(cp.Seq, cp.AppliedThrough)
	if !p.keep {
		// What this node knew of the log it left names another history's
		// sequences: its end, its own last write, the operations landed.
		r.logEnd.Store(max(cp.Seq, p.out.LastSeq))
		r.ownLast.Store(0)
		r.landed.forget()
	}
	return cp, nil
}

// strangeRecord is the record that stopped the applier for its
// generation: the generation and the node that wrote it.
type strangeRecord struct {
	generation uint64
	writer     string
	seq        uint64
}

func (r *Replica) strangeGeneration() *strangeRecord { return r.strange.Load() }
