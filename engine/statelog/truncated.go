package statelog

import (
	"context"
	"sync"

	"github.com/crewlet/crewlet/engine"
)

// A log can lose records a peer's rows hold: a broker restored from an
// older copy is behind a peer that applied past the copy's end, or holds
// at that peer's checkpoint another record (the peer reported
// log_diverged). A node whose own rows are the copy's age finds nothing
// wrong with its log, yet a write it appended would be decided against
// rows that miss what the peer holds: from the heartbeat that finds such
// a peer (statelog_log_truncated) its writes of the domain refuse
// log_truncated while its reads go on, until the peer re-anchors, is
// rebuilt or is evicted (statelog_log_truncated_cleared).

// Log lines of a truncated log (component statelog).
const (
	EvLogTruncated        = "statelog_log_truncated"
	EvLogTruncatedCleared = "statelog_log_truncated_cleared"
	EvTruncationUnread    = "statelog_truncation_unread"
)

// Truncation is the verdict that a peer's rows hold records the log lost.
type Truncation struct {
	Peer         string `json:"peer"`
	PeerSeq      uint64 `json:"peer_seq"`
	LastSeq      uint64 `json:"last_seq"`
	PeerDiverged bool   `json:"peer_diverged"`
}

type truncationState struct {
	mu      sync.Mutex
	verdict *Truncation
	// unread says the unread line was written for the run of beats that
	// could not judge.
	unread bool
}

// Truncated is the truncation verdict, nil while none holds.
func (r *Replica) Truncated() *Truncation {
	r.truncated.mu.Lock()
	defer r.truncated.mu.Unlock()
	return r.truncated.verdict
}

// JudgeTruncation is the heartbeat's verdict on this log: t names a peer
// whose rows hold records the log lost, nil says no peer does. The lines
// are written when the verdict starts and when it ends.
func (r *Replica) JudgeTruncation(t *Truncation) {
	r.truncated.mu.Lock()
	prev := r.truncated.verdict
	r.truncated.verdict, r.truncated.unread = t, false
	r.truncated.mu.Unlock()
	switch {
	case t != nil && prev == nil:
		r.log.Error(EvLogTruncated, engine.LogStream, r.stream, "peer", t.Peer, "peer_seq", t.PeerSeq, "last_seq", t.LastSeq, "peer_diverged", t.PeerDiverged)
	case t == nil && prev != nil:
		r.log.Warn(EvLogTruncatedCleared, engine.LogStream, r.stream, "peer", prev.Peer)
	}
}

// TruncationUnread says, once a run, that a beat could not establish the
// truncation either way; the verdict stays where it was.
func (r *Replica) TruncationUnread(err error) {
	r.truncated.mu.Lock()
	said := r.truncated.unread
	r.truncated.unread = true
	r.truncated.mu.Unlock()
	if !said {
		r.log.Warn(EvTruncationUnread, engine.LogStream, r.stream, engine.LogErr, err.Error())
	}
}

// LogInfo reads the domain's log's state from the broker (the heartbeat
// judges the truncation against it).
func (r *Replica) LogInfo(ctx context.Context) (LogInfo, error) { return r.cfg.Log.Info(ctx) }

// truncatedRefusal is log_truncated, refusing a write while a peer holds
// what the log lost.
func truncatedRefusal(stream string, t *Truncation) *engine.Refusal {
	return engine.Refuse(engine.CodeLogTruncated, "%s has lost records that %s's rows hold (it applied through %d; the log ends at %d), so a write decided here could contradict them; nothing was written. Reads go on. It clears once %s re-anchors the log, is rebuilt or is evicted: see crewlet retention status.",
		stream, t.Peer, t.PeerSeq, t.LastSeq, t.Peer).With("peer", t.Peer)
}
