package engine

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a refusal code: the seeds' word for what happened. Codes are
// stable; a retired one is never reused.
type Code string

// The read refusals (Read Consistency › The thirteen refusals).
const (
	CodeBehind               Code = "behind"
	CodeTooStale             Code = "too_stale"
	CodeStalled              Code = "stalled"
	CodeNoQuorum             Code = "no_quorum"
	CodeBrokerUnreachable    Code = "broker_unreachable"
	CodeLogFull              Code = "log_full"
	CodeDeferred             Code = "deferred"
	CodeDeferredScopeUnknown Code = "deferred_scope_unknown"
	CodeBelowFloor           Code = "below_floor"
	CodeFloorUnknown         Code = "floor_unknown"
	CodeEvicted              Code = "evicted"
	CodeMaintenance          Code = "maintenance"
	CodeWrongStream          Code = "wrong_stream"
)

// The write refusals and bad input.
const (
	CodeStale           Code = "stale"
	CodeOpReused        Code = "op_reused"
	CodeDeleted         Code = "deleted"
	CodeLogTruncated    Code = "log_truncated"
	CodeConflict        Code = "conflict"
	CodeInvalidArgument Code = "invalid_argument"
	CodeNotFound        Code = "not_found"
	CodeAlreadyExists   Code = "already_exists"
	CodeInternal        Code = "internal"
	// CodeNoDataNode refuses a call from a node without the data role
	// that no data node took: none answered, or every copy that did is
	// out of service. The call ran nowhere.
	CodeNoDataNode Code = "no_data_node"
	// CodeInsufficientStorage refuses a ceiling the broker cannot
	// reserve (crewlet retention set-capacity raising a log past what
	// the broker's storage limit has left). Nothing changed.
	CodeInsufficientStorage Code = "insufficient_storage"
	// CodeVolumeFull refuses a write the broker could not store because
	// the volume holding its store is full (not the log's ceiling).
	// Nothing was stored.
	CodeVolumeFull Code = "volume_full"
)

// CodeInfo is one row of the code table.
type CodeInfo struct {
	Code Code
	// Retryable: worth coming back to this node for (the page names four).
	Retryable bool
	// RetryAfter is the fixed hint in seconds where the page gives one;
	// behind's hint is computed from the measured drain instead.
	RetryAfter float64
	HTTPStatus int
	// Elsewhere says whether another data node may take a call refused
	// so (see Codes for why each code is or is not such a one).
	Elsewhere Elsewhere
	// FromRows marks the codes a node decides from its own rows (an
	// object missing, a version moved on, an argument the rows make
	// wrong): true at the log's end or not, they are only as strong as
	// the copy that decided them. The others are about the node itself
	// or the call's shape.
	FromRows bool
	// Doc is what happened and what to do, the default sentence of a
	// refusal that says nothing more specific.
	Doc string
}

// Elsewhere says whether a refusal lets a node without the data role
// (engine/estate) offer the call to another data node: the refusal proves
// the call ran nowhere on the node that gave it, and what it is about is
// that node, so another may answer otherwise. Anything else a data node
// answers is the call's answer, wherever it was sent.
type Elsewhere uint8

const (
	// ElsewhereNever: the refusal is the call's answer, or the call may
	// have run.
	ElsewhereNever Elsewhere = iota
	// ElsewhereAlways: every refusal under the code proves it.
	ElsewhereAlways
	// ElsewhereUnpositioned: a refusal naming no position proves it; one
	// naming a position names the record the call left on the log.
	ElsewhereUnpositioned
)

