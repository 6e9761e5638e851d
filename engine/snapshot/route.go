package snapshot

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/rest"
)

// Listing answers GET /api/v1/snapshots: what the node's snapshot
// repository holds, newest first — the backups the backup gate reads and
// the donations adopters took — with each artefact's checkpoints, sha256,
// size, donor and taken_at (not its table hashes, which only
// verify-restore reads).
type Listing struct {
	Repo Repository
}

// Snapshots is the listing's answer. The repository is read as it is
// now, like the retention answer: no read level applies.
type Snapshots struct {
	Snapshots []Manifest `json:"snapshots"`
}

// Routes is GET /api/v1/snapshots.
func (l Listing) Routes() []rest.Route {
	return []rest.Route{{Method: http.MethodGet, Pattern: "/api/v1/snapshots", Serve: func(ctx context.Context, _ *rest.Query) (any, error) {
		if l.Repo == nil {
			return nil, engine.Refuse(engine.CodeNotFound, "this node keeps no snapshot repository.")
		}
		ms, err := l.Repo.List(ctx)
		if err != nil {
			return nil, engine.Refuse(engine.CodeBrokerUnreachable, "the snapshot repository cannot be read: %v. Retry once the broker answers.", err)
		}
		out := Snapshots{Snapshots: make([]Manifest, 0, len(ms))}
		for _, m := range ms {
			m.Tables = nil
			out.Snapshots = append(out.Snapshots, m)
		}
		return out, nil
	}}}
}
