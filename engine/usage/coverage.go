package usage

import (
	"context"
	"database/sql"
	"sort"
	"time"

	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// maxMissing bounds the missing days a node's coverage lists.
const maxMissing = 31

// readCoverage is which nodes' days the range holds: every node with a
// day in the history this node holds (or the one node asked for), the
// range's days from its first day through today it has a day object
// for, and those it has not.
func (s *Service) readCoverage(ctx context.Context, tx *sql.Tx, q Query, today string, out *Report) error {
	args := []any{}
	nodeWhere := ""
	if q.Node != "" {
		nodeWhere, args = ` WHERE node = ?`, append(args, q.Node)
	}
	type first struct{ node, day string }
	var nodes []first
	rows, err := tx.QueryContext(ctx, `SELECT node, min(day) FROM usage_days`+nodeWhere+` GROUP BY node ORDER BY node`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var f first
		if err := rows.Scan(&f.node, &f.day); err != nil {
			rows.Close()
			return err
		}
		nodes = append(nodes, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	out.Coverage = Coverage{Nodes: []NodeCoverage{}, Ratio: 1}
	last := min(out.To, today)
	for _, f := range nodes {
		nc, expected, err := nodeCoverage(ctx, tx, f.node, max(out.From, f.day), last)
		if err != nil {
			return err
		}
		out.Coverage.Nodes = append(out.Coverage.Nodes, nc)
		out.Coverage.NodeDays += nc.Days
		out.Coverage.Expected += expected
	}
	if out.Coverage.Expected > 0 {
		out.Coverage.Ratio = float64(out.Coverage.NodeDays) / float64(out.Coverage.Expected)
	}
	return nil
}

// nodeCoverage is node's day objects over [from, to].
func nodeCoverage(ctx context.Context, tx *sql.Tx, node, from, to string) (NodeCoverage, int, error) {
	nc := NodeCoverage{Node: node, Missing: []string{}}
	have := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT day, through FROM usage_days WHERE node = ? AND seat = '' AND day >= ? AND day <= ? ORDER BY day`, node, from, to)
	if err != nil {
		return nc, 0, err
	}
	var newest int64
	for rows.Next() {
		var day string
		var through int64
		if err := rows.Scan(&day, &through); err != nil {
			rows.Close()
			return nc, 0, err
		}
		have[day] = true
		if through > 0 {
			newest = through
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nc, 0, err
	}
	if newest > 0 {
		t := time.Unix(0, newest).UTC()
		nc.Through = &t
	}
	expected := 0
	fd, ok1 := usagerec.ParseDay(from)
	td, ok2 := usagerec.ParseDay(to)
	if !ok1 || !ok2 {
		return nc, 0, nil
	}
	for d := fd; !d.After(td); d = d.AddDate(0, 0, 1) {
		k := d.Format(usagerec.DateLayout)
		expected++
		if have[k] {
			nc.Days++
		} else {
			nc.Missing = append(nc.Missing, k)
		}
	}
	sort.Strings(nc.Missing)
	if len(nc.Missing) > maxMissing {
		nc.Missing = nc.Missing[len(nc.Missing)-maxMissing:]
	}
	return nc, expected, nil
}