// Codes is the one refusal-code table every surface maps from.
//
// Elsewhere, code by code. A write a node without data forwards always
// carries an op_id, so where a gesture's later step is refused the steps
// it already took are answered from the ledger on the next node, not
// taken again; "ran nowhere" below is about the refused step. These move:
//   - behind, too_stale: this node has not reached the position the call
//     needs, or lags past the caller's bound; another may not. A read
//     refused so ran nothing, and a write's wait for this node's own last
//     write refuses before it appends. (too_stale needs a staleness bound,
//     which no MCP surface takes; it moves for the reason behind does.)
//   - stalled: this node's applied prefix stopped moving.
//   - below_floor, deferred, deferred_scope_unknown: this copy misses
//     records, or holds one its build cannot decode; the pages say to ask
//     another node (or upgrade this one).
//   - floor_unknown: this node could not read the published trim floor;
//     another node's broker may.
//   - no_quorum, broker_unreachable: this node's broker did not reach a
//     majority, or did not answer at all, and the call appended nothing
//     (a write whose publish has an unknown fate answers outcome unknown,
//     not a refusal); another node's broker may be on the majority's side.
//   - wrong_stream: the position the call names is another stream's
//     (every node refuses it alike, so moving costs a hop and no harm), or
//     this node's log is not the one its rows are keyed to (another's may
//     be); both are refused before anything is appended.
//   - evicted, naming no position: refused before anything was appended,
//     so another node takes the write under the same op_id at once
//     (Replication, the eviction gate). Naming a position it stays: the
//     record the write appended holds its op_id on the log for the
//     duplicate window, and any node sending it again inside the window
//     is answered evicted again.
//
// These are the call's answer wherever it goes:
//   - maintenance: every node of a fleet in a capacity window is in one,
//     so no other node answers it either.
//   - log_full, log_truncated: about the domain's log, which every node
//     shares.
//   - volume_full, insufficient_storage: the broker's store has no room,
//     and the log's leader, wherever it is, stores for every node.
//   - stale, not_found, already_exists, invalid_argument, conflict
//     (FromRows): decided from the rows and answered only once they still
//     hold at the log's end, so every node decides alike; conflict is
//     other writes landing first on that shared log.
//   - op_reused, deleted: the ledger's word and a purge's marker are
//     replicated, the same on every node.
//   - internal: the call may have run, wholly or in part.
//   - no_data_node: the word of the node without data itself, once every
//     data node was tried; a data node never answers it.
var Codes = map[Code]CodeInfo{
	CodeBehind: {Code: CodeBehind, Retryable: true, HTTPStatus: http.StatusServiceUnavailable, Elsewhere: ElsewhereAlways,
		Doc: "This node has not reached the position the request needs. Wait and retry after the hint; it clears on its own."},
	CodeTooStale: {Code: CodeTooStale, HTTPStatus: http.StatusServiceUnavailable, Elsewhere: ElsewhereAlways,
		Doc: "This node's lag is past what the read said it would accept. Retry after the hint, or accept more staleness."},
	CodeStalled: {Code: CodeStalled, Retryable: true, HTTPStatus: http.StatusServiceUnavailable, Elsewhere: ElsewhereAlways,
		Doc: "This node's applied prefix has stopped moving, so a short answer would be wrong rather than old. Check the applier with `crewlet retention status`; a retried failure clears on its own when an attempt succeeds."},
	CodeNoQuorum: {Code: CodeNoQuorum, Retryable: true, RetryAfter: 4, HTTPStatus: http.StatusServiceUnavailable, Elsewhere: ElsewhereAlways,
		Doc: "The barrier did not commit: the broker answered and a majority did not agree. Retry after the hint; if it persists, a member is down or partitioned."},
	CodeBrokerUnreachable: {Code: CodeBrokerUnreachable, Retryable: true, RetryAfter: 1, HTTPStatus: http.StatusServiceUnavailable, Elsewhere: ElsewhereAlways,
		Doc: "The broker did not answer at all. Retry; if it persists, check the broker, not the quorum."},
	CodeLogFull: {Code: CodeLogFull, HTTPStatus: http.StatusInsufficientStorage,
		Doc: "The log is at the byte ceiling its ordinary appends are held to, so nothing more can be written to it. Raise the ceiling with `crewlet retention set-capacity`, or unblock the trim; `stale` reads keep answering."},
	CodeDeferred: {Code: CodeDeferred, HTTPStatus: http.StatusConflict, Elsewhere: ElsewhereAlways,
		Doc: "This node holds a record it cannot decode covering what this request is about. Ask another node, or upgrade this one; waiting changes nothing."},
	CodeDeferredScopeUnknown: {Code: CodeDeferredScopeUnknown, HTTPStatus: http.StatusConflict, Elsewhere: ElsewhereAlways,
		Doc: "A record this node cannot decode has a scope it cannot read, so it blocks the whole domain. Upgrade the node that is behind on the record version."},
	CodeBelowFloor: {Code: CodeBelowFloor, HTTPStatus: http.StatusConflict, Elsewhere: ElsewhereAlways,
		Doc: "Records this node never applied are gone from the log. The node adopts a peer's snapshot on its own; ask another node meanwhile."},
	CodeFloorUnknown: {Code: CodeFloorUnknown, HTTPStatus: http.StatusServiceUnavailable, Elsewhere: ElsewhereAlways,
		Doc: "The published trim floor could not be read, and an unreadable floor blocks. Check coordination."},
	CodeEvicted: {Code: CodeEvicted, HTTPStatus: http.StatusForbidden, Elsewhere: ElsewhereUnpositioned,
		Doc: "This node has been removed from the fleet and nothing it holds is authoritative. Readmit it, or route elsewhere."},
	CodeMaintenance: {Code: CodeMaintenance, HTTPStatus: http.StatusServiceUnavailable,
		Doc: "This node runs in a capacity window (maintenance or seal) that publishes nothing. Ask again once the fleet is back in normal mode; reads at other levels than linearizable are still answered."},
	CodeWrongStream: {Code: CodeWrongStream, HTTPStatus: http.StatusConflict, Elsewhere: ElsewhereAlways,
		Doc: "The position named is on another stream than the one this read or write is on, or this node's log is not the one its rows are keyed to. Check the position you passed; see Retention for a recreated stream or a restored broker."},
	CodeStale: {Code: CodeStale, HTTPStatus: http.StatusPreconditionFailed, FromRows: true,
		Doc: "The object changed since the version you named. Read it again and decide against its current version."},
	CodeOpReused: {Code: CodeOpReused, HTTPStatus: http.StatusConflict,
		Doc: "This operation id already names a different write. A different write takes a fresh id: call again without op_id."},
	CodeDeleted: {Code: CodeDeleted, HTTPStatus: http.StatusGone,
		Doc: "The object was purged and every record about it applies nowhere, for ever."},
	CodeLogTruncated: {Code: CodeLogTruncated, HTTPStatus: http.StatusConflict,
		Doc: "A peer holds records this log lost; writes of this domain refuse until it is re-anchored."},
	CodeConflict: {Code: CodeConflict, Retryable: true, RetryAfter: 1, HTTPStatus: http.StatusConflict, FromRows: true,
		Doc: "Other writes to the same object kept landing first and the write ran out of rounds. Retry with the same op_id."},
	CodeInvalidArgument: {Code: CodeInvalidArgument, HTTPStatus: http.StatusBadRequest, FromRows: true,
		Doc: "An argument is malformed. Fix it as the message says and call again."},
	CodeNotFound: {Code: CodeNotFound, HTTPStatus: http.StatusNotFound, FromRows: true,
		Doc: "Nothing by that name exists. List what exists and use one of those names."},
	CodeAlreadyExists: {Code: CodeAlreadyExists, HTTPStatus: http.StatusConflict, FromRows: true,
		Doc: "Something by that name already exists. Use it, or choose another name."},
	CodeNoDataNode: {Code: CodeNoDataNode, Retryable: true, RetryAfter: 1, HTTPStatus: http.StatusServiceUnavailable,
		Doc: "No data node took the call: none answered, or every one that did has its copy out of service. The call ran nowhere; retry after the hint, and check the data nodes with `crewlet retention status`."},
	CodeInsufficientStorage: {Code: CodeInsufficientStorage, HTTPStatus: http.StatusInsufficientStorage,
		Doc: "The broker cannot reserve that ceiling: its storage limit has too little left. Give the broker more room (raise stream.store_max_bytes, or free space on its volume and restart), or give another log's reservation back first with `crewlet retention set-capacity`. Nothing changed."},
	CodeVolumeFull: {Code: CodeVolumeFull, HTTPStatus: http.StatusInsufficientStorage,
		Doc: "The volume holding the broker's store is full (not the log's ceiling), so the broker stored nothing. Free space on the volume of stream.store_dir; the write can be retried with the same op_id once there is room."},
	CodeInternal: {Code: CodeInternal, HTTPStatus: http.StatusInternalServerError,
		Doc: "Internal error. It has been logged; retry later."},
}

