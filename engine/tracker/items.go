package tracker

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// Limits on the sets an item carries.
const (
	MaxTags         = 50
	MaxTagBytes     = 64
	MaxEdges        = 50
	MaxCommentBytes = 16 << 10
	MaxReadComments = 50
	MaxMergeItems   = 50
	MaxGestureSteps = 1000
	MaxBulkItems    = 20000
)

// CreateWorkItem files a work item in a project under its next number,
// with its tags, parent and dependencies; each dependency's mirror (blocks
// on the other item) is a step of its own after the item is filed. The
// item's id derives from the operation, so a retried create answers the
// item the first copy filed.
func (s *Service) CreateWorkItem(ctx context.Context, w engine.WriteOptions, in NewWorkItem) (ItemWrite, error) {
	if err := checkNewWorkItem(&in); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "create_work_item", in.Project)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	id := itemID(op.ID)
	var deps []string // ids
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		return s.decideCreate(ctx, tx, in, id, &deps)
	})
	var out ItemWrite
	if err == nil && wr.Unvouched {
		out, err = s.createFromRow(ctx, wr, id)
	} else {
		out, err = s.itemAnswer(ctx, wr, err, id)
	}
	if err != nil || out.Outcome != engine.Applied || len(in.DependsOn) == 0 {
		return out, err
	}
	if deps == nil {
		// Answered from the ledger: the edges the first copy filed.
		if deps, err = s.authoredEdgeTargets(ctx, id, EdgeDependsOn); err != nil {
			return out, err
		}
	}
	adds := make([]trackrec.EdgeRef, len(deps))
	for i, d := range deps {
		adds[i] = trackrec.EdgeRef{Kind: EdgeDependsOn, Other: d}
	}
	return s.mirrors(ctx, op, id, out, adds, nil)
}

// checkNewWorkItem refuses a create whose fields are malformed before it
// takes an operation id, and fills the default status.
func checkNewWorkItem(in *NewWorkItem) error {
	if !projectKeyRE.MatchString(in.Project) {
		return invalid("project %q is not a project key (2-10 upper-case letters and digits, e.g. ENG); list_projects shows them.", in.Project)
	}
	if err := checkText("title", in.Title, MaxTitleBytes, true); err != nil {
		return err
	}
	if err := checkText("description", in.Description, MaxDescriptionBytes, false); err != nil {
		return err
	}
	if err := checkText("assignee", in.Assignee, MaxAssigneeBytes, false); err != nil {
		return err
	}
	if in.Status == "" {
		in.Status = StatusOpen
	}
	if err := checkStatus(in.Status); err != nil {
		return err
	}
	if err := checkTags(in.Tags); err != nil {
		return err
	}
	if err := checkFields(in); err != nil {
		return err
	}
	if in.Parent != "" {
		if err := checkItemKey(in.Parent); err != nil {
			return err
		}
	}
	if len(in.DependsOn) > MaxEdges {
		return invalid("depends_on names %d items; at most %d are accepted.", len(in.DependsOn), MaxEdges)
	}
	for _, k := range in.DependsOn {
		if err := checkItemKey(k); err != nil {
			return err
		}
	}
	return nil
}

// decideCreate builds the create record against the local rows: the
// project must exist, the parent and dependencies resolve to ids (each
// joins the record's scope). deps gets the dependencies' ids, reset on
// every attempt, for the mirror steps after the item is filed.
func (s *Service) decideCreate(ctx context.Context, tx *sql.Tx, in NewWorkItem, id string, deps *[]string) (*statelog.Proposal, error) {
	lastNumber, err := createTarget(ctx, s.replica.Prepared(tx), in.Project)
	if err != nil {
		return nil, err
	}
	c := trackrec.CreateWorkItem{ID: id, Project: in.Project, Number: lastNumber + 1, Title: in.Title, Description: in.Description,
		Status: in.Status, Assignee: in.Assignee, Tags: trackrec.Distinct(in.Tags)}
	scope := []string{trackrec.ProjectScope(in.Project), trackrec.ItemScope(id)}
	if in.Parent != "" {
		pid, err := s.resolve(ctx, tx, in.Parent)
		if err != nil {
			return nil, err
		}
		c.Parent = pid
		scope = append(scope, trackrec.ItemScope(pid))
	}
	*deps = (*deps)[:0]
	for _, k := range trackrec.Distinct(in.DependsOn) {
		did, err := s.resolve(ctx, tx, k)
		if err != nil {
			return nil, err
		}
		*deps = append(*deps, did)
		c.Edges = append(c.Edges, trackrec.EdgeRef{Kind: EdgeDependsOn, Other: did})
		scope = append(scope, trackrec.ItemScope(did))
	}
	version := createFields(&c, in)
	// The record is about the new item, whose id derives from the
	// operation: its subject is new, so no other create arbitrates
	// against it, and the number is taken at apply time, in log order.
	return &statelog.Proposal{Kind: trackrec.KindCreateWorkItem, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: c, Version: version}, nil
}

