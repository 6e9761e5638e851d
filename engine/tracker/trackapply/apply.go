package trackapply

// The Domain the replication framework drives, the dispatch of a record
// by kind, and the write-out of what it changed. The item row lives in
// apply_row.go, the record kinds in apply_kinds.go, the records over many
// items (purge, bulk) in apply_purge.go.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Domain is the tracker as the replication framework drives it.
type Domain struct{}

var (
	_ statelog.Domain        = Domain{}
	_ statelog.GatedDomain   = Domain{}
	_ statelog.DerivedDomain = Domain{}
)

// Name is "tracker".
func (Domain) Name() engine.Domain { return engine.DomainTracker }

// Schema is the tracker's tables.
func (Domain) Schema() string { return schema + fieldsSchema + lifeSchema + mirrorDueSchema }

// RulesVersion is the version of the rules computing the computed columns.
func (Domain) RulesVersion() int { return RulesVersion }

// RowsAhead is the most rows a bulk record writes (its items at
// trackrec.BulkUpdate.RowsPerItem each), and nothing for any other kind:
// statelog.RowsAhead.
func (Domain) RowsAhead(rec *record.Record) int {
	if rec.Kind != trackrec.KindBulkUpdate && rec.Kind != trackrec.KindBulkSet {
		return 0
	}
	var b trackrec.BulkUpdate
	if err := json.Unmarshal(rec.Payload, &b); err != nil {
		return 0
	}
	return len(b.Items) * b.RowsPerItem()
}

