package trackrec

// Record kinds of the tracker domain. A record is written at format
// version 1 unless it carries an item field (priority, due, estimate,
// type), which version 2 added (FieldsFormat).
const (
	KindCreateProject  = "tracker.create_project"
	KindCreateWorkItem = "tracker.create_work_item"
	KindUpdateWorkItem = "tracker.update_work_item"
	KindMirrorEdges    = "tracker.mirror_edges"
	KindComment        = "tracker.comment"
	KindMark           = "tracker.mark"
	KindMove           = "tracker.move_work_item"
	KindMergeDuplicate = "tracker.merge_duplicate"
	KindTrash          = "tracker.trash_work_item"
	KindRestore        = "tracker.restore_work_item"
	KindPurge          = "tracker.purge_work_item"
	KindBulkUpdate     = "tracker.bulk_update"
)

// Record kinds of the lifecycle tools, added after format 2: a build at
// format 2 does not know them, so each that writes rows is stamped 3
// (Kinds) and such a build retains it, with everything its scope meets,
// rather than apply nothing for it and leave its rows behind its peers'
// for good.
const (
	// KindEditComment edits or deletes one comment, by its author only.
	KindEditComment = "tracker.edit_comment"
	// KindUpdateProject renames a project or archives it.
	KindUpdateProject = "tracker.update_project"
	// KindEmptyTrash opens empty_trash: it writes nothing; its sequence
	// is the cut-off (items trashed before it are the ones purged), so a
	// re-run under the same op id purges the same set and no later one.
	KindEmptyTrash = "tracker.empty_trash"
	// KindBulkSet is a bulk update that also sets the assignee (a field
	// tracker.bulk_update never carried).
	KindBulkSet = "tracker.bulk_set"
)

// FieldsFormat is the record format version that added the item fields
// (priority, due, estimate, type): a record carrying one of them is
// stamped with it, so an older build retains the record whole rather than
// apply it with the fields dropped.
const FieldsFormat = 2

// LifecycleFormat is the record format version that added the lifecycle
// kinds (edited comments, updated projects, bulk sets).
const LifecycleFormat = 3

// Kinds is every tracker record kind with the lowest format version that
// applies it whole: what the framework stamps a record with (raised to
// FieldsFormat by a record that carries an item field). Every kind has a
// decision here, and a test fails on a Kind constant without one.
//   - The kinds of the first release are 1. A purge stays at 1 for good
//     and only ever grows by addition: it installs the deletion gate, and
//     a build that cannot decode it stops its applier (GateKinds).
//   - empty_trash writes no row (its sequence is a cut-off the deciding
//     node reads from the log; the ledger row every build writes), so an
//     older build applies it whole: 1.
//   - The other lifecycle kinds write rows a format-2 build would not:
//     LifecycleFormat.
var Kinds = map[string]int{
	KindCreateProject:  1,
	KindCreateWorkItem: 1,
	KindUpdateWorkItem: 1,
	KindMirrorEdges:    1,
	KindComment:        1,
	KindMark:           1,
	KindMove:           1,
	KindMergeDuplicate: 1,
	KindTrash:          1,
	KindRestore:        1,
	KindPurge:          1,
	KindBulkUpdate:     1,
	KindEmptyTrash:     1,
	KindEditComment:    LifecycleFormat,
	KindUpdateProject:  LifecycleFormat,
	KindBulkSet:        LifecycleFormat,
}

// GateKinds are the tracker's records that install a gate: the purge
// (the deletion gate's marker).
var GateKinds = []string{KindPurge}
