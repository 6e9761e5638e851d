package tracker

// list_work_items' query: multi-valued filters, the batch get, the trash
// listing, updated_since, the sorts and keyset paging (cursor.go); and
// list_tags.

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Listing limits.
const (
	MaxListKeys   = 100 // keys of one batch get
	MaxListValues = 50  // values of one multi-valued filter
	MaxListTags   = 1000
)

// ListSorts are the orders list_work_items takes; key is the default.
var ListSorts = []string{"key", "updated", "-updated", "created", "-created", "priority", "due"}

// sortKeys are the sort expressions, each ascending, ties broken by key:
// a minus sorts newest first, priority most urgent first, due soonest
// first with no due date last.
var sortKeys = map[string]string{
	"updated":  `i.updated_at`,
	"-updated": `-i.updated_at`,
	"created":  `i.created_at`,
	"-created": `-i.created_at`,
	"priority": `-coalesce(f.priority, 0)`,
	"due":      `CASE WHEN coalesce(f.due, '') = '' THEN '~' ELSE f.due END`,
}

// splitValues reads a comma-separated filter: trimmed, empties dropped,
// each once.
func splitValues(name, s string, max int) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) > max {
		return nil, invalid("%s names %d values; at most %d are accepted.", name, len(out), max)
	}
	return out, nil
}

// listQuery is a checked filter: the values of each filter, the sort.
type listQuery struct {
	f                                   ListFilter
	projects, statuses, assignees, tags []string
	priorities, types, keys             []string
	since                               int64
	sort                                string
}

// checkListFilter refuses a malformed filter before anything is read, and
// fills the default page size and sort.
func checkListFilter(f ListFilter) (listQuery, error) {
	q := listQuery{f: f, sort: f.Sort}
	var err error
	for _, v := range []struct {
		name, s string
		dst     *[]string
		check   func(string) error
		max     int
	}{
		{"project", f.Project, &q.projects, checkProjectKey, MaxListValues},
		{"status", f.Status, &q.statuses, checkStatus, MaxListValues},
		{"assignee", f.Assignee, &q.assignees, func(a string) error { return checkText("assignee", a, MaxAssigneeBytes, true) }, MaxListValues},
		{"tag", f.Tag, &q.tags, func(t string) error { return checkTags([]string{t}) }, MaxListValues},
		{"priority", f.Priority, &q.priorities, checkPriority, MaxListValues},
		{"type", f.Type, &q.types, checkType, MaxListValues},
		{"keys", f.Keys, &q.keys, checkItemKey, MaxListKeys},
	} {
		if *v.dst, err = splitValues(v.name, v.s, v.max); err != nil {
			return q, err
		}
		for _, x := range *v.dst {
			if err := v.check(x); err != nil {
				return q, err
			}
		}
	}
	if f.Parent != "" {
		if err := checkItemKey(f.Parent); err != nil {
			return q, err
		}
	}
	if f.UpdatedSince != "" {
		t, err := time.Parse(time.RFC3339, f.UpdatedSince)
		if err != nil {
			return q, invalid("updated_since %q is not an RFC 3339 time like 2026-03-01T09:00:00Z.", f.UpdatedSince)
		}
		q.since = t.UnixNano()
	}
	if q.sort == "" {
		q.sort = "key"
	}
	if !slices.Contains(ListSorts, q.sort) {
		return q, invalid("sort %q is not one of %s.", q.sort, strings.Join(ListSorts, ", "))
	}
	if q.f.Limit == 0 {
		q.f.Limit = DefaultListLimit
	}
	if q.f.Limit < 0 || q.f.Limit > MaxListLimit {
		return q, invalid("limit %d is out of range; give 1 to %d.", q.f.Limit, MaxListLimit)
	}
	return q, nil
}

func checkProjectKey(p string) error {
	if !projectKeyRE.MatchString(p) {
		return invalid("project %q is not a project key (e.g. ENG).", p)
	}
	return nil
}

// digest names the query a cursor pages: every filter and the sort.
func (q listQuery) digest() string {
	return queryDigest("list", strings.Join(q.projects, ","), strings.Join(q.statuses, ","), strings.Join(q.assignees, ","),
		strings.Join(q.tags, ","), strings.Join(q.priorities, ","), strings.Join(q.types, ","), strings.Join(q.keys, ","),
		q.f.Parent, strconv.FormatInt(q.since, 10), strconv.FormatBool(q.f.Trashed), q.sort)
}

