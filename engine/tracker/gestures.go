package tracker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// walk is a tracker gesture: the framework's walk (statelog.Walk), its
// steps named by the task they write, answered as an ItemWrite.
type walk struct {
	s  *Service
	wk *statelog.Walk
	// oneSided are the items whose mirror nobody can vouch for.
	oneSided []string
	// single says the walk was one record: its answer reports no steps.
	single bool
	// created are the items a bulk create's steps filed, in order.
	created []string
}

// pendingStepWait bounds how long a gesture waits for a pending step's
// rows before it stops its walk.
const pendingStepWait = 5 * time.Second

func (s *Service) newWalk(op statelog.Op) *walk {
	wk := statelog.NewWalk(op)
	wk.PendingWait, wk.MaxSteps = pendingStepWait, MaxGestureSteps
	return &walk{s: s, wk: wk}
}

// step writes one step; ok is false when the walk must end (the step is
// unknown, pending past the wait, or refused: err then says why).
func (w *walk) step(ctx context.Context, verb, id, task string, decide statelog.Decide) (bool, error) {
	return w.wk.Step(ctx, w.s.replica, verb, id, task, func(ctx context.Context, op statelog.Op) (statelog.Written, error) {
		return w.s.replica.Write(ctx, op, decide)
	})
}

// record writes one record under op, the gesture's own id for its first
// step where that step is the whole write.
func (w *walk) record(ctx context.Context, op statelog.Op, verb, task string, decide statelog.Decide) (bool, error) {
	return w.wk.Record(ctx, w.s.replica, op, verb, "", task, func(ctx context.Context, op statelog.Op) (statelog.Written, error) {
		return w.s.replica.Write(ctx, op, decide)
	})
}

// answer is the walk as an ItemWrite: its steps, its outcome and, where a
// step ended it, what to do.
func (w *walk) answer() ItemWrite {
	wk := w.wk
	out := ItemWrite{WriteResult: engine.WriteResult{OpID: wk.Op.ID.String(), Outcome: wk.Outcome, Position: wk.Position}, Steps: []Step{}, OneSided: w.oneSided}
	for _, st := range wk.Steps {
		out.Steps = append(out.Steps, Step{Action: st.Verb, Task: st.Label, OpID: st.OpID, Outcome: st.Outcome, Position: st.Position})
	}
	if w.single {
		out.Steps = nil
	}
	if stop := wk.Stop; stop != nil {
		switch stop.Outcome {
		case engine.Unknown:
			out.Message = fmt.Sprintf("Step %s of %s (op %s) is unknown, so the walk stopped there and nothing after it was written. Call again with op_id %s and the same arguments: the steps that landed are answered, the rest are finished.",
				stop.Verb, stop.Label, stop.OpID, wk.Op.ID)
		case engine.Pending:
			out.Message = fmt.Sprintf("Step %s of %s (op %s) is durable at %s but this node has not applied it yet, so the walk stopped before the steps that depend on it. Do not retry at once: once this node has caught up, call again with op_id %s and the same arguments to finish the rest; what landed is answered, not repeated.",
				stop.Verb, stop.Label, stop.OpID, stop.Position, wk.Op.ID)
		}
	}
	return out
}

// finish renders the gesture's answer with the item it is about.
func (w *walk) finish(ctx context.Context, id string, err error) (ItemWrite, error) {
	out := w.answer()
	if err != nil {
		return out, err
	}
	if out.Outcome == engine.Applied && id != "" {
		if steps := w.wk.Steps; len(steps) == 1 {
			// One record: what the applier read right after it is the answer.
			if it, ok := appliedItem(steps[0].Answer, id); ok {
				out.Item = &it
				return out, nil
			}
		}
		if it, rerr := w.s.readItemByID(ctx, id); rerr == nil {
			out.Item = &it
		} else if !errors.Is(rerr, sql.ErrNoRows) {
			return out, rerr
		}
	}
	return out, nil
}