// createTarget reads what a create needs of its project, in one
// statement (a create's decision is a read transaction of a few point
// reads, each a tenth of it): the last number given, and a refusal where
// the project does not exist or is archived (checkOpenProject's).
func createTarget(ctx context.Context, q rowQuerier, key string) (lastNumber int64, err error) {
	var archived bool
	err = q.QueryRowContext(ctx, `SELECT p.last_number, coalesce(s.archived, 0) FROM tracker_projects p
		LEFT JOIN tracker_project_state s ON s.key = p.key WHERE p.key = ?`, key).Scan(&lastNumber, &archived)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, engine.Refuse(engine.CodeNotFound, "project %s does not exist; list_projects shows the projects, or create_project files it.", key)
	case err != nil:
		return 0, err
	case archived:
		return 0, archivedProject(key)
	}
	return lastNumber, nil
}

func (s *Service) authoredEdgeTargets(ctx context.Context, id, kind string) ([]string, error) {
	var out []string
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = sqlite.Strings(ctx, tx, `SELECT other FROM tracker_edges WHERE item = ? AND kind = ? AND authored = 1 ORDER BY other`, id, kind)
		return err
	})
	return out, err
}

func checkTags(tags []string) error {
	if len(tags) > MaxTags {
		return invalid("%d tags given; at most %d are accepted.", len(tags), MaxTags)
	}
	for _, t := range tags {
		if strings.TrimSpace(t) == "" || len(t) > MaxTagBytes {
			return invalid("tag %q must be 1 to %d bytes of text.", t, MaxTagBytes)
		}
	}
	return nil
}

// createFromRow answers a create the ledger can no longer vouch for from
// its item's own row (the id derives from the op): the item the first copy
// filed, at the position of its create record (its doc), where this node
// holds it; the framework's unknown where it does not.
func (s *Service) createFromRow(ctx context.Context, wr statelog.Written, id string) (ItemWrite, error) {
	var it WorkItem
	var created uint64
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		it, err = s.loadItem(ctx, tx, id)
		if err == nil {
			err = tx.QueryRowContext(ctx, `SELECT doc FROM tracker_items WHERE id = ?`, id).Scan(&created)
		}
		return err
	})
	out := ItemWrite{WriteResult: wr.WriteResult}
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Outcome, out.Message, out.Item = engine.Applied, "", &it
	out.Position = s.replica.Position(created).Token()
	return out, nil
}

// itemID derives a work item's id from the operation that creates it.
func itemID(op ledger.OpID) string { return "wi_" + strings.ReplaceAll(op.UUID.String(), "-", "") }

// itemAnswer renders a write's answer with the item as this node's rows
// hold it: on a replayed answer that is the first copy's item, never what
// this attempt decided.
func (s *Service) itemAnswer(ctx context.Context, wr statelog.Written, err error, id string) (ItemWrite, error) {
	out := ItemWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied || id == "" {
		return out, err
	}
	if it, ok := appliedItem(wr.Answer, id); ok {
		out.Item = &it
		return out, nil
	}
	it, rerr := s.readItemByID(ctx, id)
	if rerr == nil {
		out.Item = &it
	} else if !errors.Is(rerr, sql.ErrNoRows) {
		return out, rerr
	}
	return out, nil
}

func (s *Service) readItemByID(ctx context.Context, id string) (WorkItem, error) {
	var it WorkItem
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		it, err = s.loadItem(ctx, tx, id)
		return err
	})
	return it, err
}

