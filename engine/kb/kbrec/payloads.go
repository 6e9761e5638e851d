package kbrec

// The payloads of the record kinds, as they go on the wire. A field is
// only ever added (an older build ignores it) under a kind that keeps an
// older build from applying the record without it.

// CreateSpace is KindCreateSpace's payload.
type CreateSpace struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

// UpdateSpace is KindUpdateSpace's payload: nil fields are left alone.
type UpdateSpace struct {
	Key          string  `json:"key"`
	Name         *string `json:"name,omitempty"`
	PageTemplate *string `json:"page_template,omitempty"`
	Editing      *string `json:"editing,omitempty"`
}

// CreatePage is KindCreatePage's payload.
type CreatePage struct {
	ID     string `json:"id"`
	Space  string `json:"space"`
	Parent string `json:"parent,omitempty"`
	Title  string `json:"title"`
	Body   string `json:"body"`
}

// UpdatePage is KindUpdatePage's payload: nil fields are left alone.
type UpdatePage struct {
	ID     string  `json:"id"`
	Title  *string `json:"title,omitempty"`
	Body   *string `json:"body,omitempty"`
	Parent *string `json:"parent,omitempty"`
}

// PurgePage is KindPurgePage's payload.
type PurgePage struct {
	ID string `json:"id"`
}

// ArchiveSpace is KindArchiveSpace's payload: an update_space's fields
// and whether the space is archived.
type ArchiveSpace struct {
	UpdateSpace
	Archived bool `json:"archived"`
}

// MovePage is KindMovePage's payload: an update_page's fields and the
// space the page moves to.
type MovePage struct {
	UpdatePage
	Space string `json:"space"`
}

// TrashPage is KindTrashPage's payload.
type TrashPage struct {
	ID      string `json:"id"`
	Trashed bool   `json:"trashed"`
}

// Comment is KindComment's payload: a comment ID on Page, added, edited
// (by its author) or deleted.
type Comment struct {
	ID     string `json:"id"`
	Page   string `json:"page"`
	Author string `json:"author"`
	Body   string `json:"body,omitempty"`
	Delete bool   `json:"delete,omitempty"`
}