// TryElsewhere reports whether err is a refusal proving its call ran
// nowhere on the node that gave it, for a reason of that node's, so
// another data node may take the call (the table's Elsewhere column).
func TryElsewhere(err error) bool {
	r, ok := AsRefusal(err)
	if !ok || r == nil {
		return false
	}
	switch Codes[r.Code].Elsewhere {
	case ElsewhereAlways:
		return true
	case ElsewhereUnpositioned:
		return r.Position == nil
	}
	return false
}

// fixedLevel holds, for the codes whose sentences point the caller at
// another read level, what a caller who cannot choose one can do
// instead: the MCP surfaces read at linearizable and take no level
// argument, so "read at stale" is advice nobody there can follow.
var fixedLevel = map[Code]string{
	CodeMaintenance: "This node runs in a capacity window (maintenance or seal), as does every node of its fleet: nothing is published, so writes and linearizable reads — every read on this surface — are refused until the fleet is back in normal mode, and this call did nothing. Try again later.",
}

// ForFixedLevel is r as a surface whose caller cannot choose a read
// level answers it: the same refusal, its message replaced where it
// would point at another level. r itself is not changed.
func (r *Refusal) ForFixedLevel() *Refusal {
	msg, ok := fixedLevel[r.Code]
	if !ok {
		return r
	}
	c := *r
	c.Message = msg
	return &c
}