const itemColumns = `i.id, i.key, i.project, i.number, i.title, i.description, i.status, i.assignee, max(i.version, i.scoped_through),
	i.created_at, i.updated_at, coalesce(p.key, ''), i.reopens, i.handoffs, i.trashed, i.mark, coalesce(m.key, ''), ` + trackapply.FieldColumns

const itemFrom = ` FROM tracker_items i LEFT JOIN tracker_items p ON p.id = i.parent LEFT JOIN tracker_items m ON m.id = i.merged_into` + trackapply.FieldsJoin

func scanItem(sc interface{ Scan(...any) error }) (WorkItem, error) {
	var it WorkItem
	var created, updated, trashed, priority int64
	err := sc.Scan(&it.ID, &it.Key, &it.Project, &it.Number, &it.Title, &it.Description, &it.Status, &it.Assignee, &it.Version,
		&created, &updated, &it.Parent, &it.Reopens, &it.Handoffs, &trashed, &it.Mark, &it.MergedInto, &priority, &it.Due, &it.Estimate, &it.Type)
	it.Priority = trackrec.PriorityName(priority)
	it.CreatedAt, it.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	it.Trashed = trashed != 0
	it.Tags, it.Watchers, it.Edges = []string{}, []string{}, []Edge{}
	return it, err
}

// The sets of an item row i, each a JSON array: its tags, watchers and
// edges (edgeJSON objects).
const (
	tagsJSON     = `(SELECT json_group_array(tag) FROM (SELECT tag FROM tracker_tags WHERE item = i.id ORDER BY tag))`
	watchersJSON = `(SELECT json_group_array(watcher) FROM (SELECT watcher FROM tracker_watchers WHERE item = i.id ORDER BY watcher))`
	edgesJSON    = `(SELECT json_group_array(json_object('k', kind, 'o', key, 'a', authored)) FROM (SELECT e.kind AS kind, o.key AS key, e.authored AS authored
		FROM tracker_edges e JOIN tracker_items o ON o.id = e.other WHERE e.item = i.id ORDER BY e.kind, o.key))`
)

// itemSets is one column, a JSON object of the item's sets (setsJSON):
// one value to scan and one to decode instead of three. It is joined as
// text: each set is JSON text ([] where empty, never NULL), and a
// json_object would take a subquery's array for a string (the JSON
// subtype does not cross a subquery) or parse it again. Named, since the
// driver copies out every column's name on every query, and an unnamed
// column's is its whole expression.
const itemSets = `'{"t":' || ` + tagsJSON + ` || ',"w":' || ` + watchersJSON + ` || ',"e":' || ` + edgesJSON + ` || '}' AS sets`

// loadItemQuery reads an item with its tags, watchers and edges in one
// prepared statement: a point read is one parse-free step, not four.
const loadItemQuery = `SELECT ` + itemColumns + `, ` + itemSets + itemFrom + ` WHERE i.id = `

// loadItemByIDQuery and loadItemByKeyQuery read an item by its id, or by
// any key it has held.
const (
	loadItemByIDQuery  = loadItemQuery + `?`
	loadItemByKeyQuery = loadItemQuery + `(SELECT id FROM tracker_item_keys WHERE key = ?)`
)

// loadItem reads one item by id with its tags, watchers and edges.
func (s *Service) loadItem(ctx context.Context, tx *sql.Tx, id string) (WorkItem, error) {
	return s.loadItemBy(ctx, tx, loadItemByIDQuery, id)
}

// decisionStateQuery is what an update decides from: the item's version
// as answers give it, its project and its status, by the item's id or,
// with the key resolved in the same statement, by any key it has held
// (resolve's refusals then come from its row). Not loadItemQuery's whole
// item: its joins and its sets are no part of the decision (reading them
// was about a quarter of an update's decide phase at one writer).
const (
	decisionStateQuery      = `SELECT id, NULL, max(version, scoped_through), project, status FROM tracker_items WHERE id = ?`
	decisionStateByKeyQuery = `SELECT k.id, p.seq, max(i.version, i.scoped_through), i.project, i.status FROM tracker_item_keys k
		LEFT JOIN tracker_purged p ON p.id = k.id LEFT JOIN tracker_items i ON i.id = k.id WHERE k.key = ?`
)