// lookup resolves a key at consistent_prefix after this node's own last
// write (a gesture reads its own steps), returning the item's id. A key
// this copy does not know is looked for again once it has caught up with
// the log's end: not_found is never answered from a copy that is behind.
func (s *Service) lookup(ctx context.Context, key string) (string, error) {
	var id string
	err := s.replica.Settle(ctx, func(ctx context.Context) error {
		_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			id, err = s.resolve(ctx, tx, key)
			return err
		})
		return err
	})
	return id, err
}

func (s *Service) queryIDs(ctx context.Context, q string, args ...any) ([]string, error) {
	var out []string
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = sqlite.Strings(ctx, tx, q, args...)
		return err
	})
	return out, err
}

func (s *Service) keyOf(ctx context.Context, id string) string {
	ids, err := s.queryIDs(ctx, `SELECT key FROM tracker_items WHERE id = ?`, id)
	if err != nil || len(ids) == 0 {
		return id
	}
	return ids[0]
}

// UpdateWorkItem changes an item's fields, tags, watchers, parent and
// authored edges in one record about the item; with ifMatch set it applies
// only while the item's max(version, scoped_through) is that one, else it
// refuses stale naming the current version. Each edge's mirror on the
// other item is a step of its own after it.
func (s *Service) UpdateWorkItem(ctx context.Context, w engine.WriteOptions, key string, ifMatch uint64, p ItemPatch) (ItemWrite, error) {
	if err := checkItemKey(key); err != nil {
		return ItemWrite{}, err
	}
	if err := checkPatch(p); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "update", key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	// The other ends are named before anything is written, so the mirror
	// steps of a re-run are the same as the first run's. A patch naming
	// no other item has its key resolved inside the decision's own
	// snapshot instead, a read transaction fewer (each starts cold under
	// writes); a key unknown there is looked for again at the log's end
	// all the same, as the decision's refusals are.
	id, inDecision := "", !namesOtherItems(p)
	if !inDecision {
		if id, err = s.lookup(ctx, key); err != nil {
			return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
		}
	}
	rp, err := s.resolvePatch(ctx, key, id, p)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	adds, removes := rp.adds, rp.removes
	wk := s.newWalk(op)
	ok, err := wk.record(ctx, op, "update", key, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		// In the decision, the key is resolved again on every try (a
		// purge between two tries refuses deleted, not not_found).
		byID := id
		if inDecision {
			byID = ""
		}
		it, err := s.loadDecisionState(ctx, tx, key, byID)
		if err != nil {
			return nil, err
		}
		id = it.ID
		return s.decideUpdate(ctx, tx, key, it, ifMatch, p, rp)
	})
	if !ok || len(adds)+len(removes) == 0 {
		if len(wk.wk.Steps) == 1 && err == nil && wk.wk.Outcome == engine.Applied {
			wk.single = true // a single record: no walk to report
		}
		if err != nil {
			// A refusal of the update itself answers as before: no steps.
			return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
		}
		if !ok {
			// The authored edges nobody can vouch for get no mirror.
			return wk.answer(), nil
		}
		if id == "" {
			// Answered from the ledger without a decision: the item's id
			// for the answer's item (none where the key is gone).
			id, _ = s.lookup(ctx, key)
		}
		return wk.finish(ctx, id, nil)
	}
	return s.mirrorsOn(ctx, wk, id, adds, removes)
}

// namesOtherItems says whether a patch names items other than its own:
// edges or a parent.
func namesOtherItems(p ItemPatch) bool {
	return len(p.AddEdges)+len(p.RemoveEdges) > 0 || p.Parent != nil
}

// resolvedPatch is a patch's other ends by id: the edges to add and to
// take down, and the new parent ("" to the top; nil when unchanged).
type resolvedPatch struct {
	adds, removes []trackrec.EdgeRef
	parent        *string
}

