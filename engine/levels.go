package engine

import "time"

// ReadLevel is how fresh an answer must be (the Read Consistency page).
type ReadLevel string

// The four levels.
const (
	Linearizable     ReadLevel = "linearizable"
	Session          ReadLevel = "session"
	Stale            ReadLevel = "stale"
	ConsistentPrefix ReadLevel = "consistent_prefix"
)

// ParseReadLevel accepts exactly the four level names.
func ParseReadLevel(s string) (ReadLevel, bool) {
	switch l := ReadLevel(s); l {
	case Linearizable, Session, Stale, ConsistentPrefix:
		return l, true
	}
	return "", false
}

// ReadOptions is what a surface asks of a read. The surface, not the
// caller, sets Level; MinPosition and the lag bounds come from the REST
// grammar or a seat's floors.
type ReadOptions struct {
	Level       ReadLevel
	MinPosition *Position
	// MaxLagSeq and MaxLagSeconds bound a stale read; zero is no bound.
	MaxLagSeq     uint64
	MaxLagSeconds float64
}

// Lag is how far this node's rows are behind the log's end, in records and,
// where this node's drain rate is measured, in seconds.
type Lag struct {
	Seq     uint64   `json:"seq"`
	Seconds *float64 `json:"seconds,omitempty"`
}

// Incomplete says how many records this node retained rather than applied
// could intersect a set answer. Direction is always "unknown".
type Incomplete struct {
	Records   int      `json:"records"`
	From      Position `json:"from"`
	Scope     []string `json:"scope"`
	Direction string   `json:"direction"`
}

// ReadInfo heads every read answer: the level actually served, the
// position the rows stand at, the lag, and completeness.
type ReadInfo struct {
	Level       ReadLevel   `json:"level"`
	SeenThrough Position    `json:"seen_through"`
	Lag         *Lag        `json:"lag,omitempty"`
	Complete    bool        `json:"complete"`
	Incomplete  *Incomplete `json:"incomplete,omitempty"`
	// Note says, in a sentence, what the answer does not promise (a search
	// carries no read-your-writes floor; a replication answer weakened).
	Note string `json:"note,omitempty"`
}

// Outcome is how a write ended: applied, pending or unknown.
type Outcome string

// The three outcomes (Replication › A write has three outcomes).
const (
	Applied Outcome = "applied"
	Pending Outcome = "pending"
	Unknown Outcome = "unknown"
)

// WriteOptions is what a surface brings to a write: the operation id the
// caller brought back (empty: mint a fresh one), the digest of the call's
// arguments, and for a seat the unit of work its id derives from.
type WriteOptions struct {
	// OpID is an id an answer gave (<uuid>.<verb>-<object>), or a bare v7
	// UUID the client minted itself before its first attempt.
	OpID string
	// Digest is ledger.Digest of the call: an id comes back only with it.
	Digest string
	// Unit, UnitStart and CallIndex derive a seat's id: the unit of work,
	// the instant it began, and the call's place among the unit's distinct
	// calls to the same tool.
	Unit      string
	UnitStart time.Time
	CallIndex int
	// IfMatch, where a gesture takes one (move, merge, trash, restore), is
	// the version of the object it is about that the caller decided
	// against: the gesture's first record is refused stale when the object
	// is no longer at it. 0 decides against the current rows; the broker
	// arbitrates either way.
	IfMatch uint64
}

// WriteResult heads every write answer. Position is the token; it is
// absent on unknown. Lag is present on pending.
type WriteResult struct {
	OpID     string  `json:"op_id"`
	Outcome  Outcome `json:"outcome"`
	Position string  `json:"position,omitempty"`
	Lag      *Lag    `json:"lag,omitempty"`
	// Message says what to do with a pending or unknown outcome.
	Message string `json:"message,omitempty"`
}

// Clock is injected wherever time decides something (the ledger's sweep,
// retry budgets), so tests can run days in milliseconds.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now.
func (SystemClock) Now() time.Time { return time.Now() }
