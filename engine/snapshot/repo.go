package snapshot

import (
	"context"
	"slices"
	"sort"
)

// Repository stores snapshot artefacts: the broker's object store
// (ObjectStore) or a directory (Dir). Each keeps, per donor node, its
// newest artefact and the one before it (Keep).
type Repository interface {
	// Put stores the artefact at path under m (whose SHA256 and Size
	// describe it), then drops the donor's artefacts older than the Keep
	// newest. The artefact is listed only once it is whole.
	Put(ctx context.Context, m Manifest, path string) error
	// List returns the manifest of every stored artefact, newest first.
	List(ctx context.Context) ([]Manifest, error)
	// Fetch writes m's artefact to dst and verifies its sha256: an
	// artefact whose bytes differ is a *CorruptError, and dst is removed.
	Fetch(ctx context.Context, m Manifest, dst string) error
	// Reached answers, per domain, the highest checkpoint seq any stored
	// snapshot covers (a domain no snapshot holds is absent). The trim's
	// backup gate calls exactly this: the trim never passes a floor no
	// backup has reached.
	Reached(ctx context.Context) (map[string]uint64, error)
	// Where says where the repository is, for messages.
	Where() string
}

// Keep is how many artefacts a repository keeps per donor node: the
// newest, and the one before it, so a put that fails half way, or an
// artefact found corrupt, never leaves a node with none.
const Keep = 2

// reached folds manifests into Repository.Reached's answer.
func reached(ms []Manifest) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range ms {
		for d, p := range m.Domains {
			if p.Seq > out[d] {
				out[d] = p.Seq
			}
		}
	}
	return out
}

// newestFirst sorts manifests by taken_at, newest first (name breaks ties).
func newestFirst(ms []Manifest) {
	sort.Slice(ms, func(i, j int) bool {
		if !ms[i].TakenAt.Equal(ms[j].TakenAt) {
			return ms[i].TakenAt.After(ms[j].TakenAt)
		}
		return ms[i].Name > ms[j].Name
	})
}

// surplus are the artefacts of donor past the Keep newest.
func surplus(ms []Manifest, donor string) []Manifest {
	var own []Manifest
	for _, m := range ms {
		if m.Donor == donor {
			own = append(own, m)
		}
	}
	newestFirst(own)
	if len(own) <= Keep {
		return nil
	}
	return own[Keep:]
}

func sortStrings(s []string) { slices.Sort(s) }