// in appends "AND expr IN (?, ...)" for a filter's values.
func in(q *strings.Builder, args *[]any, expr string, vals []any) {
	if len(vals) == 0 {
		return
	}
	q.WriteString(` AND ` + expr + ` IN (` + sqlite.Placeholders(len(vals)) + `)`)
	*args = append(*args, vals...)
}

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// ListWorkItems lists items a page at a time, in key order or the sort
// asked; items in the trash are left out, or only they are (Trashed).
func (s *Service) ListWorkItems(ctx context.Context, r engine.ReadOptions, f ListFilter) (ItemList, error) {
	q, err := checkListFilter(f)
	if err != nil {
		return ItemList{}, err
	}
	cur, err := decodeCursor(f.Cursor, q.digest())
	if err != nil {
		return ItemList{}, err
	}
	if r, err = cur.floor(linearizable(r)); err != nil {
		return ItemList{}, err
	}
	out := ItemList{Items: []WorkItem{}}
	sortVals := []string{}
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out.Items, sortVals, out.Missing, err = s.listPage(ctx, tx, q, cur)
		return err
	})
	if err == nil && len(out.Items) > q.f.Limit {
		out.Items, sortVals = out.Items[:q.f.Limit], sortVals[:q.f.Limit]
		last := len(out.Items) - 1
		out.NextCursor = pageCursor{V: 1, Q: q.digest(), P: cur.firstPosition(info), S: sortVals[last], K: out.Items[last].Key}.encode()
	}
	out.ReadInfo = info
	return out, err
}

// listPage reads one page (and one row past it, so the caller knows
// whether there is another) with each row's sort value.
func (s *Service) listPage(ctx context.Context, tx *sql.Tx, q listQuery, cur pageCursor) ([]WorkItem, []string, []string, error) {
	var b strings.Builder
	sortExpr := sortKeys[q.sort]
	if sortExpr == "" {
		sortExpr = `''`
	}
	// The page is chosen on the sort key alone and only its rows are then
	// read whole: SQLite computes every result column before it sorts,
	// so selecting the item columns (the parent's and merge target's keys,
	// the fields) beside the sort read them for every item the filter
	// kept — 100 000 of them for a project at that size, most of a second.
	b.WriteString(`SELECT i.id AS pid, ` + sortExpr + ` AS sv, i.project AS pp, i.number AS pn FROM tracker_items i` + trackapply.FieldsJoin + ` WHERE i.trashed `)
	if q.f.Trashed {
		b.WriteString(`!= 0`)
	} else {
		b.WriteString(`= 0`)
	}
	var args []any
	ids, missing, err := s.resolveKeys(ctx, tx, q.keys)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(q.keys) > 0 && len(ids) == 0 {
		return nil, nil, missing, nil
	}
	in(&b, &args, `i.id`, anys(ids))
	in(&b, &args, `i.project`, anys(q.projects))
	in(&b, &args, `i.status`, anys(q.statuses))
	in(&b, &args, `i.assignee`, anys(q.assignees))
	in(&b, &args, `coalesce(f.type, 'task')`, anys(q.types))
	ranks := make([]any, len(q.priorities))
	for i, p := range q.priorities {
		ranks[i] = trackrec.PriorityRank(p)
	}
	in(&b, &args, `coalesce(f.priority, 0)`, ranks)
	if len(q.tags) > 0 {
		b.WriteString(` AND EXISTS (SELECT 1 FROM tracker_tags t WHERE t.item = i.id AND t.tag IN (` + sqlite.Placeholders(len(q.tags)) + `))`)
		args = append(args, anys(q.tags)...)
	}
	if q.since != 0 {
		b.WriteString(` AND i.updated_at >= ?`)
		args = append(args, q.since)
	}
	if q.f.Parent != "" {
		pid, err := s.resolve(ctx, tx, q.f.Parent)
		if err != nil {
			return nil, nil, nil, err
		}
		b.WriteString(` AND i.parent = ?`)
		args = append(args, pid)
	}
	if err := afterCursor(&b, &args, sortExpr, q.sort, cur); err != nil {
		return nil, nil, nil, err
	}
	b.WriteString(` ORDER BY ` + sortExpr + `, i.project, i.number LIMIT ?`)
	args = append(args, q.f.Limit+1)
	query := `WITH pg AS MATERIALIZED (` + b.String() + `) SELECT ` + itemColumns + `, pg.sv FROM pg, ` +
		strings.TrimPrefix(itemFrom, ` FROM `) + ` WHERE i.id = pg.pid ORDER BY pg.sv, pg.pp, pg.pn`
	items, vals, err := scanPage(ctx, tx, query, args)
	return items, vals, missing, err
}

