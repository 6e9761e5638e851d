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
)

// Log is one domain's stream on the broker, as the framework needs it.
// engine/broker implements it.
type Log interface {
	// Stream is the stream's name.
	Stream() string
	// Publish appends data on subject. msgID, when set, is the Nats-Msg-Id;
	// expectLast, when set, is the expected last sequence on the subject
	// (0: the subject holds nothing yet). Errors are classified as
	// *WrongSequenceError, ErrLogFull or ErrNoAnswer where they are those.
	Publish(ctx context.Context, subject string, data []byte, msgID string, expectLast *uint64) (PubAck, error)
	// LastOnSubject returns the newest message on subject; ErrNoMessage
	// when the subject holds none.
	LastOnSubject(ctx context.Context, subject string) (StoredMsg, error)
	// Get returns the message at seq; ErrNoMessage when there is none.
	Get(ctx context.Context, seq uint64) (StoredMsg, error)
	// Info reads the stream's state from the broker.
	Info(ctx context.Context) (LogInfo, error)
	// Subscribe opens this node's durable reader, delivering every message
	// after checkpoint (the consumer is rebuilt there when it disagrees).
	Subscribe(ctx context.Context, checkpoint uint64) (Subscription, error)
}

// PubAck is the broker's answer to an append.
type PubAck struct {
	Seq       uint64
	Duplicate bool
}

// StoredMsg is a message read back from the stream.
type StoredMsg struct {
	Seq     uint64
	Subject string
	MsgID   string
	Data    []byte
	Time    time.Time
}

// LogInfo is the stream's state.
type LogInfo struct {
	FirstSeq uint64
	LastSeq  uint64
	Bytes    uint64
	MaxBytes int64
	Created  time.Time
	// Leaderless says a member answered while the log had no leader: the
	// figures are that member's own, behind the log's if it was cut off.
	Leaderless bool
	// Leader is the broker (server name) leading the stream where the
	// broker names one; an embedded broker is named after its node.
	Leader string
}

// Delivery is one message handed to the applier.
type Delivery struct {
	StoredMsg
	// Pending is how many messages the broker had left after this one,
	// which tells the applier where the log ends without asking.
	Pending uint64
	// Ack acknowledges this message and every one before it.
	Ack func() error
}

// Subscription feeds the applier.
type Subscription interface {
	// C delivers messages in stream order.
	C() <-chan Delivery
	// Done is closed once Stop has drained the reader: whatever is still
	// in C then is the last of it.
	Done() <-chan struct{}
	// Stop ends deliveries; messages already handed over stay in C.
	Stop()
}

// Errors the Log classifies broker answers into.
var (
	ErrLogFull = errors.New("statelog: the log is at its byte ceiling")
	// ErrVolumeFull: the volume holding the broker's store has no room
	// for the append (not the log's ceiling); the broker stored nothing.
	ErrVolumeFull = errors.New("statelog: the volume holding the broker's store is full")
	ErrNoAnswer   = errors.New("statelog: the broker did not answer")
	ErrNoMessage  = errors.New("statelog: no such message")
	// ErrNoQuorum: the broker answered and a majority did not agree.
	ErrNoQuorum = errors.New("statelog: the broker answered but no quorum committed")
)

// WrongSequenceError is the broker refusing an append whose expected last
// subject sequence was not the subject's last (10071, or 10164 on a
// replicated stream). Last is the subject's actual last sequence where the
// broker said it.
type WrongSequenceError struct{ Last uint64 }

func (e *WrongSequenceError) Error() string {
	return fmt.Sprintf("statelog: wrong last sequence on subject: %d", e.Last)
}

