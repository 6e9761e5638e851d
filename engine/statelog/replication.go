package statelog

import (
	"context"
	"fmt"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// replicationProbe bounds the one broker call a replication answer makes
// to learn the log's end.
const replicationProbe = 2 * time.Second

// Standing is a replication answer about one domain: the level it is
// served at (stale, or consistent_prefix where the lag could not be
// measured), where the rows stand, and the prefix actually applied.
type Standing struct {
	engine.ReadInfo
	// AppliedThrough is the prefix actually applied: lower than
	// seen_through when a record was retained rather than applied.
	AppliedThrough engine.Position `json:"applied_through"`
	// LogEnd is the log's end as the broker answered it just now; absent
	// when it did not answer.
	LogEnd *engine.Position `json:"log_end,omitempty"`
	// Error is what the applier is retrying, when it is.
	Error string `json:"error,omitempty"`
}

// prefixOnly ends the sentence of a replication answer that weakened to
// consistent_prefix.
const prefixOnly = ", so this is the prefix this node holds, through seen_through, with no age claimed"

// Replication answers a question about this replica's own replication
// (the retention report, a purge's landing, Settings' lag). Its level is
// not the caller's to choose: a node cannot answer linearizably about its
// own log, so it is stale, with the lag measured against the broker's log
// end asked just now, and it weakens to consistent_prefix, saying so, when
// the broker could not be asked: there is then no age to claim.
func (r *Replica) Replication(ctx context.Context) Standing {
	pctx, cancel := context.WithTimeout(ctx, replicationProbe)
	info, err := r.cfg.Log.Info(pctx)
	cancel()
	seq, through := r.progress.get()
	out := Standing{ReadInfo: engine.ReadInfo{SeenThrough: r.Position(seq), Complete: r.retained.Load() == 0}, AppliedThrough: r.Position(through)}
	if f := r.fault(); f != nil {
		out.Error = f.Error()
	}
	if err != nil {
		out.Level = engine.ConsistentPrefix
		out.Note = "lag unmeasurable: the broker did not answer (" + err.Error() + ")" + prefixOnly
		return out
	}
	if info.Leaderless {
		out.Level = engine.ConsistentPrefix
		out.Note = fmt.Sprintf("lag unmeasurable: %s has no leader, and the member that answered reports an end (%d) that may be behind the log's", r.stream, info.LastSeq) + prefixOnly
		return out
	}
	r.noteLogEnd(info.LastSeq)
	r.capacity.observe(info)
	end := r.Position(info.LastSeq)
	out.LogEnd = &end
	out.Level = engine.Stale
	out.Lag = LagOf(seq, info.LastSeq, r.drain.get())
	if out.Lag.Seconds == nil {
		out.Note = LagUnmeasured
	}
	return out
}
