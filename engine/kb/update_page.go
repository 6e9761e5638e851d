package kb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb/kbapply"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/statelog"
)

// UpdatePage changes a page's title or body, moves it under another
// parent ("" for the top) or with its subtree to another space, or trashes
// or restores it with its subtree. ifMatch, when set, is the version the
// caller decided against; a page that moved on since is refused stale
// naming its current version. Unset, the update is decided against the
// current rows (the broker arbitrates it alike). A move under the page
// itself or below it is refused: a move re-parents, it never cuts a
// subtree off in a cycle.
func (s *Service) UpdatePage(ctx context.Context, w engine.WriteOptions, id string, ifMatch uint64, p PagePatch) (PageWrite, error) {
	if err := checkPagePatch(id, p); err != nil {
		return PageWrite{}, err
	}
	op, err := s.opFor(w, "update_page", id)
	if err != nil {
		return PageWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		pg, err := s.getPage(ctx, tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, s.pageMissing(ctx, tx, "page", id)
		}
		if err != nil {
			return nil, err
		}
		if ifMatch != 0 && pg.Version != ifMatch {
			ref := engine.Refuse(engine.CodeStale, "page %s is at version %d, not the if_match %d you named; read it again and decide against version %d.", id, pg.Version, ifMatch, pg.Version)
			return nil, ref.With("current_version", pg.Version)
		}
		if pg.Editing == EditingLocked {
			return nil, lockedSpace(pg.Space)
		}
		if p.Trashed != nil {
			return s.decideTrash(ctx, tx, pg, *p.Trashed)
		}
		if pg.Trashed {
			return nil, trashedPage("page", id)
		}
		if p.Space != nil && *p.Space != pg.Space {
			return s.decideMove(ctx, tx, pg, p)
		}
		if p.Parent != nil && *p.Parent != pg.Parent && *p.Parent != "" {
			if err := s.checkParent(ctx, tx, pg, pg.Space, *p.Parent); err != nil {
				return nil, err
			}
		}
		return &statelog.Proposal{Kind: kbrec.KindUpdatePage, Subject: kbrec.PageSubject(id), Scope: []string{kbrec.SpaceScope(pg.Space), kbrec.PageScope(id)},
			Payload: kbrec.UpdatePage{ID: id, Title: p.Title, Body: p.Body, Parent: p.Parent}}, nil
	})
	out, err := s.pageAnswer(ctx, wr, err, id)
	if err == nil && out.Page != nil && p.Parent != nil && out.Page.Parent != *p.Parent && !wr.Replayed {
		out.Message = "The move was not taken: by the time it applied, the new parent was gone or below this page (a concurrent move), so the page kept its parent. The other fields applied."
		if p.Space != nil {
			out.Message = "The page moved to the top of its new space: by the time it applied, the parent it named there was gone, trashed or below it."
		}
	}
	return out, err
}

// checkPagePatch refuses a malformed update before anything is read.
func checkPagePatch(id string, p PagePatch) error {
	if err := checkPageID("id", id); err != nil {
		return err
	}
	if p.Title == nil && p.Body == nil && p.Parent == nil && p.Space == nil && p.Trashed == nil {
		return invalid("nothing to update: give at least one of title, body, parent, space, trashed.")
	}
	if p.Trashed != nil && (p.Title != nil || p.Body != nil || p.Parent != nil || p.Space != nil) {
		return invalid("trashed goes alone: trash or restore the page in one call, and change its fields in another.")
	}
	if p.Title != nil {
		if err := checkText("title", *p.Title, MaxTitleBytes, true); err != nil {
			return err
		}
	}
	if p.Body != nil {
		if err := checkText("body", *p.Body, MaxBodyBytes, false); err != nil {
			return err
		}
	}
	if p.Space != nil {
		if err := checkSpaceKey("space", *p.Space); err != nil {
			return err
		}
	}
	if p.Parent != nil && *p.Parent != "" {
		if err := checkPageID("parent", *p.Parent); err != nil {
			return err
		}
		if *p.Parent == id {
			return invalid("a page cannot be its own parent; give another page of its space, or \"\" for the top.")
		}
	}
	return nil
}

// checkParent refuses a parent page may not move under in space: missing,
// purged, in another space, in the trash, or below the page.
func (s *Service) checkParent(ctx context.Context, tx *sql.Tx, pg Page, space, id string) error {
	parent, err := s.getPage(ctx, tx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return s.pageMissing(ctx, tx, "parent", id)
	}
	if err != nil {
		return err
	}
	if parent.Space != space {
		return invalid("parent %s is in space %s, not %s; a page's parent is a page of the space it is in (update_page space moves it to another).", id, parent.Space, space)
	}
	if parent.Trashed {
		return trashedPage("parent", id)
	}
	ok, err := kbapply.CanMove(ctx, tx, space, pg.ID, id)
	if err != nil {
		return err
	}
	if !ok {
		return invalid("parent %s is below page %s, so the move would make a cycle; move it under a page outside its own subtree, or \"\" for the top.", id, pg.ID)
	}
	return nil
}

// decideMove proposes a move with the subtree to another space: one that
// exists, is open and not archived, under a parent there (or its top).
func (s *Service) decideMove(ctx context.Context, tx *sql.Tx, pg Page, p PagePatch) (*statelog.Proposal, error) {
	to, err := spaceTakingPages(ctx, tx, *p.Space)
	if err != nil {
		return nil, err
	}
	if p.Parent != nil && *p.Parent != "" {
		if err := s.checkParent(ctx, tx, pg, to.Key, *p.Parent); err != nil {
			return nil, err
		}
	}
	return &statelog.Proposal{Kind: kbrec.KindMovePage, Subject: kbrec.PageSubject(pg.ID), Scope: []string{kbrec.SpaceScope(pg.Space), kbrec.SpaceScope(to.Key), kbrec.PageScope(pg.ID)},
		Payload: kbrec.MovePage{UpdatePage: kbrec.UpdatePage{ID: pg.ID, Title: p.Title, Body: p.Body, Parent: p.Parent}, Space: to.Key}}, nil
}

// decideTrash proposes trashing or restoring a page with its subtree.
func (s *Service) decideTrash(ctx context.Context, tx *sql.Tx, pg Page, trashed bool) (*statelog.Proposal, error) {
	switch {
	case trashed && pg.Trashed:
		return nil, invalid("page %s is in the trash already; update_page with trashed=false restores it.", pg.ID)
	case !trashed && !pg.Trashed:
		return nil, invalid("page %s is not in the trash, so there is nothing to restore.", pg.ID)
	case !trashed && pg.Parent != "":
		parent, err := s.getPage(ctx, tx, pg.Parent)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if err == nil && parent.Trashed {
			return nil, invalid("page %s is under %s, which is in the trash; restore %s (it brings back what it took with it).", pg.ID, pg.Parent, pg.Parent)
		}
	}
	return &statelog.Proposal{Kind: kbrec.KindTrashPage, Subject: kbrec.PageSubject(pg.ID), Scope: []string{kbrec.SpaceScope(pg.Space), kbrec.PageScope(pg.ID)},
		Payload: kbrec.TrashPage{ID: pg.ID, Trashed: trashed}}, nil
}
