// Package vecrec is the vectors domain's record contract: its name and
// stream, its two record kinds and their format versions, their payloads
// as they go on the wire, and the subject of each embedded source (one
// subject per source on a compacted stream: the newest record of a
// subject is the source's current value, and the only one kept).
//
// Format versions (Kinds): both kinds are at version 1, the base format,
// though they are new in a build of format 3. The decision is the lowest
// version an older build cannot misapply, and no older build reads them:
// a build without the vectors domain has no stream, consumer or applier
// for CREWLET_TRACKER_VECTORS (its node sizes and creates only the logs
// of its own domains), and every build that runs the domain knows both
// kinds whole. Stamping them 3 would protect no one and would only make a
// future format-2 tool that reads the stream retain them. A later build
// that adds a field (a quantised encoding, say) stamps the records
// carrying it with its own version, which this build retains whole
// (engine/record) rather than apply without the field.
package vecrec

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/crewlet/crewlet/engine"
)

// The domain's names, fixed by the contract.
const (
	Domain engine.Domain = "vectors"
	Stream               = "CREWLET_TRACKER_VECTORS"
	// CeilingKey is the Tier A field of the stream's byte ceiling.
	CeilingKey = "stream.tracker_vectors_max_bytes"
)

// Record kinds and their format versions.
const (
	// KindPut sets a source's vector: its newest value.
	KindPut    = "vectors.put"
	PutVersion = 1
	// KindForget forgets a source (purged, deleted): every node deletes
	// its vector, and on the stream it replaces the vector's message.
	KindForget    = "vectors.forget"
	ForgetVersion = 1
)

// Kinds are the domain's record kinds, each with the lowest format
// version that applies it whole (statelog.Domain.Kinds): 1 for both, the
// package comment says why. Neither installs a gate.
var Kinds = map[string]int{
	KindPut:    PutVersion,
	KindForget: ForgetVersion,
}

// Put is a vectors.put payload.
type Put struct {
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Owner  string `json:"owner,omitempty"`
	Model  string `json:"model"`
	Dims   int    `json:"dims"`
	// Vector is the unit vector, little-endian float32s, base64.
	Vector string `json:"vector"`
	// TextHash is the hex SHA-256 of the model and the text embedded:
	// the duty embeds a source again only when it differs.
	TextHash string `json:"text_hash"`
}

// Forget is a vectors.forget payload.
type Forget struct {
	Source string `json:"source"`
}

// Subject is a source's subject: crewlet.vectors.<source id> (the
// domain's subject tree, statelog.SubjectPrefix).
func Subject(source string) string { return "crewlet." + string(Domain) + "." + source }

// Scope is what a record about source may change: the source's row.
func Scope(source string) []string { return []string{"vector:" + source} }

// EncodeVector renders v as Put.Vector does.
func EncodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeVector reads Put.Vector back, which must hold dims floats.
func DecodeVector(s string, dims int) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return BlobVector(b, dims)
}

// BlobVector reads dims little-endian float32s (the row's vec column).
func BlobVector(b []byte, dims int) ([]float32, error) {
	if dims < 1 || len(b) != 4*dims {
		return nil, fmt.Errorf("vecrec: %d bytes are not %d float32s", len(b), dims)
	}
	v := make([]float32, dims)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Check says whether a put can be applied: a source, a model and a
// vector of its declared length.
func (p Put) Check() error {
	if p.Source == "" || p.Model == "" || p.Kind == "" {
		return errors.New("vecrec: a put names no source, kind or model")
	}
	_, err := DecodeVector(p.Vector, p.Dims)
	return err
}
