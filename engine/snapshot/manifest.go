package snapshot

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Log lines the snapshotter, the donor and the adopter write (component
// statelog), and the engine's line around them (component engine).
const (
	EvSnapshotTaken    = "statelog_snapshot_taken"
	EvSnapshotProgress = "statelog_snapshot_progress"
	EvSnapshotSent     = "statelog_snapshot_sent"
	EvSnapshotRefused  = "statelog_snapshot_refused"
	EvAdopted          = "statelog_adopted"
	EvBelowTheFloor    = "statelog_below_the_floor"
)

// Manifest describes one artefact: what it is (sha256, size), when and
// where it was taken, and what each domain's rows in it had reached.
type Manifest struct {
	// Name is the artefact's name in its repository: <donor>/<taken_at
	// in Unix nanoseconds>.
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"`
	Size    int64     `json:"size"`
	TakenAt time.Time `json:"taken_at"`
	Donor   string    `json:"donor"`
	// Domains are the checkpoints inside the artefact, by domain.
	Domains map[string]Point `json:"domains"`
	// Tables hash every table of the live copy in the transaction the
	// artefact was copied in: what verify-restore compares a restore with.
	Tables map[string]string `json:"tables,omitempty"`
}

// Point is one domain's checkpoint inside a snapshot.
type Point struct {
	Stream          string    `json:"stream"`
	StreamCreatedAt time.Time `json:"stream_created_at"`
	Generation      uint64    `json:"generation"`
	Seq             uint64    `json:"seq"`
	AppliedThrough  uint64    `json:"applied_through"`
	// RulesVersion is the version of the rules the domain's computed
	// columns were derived under (0: the domain has none).
	RulesVersion int `json:"rules_version"`
}

// artefactName is the repository name of a snapshot taken by donor at t.
func artefactName(donor string, t time.Time) string {
	return fmt.Sprintf("%s/%d", donor, t.UnixNano())
}

func (m Manifest) encode() string {
	b, _ := json.Marshal(m)
	return string(b)
}

func decodeManifest(s string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return m, fmt.Errorf("snapshot: a manifest that does not decode: %w", err)
	}
	if m.Name == "" || m.SHA256 == "" {
		return m, fmt.Errorf("snapshot: a manifest without a name or a sha256")
	}
	return m, nil
}

// Covers reports whether the snapshot can be followed on every log of
// floors: its checkpoint of each is at or past the log's first sequence
// less one, on the same stream (created at the same instant). floors maps
// a domain to its log's first sequence and creation instant.
func (m Manifest) Covers(floors map[string]Floor) bool {
	for d, f := range floors {
		p, ok := m.Domains[d]
		if !ok || p.Seq+1 < f.FirstSeq || !p.StreamCreatedAt.Equal(f.Created) {
			return false
		}
	}
	return true
}

// Floor is what a log still holds: its first sequence, and the instant its
// stream was created (which says which stream a sequence is on).
type Floor struct {
	FirstSeq uint64
	Created  time.Time
}

// CorruptError is an artefact whose bytes do not hash to its manifest's
// sha256: it is refused, never installed or restored.
type CorruptError struct {
	Name, Want, Got string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("snapshot %s is corrupt: its bytes hash to sha256 %s, its manifest says %s", e.Name, e.Got, e.Want)
}

// Refusal words the corruption for a caller: what to do about it.
func (e *CorruptError) Refusal() *engine.Refusal {
	return engine.Refuse(engine.CodeInvalidArgument, "%s. It is refused; take a new one (crewlet retention backup) or restore another.", e.Error()).
		With("sha256", e.Want).With("got", e.Got)
}
