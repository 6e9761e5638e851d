package ledger

import (
	"crypto/sha256"
	"fmt"
)

// Step derives the operation id of one step of a gesture (a move, a merge,
// a dependency with its mirror, a subtree's trash or restore) from the
// gesture's own id and the task the step writes. The id keeps the parent's
// mint instant (its first 48 bits), so a re-run is judged by the instant
// the gesture was minted; the rest is a hash of (parent, verb, object) with
// the version 7 and variant bits set. A step is named by what it writes,
// never by its place in the walk: a re-run reads its list afresh, and a
// step named by position would carry another task's id.
func Step(parent OpID, verb, object string) (OpID, error) {
	if err := checkName(verb, object); err != nil {
		return OpID{}, fmt.Errorf("step of %s: %w", parent, err)
	}
	h := sha256.Sum256([]byte(parent.String() + "\x00" + verb + "\x00" + object))
	u := parent.UUID
	copy(u[6:], h[:10])
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return OpID{UUID: u, Verb: verb, Object: object, Minted: parent.Minted}, nil
}
