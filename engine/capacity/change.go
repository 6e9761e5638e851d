package capacity

import "net/url"

// Change is what crewlet retention set-capacity answers: the log, its
// ceiling before and now, the bytes it held, and the ceiling its
// ordinary appends are held to now (a sixteenth short on a log keeping
// the gate reserve).
type Change struct {
	Domain   string `json:"domain"`
	Stream   string `json:"stream"`
	Before   int64  `json:"max_bytes_before"`
	MaxBytes int64  `json:"max_bytes"`
	Ordinary int64  `json:"ordinary_ceiling"`
	Held     uint64 `json:"bytes_held"`
	// Changed is false when the log already had that ceiling.
	Changed bool `json:"changed"`
	// The change's record on the audit trail: its op id, how its write
	// ended (an outcome, or "refused <code>" in a capacity window, which
	// publishes nothing) and where it landed.
	AuditOpID     string `json:"audit_op_id,omitempty"`
	AuditOutcome  string `json:"audit_outcome,omitempty"`
	AuditPosition string `json:"audit_position,omitempty"`
}

// Path is the route of crewlet retention set-capacity, {log} being the
// domain (tracker) or its stream; the ceiling is ?max_bytes=N. It takes
// no op_id: setting a ceiling to a number is the same change however
// often it is sent.
func Path(log string) string { return "/api/v1/logs/" + url.PathEscape(log) + "/capacity" }
