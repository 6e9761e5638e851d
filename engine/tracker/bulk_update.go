package tracker

// The bulk update: one patch over many items of a project, written in
// chunks that each fit one apply transaction.

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// BulkPatch is what BulkUpdate applies to every item it names.
type BulkPatch struct {
	AddTags     []string
	AddWatchers []string
	Status      *string
	// Assignee (a tracker.bulk_set record) sets who holds every item.
	Assignee *string
}

// BulkUpdate applies one patch to many items of a project. It is written
// as records of at most statelog.MaxTxRows rows each, one step per chunk
// named by the chunk's first item, so no apply transaction it causes
// holds the database's write lock for more than one of them.
func (s *Service) BulkUpdate(ctx context.Context, w engine.WriteOptions, project string, keys []string, p BulkPatch) (ItemWrite, error) {
	if !projectKeyRE.MatchString(project) {
		return ItemWrite{}, invalid("project %q is not a project key (e.g. ENG).", project)
	}
	if len(keys) == 0 || len(keys) > MaxBulkItems {
		return ItemWrite{}, invalid("give 1 to %d items.", MaxBulkItems)
	}
	if err := checkBulkPatch(p); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "bulk", project)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	var ids []string
	err = s.replica.Settle(ctx, func(ctx context.Context) error {
		_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			ids, err = s.resolveMany(ctx, tx, keys)
			return err
		})
		return err
	})
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	return s.bulkSteps(ctx, op, project, ids, keys, p)
}

func checkBulkPatch(p BulkPatch) error {
	if err := checkTags(p.AddTags); err != nil {
		return err
	}
	if err := checkTags(p.AddWatchers); err != nil {
		return err
	}
	if p.Assignee != nil {
		if err := checkText("assignee", *p.Assignee, MaxAssigneeBytes, false); err != nil {
			return err
		}
	}
	if p.Status != nil {
		return checkStatus(*p.Status)
	}
	return nil
}

// bulkSteps writes a bulk update of ids (keys label them) in chunks,
// telling ctx's progress after each.
func (s *Service) bulkSteps(ctx context.Context, op statelog.Op, project string, ids, keys []string, p BulkPatch) (ItemWrite, error) {
	// Rows one item costs: its row, a child row and a history row per tag
	// and watcher, a history row for the status and for the assignee.
	per := trackrec.BulkUpdate{AddTags: p.AddTags, AddWatchers: p.AddWatchers, Status: p.Status, Assignee: p.Assignee}.RowsPerItem()
	kind := trackrec.KindBulkUpdate
	if p.Assignee != nil {
		kind = trackrec.KindBulkSet
	}
	chunk := max(1, statelog.MaxTxRows/per)
	wk := s.newWalk(op)
	engine.ReportProgress(ctx, 0, len(ids))
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		ok, err := wk.step(ctx, "bulk", part[0], fmt.Sprintf("%d items from %s", len(part), keys[start]), func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
			return &statelog.Proposal{Kind: kind, Subject: trackrec.ProjectSubject(project), Scope: []string{trackrec.ProjectScope(project)},
				Payload: trackrec.BulkUpdate{Project: project, Items: part, AddTags: p.AddTags, AddWatchers: p.AddWatchers, Status: p.Status, Assignee: p.Assignee}}, nil
		})
		if !ok {
			return wk.answer(), err
		}
		engine.ReportProgress(ctx, start+len(part), len(ids))
	}
	return wk.answer(), nil
}

// resolveMany is resolve of every key, in order, read many keys to a
// statement (one lookup each was a tenth of a maximal bulk update): the
// first key that does not resolve answers as resolve would.
func (s *Service) resolveMany(ctx context.Context, tx *sql.Tx, keys []string) ([]string, error) {
	type found struct {
		id     string
		purged sql.NullInt64
	}
	byKey := make(map[string]found, len(keys))
	for start := 0; start < len(keys); start += trackapply.MaxRowsPerStatement {
		chunk := keys[start:min(start+trackapply.MaxRowsPerStatement, len(keys))]
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = k
		}
		rows, err := tx.QueryContext(ctx, `SELECT k.key, k.id, p.seq FROM tracker_item_keys k LEFT JOIN tracker_purged p ON p.id = k.id
			WHERE k.key IN (`+sqlite.Placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			var f found
			if err := rows.Scan(&k, &f.id, &f.purged); err != nil {
				rows.Close()
				return nil, err
			}
			byKey[k] = f
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		f, ok := byKey[k]
		if !ok || f.purged.Valid {
			// The refusal resolve gives: not found, or purged at its sequence.
			_, err := s.resolve(ctx, tx, k)
			if err == nil {
				err = notFoundItem(k)
			}
			return nil, err
		}
		ids = append(ids, f.id)
	}
	return ids, nil
}
