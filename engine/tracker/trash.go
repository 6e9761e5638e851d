package tracker

import (
	"context"
	"database/sql"
	"errors"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// EmptyTrash purges every item of a project that is in the trash
// (operator only): a first step on the project (tracker.empty_trash, which
// writes nothing) whose sequence is the cut-off, then one purge step per
// item trashed before it, each as purge_work_item writes it. A re-run
// under the same op id answers the cut-off from the ledger, so it purges
// what is left of the same set and nothing trashed since; each purge that
// landed is answered, not written again.
func (s *Service) EmptyTrash(ctx context.Context, w engine.WriteOptions, project string) (ItemWrite, error) {
	if !projectKeyRE.MatchString(project) {
		return ItemWrite{}, invalid("project %q is not a project key (e.g. ENG); list_projects shows them.", project)
	}
	op, err := s.opFor(ctx, w, "empty_trash", project)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wk := s.newWalk(op)
	wk.wk.MaxSteps = 1 + MaxBulkItems
	ok, err := wk.step(ctx, "empty", project, project, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		if _, err := getProject(ctx, tx, project); errors.Is(err, sql.ErrNoRows) {
			return nil, notFoundProject(project)
		} else if err != nil {
			return nil, err
		}
		return &statelog.Proposal{Kind: trackrec.KindEmptyTrash, Subject: trackrec.ProjectSubject(project), Scope: []string{trackrec.ProjectScope(project)},
			Payload: trackrec.EmptyTrash{Project: project}}, nil
	})
	if !ok {
		return wk.finish(ctx, "", err)
	}
	cut := wk.wk.Steps[0].Seq
	if err := s.replica.WaitApplied(ctx, cut); err != nil {
		return wk.answer(), err
	}
	ids, err := s.queryIDs(ctx, `SELECT id FROM tracker_items WHERE project = ? AND trashed != 0 AND trashed < ? ORDER BY doc`, project, cut)
	if err != nil {
		return wk.answer(), err
	}
	more := len(ids) > MaxBulkItems
	if more {
		ids = ids[:MaxBulkItems] // the same op id again purges the next ones
	}
	engine.ReportProgress(ctx, 0, len(ids))
	for i, id := range ids {
		ok, err := wk.step(ctx, "purge", id, s.keyOf(ctx, id), func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
			var trashed uint64
			err := tx.QueryRowContext(ctx, `SELECT trashed FROM tracker_items WHERE id = ?`, id).Scan(&trashed)
			if err == nil && (trashed == 0 || trashed >= cut) {
				return nil, engine.Refuse(engine.CodeConflict, "an item of the trash was restored while it was being emptied; call again with the same op_id to purge the rest.")
			}
			if err != nil {
				return nil, err
			}
			return s.purgeProposal(ctx, tx, id)
		})
		if !ok {
			return wk.finish(ctx, "", err)
		}
		engine.ReportProgress(ctx, i+1, len(ids))
	}
	out, err := wk.finish(ctx, "", nil)
	if more {
		out.Message = "The trash held more items than one call purges; call again with the same op_id to purge the rest."
	}
	return out, err
}
