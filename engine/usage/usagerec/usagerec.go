// Package usagerec is the usage domain's record contract: its one record
// kind (a node's day of one seat, whole and cumulative), its format
// version, payload, subjects and scopes. Both the apply side (usageapply)
// and the service (usage) read it; it stands on the engine vocabulary
// alone.
//
// The usage log (CREWLET_USAGE_LOG) is compacted: one message per
// subject, one subject per (node, company day, seat), so the stream is a
// keyed table of every node's days and a node joining replays their
// current values only. Only the node a subject names writes it, so no two
// writers ever meet on one.
package usagerec

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// The domain's names.
const (
	Domain engine.Domain = "usage"
	Stream               = "CREWLET_USAGE_LOG"
	// CeilingKey is the Tier A field of the log's byte ceiling.
	CeilingKey = "stream.usage_log_max_bytes"
	// SubjectPrefix is the domain's subject tree (statelog.SubjectPrefix).
	SubjectPrefix = "crewlet.usage."
)

// KindDay is a node's day of one seat, its whole cumulative value: the
// apply replaces the object's rows with it.
const KindDay = "usage.day"

// DayVersion is KindDay's format version. 1, the base format: every field
// below is the first shape of the kind. It is safe at 1 because a build
// older than this one runs no usage domain at all — it creates no usage
// stream, opens no reader on one and so never sees the record — and a
// later build that adds a field raises the records carrying it, which
// this build then retains rather than applies with the field dropped.
const DayVersion = 1

// Kinds is every usage record kind with its format-version decision
// (statelog.Domain.Kinds).
var Kinds = map[string]int{KindDay: DayVersion}

// KeepDays is how many company days of history every node keeps: the
// newest day applied and the 180 before it. A day older leaves in the
// transaction that applies the day that makes it old.
const KeepDays = 181

// MaxAge is the stream's max age: a subject's value the node stopped
// rewriting leaves the log after it.
const MaxAge = KeepDays * 24 * time.Hour

// DateLayout is how a company day is written.
const DateLayout = "2006-01-02"

// NodeSeat is the seat of a node's own day object: published for every
// day the node ran, whether or not it served a call, so a day with no
// object from a node is a gap in coverage rather than a quiet day.
const NodeSeat = ""

// Operator is the seat the operator's surfaces (the operator MCP, the
// assistant over stdio) count under; a seat's calls count under
// "seat:" and its name, as records name who asked (by).
const Operator = "operator"

// SeatOf is the seat key of a seat's name.
func SeatOf(name string) string { return "seat:" + name }

// DurationBucketsMs are the upper bounds of the duration histogram's
// buckets in milliseconds; Day.Durations has one more, past the last.
var DurationBucketsMs = []int64{10, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// Bucket is the histogram bucket of a call that took d.
func Bucket(d time.Duration) int {
	ms := d.Milliseconds()
	for i, b := range DurationBucketsMs {
		if ms <= b {
			return i
		}
	}
	return len(DurationBucketsMs)
}

// Day is KindDay's payload: everything a node's surfaces served one seat
// on one company day, cumulative. On the node's own object (Seat ==
// NodeSeat) only Seats and Through are set.
type Day struct {
	Node string `json:"node"`
	Day  string `json:"day"`
	Seat string `json:"seat"`
	// Calls are the tool calls by tool and outcome (applied, pending,
	// unknown for a write; answered for a read; refused; error).
	Calls []ToolCalls `json:"calls,omitempty"`
	// Refusals are the refused calls by refusal code.
	Refusals []Refusals `json:"refusals,omitempty"`
	// Turns counts the units of work (Crewlet-Unit) the seat's calls
	// came in on this node that day.
	Turns int64 `json:"turns,omitempty"`
	// Durations counts the calls by how long they took: one bucket per
	// DurationBucketsMs and one past the last.
	Durations []int64 `json:"durations,omitempty"`
	// Spend is what the calls' callers reported spending, by model.
	Spend []Spend `json:"spend,omitempty"`
	// Seats counts the seats the node served that day (its own object).
	Seats int64 `json:"seats,omitempty"`
	// Through is the instant of the last call counted (zero: none).
	Through time.Time `json:"through,omitzero"`
}

// ToolCalls counts one tool's calls ending in one outcome.
type ToolCalls struct {
	Tool    string `json:"tool"`
	Outcome string `json:"outcome"`
	N       int64  `json:"n"`
}

// Refusals counts the calls refused with one code.
type Refusals struct {
	Code string `json:"code"`
	N    int64  `json:"n"`
}

// Spend is what one model cost, as the callers reported it: tokens, and
// cost in millionths of a US dollar (integers sum exactly).
type Spend struct {
	Model        string `json:"model"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	CostMicros   int64  `json:"cost_micros"`
	// Calls counts the calls that reported spend for the model.
	Calls int64 `json:"calls"`
}

// safeToken is a subject token that names itself.
var safeToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// token is a subject token naming s: s itself where it is safe (a
// seat's key "seat:NAME" as "s_NAME"), else "~" and a hash (safe tokens
// never begin with "~", so the two never meet).
func token(s string) string {
	if s == NodeSeat {
		return "_node"
	}
	if name, ok := strings.CutPrefix(s, "seat:"); ok && safeToken.MatchString(name) {
		return "s_" + name
	}
	if safeToken.MatchString(s) && !strings.HasPrefix(s, "s_") {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return "~" + hex.EncodeToString(h[:16])
}

// DaySubject is the subject of node's day of seat: one a (node, company
// day, seat).
func DaySubject(node, day, seat string) string {
	return SubjectPrefix + "day." + token(node) + "." + day + "." + token(seat)
}

// DayScope is the scope a day record declares: the object it replaces.
func DayScope(node, day, seat string) string {
	return "usage:" + token(node) + "/" + day + "/" + token(seat)
}

// ParseDay reads a company day, refusing anything but YYYY-MM-DD.
func ParseDay(s string) (time.Time, bool) {
	t, err := time.Parse(DateLayout, s)
	return t, err == nil && t.Format(DateLayout) == s
}

// Cutoff is the oldest day kept once newest has applied.
func Cutoff(newest string) string {
	t, ok := ParseDay(newest)
	if !ok {
		return ""
	}
	return t.AddDate(0, 0, -(KeepDays - 1)).Format(DateLayout)
}
