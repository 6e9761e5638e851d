package trackapply

import (
	"context"
	"database/sql"
	"strings"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// closedSQL is the statuses trackrec.Closed holds closed, as an SQL list
// of literals: a reopen is a move out of one of them into an open one,
// whether the apply counts it (bulkBySet) or Rederive recounts it.
var closedSQL = func() string {
	var out []string
	for _, s := range trackrec.Statuses {
		if trackrec.Closed(s) {
			out = append(out, "'"+strings.ReplaceAll(s, "'", "''")+"'")
		}
	}
	return strings.Join(out, ", ")
}()

// Rederive recomputes every computed column from the rows this node holds
// (statelog calls it once at boot when RulesVersion changed): each history
// row's hand-off count, each item's reopens, hand-offs and updated_at, and
// each project's active count. Only rows whose value differs are written,
// and their number is the answer.
func (Domain) Rederive(ctx context.Context, tx *sql.Tx) (int64, error) {
	var total int64
	for _, q := range []string{
		`WITH c AS (SELECT rowid AS r, sum(field = 'assignee') OVER (PARTITION BY doc ORDER BY seq, n) AS h FROM tracker_history)
		 UPDATE tracker_history SET handoffs = c.h FROM c WHERE tracker_history.rowid = c.r AND tracker_history.handoffs != c.h`,
		`WITH c AS (SELECT item,
			sum(field = 'assignee') AS handoffs,
			sum(field = 'status' AND old IN (` + closedSQL + `) AND new NOT IN (` + closedSQL + `)) AS reopens,
			max(at) AS updated
			FROM tracker_history GROUP BY item)
		 UPDATE tracker_items SET handoffs = c.handoffs, reopens = c.reopens, updated_at = c.updated FROM c
		 WHERE tracker_items.id = c.item AND (tracker_items.handoffs != c.handoffs OR tracker_items.reopens != c.reopens OR tracker_items.updated_at != c.updated)`,
		`WITH c AS (SELECT p.key, (SELECT count(*) FROM tracker_items i WHERE i.project = p.key AND i.status = 'in_progress' AND i.trashed = 0) AS active FROM tracker_projects p)
		 UPDATE tracker_projects SET active = c.active FROM c WHERE tracker_projects.key = c.key AND tracker_projects.active != c.active`,
	} {
		res, err := tx.ExecContext(ctx, q)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