// resolvePatch looks up every item a patch of item id names, each at the
// log's end (lookup): an edge to the item itself is refused.
func (s *Service) resolvePatch(ctx context.Context, key, id string, p ItemPatch) (resolvedPatch, error) {
	resolveEdges := func(es []Edge) ([]trackrec.EdgeRef, error) {
		out := make([]trackrec.EdgeRef, 0, len(es))
		for _, e := range es {
			oid, err := s.lookup(ctx, e.Key)
			if err != nil {
				return nil, err
			}
			if oid == id {
				return nil, invalid("%s cannot have an edge to itself.", key)
			}
			out = append(out, trackrec.EdgeRef{Kind: e.Kind, Other: oid})
		}
		return out, nil
	}
	var rp resolvedPatch
	var err error
	if rp.adds, err = resolveEdges(p.AddEdges); err != nil {
		return rp, err
	}
	if rp.removes, err = resolveEdges(p.RemoveEdges); err != nil {
		return rp, err
	}
	if p.Parent != nil {
		pid := ""
		if *p.Parent != "" {
			if pid, err = s.lookup(ctx, *p.Parent); err != nil {
				return rp, err
			}
		}
		rp.parent = &pid
	}
	return rp, nil
}

// decideUpdate builds the update record against the item's local row:
// refused stale where ifMatch names another version, refused where the new
// parent would make a cycle; every item the patch names joins the scope.
func (s *Service) decideUpdate(ctx context.Context, tx *sql.Tx, key string, it WorkItem, ifMatch uint64, p ItemPatch, rp resolvedPatch) (*statelog.Proposal, error) {
	id := it.ID
	if ifMatch != 0 && it.Version != ifMatch {
		ref := engine.Refuse(engine.CodeStale, "%s is at version %d, not the if_match %d you named; read it again and decide against version %d.", key, it.Version, ifMatch, it.Version)
		return nil, ref.With("current_version", it.Version)
	}
	scope := []string{trackrec.ItemScope(id), trackrec.InProject(it.Project)}
	parent := rp.parent
	if parent != nil && *parent != "" {
		if err := checkNoCycle(ctx, tx, id, *parent); err != nil {
			return nil, err
		}
		scope = append(scope, trackrec.ItemScope(*parent))
	}
	for _, e := range append(slices.Clone(rp.adds), rp.removes...) {
		scope = append(scope, trackrec.ItemScope(e.Other))
	}
	status, err := decideTransition(key, it.Status, p)
	if err != nil {
		return nil, err
	}
	if err := checkNoDependencyCycle(ctx, tx, id, rp.adds); err != nil {
		return nil, err
	}
	u := trackrec.UpdateWorkItem{ID: id, Title: p.Title, Description: p.Description, Status: status, Assignee: p.Assignee,
		Parent: parent, AddTags: trackrec.Distinct(p.AddTags), RemoveTags: trackrec.Distinct(p.RemoveTags), AddWatchers: trackrec.Distinct(p.AddWatchers),
		RemoveWatchers: trackrec.Distinct(p.RemoveWatchers), AddEdges: rp.adds, RemoveEdges: rp.removes,
		Priority: p.Priority, Due: p.Due, Estimate: p.Estimate, Type: p.Type}
	version := 0
	if patchHasFields(p) {
		version = trackrec.FieldsFormat
	}
	return &statelog.Proposal{Kind: trackrec.KindUpdateWorkItem, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: u, Version: version}, nil
}

func checkPatch(p ItemPatch) error {
	if p.Title == nil && p.Description == nil && p.Status == nil && p.Assignee == nil && p.Parent == nil && !patchHasFields(p) && p.Transition == "" &&
		len(p.AddTags)+len(p.RemoveTags)+len(p.AddWatchers)+len(p.RemoveWatchers)+len(p.AddEdges)+len(p.RemoveEdges) == 0 {
		return invalid("nothing to update: give at least one of title, description, status, transition, assignee, priority, due, estimate, type, parent, tags, watchers, relations, dependencies.")
	}
	if err := checkPatchFields(p); err != nil {
		return err
	}
	if err := checkTransition(p); err != nil {
		return err
	}
	if p.Title != nil {
		if err := checkText("title", *p.Title, MaxTitleBytes, true); err != nil {
			return err
		}
	}
	if p.Description != nil {
		if err := checkText("description", *p.Description, MaxDescriptionBytes, false); err != nil {
			return err
		}
	}
	if p.Assignee != nil {
		if err := checkText("assignee", *p.Assignee, MaxAssigneeBytes, false); err != nil {
			return err
		}
	}
	if p.Status != nil {
		if err := checkStatus(*p.Status); err != nil {
			return err
		}
	}
	if p.Parent != nil && *p.Parent != "" {
		if err := checkItemKey(*p.Parent); err != nil {
			return err
		}
	}
	for _, set := range [][]string{p.AddTags, p.RemoveTags, p.AddWatchers, p.RemoveWatchers} {
		if err := checkTags(set); err != nil {
			return err
		}
	}
	if len(p.AddEdges)+len(p.RemoveEdges) > MaxEdges {
		return invalid("%d edges given; at most %d are accepted in one update.", len(p.AddEdges)+len(p.RemoveEdges), MaxEdges)
	}
	for _, e := range append(slices.Clone(p.AddEdges), p.RemoveEdges...) {
		if !slices.Contains(AuthoredEdges, e.Kind) {
			return invalid("edge kind %q is not one of %s.", e.Kind, strings.Join(AuthoredEdges, ", "))
		}
		if err := checkItemKey(e.Key); err != nil {
			return err
		}
	}
	return nil
}