// Domain is a replicated domain as the framework drives it. Apply must be
// deterministic: every node applying the same log reaches the same rows.
type Domain interface {
	// Name is the domain's name. Its records go on subjects under
	// SubjectPrefix(Name()).
	Name() engine.Domain
	// Schema is the DDL of the domain's tables, run at open.
	Schema() string
	// Kinds lists every record kind the domain writes and applies, each
	// with the lowest format version that applies it whole (a proposal
	// may raise it with a field a later format added). A record is
	// stamped with it, so a build that does not know a kind retains its
	// records rather than apply nothing for them; and a record of a kind
	// this build does not list is retained, never applied as nothing.
	Kinds() map[string]int
	// Apply writes a record's rows inside the batch's transaction. A
	// returned error fails the whole batch, which is retried in place;
	// a record that is simply moot (its object already gone) returns nil.
	Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at Applying) error
}

// Relayer is a Domain whose tables' layout changed between builds in a
// way CREATE TABLE IF NOT EXISTS cannot reach (a table made a rowid
// table, say): Relay rewrites a file's older layout into the current one
// inside the open's schema transaction, before Schema runs (which may
// index a column only the current layout has; a table not there yet is a
// new file's), and keeps every row and column as it was, so the rows,
// their hashes and what every record applies to stay the same. It answers
// what it rewrote, empty where the file was already current.
type Relayer interface {
	Relay(ctx context.Context, tx *sql.Tx) ([]string, error)
}

// RowsAhead is a Domain that can say, from a record it has not applied
// yet, about how many rows its apply will write (what it will count with
// Applying.Wrote). The applier ends a transaction before a record that
// would take it past MaxTxRows, so a bulk update cut into records of up
// to MaxTxRows rows commits each in a transaction of its own rather than
// two in one. A domain without it is asked nothing: a transaction ends
// once its rows reach MaxTxRows.
type RowsAhead interface {
	RowsAhead(rec *record.Record) int
}

// DomainReplica is what a domain's service sees of its replica
// (*Replica): the write path, the read path, a wait for the applier, and
// positions. The rest of a Replica (its standing, stats, alarms, capacity,
// floor and eviction) is the node's and the fleet's, never a domain's.
type DomainReplica interface {
	// Write decides a record against the local rows, publishes it and
	// waits for this node to apply it: applied, pending or unknown.
	Write(ctx context.Context, op Op, decide Decide) (Written, error)
	// Settle runs fn, and runs it again at the log's end where it ends in
	// a refusal decided from the rows (engine.DecidedFromRows).
	Settle(ctx context.Context, fn func(ctx context.Context) error) error
	// Read admits a read at opts' level and runs fn in one read snapshot.
	Read(ctx context.Context, opts engine.ReadOptions, fn ReadFunc) (engine.ReadInfo, error)
	// ReadObject is Read about one object, compared at its own version.
	ReadObject(ctx context.Context, opts engine.ReadOptions, fn ObjectReadFunc) (engine.ReadInfo, error)
	// ReadObjectRow is ReadObject where one statement answers (slow where
	// it cannot).
	ReadObjectRow(ctx context.Context, opts engine.ReadOptions, one RowRead, slow ObjectReadFunc) (engine.ReadInfo, error)
	// AtLogEnd are the options of a read level with the log's end as the
	// broker reports it now, appending nothing (a duty's reads).
	AtLogEnd(ctx context.Context) (engine.ReadOptions, error)
	// Prepared reads inside tx (a read's snapshot or a decision's) through
	// statements prepared once per connection.
	Prepared(tx *sql.Tx) Reader
	// Waiter waits for this node to apply a sequence.
	Waiter
	// Position turns a sequence on the domain's log into a position.
	Position(seq uint64) engine.Position
}

var _ DomainReplica = (*Replica)(nil)

// Applying tells a domain where the record it applies sits.
type Applying struct {
	Seq  uint64
	Time time.Time
	// rows counts the rows the batch's transaction has written, so the
	// applier can close it at MaxTxRows.
	rows *int
	// stmts prepares a domain's statements once per connection; bound
	// keeps them bound to the batch's transaction.
	stmts *sqlite.Statements
	bound *sqlite.Bound
	// held is the applier's slot for what the domain holds back in the
	// transaction (Hold); nil where no applier runs it.
	held *Held
}

