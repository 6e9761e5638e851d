package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ClientMintWindow is how far a client-minted UUID's instant may be from
// now on its first use: a key minted just before the call, not one picked
// from the past or the future. A retry of a key whose write landed is
// answered however late it comes; the window bounds only a first use.
const ClientMintWindow = 5 * time.Minute

// Call is the operation one write call runs under: its id, its argument
// digest, and whether the id is known to name this very call (minted or
// derived for it, sealed for it, or a key the client minted). An id that
// is not is answered only where a copy with this digest landed.
type Call struct {
	ID      OpID
	Digest  string
	Vouched bool
	// Late says the id is a client-minted key whose instant is outside
	// ClientMintWindow of now: it may only be a retry of a write that
	// landed, so with no copy of it anywhere it is refused rather than
	// used for a first time.
	Late bool
	// Fresh says the id was minted for this call just now (the call brought
	// none and runs in no unit of work): no ledger holds it and no
	// watermark is past it, so the write path asks neither.
	Fresh bool
}

// CallError refuses an op id for a call. Reused says the id names another
// write (op_reused); otherwise it is malformed (invalid_argument).
type CallError struct {
	Reused bool
	Msg    string
}

func (e *CallError) Error() string { return e.Msg }

// ForCall decides the id a write call runs under:
//   - a seat's call (unit set) derives it from the unit and the call;
//   - a call bringing no id mints a fresh one sealed to the call;
//   - a bare v7 UUID is a key the client minted itself: the operation is
//     named by its client form (ClientForm), the same id the answer gives,
//     so the key and the answer's op_id are two spellings of one operation;
//   - an id an answer gave must name this verb and object; an engine-minted
//     one is vouched for when its seal matches these arguments, a client
//     key's always (its digest is bound by the record and the ledger row).
//
// A client key outside ClientMintWindow of now is Late.
func ForCall(now time.Time, given, unit string, unitStart time.Time, n int, verb, object, digest string) (Call, error) {
	switch {
	case given == "" && unit != "":
		id, err := Derive(unit, unitStart, verb, object, digest, n)
		return Call{ID: id, Digest: digest, Vouched: true}, err
	case given == "":
		id, err := MintFor(now, verb, object, digest)
		return Call{ID: id, Digest: digest, Vouched: true, Fresh: true}, err
	case !strings.Contains(given, "."):
		u, err := uuid.Parse(given)
		if err != nil || len(given) != 36 || strings.ToLower(given) != given {
			return Call{}, &CallError{Msg: fmt.Sprintf("op_id %q is neither an id an answer gave (<uuid>.<verb>-<object>) nor a lower-case v7 UUID you minted", given)}
		}
		if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			return Call{}, &CallError{Msg: fmt.Sprintf("op_id %q is not a version 7 RFC 9562 UUID; a key you mint yourself must be one (its leading bits are its instant)", given)}
		}
		if err := checkName(verb, object); err != nil {
			return Call{}, &CallError{Msg: err.Error()}
		}
		id := OpID{UUID: ClientForm(u), Verb: verb, Object: object, Minted: instantOf(u)}
		return clientCall(now, id, digest), nil
	}
	id, err := Parse(given)
	if err != nil {
		return Call{}, &CallError{Msg: err.Error() + "; bring back an op_id exactly as an answer gave it, or omit it"}
	}
	if id.Verb != verb || id.Object != object {
		return Call{ID: id}, &CallError{Reused: true, Msg: fmt.Sprintf("op_id %s names the write %s-%s, not this %s-%s; a different write takes a fresh id: call again without op_id", given, id.Verb, id.Object, verb, object)}
	}
	if IsClientForm(id.UUID) {
		return clientCall(now, id, digest), nil
	}
	return Call{ID: id, Digest: digest, Vouched: Matches(id, digest)}, nil
}

func clientCall(now time.Time, id OpID, digest string) Call {
	d := now.Sub(id.Minted)
	return Call{ID: id, Digest: digest, Vouched: true, Late: d > ClientMintWindow || d < -ClientMintWindow}
}

// An engine-minted or derived UUID always carries the RFC 4122 variant
// (bits 10x); a client's key is one too. The client form of a key sets
// the variant's second bit (11x), so an id an answer gave for a client's
// key is told apart from an engine-minted one without a seal: brought
// back, it names the same operation as the bare key, where an unsealed
// engine-minted id names another call.

// ClientForm is the UUID an operation minted by the client as key u runs
// under, and the one its answers name.
func ClientForm(u uuid.UUID) uuid.UUID {
	u[8] |= 0x40
	return u
}

// KeyOf is the bare key a client-form UUID was made from.
func KeyOf(u uuid.UUID) uuid.UUID {
	u[8] &^= 0x40
	return u
}

// IsClientForm reports whether u is the client form of a client's key.
func IsClientForm(u uuid.UUID) bool { return u.Version() == 7 && u[8]&0xc0 == 0xc0 }

func instantOf(u uuid.UUID) time.Time {
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec)
}

// RequireMinted parses an op id that a route takes from outside (a
// purge's or a node gate's ?op_id=): it must be one the engine minted,
// since an id without a mint instant counts as older than everything the
// ledger ever lost and could never be vouched for.
func RequireMinted(s string) (OpID, error) {
	id, err := Parse(s)
	if err != nil {
		return OpID{}, &CallError{Msg: err.Error()}
	}
	if !id.EngineMinted() {
		return OpID{}, &CallError{Msg: fmt.Sprintf("op_id %s was not minted by the engine (its UUID is not version 7); bring back the op_id an answer gave", s)}
	}
	return id, nil
}
