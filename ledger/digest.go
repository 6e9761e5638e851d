package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Digest is the argument digest of a call: a hash of the tool's name and
// its arguments in canonical JSON (encoding/json sorts map keys). An op id
// names one call: brought back with another digest it is another write.
func Digest(tool string, args map[string]any) string {
	canon, err := json.Marshal(args)
	if err != nil {
		canon = []byte(fmt.Sprint(args))
	}
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// An engine-minted id carries its call in its random bits: 42 bits of
// salt (rand_a and the first 30 bits of rand_b) and 32 bits of a hash of
// (salt, verb, object, digest), so an id brought back can be checked
// against the call it comes with before anything is decided, even when
// it never landed.
const saltBits = 42

func seal(u *uuid.UUID, salt uint64, verb, object, digest string) {
	salt &= 1<<saltBits - 1
	hi, lo := salt>>30, salt&(1<<30-1) // 12 bits, 30 bits
	u[6] = 0x70 | byte(hi>>8)&0x0f
	u[7] = byte(hi)
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s\x00%s", salt, verb, object, digest)))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], 0x80<<56|lo<<32|uint64(binary.BigEndian.Uint32(h[:4])))
	copy(u[8:16], b[:])
}

func saltOf(u uuid.UUID) uint64 {
	hi := uint64(u[6]&0x0f)<<8 | uint64(u[7])
	lo := binary.BigEndian.Uint64(u[8:16]) >> 32 & (1<<30 - 1)
	return hi<<30 | lo
}

func stamp(u *uuid.UUID, t time.Time) {
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(t.UnixMilli()))
	copy(u[0:6], ts[2:8])
}

// MintFor mints an id at now for one call (its verb, object and argument
// digest), sealed so Matches can check it later.
func MintFor(now time.Time, verb, object, digest string) (OpID, error) {
	if err := checkName(verb, object); err != nil {
		return OpID{}, err
	}
	var u uuid.UUID
	var salt [8]byte
	if _, err := randRead(salt[:]); err != nil {
		return OpID{}, err
	}
	stamp(&u, now)
	seal(&u, binary.BigEndian.Uint64(salt[:]), verb, object, digest)
	return OpID{UUID: u, Verb: verb, Object: object, Minted: time.UnixMilli(now.UnixMilli())}, nil
}

// Matches reports whether the id's random bits seal this call (its
// verb and object, and this argument digest).
func Matches(op OpID, digest string) bool {
	want := op.UUID
	seal(&want, saltOf(op.UUID), op.Verb, op.Object, digest)
	return want == op.UUID
}

// Derive is a seat's id for one call inside a unit of work: the unit's
// start instant as its time, and a salt drawn from the unit and the call's
// place among the turn's distinct calls to that tool, so a re-run that
// repeats the same calls derives the same ids on any node.
func Derive(unit string, unitStart time.Time, verb, object, digest string, n int) (OpID, error) {
	if err := checkName(verb, object); err != nil {
		return OpID{}, err
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s\x00%s\x00%s\x00%d", unit, unitStart.UnixMilli(), verb, object, digest, n)))
	var u uuid.UUID
	stamp(&u, unitStart)
	seal(&u, binary.BigEndian.Uint64(h[:8]), verb, object, digest)
	return OpID{UUID: u, Verb: verb, Object: object, Minted: time.UnixMilli(unitStart.UnixMilli())}, nil
}