// Held is what a domain keeps back across the records of one apply
// transaction and writes once, at its end, rather than once a record (the
// tracker's creates: their projects' counters and the rows no create
// reads). The applier
// flushes it after the batch's last record, before the framework's rows
// and the checkpoint; a domain flushes it itself before a record that
// reads what it holds back. A retry of the batch starts with nothing
// held: nothing held committed.
type Held interface {
	Flush(ctx context.Context, tx *sql.Tx, at Applying) error
}

// Hold returns what the domain holds back in this transaction, made by mk
// on the first call. batched is false where no applier runs the
// transaction (a domain's records applied by hand): then nothing flushes
// it but the domain, before its Apply returns.
func (a Applying) Hold(mk func() Held) (h Held, batched bool) {
	if a.held == nil {
		return mk(), false
	}
	if *a.held == nil {
		*a.held = mk()
	}
	return *a.held, true
}

// Exec runs a statement of the apply inside tx, prepared once per
// connection (an apply's statements are the same texts record after
// record; parsing them each time was most of an apply's CPU).
func (a Applying) Exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	return sqlite.Cached{Tx: tx, S: a.stmts, B: a.bound}.ExecContext(ctx, query, args...)
}

// QueryRow is Exec's counterpart for a one-row query.
func (a Applying) QueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	return sqlite.Cached{Tx: tx, S: a.stmts, B: a.bound}.QueryRowContext(ctx, query, args...)
}

// Query is Exec's counterpart for a query of many rows.
func (a Applying) Query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	return sqlite.Cached{Tx: tx, S: a.stmts, B: a.bound}.QueryContext(ctx, query, args...)
}

// Prepare returns query prepared for repeated use inside tx (closed with
// it), from the statements prepared once per connection where it can.
func (a Applying) Prepare(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if a.stmts != nil {
		return a.stmts.In(ctx, tx, query)
	}
	return tx.PrepareContext(ctx, query)
}

// Wrote tells the applier the record wrote n more rows (child rows of a
// bulk record: tags, history, postings), counted against MaxTxRows.
func (a Applying) Wrote(n int) {
	if a.rows != nil {
		*a.rows += n
	}
}

// SubjectPrefix is the subject tree of a domain's stream: crewlet.<domain>.
// The stream takes SubjectPrefix(d)+">".
func SubjectPrefix(d engine.Domain) string { return "crewlet." + string(d) + "." }

// BarrierSubject is the subject a domain's linearizable reads append their
// barrier records on.
func BarrierSubject(d engine.Domain) string { return SubjectPrefix(d) + "barrier" }

// barrierOnly reports whether subject carries barrier records alone: the
// reads' barrier subject, or a creation mark's (zeromark.go).
func barrierOnly(d engine.Domain, subject string) bool {
	return subject == BarrierSubject(d) || strings.HasPrefix(subject, SubjectPrefix(d)+markToken)
}

// Gate is an apply gate: a rule that makes a durable record apply nowhere
// (an evicted writer's, a purged object's). The applier asks the
// framework's gates first, in Config order, then the domain's own.
type Gate interface {
	// Name is the gate's word on statelog_record_gated (evicted, deleted…).
	Name() string
	// Holds reports, inside the batch's transaction, whether the gate drops
	// the record at seq.
	Holds(ctx context.Context, tx Reader, rec *record.Record, seq uint64) (bool, error)
}

// Reader is how a gate reads inside the batch's transaction: through
// statements prepared once per connection, since a gate is asked of every
// record.
type Reader interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// GatedDomain is a Domain with gates of its own (the deletion gate).
type GatedDomain interface {
	Domain
	Gates() []Gate
	// GateKinds are the domain's record kinds that install a gate (a
	// purge's marker): they stay at format version 1 and only ever grow by
	// addition, and one this build cannot decode stops its applier rather
	// than be retained (a node deferring a purge would go on applying what
	// the purge was to drop).
	GateKinds() []string
}
