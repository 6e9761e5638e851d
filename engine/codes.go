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
	// Doc is what happened and what to do, the default sentence of a
	// refusal that says nothing more specific.
	Doc string
}

// Codes is the one refusal-code table every surface maps from.
var Codes = map[Code]CodeInfo{
	CodeBehind:               {CodeBehind, true, 0, http.StatusServiceUnavailable, "This node has not reached the position the request needs. Wait and retry after the hint; it clears on its own."},
	CodeTooStale:             {CodeTooStale, true, 0, http.StatusServiceUnavailable, "This node's lag is past what the read said it would accept. Retry after the hint, or accept more staleness."},
	CodeStalled:              {CodeStalled, true, 0, http.StatusServiceUnavailable, "This node's applied prefix has stopped moving, so a short answer would be wrong rather than old. Check the applier with `crewlet retention status`; a retried failure clears on its own when an attempt succeeds."},
	CodeNoQuorum:             {CodeNoQuorum, true, 4, http.StatusServiceUnavailable, "The barrier did not commit: the broker answered and a majority did not agree. Retry after the hint; if it persists, a member is down or partitioned."},
	CodeBrokerUnreachable:    {CodeBrokerUnreachable, true, 1, http.StatusServiceUnavailable, "The broker did not answer at all. Retry; if it persists, check the broker, not the quorum."},
	CodeLogFull:              {CodeLogFull, false, 0, http.StatusInsufficientStorage, "The log is at the byte ceiling its ordinary appends are held to, so nothing more can be written to it. Raise the ceiling with `crewlet retention set-capacity`, or unblock the trim; `stale` reads keep answering."},
	CodeDeferred:             {CodeDeferred, false, 0, http.StatusConflict, "This node holds a record it cannot decode covering what this request is about. Ask another node, or upgrade this one; waiting changes nothing."},
	CodeDeferredScopeUnknown: {CodeDeferredScopeUnknown, false, 0, http.StatusConflict, "A record this node cannot decode has a scope it cannot read, so it blocks the whole domain. Upgrade the node that is behind on the record version."},
	CodeBelowFloor:           {CodeBelowFloor, false, 0, http.StatusConflict, "Records this node never applied are gone from the log. The node adopts a peer's snapshot on its own; ask another node meanwhile."},
	CodeFloorUnknown:         {CodeFloorUnknown, false, 0, http.StatusServiceUnavailable, "The published trim floor could not be read, and an unreadable floor blocks. Check coordination."},
	CodeEvicted:              {CodeEvicted, false, 0, http.StatusForbidden, "This node has been removed from the fleet and nothing it holds is authoritative. Readmit it, or route elsewhere."},
	CodeMaintenance:          {CodeMaintenance, false, 0, http.StatusServiceUnavailable, "This node runs in a capacity window (maintenance or seal) that publishes nothing. Ask again once the fleet is back in normal mode; reads at other levels than linearizable are still answered."},
	CodeWrongStream:          {CodeWrongStream, false, 0, http.StatusConflict, "The position named is on another stream than the one this read or write is on, or this node's log is not the one its rows are keyed to. Check the position you passed; see Retention for a recreated stream or a restored broker."},
	CodeStale:                {CodeStale, false, 0, http.StatusPreconditionFailed, "The object changed since the version you named. Read it again and decide against its current version."},
	CodeOpReused:             {CodeOpReused, false, 0, http.StatusConflict, "This operation id already names a different write. A different write takes a fresh id: call again without op_id."},
	CodeDeleted:              {CodeDeleted, false, 0, http.StatusGone, "The object was purged and every record about it applies nowhere, for ever."},
	CodeLogTruncated:         {CodeLogTruncated, false, 0, http.StatusConflict, "A peer holds records this log lost; writes of this domain refuse until it is re-anchored."},
	CodeConflict:             {CodeConflict, true, 1, http.StatusConflict, "Other writes to the same object kept landing first and the write ran out of rounds. Retry with the same op_id."},
	CodeInvalidArgument:      {CodeInvalidArgument, false, 0, http.StatusBadRequest, "An argument is malformed. Fix it as the message says and call again."},
	CodeNotFound:             {CodeNotFound, false, 0, http.StatusNotFound, "Nothing by that name exists. List what exists and use one of those names."},
	CodeAlreadyExists:        {CodeAlreadyExists, false, 0, http.StatusConflict, "Something by that name already exists. Use it, or choose another name."},
	CodeNoDataNode:           {CodeNoDataNode, true, 1, http.StatusServiceUnavailable, "No data node took the call: none answered, or every one that did has its copy out of service. The call ran nowhere; retry after the hint, and check the data nodes with `crewlet retention status`."},
	CodeInternal:             {CodeInternal, false, 0, http.StatusInternalServerError, "Internal error. It has been logged; retry later."},
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

// decidedFromRows are the codes a node decides from its own rows (an
// object missing, a version moved on, an argument the rows make wrong):
// true at the log's end or not, they are only as strong as the copy that
// decided them. The others are about the node itself or the call's shape.
var decidedFromRows = map[Code]bool{
	CodeNotFound:        true,
	CodeStale:           true,
	CodeConflict:        true,
	CodeInvalidArgument: true,
	CodeAlreadyExists:   true,
}

// DecidedFromRows reports whether err is a refusal decided from this
// node's rows, which a node that is behind could get wrong: such a refusal
// is answered only once it still holds at the log's end.
func DecidedFromRows(err error) bool {
	r, ok := AsRefusal(err)
	return ok && decidedFromRows[r.Code]
}
