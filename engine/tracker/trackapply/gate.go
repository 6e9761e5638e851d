package trackapply

import (
	"context"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Gates is the tracker's own apply gate: the deletion gate.
func (Domain) Gates() []statelog.Gate { return []statelog.Gate{deletedGate{}} }

// Kinds are the domain's record kinds with the lowest format version that
// applies each (trackrec.Kinds).
func (Domain) Kinds() map[string]int { return trackrec.Kinds }

// GateKinds are the domain's records that install a gate (trackrec.GateKinds).
func (Domain) GateKinds() []string { return trackrec.GateKinds }

// deletedGate drops every record about a purged task, whoever wrote it and
// however late it arrives: one whose subject is the task, or whose scope
// names it (a mirror, a merge, a dependency on it). A redelivery months
// later then resurrects nothing an operator deliberately removed.
type deletedGate struct{}

// GateDeleted is the gate's name on statelog_record_gated and the code a
// write whose record it holds is refused under.
const GateDeleted = "deleted"

func (deletedGate) Name() string { return GateDeleted }

func (deletedGate) Holds(ctx context.Context, tx statelog.Reader, rec *record.Record, _ uint64) (bool, error) {
	ids := map[string]bool{}
	if id := trackrec.ItemOfSubject(rec.Subject); id != "" {
		ids[id] = true
	}
	for _, s := range rec.Scope {
		if id, ok := trackrec.ScopedItem(s); ok {
			ids[id] = true
		}
	}
	if len(ids) == 0 {
		return false, nil
	}
	// Nothing purged yet is the common case: one cheap probe first.
	var some int
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tracker_purged)`).Scan(&some); err != nil || some == 0 {
		return false, err
	}
	list := make([]any, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	per := BindLimit(ctx, tx)
	for start := 0; start < len(list); start += per {
		chunk := list[start:min(start+per, len(list))]
		var hit int
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tracker_purged WHERE id IN (`+sqlite.Placeholders(len(chunk))+`))`, chunk...).Scan(&hit); err != nil {
			return false, err
		}
		if hit == 1 {
			return true, nil
		}
	}
	return false, nil
}

// Audited are the tracker's records the audit trail lists: a purge.
func (Domain) Audited() []string { return []string{trackrec.KindPurge} }