// checkNoCycle refuses a parent that is the item itself or one of its
// descendants.
func checkNoCycle(ctx context.Context, tx *sql.Tx, id, parent string) error {
	for cur, n := parent, 0; cur != "" && n < 10000; n++ {
		if cur == id {
			return invalid("that parent would make the item its own ancestor; choose a parent outside its subtree.")
		}
		if err := tx.QueryRowContext(ctx, `SELECT parent FROM tracker_items WHERE id = ?`, cur).Scan(&cur); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		}
	}
	return nil
}

// mirrors finishes a create's dependencies: each mirror as a step.
func (s *Service) mirrors(ctx context.Context, op statelog.Op, id string, first ItemWrite, adds, removes []trackrec.EdgeRef) (ItemWrite, error) {
	wk := s.newWalk(op)
	// The create itself was written under the gesture's own id before
	// the walk: it is the walk's first step.
	wk.wk.Steps = []statelog.WalkStep{{Verb: "create", Object: id, Label: s.keyOf(ctx, id), OpID: op.ID.String(), Outcome: first.Outcome, Position: first.Position}}
	wk.wk.Position = first.Position
	return s.mirrorsOn(ctx, wk, id, adds, removes)
}

// mirrorsOn writes the mirror of each authored edge on the other item, one
// step per other item. A mirror step answered unknown leaves that edge
// one-sided, and the answer names it.
func (s *Service) mirrorsOn(ctx context.Context, wk *walk, id string, adds, removes []trackrec.EdgeRef) (ItemWrite, error) {
	per := map[string]*trackrec.MirrorEdges{}
	var others []string
	for _, list := range []struct {
		es  []trackrec.EdgeRef
		add bool
	}{{adds, true}, {removes, false}} {
		for _, e := range list.es {
			m := per[e.Other]
			if m == nil {
				m = &trackrec.MirrorEdges{ID: e.Other}
				per[e.Other] = m
				others = append(others, e.Other)
			}
			me := trackrec.EdgeRef{Kind: trackrec.MirrorOf(e.Kind), Other: id}
			if list.add {
				m.Add = append(m.Add, me)
			} else {
				m.Remove = append(m.Remove, me)
			}
		}
	}
	sort.Strings(others)
	for i, o := range others {
		m := per[o]
		okey := s.keyOf(ctx, o)
		ok, err := wk.step(ctx, MirrorStepVerb, o, okey, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
			scope, err := itemScope(ctx, tx, o, id)
			if err != nil {
				return nil, err
			}
			return &statelog.Proposal{Kind: trackrec.KindMirrorEdges, Subject: trackrec.ItemSubject(o), Scope: scope, Payload: m}, nil
		})
		if err != nil {
			return wk.answer(), err
		}
		if !ok {
			for _, rest := range others[i:] {
				wk.oneSided = append(wk.oneSided, s.keyOf(ctx, rest))
			}
			return wk.answer(), nil
		}
	}
	return wk.finish(ctx, id, nil)
}

