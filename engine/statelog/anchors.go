package statelog

import (
	"context"
	"slices"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// movedAnchors gathers the arbitration anchors a batch moves, written
// once each when the batch ends rather than one upsert a record: the
// anchors are read only by writers deciding against committed rows,
// never by a record of the same transaction, so the last sequence on
// each subject is all the transaction has to hold. In a drained batch
// every record moved its own subject's anchor, one statement of the
// eight a create wrote. Only the applier's goroutine uses it.
type movedAnchors map[string]uint64

// move notes that the record at seq on subject moved its anchor.
func (m movedAnchors) move(subject string, seq uint64) {
	if seq > m[subject] {
		m[subject] = seq
	}
}

// flush writes the moved anchors in subject order (neighbours in the
// index, so each page is touched once) and empties m.
func (m movedAnchors) flush(ctx context.Context, q sqlite.Cached, domain string) error {
	subjects := make([]string, 0, len(m))
	for s := range m {
		subjects = append(subjects, s)
	}
	slices.Sort(subjects)
	err := sqlite.Chunks(subjects, func(chunk []string) error {
		args := make([]any, 0, 3*len(chunk))
		for _, s := range chunk {
			args = append(args, domain, s, m[s])
		}
		_, err := q.ExecContext(ctx, `INSERT INTO statelog_anchor(domain, subject, seq) VALUES `+sqlite.Tuples(len(chunk), 3)+`
			ON CONFLICT(domain, subject) DO UPDATE SET seq = excluded.seq`, args...)
		return err
	})
	clear(m)
	return err
}
