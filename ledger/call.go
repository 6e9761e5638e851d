package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ClientMintWindow is how far a client-minted UUID's instant may be from
// now on its first attempt: a key minted just before the call, not one
// picked from the past or the future.
const ClientMintWindow = 5 * time.Minute

// Call is the operation one write call runs under: its id, its argument
// digest, and whether the id is known to name this very call (minted or
// derived for it, sealed for it, or minted by the client just now). An id
// that is not is answered only where a copy with this digest landed.
type Call struct {
	ID      OpID
	Digest  string
	Vouched bool
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
//   - a bare v7 UUID is a key the client minted itself before its first
//     attempt: its instant must be within ClientMintWindow of now;
//   - an id an answer gave must name this verb and object; it is vouched
//     for when its seal matches these arguments.
func ForCall(now time.Time, given, unit string, unitStart time.Time, n int, verb, object, digest string) (Call, error) {
	switch {
	case given == "" && unit != "":
		id, err := Derive(unit, unitStart, verb, object, digest, n)
		return Call{ID: id, Digest: digest, Vouched: true}, err
	case given == "":
		id, err := MintFor(now, verb, object, digest)
		return Call{ID: id, Digest: digest, Vouched: true}, err
	case !strings.Contains(given, "."):
		u, err := uuid.Parse(given)
		if err != nil || len(given) != 36 || strings.ToLower(given) != given {
			return Call{}, &CallError{Msg: fmt.Sprintf("op_id %q is neither an id an answer gave (<uuid>.<verb>-<object>) nor a lower-case v7 UUID you minted", given)}
		}
		if u.Version() != 7 {
			return Call{}, &CallError{Msg: fmt.Sprintf("op_id %q is a version %d UUID; a key you mint yourself must be a version 7 UUID (its leading bits are its instant)", given, u.Version())}
		}
		sec, nsec := u.Time().UnixTime()
		minted := time.Unix(sec, nsec)
		if d := now.Sub(minted); d > ClientMintWindow || d < -ClientMintWindow {
			return Call{}, &CallError{Msg: fmt.Sprintf("op_id %s was minted at %s, more than %v from now; mint a fresh v7 UUID just before the first attempt, and after an answer bring back the op_id it gave", given, minted.UTC().Format(time.RFC3339), ClientMintWindow)}
		}
		return Call{ID: OpID{UUID: u, Verb: verb, Object: object, Minted: minted}, Digest: digest, Vouched: true}, nil
	}
	id, err := Parse(given)
	if err != nil {
		return Call{}, &CallError{Msg: err.Error() + "; bring back an op_id exactly as an answer gave it, or omit it"}
	}
	if id.Verb != verb || id.Object != object {
		return Call{ID: id}, &CallError{Reused: true, Msg: fmt.Sprintf("op_id %s names the write %s-%s, not this %s-%s; a different write takes a fresh id: call again without op_id", given, id.Verb, id.Object, verb, object)}
	}
	return Call{ID: id, Digest: digest, Vouched: Matches(id, digest)}, nil
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
