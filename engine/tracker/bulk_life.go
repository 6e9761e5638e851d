package tracker

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
)

// MaxBulkCreate is how many items one bulk create files.
const MaxBulkCreate = 100

// BulkFilter picks the items of a bulk update: every field a
// comma-separated list of values (any of them matches), as
// list_work_items takes them; the trash is left out.
type BulkFilter struct {
	Status, Assignee, Tag string
}

func (f BulkFilter) empty() bool { return f.Status == "" && f.Assignee == "" && f.Tag == "" }

// splitList is a comma-separated argument's values.
func splitList(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// BulkUpdateWhere is BulkUpdate over the items of project that keys name
// or, with no keys, that match f, read at the log's end. A re-run under
// the same op id reads the filter afresh: chunks that landed are answered
// from the ledger (each is named by its first item), items that still
// match and were not reached are updated, and every patch sets values
// rather than adding to them, so nothing is applied twice.
func (s *Service) BulkUpdateWhere(ctx context.Context, w engine.WriteOptions, project string, keys []string, f BulkFilter, p BulkPatch) (ItemWrite, error) {
	if len(keys) > 0 || f.empty() {
		if len(keys) > 0 && !f.empty() {
			return ItemWrite{}, invalid("give keys or a filter (status, assignee, tag), not both.")
		}
		return s.BulkUpdate(ctx, w, project, keys, p)
	}
	if !projectKeyRE.MatchString(project) {
		return ItemWrite{}, invalid("project %q is not a project key (e.g. ENG).", project)
	}
	for _, st := range splitList(f.Status) {
		if err := checkStatus(st); err != nil {
			return ItemWrite{}, err
		}
	}
	if err := checkBulkPatch(p); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "bulk", project)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	var ids []string
	keys = nil
	err = s.replica.Settle(ctx, func(ctx context.Context) error {
		ids, keys = ids[:0], keys[:0]
		_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
			return s.matching(ctx, tx, project, f, &ids, &keys)
		})
		return err
	})
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	if len(ids) > MaxBulkItems {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}},
			invalid("%d items of %s match; one bulk update takes at most %d: narrow the filter.", len(ids), project, MaxBulkItems)
	}
	if len(ids) == 0 {
		out := ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String(), Outcome: engine.Applied}, Steps: []Step{}}
		out.Message = fmt.Sprintf("No item of %s matches the filter; nothing was written.", project)
		return out, nil
	}
	return s.bulkSteps(ctx, op, project, ids, keys, p)
}

// matching reads the ids and keys of project's items that f picks, in
// the order they were filed.
func (s *Service) matching(ctx context.Context, tx *sql.Tx, project string, f BulkFilter, ids, keys *[]string) error {
	q := `SELECT i.id, i.key FROM tracker_items i WHERE i.project = ? AND i.trashed = 0`
	args := []any{project}
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		q += ` AND ` + col + ` IN (` + sqlite.Placeholders(len(vals)) + `)`
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in(`i.status`, splitList(f.Status))
	in(`i.assignee`, splitList(f.Assignee))
	if tags := splitList(f.Tag); len(tags) > 0 {
		q += ` AND EXISTS (SELECT 1 FROM tracker_tags t WHERE t.item = i.id AND t.tag IN (` + sqlite.Placeholders(len(tags)) + `))`
		for _, t := range tags {
			args = append(args, t)
		}
	}
	rows, err := tx.QueryContext(ctx, q+` ORDER BY i.doc`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			return err
		}
		*ids, *keys = append(*ids, id), append(*keys, key)
	}
	return rows.Err()
}

// BulkCreate files several items in a project under one op id: one create
// step per item, named by the item's place in the list (the arguments are
// bound to the op id by their digest, so a re-run names the same items),
// each item's id derived from its step's op id. A re-run answers the
// items filed from the ledger and files the rest. Dependencies are not
// taken (update_work_item adds them).
func (s *Service) BulkCreate(ctx context.Context, w engine.WriteOptions, project string, items []NewWorkItem) (ItemWrite, error) {
	if len(items) == 0 || len(items) > MaxBulkCreate {
		return ItemWrite{}, invalid("give 1 to %d items to create.", MaxBulkCreate)
	}
	for i := range items {
		items[i].Project = project
		if len(items[i].DependsOn) > 0 {
			return ItemWrite{}, invalid("item %d names depends_on, which a bulk create does not take; add dependencies with update_work_item.", i+1)
		}
		if err := checkNewWorkItem(&items[i]); err != nil {
			return ItemWrite{}, err
		}
	}
	op, err := s.opFor(ctx, w, "bulk_create", project)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wk := s.newWalk(op)
	engine.ReportProgress(ctx, 0, len(items))
	for i, in := range items {
		ok, err := wk.wk.Step(ctx, s.replica, "create", fmt.Sprint(i), in.Title, func(ctx context.Context, op statelog.Op) (statelog.Written, error) {
			id := itemID(op.ID)
			var deps []string
			wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
				return s.decideCreate(ctx, tx, in, id, &deps)
			})
			if err == nil {
				wk.created = append(wk.created, id)
			}
			return wr, err
		})
		if !ok {
			return s.bulkCreated(ctx, wk), err
		}
		engine.ReportProgress(ctx, i+1, len(items))
	}
	return s.bulkCreated(ctx, wk), nil
}

// bulkCreated is a bulk create's answer: each step labelled with the key
// of the item it filed.
func (s *Service) bulkCreated(ctx context.Context, wk *walk) ItemWrite {
	out := wk.answer()
	for i, id := range wk.created {
		if i < len(out.Steps) && (out.Steps[i].Outcome == engine.Applied || out.Steps[i].Outcome == engine.Pending) {
			out.Steps[i].Task = s.keyOf(ctx, id)
		}
	}
	return out
}
