// Package ledger is the operation ledger: operation ids (minted as
// time-ordered v7 UUIDs followed by .<verb>-<object>, parsed and validated)
// and the ledger rows that say which operations this node's applier applied
// and where, written inside the apply transaction so a retry is answered,
// never decided again.
package ledger

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// OpID is a parsed operation id.
type OpID struct {
	// UUID is the leading time-ordered UUID.
	UUID uuid.UUID
	// Verb and Object are the name: what the operation is and what it is on.
	Verb   string
	Object string
	// Minted is the instant the engine minted the id; zero when the UUID is
	// not a version 7 one, i.e. the engine did not mint it.
	Minted time.Time
}

// String renders the id: <uuid>.<verb>-<object>.
func (o OpID) String() string { return o.UUID.String() + "." + o.Verb + "-" + o.Object }

// EngineMinted reports whether the id carries a mint instant.
func (o OpID) EngineMinted() bool { return !o.Minted.IsZero() }

// MaxOpIDBytes bounds an operation id.
const MaxOpIDBytes = 300

// NewV7At builds a version 7 UUID whose leading 48 bits are the instant's
// Unix milliseconds (RFC 9562 §5.7), the rest random.
func NewV7At(t time.Time) (uuid.UUID, error) {
	var u uuid.UUID
	if _, err := randRead(u[6:]); err != nil {
		return u, err
	}
	ms := uint64(t.UnixMilli())
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(u[0:6], ts[2:8])
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u, nil
}

var randRead = rand.Read

// Parse validates and parses an operation id.
func Parse(s string) (OpID, error) {
	if len(s) > MaxOpIDBytes {
		return OpID{}, fmt.Errorf("op_id is %d bytes; at most %d", len(s), MaxOpIDBytes)
	}
	dot := strings.IndexByte(s, '.')
	if dot != 36 {
		return OpID{}, fmt.Errorf("op_id %q is not <uuid>.<verb>-<object>", s)
	}
	u, err := uuid.Parse(s[:dot])
	if err != nil || strings.ToLower(s[:dot]) != s[:dot] {
		return OpID{}, fmt.Errorf("op_id %q does not start with a lower-case UUID", s)
	}
	name := s[dot+1:]
	hy := strings.IndexByte(name, '-')
	if hy <= 0 {
		return OpID{}, fmt.Errorf("op_id %q has no <verb>-<object> name", s)
	}
	id := OpID{UUID: u, Verb: name[:hy], Object: name[hy+1:]}
	if err := checkName(id.Verb, id.Object); err != nil {
		return OpID{}, fmt.Errorf("op_id %q: %v", s, err)
	}
	if u.Version() == 7 {
		sec, nsec := u.Time().UnixTime()
		id.Minted = time.Unix(sec, nsec)
	}
	return id, nil
}

func checkName(verb, object string) error {
	if verb == "" {
		return fmt.Errorf("empty verb")
	}
	for _, c := range verb {
		if !(c >= 'a' && c <= 'z' || c == '_') {
			return fmt.Errorf("verb %q may hold only a-z and _", verb)
		}
	}
	if object == "" {
		return fmt.Errorf("empty object")
	}
	for _, c := range object {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("object %q may hold only letters, digits, '-', '_' and '.'", object)
		}
	}
	return nil
}