// loadDecisionState reads the id, version, project and status of the item
// id, or where id is "" of the item key names, refusing as resolve does
// (decisionStateQuery).
func (s *Service) loadDecisionState(ctx context.Context, tx *sql.Tx, key, id string) (WorkItem, error) {
	q, arg := decisionStateQuery, id
	if id == "" {
		q, arg = decisionStateByKeyQuery, key
	}
	var it WorkItem
	var purged, version sql.NullInt64
	var project, status sql.NullString
	err := s.replica.Prepared(tx).QueryRowContext(ctx, q, arg).Scan(&it.ID, &purged, &version, &project, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return it, notFoundItem(key)
	case err != nil:
		return it, err
	case purged.Valid:
		return it, s.purgedItem(key, purged.Int64)
	case !version.Valid:
		return it, notFoundItem(key) // a key whose item is gone
	}
	it.Version, it.Project, it.Status = uint64(version.Int64), project.String, status.String
	return it, nil
}

// loadItemBy reads one item by query (by id or by key) and arg.
func (s *Service) loadItemBy(ctx context.Context, tx *sql.Tx, query, arg string) (WorkItem, error) {
	return scanLoadedItem(s.replica.Prepared(tx).QueryRowContext(ctx, query, arg))
}

// scanLoadedItem scans one row of loadItemQuery.
func scanLoadedItem(row *sql.Row) (WorkItem, error) {
	var x itemScan
	if err := row.Scan(x.appendDest(make([]any, 0, itemDests))...); err != nil {
		return x.it, err
	}
	it, _, err := x.item()
	return it, err
}

// appliedItem is the item the applier read for a write right after its
// record (statelog.Answerer), where it read item id.
func appliedItem(answer any, id string) (WorkItem, bool) {
	it, ok := answer.(WorkItem)
	return it, ok && id != "" && it.ID == id
}

// itemScan is a row of loadItemQuery's columns as scanned.
type itemScan struct {
	it                                  WorkItem
	created, updated, trashed, priority int64
	sets                                []byte
}

// appendDest appends the scan destinations of loadItemQuery's columns, in
// order, to d.
func (x *itemScan) appendDest(d []any) []any {
	it := &x.it
	return append(d, &it.ID, &it.Key, &it.Project, &it.Number, &it.Title, &it.Description, &it.Status, &it.Assignee, &it.Version,
		&x.created, &x.updated, &it.Parent, &it.Reopens, &it.Handoffs, &x.trashed, &it.Mark, &it.MergedInto, &x.priority, &it.Due, &it.Estimate, &it.Type,
		&x.sets)
}

// itemDests is how many destinations appendDest appends.
const itemDests = 22

// setsJSON is the sets column decoded: itemSets's, and getItemQuery's
// with the newest comments beside them.
type setsJSON struct {
	Tags     []string      `json:"t"`
	Watchers []string      `json:"w"`
	Edges    []edgeJSON    `json:"e"`
	Comments []commentJSON `json:"c"`
}

// edgeJSON is one edge as edgesJSON has it.
type edgeJSON struct {
	Kind     string `json:"k"`
	Key      string `json:"o"`
	Authored int64  `json:"a"`
}

// item is the scanned row as the item it answers, and its decoded sets.
func (x *itemScan) item() (WorkItem, setsJSON, error) {
	it := x.it
	it.Priority = trackrec.PriorityName(x.priority)
	it.CreatedAt, it.UpdatedAt = time.Unix(0, x.created).UTC(), time.Unix(0, x.updated).UTC()
	it.Trashed = x.trashed != 0
	var sets setsJSON
	if !noSets(x.sets) {
		if err := json.Unmarshal(x.sets, &sets); err != nil {
			return it, sets, err
		}
	}
	it.Tags, it.Watchers, it.Edges = orEmpty(sets.Tags), orEmpty(sets.Watchers), make([]Edge, 0, len(sets.Edges))
	for _, e := range sets.Edges {
		it.Edges = append(it.Edges, Edge{Kind: e.Kind, Key: e.Key, Mirror: e.Authored == 0})
	}
	return it, sets, nil
}

