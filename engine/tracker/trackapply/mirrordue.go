package trackapply

// The mirrors a gesture owes: every record that authors edges (a create
// with dependencies, an update adding or taking down edges) leaves one
// row a other item, naming the mirror step its gesture writes there next
// (ledger.Step of the record's own op id, "mirror", the other item) and
// the gesture's argument digest. The mirror record under that step's id
// takes the row down wherever it applies; a purge of either item takes
// it down too. A row that stays is a one-sided edge a gesture stopped at
// unknown left (or never reached): the tracker duty finishes it under
// exactly that step's id and digest, so the repair is exactly-once like
// the step itself. The rows are derived from the log alone, so every
// node holds the same.

import (
	"sort"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// mirrorDueSchema is the mirrors owed.
const mirrorDueSchema = `
CREATE TABLE IF NOT EXISTS tracker_mirror_due (
	step   TEXT PRIMARY KEY,
	item   TEXT NOT NULL,
	other  TEXT NOT NULL,
	op     TEXT NOT NULL,
	digest TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tracker_mirror_due_seq ON tracker_mirror_due(seq);
CREATE INDEX IF NOT EXISTS tracker_mirror_due_other ON tracker_mirror_due(other);
`

// MirrorStepVerb is the verb a gesture's mirror steps are named by.
const MirrorStepVerb = "mirror"

// owe notes that the record being applied owes item's mirror on other.
func (a *apply) owe(item, other string) {
	if a.due == nil {
		a.due = map[string]string{}
	}
	a.due[other] = item
}

// writeDue writes the mirrors rec owes (one row a other item, under the
// step id its gesture names), or takes down the row of the mirror step rec
// is.
func (a *apply) writeDue(rec *record.Record) error {
	if rec.OpID == "" {
		return nil
	}
	if rec.Kind == trackrec.KindMirrorEdges {
		_, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM tracker_mirror_due WHERE step = ?`, rec.OpID)
		return err
	}
	if len(a.due) == 0 {
		return nil
	}
	op, err := ledger.Parse(rec.OpID)
	if err != nil {
		return nil // an id no gesture derives steps from: it owes none
	}
	others := make([]string, 0, len(a.due))
	for o := range a.due {
		others = append(others, o)
	}
	sort.Strings(others)
	for _, o := range others {
		step, err := ledger.Step(op, MirrorStepVerb, o)
		if err != nil {
			continue
		}
		if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_mirror_due(step, item, other, op, digest, seq, at) VALUES(?,?,?,?,?,?,?)
			ON CONFLICT(step) DO NOTHING`, step.String(), a.due[o], o, rec.OpID, rec.Digest, a.seq, a.ts); err != nil {
			return err
		}
	}
	return nil
}

// forgetDue takes down the mirrors owed by or on a purged item: a repair
// there would apply nowhere.
func (a *apply) forgetDue(id string) error {
	_, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM tracker_mirror_due WHERE item = ?1 OR other = ?1`, id)
	return err
}