// afterCursor starts the page strictly after the cursor's last row on
// (sort value, project, number).
func afterCursor(b *strings.Builder, args *[]any, sortExpr, sort string, cur pageCursor) error {
	if cur.K == "" {
		return nil
	}
	m := itemKeyRE.FindStringSubmatch(cur.K)
	if m == nil {
		return invalid("the cursor's last key is not an item key; start again without it.")
	}
	number, _ := strconv.ParseInt(m[2], 10, 64)
	var v any = cur.S
	if sort != "key" && sort != "due" {
		n, err := strconv.ParseInt(cur.S, 10, 64)
		if err != nil {
			return invalid("the cursor's sort value is not one a page returned; start again without it.")
		}
		v = n
	}
	b.WriteString(` AND (` + sortExpr + `, i.project, i.number) > (?, ?, ?)`)
	*args = append(*args, v, m[1], number)
	return nil
}

// scanPage runs a page's query: items with their sort value last.
func scanPage(ctx context.Context, tx *sql.Tx, q string, args []any) ([]WorkItem, []string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var items []WorkItem
	var vals []string
	for rows.Next() {
		var sv any
		it, err := scanItem(scanPlus{rows, &sv})
		if err != nil {
			return nil, nil, err
		}
		items = append(items, it)
		vals = append(vals, sortValue(sv))
	}
	return items, vals, rows.Err()
}

// scanPlus scans a row with one more column than scanItem reads.
type scanPlus struct {
	rows  *sql.Rows
	extra *any
}

func (s scanPlus) Scan(dst ...any) error { return s.rows.Scan(append(dst, s.extra)...) }

func sortValue(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// resolveKeys finds the ids of a batch get's keys (a key an item held
// before a move finds it); the keys nothing answers to are missing.
func (s *Service) resolveKeys(ctx context.Context, tx *sql.Tx, keys []string) (ids, missing []string, err error) {
	for _, k := range keys {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT k.id FROM tracker_item_keys k JOIN tracker_items i ON i.id = k.id WHERE k.key = ?`, k).Scan(&id)
		switch {
		case err == sql.ErrNoRows:
			missing = append(missing, k)
		case err != nil:
			return nil, nil, err
		case !slices.Contains(ids, id):
			ids = append(ids, id)
		}
	}
	return ids, missing, nil
}

// ListTags lists the tags of a project's items (every project's where
// project is ""), the trash left out, each with how many items carry it,
// most used first.
func (s *Service) ListTags(ctx context.Context, r engine.ReadOptions, project string) (TagList, error) {
	if project != "" {
		if err := checkProjectKey(project); err != nil {
			return TagList{}, err
		}
	}
	out := TagList{Tags: []TagCount{}}
	info, err := s.replica.Read(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) error {
		q := `SELECT t.tag, count(*) FROM tracker_tags t JOIN tracker_items i ON i.id = t.item WHERE i.trashed = 0`
		args := []any{}
		if project != "" {
			q += ` AND i.project = ?`
			args = append(args, project)
		}
		q += ` GROUP BY t.tag ORDER BY count(*) DESC, t.tag LIMIT ?`
		rows, err := tx.QueryContext(ctx, q, append(args, MaxListTags)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tc TagCount
			if err := rows.Scan(&tc.Tag, &tc.Count); err != nil {
				return err
			}
			out.Tags = append(out.Tags, tc)
		}
		return rows.Err()
	})
	out.ReadInfo = info
	return out, err
}