// noSets says the sets column holds every set empty, as most items do:
// such a row needs no JSON decoding (about 3% of a stale read). The
// texts are what itemSets and getItemQuery read for an item with no
// sets; TestEmptySetsNeedNoDecoding holds them to the queries, so a
// query that changes its shape fails a test rather than quietly
// decoding again.
func noSets(b []byte) bool {
	return string(b) == `{"t":[],"w":[],"e":[]}` || string(b) == `{"t":[],"w":[],"e":[],"c":[]}`
}

// orEmpty is s, or an empty set where it is none (an answer shows [],
// never null).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// resolve finds an item's id by any key it has held (a moved item keeps
// its old keys resolvable); a purged one is refused deleted.
func (s *Service) resolve(ctx context.Context, tx *sql.Tx, key string) (string, error) {
	var id string
	var purged sql.NullInt64
	err := s.replica.Prepared(tx).QueryRowContext(ctx, `SELECT k.id, p.seq FROM tracker_item_keys k LEFT JOIN tracker_purged p ON p.id = k.id WHERE k.key = ?`, key).Scan(&id, &purged)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFoundItem(key)
	}
	if err != nil {
		return "", err
	}
	if purged.Valid {
		return "", s.purgedItem(key, purged.Int64)
	}
	return id, nil
}

// purgedItem refuses item key, purged at seq.
func (s *Service) purgedItem(key string, seq int64) error {
	p := s.replica.Position(uint64(seq))
	ref := engine.Refuse(engine.CodeDeleted, "work item %s was purged at %s; every record about it applies nowhere, for ever. File a new item instead.", key, p.Token())
	ref.Position = &p
	return ref
}

func checkItemKey(key string) error {
	if !itemKeyRE.MatchString(key) {
		return invalid("key %q is not a work item key like ENG-8 (project key, '-', number).", key)
	}
	return nil
}

func notFoundItem(key string) error {
	return engine.Refuse(engine.CodeNotFound, "work item %s does not exist; list_work_items shows a project's items.", key)
}

// GetWorkItem reads one item by key (a key it held before a move still
// finds it), with its latest comments.
func (s *Service) GetWorkItem(ctx context.Context, r engine.ReadOptions, key string) (ItemRead, error) {
	if err := checkItemKey(key); err != nil {
		return ItemRead{}, err
	}
	var out ItemRead
	// An item held by the key is answered by one statement, item and
	// comments in one snapshot without a transaction; anything else (no
	// item by that key, a record retained undecoded) is read in one.
	one := statelog.RowRead{Query: getItemQuery, Args: []any{key}, Scan: func(row *sql.Row, seen *uint64) error {
		var err error
		out, err = scanItemRead(row, seen)
		return err
	}}
	info, err := s.replica.ReadObjectRow(ctx, linearizable(r), one, func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		out = ItemRead{Comments: []Comment{}}
		return s.getWorkItemTx(ctx, tx, key, &out)
	})
	out.ReadInfo = info
	return out, err
}

// getWorkItemTx reads get_work_item's answer inside tx, returning the
// scope it is about: the item, or, where there is none by that key, its
// project's numbering — a retained record covering either refuses
// deferred rather than answering without it.
func (s *Service) getWorkItemTx(ctx context.Context, tx *sql.Tx, key string, out *ItemRead) ([]string, error) {
	// The item is read by its key in one statement; only a key with no
	// item row (none by that key, or purged: a purge deletes the row in
	// the transaction that records it) is resolved apart, for the refusal
	// that says which.
	var err error
	out.Item, err = s.loadItemBy(ctx, tx, loadItemByKeyQuery, key)
	if errors.Is(err, sql.ErrNoRows) {
		var id string
		if id, err = s.resolve(ctx, tx, key); err != nil {
			return []string{trackrec.ProjectScope(key[:strings.LastIndexByte(key, '-')])}, err
		}
		if out.Item, err = s.loadItem(ctx, tx, id); err != nil {
			return []string{trackrec.ItemScope(id)}, err
		}
	}
	if err != nil {
		return nil, err
	}
	id := out.Item.ID
	out.Comments, err = s.readComments(ctx, tx, MaxReadComments, `c.item = ?`, id)
	return []string{trackrec.ItemScope(id), trackrec.InProject(out.Item.Project)}, err
}
