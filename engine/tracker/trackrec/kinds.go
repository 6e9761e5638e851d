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

// Record kinds of the lifecycle tools. An older build applies none of them
// (a kind it does not know applies nothing), so none carries a change an
// older kind could half-apply.
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