// CommentOnWorkItem adds a comment to an item.
func (s *Service) CommentOnWorkItem(ctx context.Context, w engine.WriteOptions, key, author, body string) (ItemWrite, error) {
	if err := checkItemKey(key); err != nil {
		return ItemWrite{}, err
	}
	if err := checkText("body", body, MaxCommentBytes, true); err != nil {
		return ItemWrite{}, err
	}
	if author == "" {
		author = "operator"
	}
	if err := checkText("author", author, MaxAssigneeBytes, true); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "comment", key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	var id string
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		var err error
		if id, err = s.resolve(ctx, tx, key); err != nil {
			return nil, err
		}
		scope, err := itemScope(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		return &statelog.Proposal{Kind: trackrec.KindComment, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: trackrec.Comment{ID: id, Author: author, Body: body}}, nil
	})
	if id == "" && err == nil {
		id, _ = s.lookup(ctx, key)
	}
	return s.itemAnswer(ctx, wr, err, id)
}

// markStep writes a gesture's mark on id (value "" takes it down); the
// mark that opens a gesture carries the caller's if_match.
func (s *Service) markStep(ctx context.Context, wk *walk, verb, id, key, value string, ifMatch uint64) (bool, error) {
	return wk.step(ctx, verb, id, key, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		if err := s.checkVersion(ctx, tx, id, key, ifMatch); err != nil {
			return nil, err
		}
		scope, err := itemScope(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		return &statelog.Proposal{Kind: trackrec.KindMark, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: trackrec.Mark{ID: id, Mark: value}}, nil
	})
}

// checkVersion refuses stale when ifMatch is set and the item is no longer
// at that version (max(version, scoped_through), what reads answer). It
// runs in the first record of a gesture only: a re-run answers that
// record from the ledger, so the version its own first run moved is never
// held against it.
func (s *Service) checkVersion(ctx context.Context, tx *sql.Tx, id, key string, ifMatch uint64) error {
	if ifMatch == 0 {
		return nil
	}
	var v uint64
	err := s.replica.Prepared(tx).QueryRowContext(ctx, `SELECT max(version, scoped_through) FROM tracker_items WHERE id = ?`, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return notFoundItem(key)
	}
	if err != nil {
		return err
	}
	if v != ifMatch {
		ref := engine.Refuse(engine.CodeStale, "%s is at version %d, not the if_match %d you named; read it again and decide against version %d.", key, v, ifMatch, v)
		return ref.With("current_version", v)
	}
	return nil
}

// MoveWorkItem moves an item and its subtree into another project: a
// mid-move mark on the root, then one step per item, root first and each
// item's children only after it, then the mark taken down. Each moved item
// takes the target project's next number; the keys it held before stay
// resolvable (get_work_item on an old key finds it), and the numbers it
// held are never given out again.
func (s *Service) MoveWorkItem(ctx context.Context, w engine.WriteOptions, key, to string) (ItemWrite, error) {
	if err := checkItemKey(key); err != nil {
		return ItemWrite{}, err
	}
	if !projectKeyRE.MatchString(to) {
		return ItemWrite{}, invalid("project %q is not a project key (e.g. ENG); list_projects shows them.", to)
	}
	op, err := s.opFor(ctx, w, "move", key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	root, err := s.lookup(ctx, key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	if err := s.replica.Settle(ctx, func(ctx context.Context) error {
		_, err := s.readProject(ctx, to)
		if errors.Is(err, sql.ErrNoRows) {
			return engine.Refuse(engine.CodeNotFound, "project %s does not exist; list_projects shows the projects.", to)
		}
		if err != nil {
			return err
		}
		_, err = s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
			return checkOpenProject(ctx, tx, to)
		})
		return err
	}); err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	wk := s.newWalk(op)
	if ok, err := s.markStep(ctx, wk, "mark", root, key, "moving:"+to, w.IfMatch); !ok {
		return wk.finish(ctx, root, err)
	}
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		ok, err := wk.step(ctx, "move", id, s.keyOf(ctx, id), func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
			scope, err := itemScope(ctx, tx, id)
			if err != nil {
				return nil, err
			}
			return &statelog.Proposal{Kind: trackrec.KindMove, Subject: trackrec.ItemSubject(id), Scope: append(scope, trackrec.ProjectScope(to)), Payload: trackrec.Move{ID: id, To: to}}, nil
		})
		if !ok {
			// No descendant follows an item whose own move is unknown.
			return wk.finish(ctx, root, err)
		}
		kids, err := s.queryIDs(ctx, `SELECT id FROM tracker_items WHERE parent = ? AND trashed = 0 ORDER BY doc`, id)
		if err != nil {
			return wk.answer(), err
		}
		queue = append(queue, kids...)
	}
	ok, err := s.markStep(ctx, wk, "unmark", root, s.keyOf(ctx, root), "", 0)
	if !ok {
		return wk.finish(ctx, root, err)
	}
	return wk.finish(ctx, root, nil)
}