// Refusal is a refused read or write: a code, a sentence saying what
// happened and what to do, a retry hint where the code is worth coming back
// for, and the fields the seeds name for it. It is an error.
type Refusal struct {
	Code       Code           `json:"refused"`
	Message    string         `json:"message"`
	RetryAfter float64        `json:"retry_after_seconds,omitempty"`
	Position   *Position      `json:"position,omitempty"`
	Fields     map[string]any `json:"-"`
}

// Error renders the code and the message.
func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Message }

// Object is the refusal as the JSON object every surface answers with.
func (r *Refusal) Object() map[string]any {
	o := map[string]any{"refused": string(r.Code), "message": r.Message}
	if r.RetryAfter > 0 {
		o["retry_after_seconds"] = r.RetryAfter
	}
	if r.Position != nil {
		o["position"] = *r.Position
	}
	for k, v := range r.Fields {
		if _, taken := o[k]; !taken {
			o[k] = v
		}
	}
	return o
}

// With adds a named field to the refusal and returns it.
func (r *Refusal) With(key string, value any) *Refusal {
	if r.Fields == nil {
		r.Fields = map[string]any{}
	}
	r.Fields[key] = value
	return r
}

// Refuse builds a refusal whose message is the formatted sentence; the
// code's fixed retry hint is filled in where the table has one.
func Refuse(code Code, format string, args ...any) *Refusal {
	r := &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
	if info, ok := Codes[code]; ok && info.Retryable {
		r.RetryAfter = info.RetryAfter
	}
	return r
}

// RefuseDoc builds a refusal carrying the table's own sentence.
func RefuseDoc(code Code) *Refusal { return Refuse(code, "%s", Codes[code].Doc) }

// AsRefusal returns the refusal inside err, if any.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}

// CodeOf returns the refusal code of err, internal for any other error.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	if r, ok := AsRefusal(err); ok {
		return r.Code
	}
	return CodeInternal
}

// HTTPStatus maps a code to its HTTP status.
func HTTPStatus(c Code) int {
	if info, ok := Codes[c]; ok {
		return info.HTTPStatus
	}
	return http.StatusInternalServerError
}

// DecidedFromRows reports whether err is a refusal decided from this
// node's rows (the table's FromRows column), which a node that is behind
// could get wrong: such a refusal is answered only once it still holds at
// the log's end.
func DecidedFromRows(err error) bool {
	r, ok := AsRefusal(err)
	return ok && r != nil && Codes[r.Code].FromRows
}