// Apply writes one record's rows. Records were decided against the rows
// their subject's anchor named, so applying is deterministic; one that is
// moot here (its object gone, its project gone) writes nothing.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	h, batched := at.Hold(newHeldRows)
	held := h.(*heldRows)
	creating := rec.Kind == trackrec.KindCreateWorkItem
	if !creating {
		// Any other record may read what the creates before it held back
		// (a move takes a number from its project's row, a purge deletes
		// its item's history): it reads it as they left it.
		if err := held.Flush(ctx, tx, at); err != nil {
			return err
		}
	}
	a := &apply{ctx: ctx, tx: tx, at: at, seq: at.Seq, ts: at.Time.UnixNano(), items: map[string]*itemRow{},
		own: trackrec.ItemOfSubject(rec.Subject), projects: map[string]bool{}, held: held, creating: creating}
	a.hist = newHistBuffer()
	if creating {
		a.hist = held.hist
	}
	a.histFrom = a.hist.rows()
	a.tags = newRowBuffer("tracker_tags", []string{"item", "tag"}, "ON CONFLICT DO NOTHING")
	a.watchers = newRowBuffer("tracker_watchers", []string{"item", "watcher"}, "ON CONFLICT DO NOTHING")
	a.edges = newRowBuffer("tracker_edges", []string{"item", "kind", "other", "authored"}, "ON CONFLICT DO NOTHING")
	var err error
	switch rec.Kind {
	case trackrec.KindCreateProject:
		var p trackrec.CreateProject
		if json.Unmarshal(rec.Payload, &p) != nil {
			return nil // undecodable payload of a known kind: moot
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tracker_projects(key, name, last_number, version, created_at) VALUES(?,?,0,?,?)
			ON CONFLICT(key) DO NOTHING`, p.Key, p.Name, at.Seq, a.ts)
		return err
	case trackrec.KindCreateWorkItem:
		err = decodeThen(rec, a.createItem)
	case trackrec.KindUpdateWorkItem:
		err = decodeThen(rec, a.updateItem)
	case trackrec.KindMirrorEdges:
		err = decodeThen(rec, a.mirror)
	case trackrec.KindComment:
		err = decodeThen(rec, a.comment)
	case trackrec.KindMark:
		err = decodeThen(rec, a.mark)
	case trackrec.KindMove:
		err = decodeThen(rec, a.move)
	case trackrec.KindMergeDuplicate:
		err = decodeThen(rec, a.merge)
	case trackrec.KindTrash:
		err = decodeThen(rec, a.trash)
	case trackrec.KindRestore:
		err = decodeThen(rec, a.restore)
	case trackrec.KindPurge:
		err = decodeThen(rec, a.purge)
	case trackrec.KindBulkUpdate, trackrec.KindBulkSet:
		err = decodeThen(rec, func(b *trackrec.BulkUpdate) error { return bulkApply(a, b) })
	case trackrec.KindEditComment:
		err = decodeThen(rec, a.editComment)
	case trackrec.KindUpdateProject:
		err = decodeThen(rec, a.updateProject)
	case trackrec.KindEmptyTrash:
		return nil // a cut-off: it writes nothing
	default:
		// Never reached through the applier: a kind missing from
		// trackrec.Kinds is retained by the framework before any apply.
		return nil
	}
	if err != nil {
		return err
	}
	return a.close(rec, batched)
}

// close ends the record's apply: what it owes, its rows written, the item
// a create filed noted for its answer, and, applied by hand, what it
// held back written (nothing else flushes it).
func (a *apply) close(rec *record.Record, batched bool) error {
	if err := a.owed(rec); err != nil {
		return err
	}
	if err := a.finish(); err != nil {
		return err
	}
	if a.creating {
		a.noteCreated()
	}
	if batched {
		return nil
	}
	return a.held.Flush(a.ctx, a.tx, a.at)
}

// owed writes what the record owes beside its rows: the mirrors its
// gesture writes next (mirrordue.go) and who wrote its history.
func (a *apply) owed(rec *record.Record) error {
	if err := a.writeDue(rec); err != nil {
		return err
	}
	if a.hist.rows() > a.histFrom || a.histWritten > 0 {
		return a.recordBy(rec.By)
	}
	return nil
}

func decodeThen[T any](rec *record.Record, f func(*T) error) error {
	var p T
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return nil // moot: a payload of a known kind this build cannot read
	}
	return f(&p)
}

// apply is one record's application.
type apply struct {
	ctx      context.Context
	tx       *sql.Tx
	at       statelog.Applying
	seq      uint64
	ts       int64
	own      string // the item the record is about, "" for a project's
	items    map[string]*itemRow
	order    []string
	projects map[string]bool // projects whose active count may have moved
	// held is what the transaction's creates hold back (held.go), and
	// creating says this record is one of them: its history, keys,
	// postings and writer go there, not to statements of its own.
	held     *heldRows
	creating bool
	histFrom int // the rows hist held before this record
	// histWritten counts the history rows written by statements of
	// their own rather than through hist (bulkBySet).
	histWritten int
	// ownProject is the project the record is about, if it is one's.
	ownProject string
	hist       *rowBuffer
	// due are the mirrors the record owes: the item that authored the
	// edges by the other item the mirror is due on (mirrordue.go).
	due      map[string]string
	tags     *rowBuffer
	watchers *rowBuffer
	edges    *rowBuffer
}

// finish writes what the record changed: every touched item's row (version
// on the record's own item, scoped_through on every other), the buffered
// child rows as multi-row inserts, the search postings and the projects'
// active counts.
func (a *apply) finish() error {
	rows := 0
	var w itemWriter
	defer w.close()
	for _, id := range a.order {
		it := a.items[id]
		if !it.touched {
			continue
		}
		if id == a.own {
			it.Version = a.seq
		} else {
			it.Scoped = a.seq
		}
		if err := a.writeItem(&w, it); err != nil {
			return err
		}
		rows++
		n, err := a.writeFields(it)
		if err != nil {
			return err
		}
		rows += n
		if it.reindex {
			if err := a.reindex(it, false); err != nil {
				return err
			}
			rows++
		}
	}
	if err := w.light.flush(a.ctx, a.tx, a.at.Exec); err != nil {
		return err
	}
	buffers := []*rowBuffer{a.tags, a.watchers, a.edges, a.hist}
	if a.creating {
		buffers, rows = buffers[:3], rows+a.hist.rows()-a.histFrom
	}
	for _, b := range buffers {
		n, err := b.flush(a.ctx, a.tx, a.at.Exec)
		if err != nil {
			return err
		}
		rows += n
	}
	keys := make([]string, 0, len(a.projects))
	for p := range a.projects {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		if err := a.recount(p); err != nil {
			return err
		}
	}
	a.at.Wrote(rows)
	return nil
}

// reindex replaces an item's search posting: title, description and its
// comments, in the apply's own transaction. comments is whether the
// item's comments changed.
func (a *apply) reindex(it *itemRow, comments bool) error {
	if it.created && a.creating {
		// A new item has no comments yet.
		a.held.search.add(it.Doc, it.Title, it.Description, "")
		return nil
	}
	if !it.created && !comments && postingInPlace {
		// Only the title or the description changed: the posting's
		// comments are still its comments (every change of a comment
		// reindexes saying so, and a purge deletes the posting with
		// them), so the posting is rewritten in place, a third less
		// work for FTS5 than a delete and an insert
		// (BenchmarkPostingRewrite), and the same rows
		// (TestPostingInPlaceWritesTheSameRows). An item with no posting
		// (none is known; a held one is flushed before any record that
		// is not a create) gets one written whole below.
		res, err := a.at.Exec(a.ctx, a.tx, `UPDATE tracker_search SET title = ?, description = ? WHERE rowid = ?`, it.Title, it.Description, it.Doc)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
	} else if !it.created {
		if _, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM tracker_search WHERE rowid = ?`, it.Doc); err != nil {
			return err
		}
	}
	_, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_search(rowid, title, description, comments)
		VALUES(?, ?, ?, (SELECT coalesce(group_concat(body, ' '), '') FROM (SELECT body FROM tracker_comments WHERE item = ? ORDER BY seq)))`,
		it.Doc, it.Title, it.Description, it.ID)
	return err
}

// postingInPlace is whether a title or description edit rewrites the
// search posting in place; a test turns it off to hold the two ways'
// rows equal.
var postingInPlace = true

// recount sets a project's active count (its items in progress and not in
// the trash). The project's row changes without the record being about it
// unless the record is the project's own.
func (a *apply) recount(project string) error {
	var active, cur int64
	// The in-progress items less the trashed ones among them: both counts
	// are read from indexes (tracker_items_status covers the first,
	// tracker_items_trashed holds only trashed items), never the rows.
	if err := a.at.QueryRow(a.ctx, a.tx, `SELECT (SELECT count(*) FROM tracker_items WHERE project = ?1 AND status = 'in_progress')
		- (SELECT count(*) FROM tracker_items WHERE project = ?1 AND status = 'in_progress' AND trashed != 0)`, project).Scan(&active); err != nil {
		return err
	}
	err := a.at.QueryRow(a.ctx, a.tx, `SELECT active FROM tracker_projects WHERE key = ?`, project).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && cur == active) {
		return nil
	}
	if err != nil {
		return err
	}
	col := "scoped_through"
	if project == a.ownProject {
		col = "version"
	}
	_, err = a.at.Exec(a.ctx, a.tx, `UPDATE tracker_projects SET active = ?, `+col+` = max(`+col+`, ?) WHERE key = ?`, active, a.seq, project)
	return err
}