// MergeWorkItems merges duplicates into one item: a mid-merge mark on the
// item kept, one step per duplicate (closed as cancelled, a duplicates
// edge to the item kept, its watchers carried over), then the mark taken
// down.
func (s *Service) MergeWorkItems(ctx context.Context, w engine.WriteOptions, into string, duplicates []string) (ItemWrite, error) {
	if err := checkItemKey(into); err != nil {
		return ItemWrite{}, err
	}
	duplicates = trackrec.Distinct(duplicates)
	if len(duplicates) == 0 || len(duplicates) > MaxMergeItems {
		return ItemWrite{}, invalid("give 1 to %d duplicates to merge into %s.", MaxMergeItems, into)
	}
	for _, d := range duplicates {
		if err := checkItemKey(d); err != nil {
			return ItemWrite{}, err
		}
	}
	op, err := s.opFor(ctx, w, "merge", into)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	target, err := s.lookup(ctx, into)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	dups := make([]string, len(duplicates))
	for i, d := range duplicates {
		if dups[i], err = s.lookup(ctx, d); err != nil {
			return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
		}
		if dups[i] == target {
			return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, invalid("%s cannot be merged into itself.", d)
		}
	}
	wk := s.newWalk(op)
	if ok, err := s.markStep(ctx, wk, "mark", target, into, "merging", w.IfMatch); !ok {
		return wk.finish(ctx, target, err)
	}
	for i, d := range dups {
		ok, err := wk.step(ctx, "merge", d, duplicates[i], func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
			scope, err := itemScope(ctx, tx, d, target)
			if err != nil {
				return nil, err
			}
			return &statelog.Proposal{Kind: trackrec.KindMergeDuplicate, Subject: trackrec.ItemSubject(d), Scope: scope,
				Payload: trackrec.MergeDuplicate{ID: d, Into: target}}, nil
		})
		if !ok {
			return wk.finish(ctx, target, err)
		}
	}
	ok, err := s.markStep(ctx, wk, "unmark", target, into, "", 0)
	if !ok {
		return wk.finish(ctx, target, err)
	}
	return wk.finish(ctx, target, nil)
}

// TrashWorkItem puts an item and its subtree in the trash, root first.
func (s *Service) TrashWorkItem(ctx context.Context, w engine.WriteOptions, key string) (ItemWrite, error) {
	if err := checkItemKey(key); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "trash", key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	root, err := s.lookup(ctx, key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	wk := s.newWalk(op)
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		ifMatch := uint64(0)
		if id == root {
			ifMatch = w.IfMatch
		}
		ok, err := wk.step(ctx, "trash", id, s.keyOf(ctx, id), func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
			if err := s.checkVersion(ctx, tx, id, key, ifMatch); err != nil {
				return nil, err
			}
			scope, err := itemScope(ctx, tx, id)
			if err != nil {
				return nil, err
			}
			return &statelog.Proposal{Kind: trackrec.KindTrash, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: trackrec.Trash{ID: id, Root: root}}, nil
		})
		if !ok {
			return wk.finish(ctx, root, err)
		}
		kids, err := s.queryIDs(ctx, `SELECT id FROM tracker_items WHERE parent = ? AND (trashed = 0 OR trash_root = ?) ORDER BY doc`, id, root)
		if err != nil {
			return wk.answer(), err
		}
		queue = append(queue, kids...)
	}
	return wk.finish(ctx, root, nil)
}

// RestoreWorkItem takes an item and the subtree its trash took out of the
// trash, root first. The list is read afresh on every run: it is what is
// still in the trash under that root.
func (s *Service) RestoreWorkItem(ctx context.Context, w engine.WriteOptions, key string) (ItemWrite, error) {
	if err := checkItemKey(key); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "restore", key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	root, err := s.lookup(ctx, key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, err
	}
	wk := s.newWalk(op)
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		in, err := s.queryIDs(ctx, `SELECT id FROM tracker_items WHERE id = ? AND trashed != 0 AND trash_root = ?`, id, root)
		if err != nil {
			return wk.answer(), err
		}
		if len(in) == 1 {
			ifMatch := uint64(0)
			if id == root {
				ifMatch = w.IfMatch
			}
			ok, err := wk.step(ctx, "restore", id, s.keyOf(ctx, id), func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
				if err := s.checkVersion(ctx, tx, id, key, ifMatch); err != nil {
					return nil, err
				}
				scope, err := itemScope(ctx, tx, id)
				if err != nil {
					return nil, err
				}
				return &statelog.Proposal{Kind: trackrec.KindRestore, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: trackrec.Restore{ID: id}}, nil
			})
			if !ok {
				return wk.finish(ctx, root, err)
			}
		}
		kids, err := s.queryIDs(ctx, `SELECT id FROM tracker_items WHERE parent = ? ORDER BY doc`, id)
		if err != nil {
			return wk.answer(), err
		}
		queue = append(queue, kids...)
	}
	return wk.finish(ctx, root, nil)
}

// maxScopeNames is how many tasks a purge's scope names before it names
// their project instead.
const maxScopeNames = 200

// PurgeWorkItem destroys an item (operator only): its rows go, the items
// pointing at it lose those edges, its children are re-filed under its
// parent, and a marker makes every later record about it apply nowhere on
// every node, for ever. The record's scope names every task it rewrites.
func (s *Service) PurgeWorkItem(ctx context.Context, w engine.WriteOptions, key string) (PurgeResult, error) {
	if err := checkItemKey(key); err != nil {
		return PurgeResult{}, err
	}
	op, err := s.opFor(ctx, w, "purge", key)
	if err != nil {
		return PurgeResult{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		id, err := s.resolve(ctx, tx, key)
		if err != nil {
			return nil, err
		}
		return s.purgeProposal(ctx, tx, id)
	})
	return PurgeResult{WriteResult: wr.WriteResult, Key: key}, err
}

// purgeProposal is the purge record of item id: its scope names every
// task it rewrites, or their project once there are more than
// maxScopeNames.
func (s *Service) purgeProposal(ctx context.Context, tx *sql.Tx, id string) (*statelog.Proposal, error) {
	var project string
	if err := tx.QueryRowContext(ctx, `SELECT project FROM tracker_items WHERE id = ?`, id).Scan(&project); err != nil {
		return nil, err
	}
	// Every task it rewrites: its dependents, the blockers it waits on,
	// the tasks related to it or referencing it (every edge, both ways),
	// the duplicates merged into it, and its subtree (its children are
	// re-filed, and a subtree's rows are read through them).
	touched, err := sqlite.Strings(ctx, tx, `WITH RECURSIVE sub(id) AS (
			SELECT id FROM tracker_items WHERE parent = ?1
			UNION SELECT i.id FROM tracker_items i JOIN sub ON i.parent = sub.id)
		SELECT item FROM tracker_edges WHERE other = ?1 UNION SELECT other FROM tracker_edges WHERE item = ?1
		UNION SELECT id FROM tracker_items WHERE merged_into = ?1 UNION SELECT id FROM sub ORDER BY 1`, id)
	if err != nil {
		return nil, err
	}
	scope := []string{trackrec.ItemScope(id), trackrec.InProject(project)}
	if len(touched) > maxScopeNames {
		scope = append(scope, trackrec.ProjectScope(project))
		touched = nil
	}
	for _, t := range touched {
		scope = append(scope, trackrec.ItemScope(t))
	}
	return &statelog.Proposal{Kind: trackrec.KindPurge, Subject: trackrec.ItemSubject(id), Scope: scope, Payload: trackrec.Purge{ID: id}}, nil
}
